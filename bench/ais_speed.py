"""AIS speed: cyrbm against a plain NumPy AIS and against the BLAS floor.

The paper setting (Salakhutdinov & Murray 2008, Sec. 5.1): a 784 x 500 RBM, 100 AIS runs,
the 14,500 betas of the "paper" schedule, a base-rate start.  Three programs do the same
number of steps in one process:

* cyrbm      ``Annealer(runs=100, schedule="paper").log_partition(model, "data", data)``
* numpy      the same algorithm in float32 NumPy (two sgemm products per beta, expit,
             softplus, uniform draws; log weights accumulated in float64)
* floor      only the two dense float32 products per beta, (100x784)@(784x500) and
             (100x500)@(500x784): what any dense-matrix AIS must at least spend

cyrbm and the floor run ``--repeat`` times, alternately, and the best and the median of
each are reported (this VM's speed drifts by 20% or more from minute to minute, so a
single timing says little); the NumPy reference runs once.  Every repeat of cyrbm must
give the same ln Z to the last bit (same seed).

The model is an RBM trained with CD1 on MNIST-like 28x28 digits made from cyrbm's
bundled 8x8 digits (bench/mnistlike.py; MNIST itself is not available offline), cached
in bench/.cache.  ``--fraction F`` keeps every (1/F)-th beta of the schedule (bigger
steps flip more units per step, which favours the dense programs).

Usage:
  ais_speed.py [--fraction F] [--runs R] [--hidden H] [--threads T] [--repeat N]
               [--skip-numpy] [--model FILE]

Options:
  --fraction F   Share of the paper's betas to keep [default: 1.0].
  --runs R       AIS runs [default: 100].
  --hidden H     Hidden units of the benchmark model [default: 500].
  --threads T    cyrbm threads (default: all cores).
  --repeat N     Timings of cyrbm and of the floor, taken alternately [default: 3].
  --skip-numpy   Skip the (slow) NumPy reference.
  --model FILE   Model file (default: trained once and cached in bench/.cache).
"""
from types import SimpleNamespace

from docopt import docopt
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from mnistlike import mnistlike  # noqa: E402
from numpy_ais import numpy_ais  # noqa: E402

import cyrbm  # noqa: E402
from cyrbm import RBM, Trainer  # noqa: E402
from cyrbm.estimators.annealing import Annealer, base_rate_biases, logmeanexp, make_schedule  # noqa: E402


def trained_model(n_hidden, path, data):
    if os.path.exists(path):
        return RBM.load(path)
    print(f"training a 784 x {n_hidden} RBM (CD1, 10 epochs) for the benchmark ...", flush=True)
    t0 = time.perf_counter()
    model = Trainer(n_hidden, method="cd", k=1, epochs=10, batch_size=100, learning_rate=0.05,
                    momentum=0.9, weight_decay=2e-4, seed=0, progress=False,
                    monitor_size=0).fit(data)
    print(f"  trained in {time.perf_counter() - t0:.0f} s", flush=True)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    model.save(path)
    return model


