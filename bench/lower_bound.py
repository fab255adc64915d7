"""How far cyrbm is from the work AIS and the Chib-style estimator must do (issue 37).

AIS (SM08 Sec. 3, Eq. 13-18): the paper setting of bench/ais_speed.py, a 784 x 500 RBM
trained with CD1 on the MNIST-like digits (bench/mnistlike.py, the model cached in
bench/.cache), 100 runs from the base rate, the paper's 14,500 betas.  Per region of the
schedule ([0, 0.5) step 1e-3, [0.5, 0.9) step 1e-4, [0.9, 1] step 1e-5):

* flips: the visible and hidden units that change per run and step, counted on a
  float32 NumPy re-implementation of the same transitions (``--sim-runs`` runs; other
  random numbers, the same chain), and cyrbm's own visible flips from its engine stepped
  one beta at a time (all runs), as a check;
* the work a step of one run must do at least: the weight rows of its flipped units
  (a flipped visible unit: a row of W, 500 adds; a flipped hidden unit: a row of W^T,
  784 adds), one exp per unit for the conditionals and the log weights (float64 for the
  500 hidden units, float32 for the 784 visible ones, as the kernels do), one uniform per
  unit (a 64-bit draw per hidden unit, half of one per visible unit); per step and
  thread, the rows that any of its runs needs once from L2/L3 and the runs' inputs
  (x: 500 and u: 784 floats) once from L2;
* the machine's rates for these operations, measured here by bench/lower_bound_rates.c
  (built with the system's C compiler; exp is vmath.h's, the kernels' own polynomial) on
  as many threads at once as the timing uses;
* bound = max(compute, memory): compute is the sum over the kinds of operation of count /
  rate (they share the core's vector units), memory the bytes / bandwidth; both for the
  whole region (steps x runs) divided among the threads by the aggregate rates;
* cyrbm: its AIS engine (cyrbm._engine.GibbsEngine, the driver of Annealer.log_partition)
  run over the whole schedule, region by region, each region's call timed (wall and
  process CPU time): the regions see the state distribution they have in a real run;
  the ln Z at the end is Annealer's to the last bit (checked);
* the ratio: this VM's speed drifts by up to 2x within minutes (the aggregate row-add rate
  of two threads has measured anywhere from 1.05x to 2x one thread's), so the rates are
  measured again just before each timing of cyrbm (AIS and Chib, best of 2), and the
  tables' bound takes, for each kind of operation, the best rate measured in the run: the
  machine's speed at its fastest, set against cyrbm's best time.  The median and range of
  the per-timing ratios (each timing against the rates measured just before it) are
  printed as well.

Chib-style estimator (MS09 Sec. 3, Figure 1; cyrbm/estimators/chib.py): the 784-500-2000
DBN of bench/chib_speed.py if its cache exists, else a greedy one trained here (the AIS
bench's RBM below, a top RBM of 2,000 units trained with CD1 on its hidden states),
S = 40, repeats = 1.  Per test vector: the sites visited
(hill-climbing passes, S sweeps and S evaluations of T(h* <- h)), each needing the
(784 + 2000)-term product of the softplus differences from the exp table rows (one
multiply-add and one multiply per term, 2,784 floats of the tables from L2/L3, read once
for the ITEMS_IN_FLIGHT items the kernel runs side by side) and one log, and per flip of h1 its 2,784 logistic pairs moved by the same table rows (no exp
since issue 37: a multiply-add, a division and two multiplies per pair, counted here as
at least one row add), each refresh (every 10 sweeps) the active rows of W1^T and W2
added and 2,784 pairs recomputed (one exp each); counted on a NumPy version of the same
chain (``--chib-sim`` vectors).  cyrbm: ``chib_log_prob`` on ``--chib-vectors`` vectors.
Printed beside the bound, not in it: the products' time at the rate with e read from a
16-row block in L2 (as the kernel's passes read the rows), and the rates line also gives
that rate with two sites of one item per pass (lower_bound_rates.c, lb_logprod's modes).

Usage:  python bench/lower_bound.py [--threads 1,2] [--repeat 3] [--skip-chib]
"""
import argparse
import ctypes
import hashlib
import os
import subprocess
import sys
import sysconfig
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from mnistlike import mnistlike  # noqa: E402
from ais_speed import trained_model  # noqa: E402

