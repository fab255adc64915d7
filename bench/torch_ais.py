"""AIS speed as a user sees it: cyrbm against PyTorch and NumPy, whole processes.

Issue 37, point 2: paper-schedule AIS (SM08 Sec. 5.1: 100 runs, 14,500 betas, the
base-rate start of Eq. 18) on the trained 784 x 500 RBM of bench/ais_speed.py, timed as
three whole processes (start, imports, model and data loading, the runs, the result):

* cyrbm   ``cyrbm ais MODEL --base-data DATA --runs R --schedule S --seed 0 --threads T
          --json`` (the command line, Annealer.log_partition);
* torch   the same algorithm in PyTorch on the CPU (:func:`torch_ais` below), float32,
          ``torch.set_num_threads(T)``;
* numpy   the same algorithm in NumPy (bench/numpy_ais.py), float32, BLAS on T threads.

The algorithm, in all three: the base-rate biases fitted to the 10,000 training rows
as cyrbm fits them (b_A,i = ln((n_i + 1) / (N - n_i + 1)), stored in float32), ln Z_A
of Eq. 18, runs started from exact draws of the base rate; step k = 1 .. K adds
ln p*_k(v) - ln p*_{k-1}(v) to the log weights in float64 and, while k < K, takes one
block-Gibbs sweep at beta_k: h ~ sigma(beta_k (v W + a)), then v ~ sigma(beta_k (W h + b)
+ (1 - beta_k) b_A) (SM08 Eq. 15-17).  ln Z = ln Z_A + ln mean(w) (Eq. 11) and its
error (Eq. 12) are computed from each program's log weights by cyrbm's AISResult, so
the three estimates can be compared within their stated errors.

The three programs run alternately (the order rotates each round) ``--repeat`` times on
each thread count of ``--threads``, so that the drift of a shared machine falls on all
three alike; the best and the median wall-clock time of each are reported, with the
ratios torch/cyrbm and numpy/cyrbm.  PyTorch is an optional bench dependency
(``pip install ".[bench]"``); without it the bench says so and exits 0.

Usage:
  torch_ais.py [--threads LIST] [--repeat N] [--runs R] [--fraction F] [--model FILE]
               [--skip-numpy]
"""
import argparse
import importlib.util
import json
import math
import os
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, ".cache")
TOOLS = ("cyrbm", "torch", "numpy")