def blas_floor(D, M, runs, steps, seed, dtype=np.float32):
    """Only the two dense products per beta (float32 unless ``dtype``)."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((D, M)).astype(dtype)
    WT = np.ascontiguousarray(W.T)
    v = (rng.random((runs, D)) < 0.2).astype(dtype)
    h = (rng.random((runs, M)) < 0.3).astype(dtype)
    x = np.empty((runs, M), dtype)
    y = np.empty((runs, D), dtype)
    for _ in range(steps):
        np.matmul(v, W, out=x)
        np.matmul(h, WT, out=y)


def blas_info():
    try:
        from threadpoolctl import threadpool_info
        return ", ".join(f"{i.get('internal_api')} {i.get('version')} x{i.get('num_threads')}"
                         for i in threadpool_info() if i.get("user_api") == "blas")
    except ImportError:
        return cyrbm.config()["blas"]


def main(argv=None):
    opts = docopt(__doc__, argv=argv)
    args = SimpleNamespace(
        fraction=float(opts["--fraction"]), runs=int(opts["--runs"]),
        hidden=int(opts["--hidden"]),
        threads=None if opts["--threads"] is None else int(opts["--threads"]),
        repeat=max(1, int(opts["--repeat"])),
        skip_numpy=opts["--skip-numpy"], model=opts["--model"])

    data = mnistlike(10000, seed=0)
    path = args.model or os.path.join(HERE, ".cache", f"rbm784x{args.hidden}_cd1.npz")
    model = trained_model(args.hidden, path, data).astype(np.float32)
    betas = make_schedule("paper")
    if args.fraction < 1.0:
        # every (1/F)-th beta of the paper schedule: the same range of temperatures in
        # bigger steps (more units flip per step, which favours the dense programs)
        stride = max(1, int(round(1.0 / args.fraction)))
        sched = np.unique(np.concatenate([betas[::stride], [1.0]]))
    else:
        sched = betas
    bA = base_rate_biases(data)
    D, M = model.W.shape
    print(f"cyrbm {cyrbm.__version__}, kernels {cyrbm.config()['kernels']}, OpenMP {cyrbm.config()['openmp']}, "
          f"threads {args.threads or cyrbm.config()['threads']}; BLAS: {blas_info()}")
    print(f"setting: {D} x {M} RBM, {args.runs} runs, {sched.size} betas "
          f"({args.fraction:g} of the paper's 14,500)")

    times_cyrbm, times_floor, log_zs = [], [], set()
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        res = Annealer(runs=args.runs, schedule=sched, seed=0, threads=args.threads,
                       progress=False).log_partition(model, base_rate=bA, data=data[:2000])
        times_cyrbm.append(time.perf_counter() - t0)
        log_zs.add(res.log_Z)
        t0 = time.perf_counter()
        blas_floor(D, M, args.runs, sched.size - 1, seed=1)
        times_floor.append(time.perf_counter() - t0)
        print(f"  cyrbm {times_cyrbm[-1]:6.2f} s, floor {times_floor[-1]:6.2f} s", flush=True)
    if len(log_zs) != 1:
        raise SystemExit(f"repeats gave different ln Z: {sorted(log_zs)}")
    t_cyrbm, t_floor = min(times_cyrbm), min(times_floor)
    med_cyrbm, med_floor = float(np.median(times_cyrbm)), float(np.median(times_floor))
    lo, hi = res.log_Z_interval(3)
    print(f"cyrbm : {t_cyrbm:8.2f} s best, {med_cyrbm:.2f} s median   ln Z = {res.log_Z:.3f} "
          f"(3 sigma {lo:.3f}, {hi:.3f}), ESS {res.ess:.1f}, avg test log-prob "
          f"{res.avg_log_prob:.2f}", flush=True)
    print(f"floor : {t_floor:8.2f} s best, {med_floor:.2f} s median   (2 sgemm per beta)",
          flush=True)

    t_numpy = None
    if not args.skip_numpy:
        t0 = time.perf_counter()
        lw = numpy_ais(model, bA.astype(np.float32).astype(np.float64), sched, args.runs, seed=2)
        t_numpy = time.perf_counter() - t0
        log_z_np = res.log_Z_base + logmeanexp(lw)
        print(f"numpy : {t_numpy:8.2f} s   ln Z = {log_z_np:.3f}", flush=True)

    print()
    print(f"cyrbm vs BLAS floor : {t_floor / t_cyrbm:5.2f}x faster best to best, "
          f"{med_floor / med_cyrbm:.2f}x median to median (cyrbm takes "
          f"{t_cyrbm / t_floor:.2f} / {med_cyrbm / med_floor:.2f} of the floor's time)")
    if t_numpy is not None:
        print(f"cyrbm vs NumPy      : {t_numpy / t_cyrbm:5.2f}x faster than cyrbm's best, "
              f"{t_numpy / max(times_cyrbm):.2f}x than its slowest")
    if args.fraction == 1.0:
        print(f"full paper setting  : {t_cyrbm:.2f} s best, {med_cyrbm:.2f} s median, "
              f"{max(times_cyrbm):.2f} s slowest of {args.repeat}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