import cyrbm  # noqa: E402
from cyrbm import RBM, Trainer, _engine  # noqa: E402
from cyrbm.estimators.annealing import (Annealer, ais_streams, base_rate_biases,  # noqa: E402
                                        logmeanexp, make_schedule)
from cyrbm.estimators.chib import chib_log_prob  # noqa: E402
from cyrbm import _anneal  # noqa: E402
from cyrbm._chib import ITEMS_IN_FLIGHT  # noqa: E402

REGIONS = [("[0, 0.5)", 0.0, 0.5), ("[0.5, 0.9)", 0.5, 0.9), ("[0.9, 1]", 0.9, 1.01)]
CACHE = os.path.join(HERE, ".cache")


# ----------------------------------------------------------------------- machine rates
def rates_library():
    src = os.path.join(HERE, "lower_bound_rates.c")
    inc = os.path.join(HERE, os.pardir, "cyrbm", "_kernels")
    with open(src, "rb") as f:
        key = hashlib.sha1(f.read() + open(os.path.join(inc, "vmath.h"), "rb").read()).hexdigest()[:12]
    out = os.path.join(CACHE, f"lower_bound_rates_{key}.so")
    if not os.path.exists(out):
        os.makedirs(CACHE, exist_ok=True)
        cc = os.environ.get("CC") or sysconfig.get_config_var("CC").split()[0] or "cc"
        subprocess.run([cc, "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-I", inc,
                        "-o", out, src], check=True)
    lib = ctypes.CDLL(out)
    f32p = ctypes.POINTER(ctypes.c_float)
    i32p = ctypes.POINTER(ctypes.c_int32)
    L, I, D = ctypes.c_long, ctypes.c_int, ctypes.c_double
    for name, args in [("lb_exp_f32", [I, L, I]), ("lb_exp_f64", [I, L, I]),
                       ("lb_xoshiro", [L, I]), ("lb_row_add", [f32p, I, i32p, I, L, I]),
                       ("lb_stream", [f32p, L, L, I]), ("lb_logprod", [I, L, I, I])]:
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, D
    return lib


def _ptr(a, t):
    return a.ctypes.data_as(ctypes.POINTER(t))


def aligned_f32(values):
    """A float32 copy of ``values`` starting on a 64-byte boundary (the kernels' tables
    are aligned so; a row split across cache lines would halve the load rate)."""
    values = np.asarray(values, dtype=np.float32)
    buf = np.empty(values.size + 16, dtype=np.float32)
    k = (-buf.ctypes.data % 64) // 4
    out = buf[k:k + values.size].reshape(values.shape)
    out[...] = values
    return out