# ------------------------------------------------------------------ the PyTorch AIS
def torch_ais(W, vbias, hbias, data, betas, runs, seed, threads):
    """Base-rate AIS (SM08 Eq. 13-18) in PyTorch on the CPU, float32 products and draws,
    float64 log weights.  Returns (log weights, ln Z_A) as float64 NumPy arrays/floats.

    W, vbias, hbias: the RBM (float32 arrays); data: 0/1 rows the base rate is fitted to;
    betas: the schedule (float64, 0 .. 1).  Every buffer is allocated once; each step is
    two addmm calls, in-place element-wise work and ``rand < p`` draws (torch.bernoulli
    measured 3x slower than rand + lt for these shapes).
    """
    import torch
    torch.set_num_threads(threads)
    f32, f64 = torch.float32, torch.float64
    gen = torch.Generator().manual_seed(seed)
    with torch.inference_mode():
        W = torch.from_numpy(np.ascontiguousarray(W, dtype=np.float32))
        WT = W.t()                                   # a view: addmm takes the transpose
        b = torch.from_numpy(np.asarray(vbias, dtype=np.float32))
        a = torch.from_numpy(np.asarray(hbias, dtype=np.float32))
        D, M = W.shape
        if M > 1000:   # the product of M factors in (1, 2] below must stay below 2^1023
            raise SystemExit("torch_ais: at most 1000 hidden units (the softplus product).")
        # base rate fitted as cyrbm fits it (pseudocount 1), stored in float32 (Eq. 18)
        rows = torch.from_numpy(np.asarray(data))
        on = rows.sum(dim=0, dtype=f64)
        bA = (torch.log(on + 1.0) - torch.log(rows.shape[0] - on + 1.0)).to(f32)
        bA64 = bA.to(f64)
        log_z_base = M * math.log(2.0) + float(torch.nn.functional.softplus(bA64).sum())
        dbias = bA64 - b.to(f64)                     # (b_A - b) for the visible-bias term

        v = torch.empty(runs, D)                     # float32 states, as the products need
        v64 = torch.empty(runs, D, dtype=f64)
        h = torch.empty(runs, M)
        x = torch.empty(runs, M)                     # v W + a
        y = torch.empty(runs, D)                     # visible inputs, then probabilities
        xd = torch.empty(runs, M, dtype=f64)         # |x| in float64
        ec = torch.empty(runs, M, dtype=f64)
        ep = torch.empty(runs, M, dtype=f64)
        uh = torch.empty(runs, M)
        uv = torch.empty(runs, D)
        logw = torch.zeros(runs, dtype=f64)

        # exact draws of the base rate (beta_0 = 0)
        torch.rand(runs, D, generator=gen, out=uv)
        torch.lt(uv, torch.sigmoid(bA), out=v)
        betas = [float(x) for x in betas]
        K = len(betas) - 1
        for k in range(1, K + 1):
            bp, bc = betas[k - 1], betas[k]
            torch.addmm(a, v, W, out=x)
            # ln p*_k(v) - ln p*_{k-1}(v) = (bp - bc) (b_A - b).v
            #     + sum_j softplus(bc x_j) - softplus(bp x_j),
            # softplus(c x) = c relu(x) + ln(1 + exp(-c |x|)); relu(x) = (x + |x|) / 2 and
            # the M logs as one log of a product (torch's float64 log1p is not vectorised)
            v64.copy_(v)
            logw.addmv_(v64, dbias, alpha=bp - bc)
            xd.copy_(x)
            logw.add_(xd.sum(dim=1), alpha=0.5 * (bc - bp))
            xd.abs_()
            logw.add_(xd.sum(dim=1), alpha=0.5 * (bc - bp))
            torch.mul(xd, -bc, out=ec).exp_().add_(1.0)
            torch.mul(xd, -bp, out=ep).exp_().add_(1.0)
            logw.add_(ec.prod(dim=1).log_()).sub_(ep.prod(dim=1).log_())
            if k < K:                                # T_k: one block-Gibbs sweep at beta_k
                x.mul_(bc).sigmoid_()
                torch.rand(runs, M, generator=gen, out=uh)
                torch.lt(uh, x, out=h)
                torch.addmm(b, h, WT, beta=bc, alpha=bc, out=y)   # bc (W h + b)
                y.add_(bA, alpha=1.0 - bc).sigmoid_()
                torch.rand(runs, D, generator=gen, out=uv)
                torch.lt(uv, y, out=v)
        return logw.numpy(), log_z_base


# --------------------------------------------------------------------- the workers
def schedule_of(spec):
    """The betas of ``spec``: "paper" (as cyrbm builds it) or a file of betas."""
    from numpy_ais import paper_betas
    return paper_betas() if spec == "paper" else np.loadtxt(spec, dtype=np.float64)


def worker(args):
    """One whole program of the comparison: loads the model and data, runs AIS, prints
    its log weights and ln Z_A as one JSON line."""
    sys.path.insert(0, HERE)
    betas = schedule_of(args.schedule)
    model = np.load(args.model)
    data = np.load(args.data)
    t0 = time.perf_counter()
    if args.worker == "torch":
        log_w, log_z_base = torch_ais(model["W"], model["vbias"], model["hbias"], data, betas,
                                      args.runs, args.seed, args.threads)
    else:
        from types import SimpleNamespace
        from numpy_ais import base_rate_biases, base_rate_log_z, numpy_ais
        W = model["W"].astype(np.float32)
        bA = base_rate_biases(data).astype(np.float32).astype(np.float64)
        rbm = SimpleNamespace(W=W, vbias=model["vbias"], hbias=model["hbias"])
        log_w = numpy_ais(rbm, bA, betas, args.runs, args.seed)
        log_z_base = base_rate_log_z(bA, W.shape[1])
    print(json.dumps({"log_weights": [float(w) for w in log_w], "log_Z_base": log_z_base,
                      "seconds": time.perf_counter() - t0}))
    return 0


