"""The AIS/RAISE sandwich on a 784 x 500 digit RBM (issue 14): the gap against K, the
adaptive schedule, RAISE's speed, and the low-ESS warning of a ratio.

The models are RBMs trained with CD1 on MNIST-like 28x28 digits (bench/mnistlike.py),
cached in bench/.cache as bench/ais_speed.py makes them (784 x 500, and 784 x 200 for
the ratio).  Test vectors: ``--vectors`` images of mnistlike(seed=1) (the training set
is mnistlike(10000, seed=0), which also fits the base rate).

Parts:

* ``sandwich``: ``cyrbm evaluate`` (the command itself, its text output) at K = 1,000,
  5,000 and 14,500 betas (``paper`` for 14,500; the paper's shape with fewer betas
  otherwise), forward AIS with --runs runs, RAISE with --chains chains per vector;
  then the gap against K.
* ``adaptive``: var(ln w) of forward AIS with the uniform, the paper and the adaptive
  schedule at equal K (1,000 with 8,000 runs and 14,500 with 800 runs), each with its
  standard error (4th moments, and batches).
* ``speed``: RAISE over --vectors vectors x 10 chains x 14,500 betas against forward AIS
  with the same number of runs (vectors x 10) and betas, and the dense BLAS floor of
  that work (two sgemm per beta, timed on 1/100 of the betas and scaled up).
  The issue's full size is --vectors 1000 (about 8 minutes per direction here).
* ``warning``: ln(Z_B / Z_A) between the 784 x 200 (A) and 784 x 500 (B) RBMs by
  ``cyrbm ratio`` on a short schedule with Gibbs starts (it must print the low-ESS
  warning), the two base-rate AIS estimates with the paper schedule, and
  ``cyrbm evaluate`` of both models on the short schedule: does the AIS/RAISE bracket
  of ln Z_B - ln Z_A cover the discrepancy?  And ``cyrbm evaluate B --base-model A``:
  the sandwich on the ratio's own path (the same run and starts), whose gap is that
  path's error: does it cover the discrepancy?

Usage:
  raise_eval.py sandwich [--vectors N] [--runs R] [--chains C] [--threads T]
  raise_eval.py adaptive [--threads T] [--seed S]
  raise_eval.py speed [--vectors N] [--threads T]
  raise_eval.py warning [--vectors N] [--threads T] [--betas K] [--shape S]

Options:
  --vectors N   Test vectors [default: 1000].
  --runs R      Forward AIS runs [default: 100].
  --chains C    RAISE chains per test vector [default: 2].
  --threads T   cyrbm threads (default: all cores).
  --betas K     Betas of the short schedule of the ratio [default: 1000].
  --seed S      Seed of the runs that measure var(ln w) (adaptive; the pilot keeps its
                own streams of seed 0) [default: 0].
  --shape S     Shape of the short schedule: linear, or paper (the paper schedule's
                shape with K betas) [default: paper].
"""
import contextlib
import io
import json
import os
import sys
import time

os.environ.pop("OPENBLAS_L2_SIZE", None)       # see bench/isa_speed.py

import numpy as np  # noqa: E402
from docopt import docopt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from ais_speed import blas_floor, trained_model  # noqa: E402
from mnistlike import mnistlike  # noqa: E402

import cyrbm  # noqa: E402
from cyrbm.estimators.annealing import Annealer, base_rate_biases, make_schedule  # noqa: E402
from cyrbm.cli import main as cyrbm_main, print_measure  # noqa: E402
from cyrbm.estimators.evaluation import adaptive_schedule, raise_log_weights  # noqa: E402

CACHE = os.path.join(HERE, ".cache")


def paper_like(k):
    """k betas with the shape of SM08's paper schedule (its beta against the fraction
    of steps taken, interpolated); the paper schedule itself for k = 14,500."""
    paper = make_schedule("paper")
    if k == paper.size:
        return paper
    b = np.interp(np.linspace(0, 1, k), np.linspace(0, 1, paper.size), paper)
    b[0], b[-1] = 0.0, 1.0
    return b