def measure_rates(lib, nt, repeat, ais_bytes, chib_bytes):
    """Aggregate rates of nt threads running at once (best of ``repeat``): per second."""
    rng = np.random.default_rng(0)

    def best(fn, count):
        return count / min(fn() for _ in range(repeat))

    out = {}
    out["exp32"] = best(lambda: lib.lb_exp_f32(4096, 20000, nt), 4096 * 20000 * nt)
    out["exp64"] = best(lambda: lib.lb_exp_f64(4096, 10000, nt), 4096 * 10000 * nt)
    out["rng64"] = best(lambda: lib.lb_xoshiro(100_000_000, nt), 100_000_000 * nt)
    # row sums from L1: 32 rows of 256 floats (32 KB), 64 row indices a pass
    l1 = aligned_f32(rng.standard_normal((32, 256)))
    idx = rng.integers(0, 32, 64).astype(np.int32)
    out["add_l1"] = best(lambda: lib.lb_row_add(_ptr(l1, ctypes.c_float), 256,
                                                _ptr(idx, ctypes.c_int32), 64, 100000, nt),
                         256 * 64 * 100000 * nt)
    # bandwidth from the cache level where a table of the given size lives
    for name, nbytes in [("bw_l2", 256 * 1024), ("bw_ais", ais_bytes), ("bw_chib", chib_bytes)]:
        n = (nbytes // 4 + 127) // 128 * 128
        tab = aligned_f32(rng.standard_normal(n))
        reps = max(2, int(4e9 // (n * 4)))
        out[name] = best(lambda: lib.lb_stream(_ptr(tab, ctypes.c_float), n, reps, nt),
                         4.0 * n * reps * nt)
    out["logprod"] = best(lambda: lib.lb_logprod(2816, 100000, nt, 0), 2816 * 100000 * nt)
    out["logprod2"] = best(lambda: lib.lb_logprod(2816, 50000, nt, 1), 2816 * 50000 * nt)
    out["logprod_l2"] = best(lambda: lib.lb_logprod(2816, 100000, nt, 2), 2816 * 100000 * nt)
    out["logprod_2site"] = best(lambda: lib.lb_logprod(2816, 100000, nt, 3), 2816 * 100000 * nt)
    return out


# ----------------------------------------------------------------------- AIS: the flips
def region_of(betas):
    return np.searchsorted([0.5, 0.9], betas, side="right")


def simulate_ais_flips(model, bA, betas, runs, seed):
    """Flips per step of the AIS transitions (SM08 Eq. 15-17, base rate A) in float32
    NumPy: per region, summed visible and hidden flips, transitions, and each unit's
    flip count (for the rows that a thread's runs need per step)."""
    from scipy.special import expit
    rng = np.random.default_rng(seed)
    W = model.W.astype(np.float32)
    WT = np.ascontiguousarray(W.T)
    b, a = model.vbias.astype(np.float32), model.hbias.astype(np.float32)
    bA32 = bA.astype(np.float32)
    D, M = W.shape
    v = rng.random((runs, D), dtype=np.float32) < expit(bA32)
    h = np.zeros((runs, M), bool)
    K = betas.size - 1
    reg = region_of(betas)
    fv, fh, n = np.zeros(3), np.zeros(3), np.zeros(3)
    uv, uh = np.zeros((3, D)), np.zeros((3, M))
    vf = v.astype(np.float32)
    for k in range(1, K):
        bc = np.float32(betas[k])
        x = vf @ W + a
        hn = rng.random((runs, M), dtype=np.float32) < expit(bc * x)
        y = bc * (hn.astype(np.float32) @ WT + b) + (np.float32(1) - bc) * bA32
        vn = rng.random((runs, D), dtype=np.float32) < expit(y)
        r = reg[k]
        dh, dv = hn != h, vn != v
        fh[r] += dh.sum()
        fv[r] += dv.sum()
        uh[r] += dh.sum(axis=0)
        uv[r] += dv.sum(axis=0)
        n[r] += runs
        h, v, vf = hn, vn, vn.astype(np.float32)
    return dict(fv=fv / n, fh=fh / n, pv=uv / n[:, None], ph=uh / n[:, None], n=n / runs)


def cyrbm_visible_flips(model, bA_stored, betas, runs, seed):
    """cyrbm's own visible flips per run and step and region: the engine stepped one beta
    at a time (1 thread), the visible states compared."""
    eng = _engine.GibbsEngine(bA_stored, None, None, model.W, model.vbias, model.hbias,
                              ais_streams(seed, runs, 0), dtype=model.dtype, n_threads=1,
                              refresh_every=200)
    K = betas.size - 1
    reg = region_of(betas)
    eng.anneal(betas, 0, 1)
    v = eng.visible()
    fv, n = np.zeros(3), np.zeros(3)
    for k in range(1, K):
        eng.anneal(betas, k, k + 1)
        vn = eng.visible()
        fv[reg[k]] += (vn != v).sum()
        n[reg[k]] += runs
        v = vn
    return fv / n


def rows_per_step(p, runs_per_thread):
    """Expected distinct rows that runs_per_thread independent runs need in one step,
    each unit flipping with its own probability p (per run and step)."""
    return float(np.sum(1.0 - (1.0 - p) ** runs_per_thread))


def ais_bound(fl, r, steps, runs, nt, D, M, rates):
    """(compute, memory) seconds of region r: steps x runs run-steps on nt threads."""
    rs = steps * runs
    t_add = rs * (fl["fv"][r] * M + fl["fh"][r] * D) / rates["add_l1"]
    t_exp = rs * (M / rates["exp64"] + D / rates["exp32"])
    t_rng = rs * (M + D / 2) / rates["rng64"]
    rpt = runs / nt
    rows = nt * (rows_per_step(fl["pv"][r], rpt) * M + rows_per_step(fl["ph"][r], rpt) * D) * 4
    t_mem = steps * (rows / rates["bw_ais"] + runs * (M + D) * 4 / rates["bw_l2"])
    return dict(add=t_add, exp=t_exp, rng=t_rng, compute=t_add + t_exp + t_rng, memory=t_mem)


def bound_of(parts):
    """The bound from its parts (ais_bound, chib_bound): max(compute, memory), seconds."""
    return max(parts["compute"], parts["memory"])


def time_regions(model, bA_stored, betas, runs, nt, seed, weights=True):
    """cyrbm's engine over the whole schedule, each region's steps timed (wall, CPU);
    without ``weights``, the last region's steps make the transitions alone (no log
    weights: what they cost)."""
    eng = _engine.GibbsEngine(bA_stored, None, None, model.W, model.vbias, model.hbias,
                              ais_streams(seed, runs, 0), dtype=model.dtype, n_threads=nt,
                              refresh_every=200)
    K = betas.size - 1
    cuts = [0] + [int(np.searchsorted(betas, x)) for x in (0.5, 0.9)] + [K + 1]
    wall, cpu = [], []
    for r in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        if weights or r < 2:
            eng.anneal(betas, cuts[r], cuts[r + 1])
        else:
            eng.steps(betas, cuts[r], cuts[r + 1], K, weights=False)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu, eng.log_weights


# ----------------------------------------------------------------------- Chib-style
def simulate_chib(layers, V, S, seed):
    """The counts of one Chib-style estimate per vector (MS09 Figure 1, as
    cyrbm_chib_items runs it), in NumPy float64: sites visited, flips of h1, refreshes
    (active units then), draws."""
    from chib_speed import site_delta
    low, top = layers
    W1, b1, c1 = (x.astype(np.float64) for x in (low.W, low.vbias, low.hbias))
    W2, c2 = top.W.astype(np.float64), top.hbias.astype(np.float64)
    b2 = top.vbias.astype(np.float64)
    W1T = np.ascontiguousarray(W1.T)
    H1 = W1.shape[1]
    rng = np.random.default_rng(seed)
    tot = dict(sites=0, flips=0, refresh_rows=0, refreshes=0, draws=0, passes=0)
    for v in V.astype(np.float64):
        vw = v @ W1
        x = vw + c1

        def delta(h, y, z, j):
            return site_delta(W1T, W2, vw, b2, h, y, z, j)

        def refresh(h):
            tot["refreshes"] += 1
            tot["refresh_rows"] += int(h.sum())
            return W1 @ h + b1, h @ W2 + c2

        def sweep(h, y, z, order):
            for j in order:
                d = delta(h, y, z, j)
                on = rng.random() < 1.0 / (1.0 + np.exp(-d))
                tot["sites"] += 1
                tot["draws"] += 1
                if on != h[j]:
                    h[j] = on
                    sg = 1.0 if on else -1.0
                    y, z = y + sg * W1T[j], z + sg * W2[j]
                    tot["flips"] += 1
            return y, z

        def walk(h, y, z, hstar):
            h = h.copy()
            for j in range(H1):
                delta(h, y, z, j)
                tot["sites"] += 1
                if h[j] != hstar[j]:
                    h[j] = hstar[j]
                    sg = 1.0 if hstar[j] else -1.0
                    y, z = y + sg * W1T[j], z + sg * W2[j]
                    tot["flips"] += 1

        h = (rng.random(H1) < 1.0 / (1.0 + np.exp(-x))).astype(np.float64)
        tot["draws"] += H1
        y, z = refresh(h)
        for _ in range(100):
            changed = False
            tot["passes"] += 1
            for j in range(H1):
                d = delta(h, y, z, j)
                tot["sites"] += 1
                want = d >= 0 if h[j] else d > 0
                if want != h[j]:
                    h[j] = want
                    sg = 1.0 if want else -1.0
                    y, z = y + sg * W1T[j], z + sg * W2[j]
                    tot["flips"] += 1
                    changed = True
            if not changed:
                break
        hstar = h.copy()
        y, z = refresh(h)
        s = int(rng.integers(1, S + 1))
        fwd, bwd = range(H1), range(H1 - 1, -1, -1)
        y, z = sweep(h, y, z, bwd)
        walk(h, y, z, hstar)
        saved = (h.copy(), y.copy(), z.copy())
        for t in range(s - 1, 0, -1):
            if t % 10 == 0:
                y, z = refresh(h)
            y, z = sweep(h, y, z, bwd)
            walk(h, y, z, hstar)
        h, y, z = saved
        for t in range(s + 1, S + 1):
            if t % 10 == 0:
                y, z = refresh(h)
            y, z = sweep(h, y, z, fwd)
            walk(h, y, z, hstar)
    return {k: v / len(V) for k, v in tot.items()}


def chib_bound(c, n_vec, nt, D, H2, rates):
    w = D + H2
    t_prod = n_vec * c["sites"] * w / rates["logprod"]
    t_add = n_vec * (c["flips"] + c["refresh_rows"]) * w / rates["add_l1"]
    t_exp = n_vec * (c["refreshes"] * w / rates["exp32"] + c["sites"] / rates["exp64"])
    t_rng = n_vec * c["draws"] / rates["rng64"]
    # (a flip reads the table rows its site just read: not counted again).  The kernel
    # runs ITEMS_IN_FLIGHT items side by side and reads a site's rows once for them all:
    # the memory part is that traffic, shared (a bound on this way of doing it; more items
    # side by side would share more)
    t_mem = (n_vec * c["sites"] * w * 4 / ITEMS_IN_FLIGHT
             + n_vec * c["refresh_rows"] * w * 4) / rates["bw_chib"]
    comp = t_prod + t_add + t_exp + t_rng
    # not in the bound: the products at the rate with e from L2, as this kernel's layout
    # reads the rows (an item's pairs in L1, the site block's rows in L2)
    t_prod_l2 = n_vec * c["sites"] * w / rates["logprod_l2"]
    return dict(prod=t_prod, add=t_add, exp=t_exp, rng=t_rng, compute=comp, memory=t_mem,
                prod_l2=t_prod_l2)


def chib_dbn(cache, low, data, epochs):
    """chib_speed.py's DBN when its cache exists; else a greedy 784-500-2000 DBN: the AIS
    bench's RBM below and a top RBM trained with CD1 on its hidden states of the digits
    (SM08 Sec. 5.2's stacking), cached in bench/.cache."""
    from chib_speed import load_dbn
    if os.path.exists(cache + ".1.npz") and os.path.exists(cache + ".2.npz"):
        return load_dbn(cache)
    path = os.path.join(CACHE, f"lower_bound_top2000_e{epochs}.npz")
    if os.path.exists(path):
        top = RBM.load(path)
    else:
        rng = np.random.default_rng(1)
        h = (rng.random((data.shape[0], low.n_hidden)) < low.hidden_probs(data)).astype(np.uint8)
        print(f"training the 500 x 2000 top RBM (CD1, {epochs} epochs) ...", flush=True)
        top = Trainer(2000, method="cd", k=1, epochs=epochs, batch_size=100,
                      learning_rate=0.05, momentum=0.9, weight_decay=2e-4, seed=0,
                      progress=False, monitor_size=0).fit(h)
        top.save(path)
    return [low, top.astype(np.float32)], (f"greedy: the AIS bench's RBM and a top RBM of "
                                           f"{epochs} CD1 epochs")


# ----------------------------------------------------------------------- main
def fmt_rates(rt):
    return (f"exp float32 {rt['exp32'] / 1e9:.2f} G/s, exp float64 {rt['exp64'] / 1e9:.2f} G/s, "
            f"64-bit draws {rt['rng64'] / 1e9:.2f} G/s, row adds from L1 "
            f"{rt['add_l1'] / 1e9:.1f} G floats/s, Chib products {rt['logprod'] / 1e9:.1f} G/s "
            f"(in 2 chains, as the kernel before issue 37: {rt['logprod2'] / 1e9:.1f} G/s; "
            f"e from a 16-row block in L2, as the kernel's passes: "
            f"{rt['logprod_l2'] / 1e9:.1f} G/s; the same, two sites of an item per pass: "
            f"{rt['logprod_2site'] / 1e9:.1f} G/s), "
            f"read bandwidth: 256 KB {rt['bw_l2'] / 1e9:.0f} GB/s, AIS tables "
            f"{rt['bw_ais'] / 1e9:.0f} GB/s, Chib tables {rt['bw_chib'] / 1e9:.0f} GB/s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated [1,2]")
    ap.add_argument("--repeat", type=int, default=3, help="timings per case (best and median)")
    ap.add_argument("--runs", type=int, default=100, help="AIS runs [100]")
    ap.add_argument("--sim-runs", type=int, default=25, help="runs of the NumPy flip count [25]")
    ap.add_argument("--model", default=None, help="RBM file (default: ais_speed.py's cache)")
    ap.add_argument("--chib-vectors", type=int, default=100, help="vectors timed [100]")
    ap.add_argument("--chib-steps", type=int, default=40, help="S [40]")
    ap.add_argument("--chib-sim", type=int, default=2, help="vectors of the NumPy count [2]")
    ap.add_argument("--chib-cache", default=os.path.join(CACHE, "dbn_784_500_2000_t"))
    ap.add_argument("--chib-epochs", type=int, default=3,
                    help="CD1 epochs of the top RBM when it is trained here [3]")
    ap.add_argument("--skip-ais", action="store_true")
    ap.add_argument("--skip-chib", action="store_true")
    args = ap.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    repeat = max(1, args.repeat)

    print(f"cyrbm {cyrbm.__version__}, kernels {cyrbm.config()['kernels']}; load average "
          f"{os.getloadavg()[0]:.2f} at the start", flush=True)
    lib = rates_library()
    D, M, H2 = 784, 500, 2000
    ais_bytes = 4 * (D * 528 + M * D)            # W (rows padded to 528) and W^T
    chib_bytes = 4 * M * (D + H2)                # the exp tables E1, E2
    rates, seen = {}, {}
    for nt in threads:
        rates[nt] = measure_rates(lib, nt, repeat, ais_bytes, chib_bytes)
        seen[nt] = [rates[nt]]
        print(f"rates, {nt} thread(s) at once (aggregate): {fmt_rates(rates[nt])}", flush=True)

    def best_rates(nt):
        """Each rate at its best over the measurements made so far on nt threads."""
        return {k: max(d[k] for d in seen[nt]) for k in seen[nt][0]}

    if not args.skip_ais:
        data = mnistlike(10000, seed=0)
        path = args.model or os.path.join(CACHE, "rbm784x500_cd1.npz")
        model = trained_model(500, path, data).astype(np.float32)
        betas = make_schedule("paper")
        bA_stored = base_rate_biases(data).astype(np.float32).astype(np.float64)
        t0 = time.perf_counter()
        fl = simulate_ais_flips(model, bA_stored, betas, args.sim_runs, seed=7)
        cv = cyrbm_visible_flips(model, bA_stored, betas, args.runs, seed=0)
        print(f"flips counted in {time.perf_counter() - t0:.0f} s ({args.sim_runs} NumPy runs; "
              f"cyrbm's visible flips over its {args.runs} runs)", flush=True)
        ref = Annealer(runs=args.runs, schedule="paper", seed=0, threads=1,
                       progress=False).log_partition(model, base_rate=bA_stored)
        reg = region_of(betas[1:])
        steps = np.array([np.sum(reg == r) for r in range(3)], dtype=float)   # k = 1..K
        rows, paired = [], {}
        for nt in threads:
            walls, cpus, paired[nt] = [], [], []
            for _ in range(repeat):
                rt = measure_rates(lib, nt, 2, ais_bytes, chib_bytes)
                seen[nt].append(rt)
                w, c, lw = time_regions(model, bA_stored, betas, args.runs, nt, seed=0)
                walls.append(w)
                cpus.append(c)
                paired[nt].append([w[r] / bound_of(ais_bound(fl, r, steps[r], args.runs, nt,
                                                             D, M, rt)) for r in range(3)])
                lz = _anneal.base_rate_log_z(bA_stored, M) + logmeanexp(lw)
                if lz != ref.log_Z:
                    raise SystemExit(f"region-by-region ln Z {lz!r} != Annealer's {ref.log_Z!r}")
                print(f"  {nt} thread(s): regions {', '.join(f'{x:.3f}' for x in w)} s wall "
                      f"(CPU {', '.join(f'{x:.3f}' for x in c)} s)", flush=True)
            w, c, _ = time_regions(model, bA_stored, betas, args.runs, nt, seed=0, weights=False)
            print(f"  {nt} thread(s): [0.9, 1] without the log weights {w[2]:.3f} s wall "
                  f"(CPU {c[2]:.3f} s)", flush=True)
            walls, cpus = np.array(walls), np.array(cpus)
            for r, (name, _, _) in enumerate(REGIONS):
                bd = ais_bound(fl, r, steps[r], args.runs, nt, D, M, best_rates(nt))
                bound = bound_of(bd)
                best, med = walls[:, r].min(), float(np.median(walls[:, r]))
                rows.append((nt, name, int(round(steps[r])), fl["fv"][r], cv[r], fl["fh"][r], bd,
                             bound, best, med, float(np.median(cpus[:, r]))))
        print(f"\nln Z = {ref.log_Z:.3f} (Annealer, the same bits region by region); load "
              f"average {os.getloadavg()[0]:.2f}\n")
        for nt in threads:
            print(f"best rates of the run, {nt} thread(s) (the bounds below): "
                  f"{fmt_rates(best_rates(nt))}")
        print()
        print("AIS, 784 x 500 trained RBM, paper schedule, 100 runs: per run-step flips and "
              "draws; seconds per region (bound = max(compute, memory) at the run's best "
              f"rates; cyrbm best of {repeat}, median, CPU median)\n")
        print("| threads | region | steps | visible flips (NumPy / cyrbm) | hidden flips | "
              "draws | bound (s) | cyrbm best / median (s) | CPU (s) | ratio |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for (nt, name, st, fv, cvr, fh, bd, bound, best, med, cpu) in rows:
            print(f"| {nt} | {name} | {st:,} | {fv:.2f} / {cvr:.2f} | {fh:.2f} | {M + D:,} | "
                  f"{bound:.3f} | {best:.3f} / {med:.3f} | {cpu:.3f} | {best / bound:.2f} |")
        print("\nThe bound's parts (s): row adds, exp, draws (compute, summed); memory\n")
        print("| threads | region | row adds | exp | draws | compute | memory |")
        print("|---|---|---|---|---|---|---|")
        for (nt, name, st, fv, cvr, fh, bd, bound, best, med, cpu) in rows:
            print(f"| {nt} | {name} | {bd['add']:.3f} | {bd['exp']:.3f} | {bd['rng']:.3f} | "
                  f"{bd['compute']:.3f} | {bd['memory']:.3f} |")
        print("\nPaired ratios: each timing against the bound from rates measured just before "
              "it; median (range) over the timings\n")
        print("| threads | " + " | ".join(name for name, _, _ in REGIONS) + " |")
        print("|---|" + "---|" * len(REGIONS))
        for nt in threads:
            pr = np.array(paired[nt])
            print(f"| {nt} | " + " | ".join(
                f"{np.median(pr[:, r]):.2f} ({pr[:, r].min():.2f}-{pr[:, r].max():.2f})"
                for r in range(len(REGIONS))) + " |")
        print(flush=True)

    if not args.skip_chib:
        data = mnistlike(10000, seed=0)
        low = trained_model(500, args.model or os.path.join(CACHE, "rbm784x500_cd1.npz"),
                            data).astype(np.float32)
        layers, kind = chib_dbn(args.chib_cache, low, data, args.chib_epochs)
        S = args.chib_steps
        V = mnistlike(max(args.chib_vectors, args.chib_sim), seed=123)
        t0 = time.perf_counter()
        c = simulate_chib(layers, V[:args.chib_sim], S, seed=3)
        print(f"Chib counts from {args.chib_sim} vectors in {time.perf_counter() - t0:.0f} s "
              f"(DBN: {kind}): per vector {c['sites']:.0f} sites ({c['passes']:.1f} climbing "
              f"passes), {c['flips']:.0f} flips, {c['refreshes']:.0f} refreshes of "
              f"{c['refresh_rows'] / max(c['refreshes'], 1):.0f} rows, {c['draws']:.0f} draws",
              flush=True)
        n = args.chib_vectors
        print(f"\nChib-style estimator, 784-500-2000 DBN ({kind}), S = {S}, {n} vectors: "
              f"per sweep of h1 {M * (D + H2):,} softplus terms (one multiply-add and one "
              f"multiply each)\n")
        print("| threads | softplus terms / vector | flips / vector | bound (ms/vector) | "
              "cyrbm best / median (ms/vector) | CPU (ms/vector) | ratio | 10,000 vectors (s) |")
        print("|---|---|---|---|---|---|---|---|")
        parts, chib_paired = [], []
        for nt in threads:
            times, cpus, pr = [], [], []
            for _ in range(repeat):
                seen[nt].append(measure_rates(lib, nt, 2, ais_bytes, chib_bytes))
                bd = chib_bound(c, 1, nt, D, H2, seen[nt][-1])
                t, cc = time.perf_counter(), time.process_time()
                chib_log_prob(layers, V[:n], 0.0, steps=S, repeats=1, seed=0, threads=nt)
                times.append(time.perf_counter() - t)
                cpus.append(time.process_time() - cc)
                pr.append(times[-1] / n / bound_of(bd))
            chib_paired.append(f"{nt} thread(s) {np.median(pr):.2f} ({min(pr):.2f}-{max(pr):.2f})")
            bd = chib_bound(c, 1, nt, D, H2, best_rates(nt))
            bound = bound_of(bd)
            best, med = min(times) / n, float(np.median(times)) / n
            print(f"| {nt} | {c['sites'] * (D + H2):,.0f} | {c['flips']:.0f} | {1e3 * bound:.2f} | "
                  f"{1e3 * best:.2f} / {1e3 * med:.2f} | {1e3 * float(np.median(cpus)) / n:.2f} | "
                  f"{best / bound:.2f} | {1e4 * best:.0f} |", flush=True)
            parts.append(f"{nt} thread(s): products {1e3 * bd['prod']:.2f}, row adds "
                         f"{1e3 * bd['add']:.2f}, exp {1e3 * bd['exp']:.2f}, draws "
                         f"{1e3 * bd['rng']:.3f} (compute {1e3 * bd['compute']:.2f}); memory "
                         f"{1e3 * bd['memory']:.2f}; the products with e from L2 "
                         f"{1e3 * bd['prod_l2']:.2f}")
        print("\nThe bounds use the best rates of the run: " + "; ".join(
            f"{nt} thread(s) Chib products {best_rates(nt)['logprod'] / 1e9:.1f} G/s, e from L2 "
            f"{best_rates(nt)['logprod_l2'] / 1e9:.1f} G/s, Chib tables "
            f"{best_rates(nt)['bw_chib'] / 1e9:.0f} GB/s" for nt in threads))
        print("The bound's parts (ms per vector): " + "; ".join(parts))
        print("\nPaired ratios (each timing against the bound from rates measured just "
              "before it), median (range): " + "; ".join(chib_paired))
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