# ---------------------------------------------------------------------- the driver
def command(tool, threads, model, data, schedule, runs):
    """The argv of one whole program."""
    if tool == "cyrbm":
        cli = os.path.join(os.path.dirname(sys.executable), "cyrbm")
        return [cli, "ais", model, "--base-data", data, "--runs", str(runs), "--schedule",
                schedule, "--seed", "0", "--threads", str(threads), "--json"]
    return [sys.executable, os.path.abspath(__file__), "--worker", tool, "--model", model,
            "--data", data, "--schedule", schedule, "--runs", str(runs), "--seed", "0",
            "--threads", str(threads)]


def run_timed(argv, threads):
    """Wall-clock seconds of one program from start to exit, and its JSON result with
    "cpu": the CPU seconds (user + system, all its threads) it took."""
    env = dict(os.environ)
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[key] = str(threads)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd="/", capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    out = json.loads(done.stdout)
    out["cpu"] = (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime)
    return seconds, out


def inputs(args):
    """(model file, data file, schedule spec): ais_speed.py's cached model, its 10,000
    MNIST-like training rows written once as .npy, the paper schedule or a thinned one."""
    sys.path.insert(0, HERE)
    from ais_speed import trained_model
    from mnistlike import mnistlike
    data_path = os.path.join(CACHE, "mnistlike10000.npy")
    model_path = os.path.abspath(args.model or os.path.join(CACHE, "rbm784x500_cd1.npz"))
    data = mnistlike(10000, seed=0) if not os.path.exists(data_path) else np.load(data_path)
    os.makedirs(CACHE, exist_ok=True)
    if not os.path.exists(data_path):
        np.save(data_path, data)
    model = trained_model(500, model_path, data)
    if model.dtype != np.float32:
        raise SystemExit(f"{model_path} holds a {model.dtype} model; the comparison is float32.")
    schedule = "paper"
    if args.fraction < 1.0:
        from numpy_ais import paper_betas
        betas = paper_betas()
        stride = max(1, int(round(1.0 / args.fraction)))
        schedule = os.path.join(CACHE, f"paper_every{stride}.txt")
        np.savetxt(schedule, np.unique(np.concatenate([betas[::stride], [1.0]])), fmt="%.17g")
    return model_path, data_path, schedule