def files(n_vectors):
    """(train, test) arrays and their .npy files in the cache."""
    os.makedirs(CACHE, exist_ok=True)
    train = mnistlike(10000, seed=0)
    test = mnistlike(n_vectors, seed=1)
    paths = (os.path.join(CACHE, "mnistlike10k_seed0.npy"),
             os.path.join(CACHE, f"mnistlike{n_vectors}_seed1.npy"))
    for arr, path in zip((train, test), paths):
        if not os.path.exists(path):
            np.save(path, arr)
    return train, test, paths


def model(hidden, train):
    path = os.path.join(CACHE, f"rbm784x{hidden}_cd1.npz")
    trained_model(hidden, path, train)
    return path


def threads_args(threads):
    return [] if threads is None else ["--threads", str(threads)]


def run_command(argv):
    """Run ``cyrbm ARGV --json``; print its text output (cyrbm.cli.print_measure, what the
    command prints without --json) and return its JSON."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cyrbm_main([str(a) for a in argv] + ["--json"])
    if code != 0:
        raise SystemExit(f"cyrbm {argv[0]} failed ({code})")
    out = json.loads(buf.getvalue())
    print_measure(argv[0], out, sys.stdout)
    return out


def part_sandwich(o):
    train, test, (train_f, test_f) = files(o.vectors)
    mpath = model(500, train)
    rows = []
    for k in (1000, 5000, 14500):
        sched = os.path.join(CACHE, f"paper_like_{k}.txt")
        np.savetxt(sched, paper_like(k))
        print(f"$ cyrbm evaluate {os.path.basename(mpath)} --data <{o.vectors} test digits> "
              f"--base-data <10,000 training digits> --runs {o.runs} --chains {o.chains} "
              f"--schedule {'paper' if k == 14500 else f'<{k} betas of the paper shape>'}",
              flush=True)
        t0 = time.perf_counter()
        out = run_command(["evaluate", mpath, "--data", test_f, "--base-data", train_f,
                           "--runs", o.runs, "--chains", o.chains, "--schedule",
                           "paper" if k == 14500 else sched] + threads_args(o.threads))
        rows.append((k, out["ais"]["mean_log_prob"], out["raise"]["mean_log_prob"],
                     out["gap"], out["gap_se"], time.perf_counter() - t0))
        print(flush=True)
    print("    K     AIS mean    RAISE mean     gap (se)        seconds (both runs)")
    for k, a, r, g, se, s in rows:
        print(f"{k:6d}  {a:10.3f}  {r:10.3f}   {g:7.3f} ({se:.3f})   {s:7.1f}")


def var_with_se(log_weights, blocks=8):
    """var(ln w) over the runs, its standard error by the 4th-moment formula
    sqrt((m4 - var^2) / n), and by batches (the spread of the variances of ``blocks``
    equal blocks of runs / sqrt(blocks))."""
    lw = np.asarray(log_weights, dtype=np.float64)
    c = lw - np.mean(lw)
    var = float(np.mean(c * c))
    se4 = float(np.sqrt(max(np.mean(c ** 4) - var * var, 0.0) / c.size))
    per = [np.var(b) for b in np.array_split(lw, blocks)]
    return var, se4, float(np.std(per, ddof=1) / np.sqrt(blocks))


def part_adaptive(o):
    train, _, _ = files(1000)
    m = cyrbm.RBM.load(model(500, train))
    bA = base_rate_biases(train)
    for k, runs in ((1000, 8000), (14500, 800)):
        t0 = time.perf_counter()
        tuned = adaptive_schedule(m, k, bA, seed=0, threads=o.threads)
        t_tune = time.perf_counter() - t0
        print(f"K = {k}: adaptive schedule tuned in {t_tune:.1f} s (pilot: 256 runs, "
              f"{min(k, 1000)} evenly spaced betas, its own streams); {np.sum(tuned < 0.5)} "
              f"betas below 0.5, {np.sum(tuned >= 0.9)} at 0.9 or above (uniform: "
              f"{np.sum(np.linspace(0, 1, k) < 0.5)} and {np.sum(np.linspace(0, 1, k) >= 0.9)})",
              flush=True)
        found = {}
        for name, betas in (("uniform", np.linspace(0, 1, k)), ("paper", paper_like(k)),
                            ("adaptive", tuned)):
            res = Annealer(runs=runs, schedule=betas, seed=o.seed, threads=o.threads,
                           progress=False).log_partition(m, base_rate=bA)
            var, se, se_b = var_with_se(res.log_weights)
            found[name] = (var, max(se, se_b))
            print(f"  {name:9s} var(ln w) = {var:8.4f} +- {se:.4f} (se; {se_b:.4f} by 8 "
                  f"batches; {runs} runs)   "
                  f"ln Z = {res.log_Z:9.3f}  ESS {res.ess:6.1f}  ({res.seconds:.1f} s)",
                  flush=True)
        for other in ("uniform", "paper"):
            d = found["adaptive"][0] - found[other][0]
            se = float(np.hypot(found["adaptive"][1], found[other][1]))
            print(f"  adaptive - {other}: {d:+.4f} (se {se:.4f}, the larger of the two "
                  f"kinds, {d / se:+.1f} se); "
                  f"adaptive / {other} = {found['adaptive'][0] / found[other][0]:.3f}")


def part_speed(o):
    train, test, _ = files(o.vectors)
    m = cyrbm.RBM.load(model(500, train)).astype(np.float32)
    bA = base_rate_biases(train).astype(np.float32).astype(np.float64)
    betas = make_schedule("paper")
    chains = 10
    runs = o.vectors * chains
    threads = o.threads or cyrbm.config()["threads"]
    print(f"cyrbm {cyrbm.__version__}, kernels {cyrbm.config()['kernels']}, threads {threads}")
    print(f"784 x 500 RBM, {o.vectors} vectors x {chains} chains = {runs} runs, "
          f"{betas.size} betas", flush=True)
    t0 = time.perf_counter()
    lw = raise_log_weights(m, test, bA, betas, chains=chains, seed=0, threads=o.threads)
    t_raise = time.perf_counter() - t0
    print(f"RAISE      : {t_raise:8.1f} s  (mean ln p {np.mean(lw):.2f} per chain)", flush=True)
    t0 = time.perf_counter()
    res = Annealer(runs=runs, schedule=betas, seed=0, threads=o.threads,
                   progress=False).log_partition(m, base_rate=bA)
    t_ais = time.perf_counter() - t0
    print(f"forward AIS: {t_ais:8.1f} s  (ln Z {res.log_Z:.3f}, {runs} runs)", flush=True)
    steps = max(1, (betas.size - 1) // 100)
    t0 = time.perf_counter()
    blas_floor(784, 500, runs, steps, seed=1)
    t_floor = (time.perf_counter() - t0) * (betas.size - 1) / steps
    print(f"BLAS floor : {t_floor:8.1f} s  (2 sgemm per beta for {runs} runs; timed on "
          f"{steps} betas and scaled up)")
    print(f"RAISE / forward AIS = {t_raise / t_ais:.3f}   (issue 14: at most 1.2)")
    print(f"RAISE / BLAS floor  = {t_raise / t_floor:.3f}")


def part_warning(o):
    train, test, (train_f, test_f) = files(o.vectors)
    a_path, b_path = model(200, train), model(500, train)
    sched = os.path.join(CACHE, f"{o.shape}_{o.betas}.txt")
    np.savetxt(sched, np.linspace(0, 1, o.betas) if o.shape == "linear" else
               paper_like(o.betas))
    short = f"<{o.betas} betas, {o.shape} shape>"
    ta = threads_args(o.threads)
    print(f"$ cyrbm ratio rbm784x200 rbm784x500 --data <test digits> --schedule "
          f"{short} --start gibbs --burn-in 1000 --runs 100", flush=True)
    ratio = run_command(["ratio", a_path, b_path, "--data", test_f, "--schedule",
                         sched, "--start", "gibbs", "--burn-in", "1000",
                         "--runs", "100"] + ta)["log_ratio"]
    A, B = cyrbm.RBM.load(a_path), cyrbm.RBM.load(b_path)
    bA = base_rate_biases(train)
    sep = {}
    for name, mdl in (("A", A), ("B", B)):
        r = Annealer(runs=100, schedule="paper", seed=0, threads=o.threads,
                     progress=False).log_partition(mdl, base_rate=bA)
        lo, hi = r.log_Z_interval(3)
        sep[name] = r.log_Z
        print(f"base-rate AIS, paper schedule, model {name}: ln Z = {r.log_Z:.3f} "
              f"(3 sigma {lo:.3f}, {hi:.3f}), ESS {r.ess:.1f}", flush=True)
    diff = sep["B"] - sep["A"]
    print(f"ratio ln(Z_B/Z_A) = {ratio:.3f}; separate AIS differ by {diff:.3f}: "
          f"discrepancy {abs(diff - ratio):.3f} nats", flush=True)
    brackets, sims = {}, {}
    for name, path in (("A", a_path), ("B", b_path)):
        print(f"$ cyrbm evaluate {os.path.basename(path)} --data <{o.vectors} test digits> "
              f"--base-data <training digits> --schedule {short} --chains 2 "
              f"--simulate 100", flush=True)
        out = run_command(["evaluate", path, "--data", test_f, "--base-data", train_f,
                           "--schedule", sched, "--chains", "2",
                           "--simulate", "100"] + ta)
        brackets[name] = (out["ais"]["log_Z"],
                          out["mean_log_unnormalized"] - out["raise"]["mean_log_prob"],
                          out["gap"])
        sim = out["simulate"]
        sims[name] = (sim["log_Z_lower"], sim["log_Z_upper"], sim["gap"])
        print(flush=True)
    disc = abs(diff - ratio)
    print(f"$ cyrbm evaluate rbm784x500 --base-model rbm784x200 --base-logz {sep['A']:.3f} "
          f"--data <{o.vectors} test digits> --schedule {short} --start gibbs --burn-in 1000 "
          f"--runs 100 --chains 2", flush=True)
    on_path = run_command(["evaluate", b_path, "--base-model", a_path, "--base-logz",
                           repr(sep["A"]), "--data", test_f, "--schedule", sched,
                           "--start", "gibbs", "--burn-in", "1000", "--runs", "100",
                           "--chains", "2"] + ta)
    gap, gap_se = on_path["gap"], on_path["gap_se"]
    same = on_path["base"]["log_ratio"] == ratio
    print(f"the sandwich on the ratio's own path (forward = the ratio run above: {same}):")
    print(f"  gap AIS - RAISE = {gap:.3f} nats (se {gap_se:.3f}); discrepancy {disc:.3f} "
          f"nats; gap >= discrepancy: {gap >= disc}")
    lo_b = on_path["ais"]["log_Z"]
    hi_b = on_path["mean_log_unnormalized"] - on_path["raise"]["mean_log_prob"]
    lo_r, hi_r = lo_b - sep["A"], hi_b - sep["A"]
    print(f"  ln Z_B bracket given ln Z_A = {sep['A']:.3f}: [{lo_b:.3f}, {hi_b:.3f}], i.e. "
          f"ln(Z_B/Z_A) in [{lo_r:.3f} (the ratio run itself), {hi_r:.3f} (RAISE)]: covers "
          f"the separate difference {diff:.3f}: {lo_r <= diff <= hi_r}", flush=True)
    print(flush=True)
    for label, br in (("on the test digits", brackets),
                      ("on simulated states (--simulate)", sims)):
        lo = br["B"][0] - br["A"][1]
        hi = br["B"][1] - br["A"][0]
        print(f"{label}: AIS/RAISE brackets of ln Z: A [{br['A'][0]:.3f}, {br['A'][1]:.3f}], "
              f"B [{br['B'][0]:.3f}, {br['B'][1]:.3f}]; gaps {br['A'][2]:.3f} and "
              f"{br['B'][2]:.3f} nats")
        print(f"  so ln Z_B - ln Z_A lies in [{lo:.3f}, {hi:.3f}] (width {hi - lo:.3f}); "
              f"covers the ratio estimate {ratio:.3f}: {lo <= ratio <= hi}; covers the "
              f"separate AIS difference {diff:.3f}: {lo <= diff <= hi}; width >= "
              f"discrepancy {disc:.3f}: {hi - lo >= disc}", flush=True)


def main(argv=None):
    opts = docopt(__doc__, argv=argv)

    class O:
        vectors = int(opts["--vectors"])
        runs = int(opts["--runs"])
        chains = int(opts["--chains"])
        threads = None if opts["--threads"] is None else int(opts["--threads"])
        betas = int(opts["--betas"])
        shape = opts["--shape"]
        seed = int(opts["--seed"])
    for part in ("sandwich", "adaptive", "speed", "warning"):
        if opts[part]:
            globals()[f"part_{part}"](O)
    return 0


if __name__ == "__main__":
    sys.exit(main())