def estimate(out, runs, betas):
    """An AISResult of one program's log weights (ln Z and its Eq. 12 error)."""
    from cyrbm.estimators.results import AISResult
    return AISResult(kind="partition", log_weights=out["log_weights"],
                     log_Z_base=out["log_Z_base"], betas=betas, runs=runs, seconds=0.0,
                     threads=1, dtype=np.float32, seed=0, schedule="")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of the three programs")
    ap.add_argument("--runs", type=int, default=100, help="AIS runs")
    ap.add_argument("--fraction", type=float, default=1.0,
                    help="share of the paper's betas to keep (every (1/F)-th)")
    ap.add_argument("--model", default=None, help="RBM file (default: ais_speed.py's cache)")
    ap.add_argument("--skip-numpy", action="store_true", help="leave the NumPy program out")
    ap.add_argument("--worker", choices=("torch", "numpy"), help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--schedule", default="paper", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        args.threads = int(args.threads)
        return worker(args)

    if importlib.util.find_spec("torch") is None:
        print("torch_ais.py: PyTorch is not installed, so there is nothing to compare "
              "cyrbm with (pip install '.[bench]' installs its CPU build); skipped.")
        return 0
    import cyrbm
    from cyrbm.estimators.schedules import make_schedule
    thread_counts = [int(t) for t in args.threads.split(",")]
    tools = TOOLS[:2] if args.skip_numpy else TOOLS
    model, data, schedule = inputs(args)
    n_betas = make_schedule(schedule).size
    torch_version = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    print(f"cyrbm {cyrbm.__version__} (kernels {cyrbm.config()['kernels']}), torch "
          f"{torch_version}, numpy {np.__version__}; {os.cpu_count()} CPUs, load "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"setting: 784 x 500 RBM ({os.path.basename(model)}), {args.runs} runs, "
          f"{n_betas} betas, base rate fitted to {os.path.basename(data)}; whole processes, "
          f"{args.repeat} rounds, order rotating", flush=True)

    for T in thread_counts:
        print(f"\n--- {T} thread{'s' if T > 1 else ''} ---", flush=True)
        times = {t: [] for t in tools}
        cpu = {t: [] for t in tools}
        inside = {t: [] for t in tools}
        results = {t: [] for t in tools}
        for rnd in range(args.repeat):
            order = tools[rnd % len(tools):] + tools[:rnd % len(tools)]
            line = []
            for tool in order:
                sec, out = run_timed(command(tool, T, model, data, schedule, args.runs), T)
                times[tool].append(sec)
                cpu[tool].append(out["cpu"])
                inside[tool].append(out["seconds"])
                results[tool].append(estimate(out, args.runs, n_betas))
                line.append(f"{tool} {sec:6.2f} s (CPU {out['cpu']:.2f} s)")
            print(f"  round {rnd + 1}: " + ", ".join(line)
                  + f"   (load {os.getloadavg()[0]:.1f})", flush=True)
        summary(tools, times, cpu, inside, results, T)
    return 0


def summary(tools, times, cpu, inside, results, T):
    """Best/median per program, the ratios, and ln Z of each within its errors."""
    best = {t: min(times[t]) for t in tools}
    med = {t: float(np.median(times[t])) for t in tools}
    for t in tools:
        print(f"  {t:6s}: {best[t]:7.2f} s best, {med[t]:7.2f} s median wall-clock; CPU "
              f"{min(cpu[t]):.2f} s best; the AIS alone {min(inside[t]):.2f} s best")
    for t in tools[1:]:
        print(f"  {t}/cyrbm: {best[t] / best['cyrbm']:5.2f}x best to best, "
              f"{med[t] / med['cyrbm']:5.2f}x median to median (CPU seconds: "
              f"{min(cpu[t]) / min(cpu['cyrbm']):.2f}x best to best)")
    # the same algorithm: ln Z within its errors, and the mean log weight (whose standard
    # error, unlike ln Z's, does not rest on a few large weights) within its own
    for t in tools:
        res = results[t][0]
        lo, hi = res.log_Z_interval(3)
        lw = res.log_weights
        same = len({r.log_Z for r in results[t]}) == 1
        print(f"  {t:6s}: ln Z = {res.log_Z:.3f} +- {sd_log_z(res):.3f} (3 sigma {lo:.3f}, "
              f"{hi:.3f}), ESS {res.ess:.1f}; mean ln w {lw.mean():.3f} +- "
              f"{lw.std(ddof=1) / math.sqrt(lw.size):.3f}"
              f"{'' if same else '; ln Z differs between rounds'}")
    for i, t in enumerate(tools):
        for u in tools[i + 1:]:
            a, b = results[t][0], results[u][0]
            z = (a.log_Z - b.log_Z) / math.hypot(sd_log_z(a), sd_log_z(b))
            wa, wb = a.log_weights, b.log_weights
            zw = (wa.mean() - wb.mean()) / math.sqrt(wa.var(ddof=1) / wa.size
                                                    + wb.var(ddof=1) / wb.size)
            print(f"  {t} - {u}: ln Z {a.log_Z - b.log_Z:+.3f} (z = {z:+.2f}), "
                  f"mean ln w {wa.mean() - wb.mean():+.3f} (z = {zw:+.2f})")
    print(f"  [{T} thread{'s' if T > 1 else ''}] target torch/cyrbm >= 8: "
          f"{'met' if best['torch'] / best['cyrbm'] >= 8 else 'NOT met'} (best to best)"
          + ("" if "numpy" not in tools else
             f"; numpy/cyrbm >= 10: {'met' if best['numpy'] / best['cyrbm'] >= 10 else 'NOT met'}"),
          flush=True)


def sd_log_z(res):
    """Standard error of ln Z-hat: sigma-hat / Z-hat (Eq. 12 by the delta method)."""
    return math.exp(res.log_sigma - res.log_Z)


if __name__ == "__main__":
    sys.exit(main())
