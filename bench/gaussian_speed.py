"""Gaussian RBM speed (issue 22, point 3): cyrbm against plain NumPy and the dense floor.

Murray & Salakhutdinov (2009) Sec. 5.2's first layer is a Gaussian RBM (400 Gaussian
visible units, 2,000 binary hidden units) on whitened image patches, with AIS of 100
runs and 15,000 betas.  Two jobs, each timed three ways in one process, at each thread
count:

* CD-1 epoch (``--rows`` rows, mini-batches of 100):
    cyrbm   ``Trainer(visible="gaussian", method="cd", k=1, epochs=1).fit(data)``
    numpy   the same algorithm in float32 NumPy: p(h | v) by sgemm, Bernoulli draws,
            v | h ~ N(b + sigma W h, sigma^2), p(h | v~), the gradient by two sgemm
            products, the momentum step
    floor   only the five dense float32 products a CD-1 step needs (v W, h W^T, v~ W,
            v^T p, v~^T p~), timed by NumPy: what any dense-matrix CD-1 must spend
* AIS (``--runs`` runs, ``--betas`` betas, base: independent Gaussians fitted to the data):
    cyrbm   ``Annealer(runs, "linear:K").log_partition(model, base_rate="data",
            base_data=...)`` (the base fitted to the data, as NumPy's; ``data=`` would
            also compute the data's mean ln p*, a dense pass over all rows that the
            reference does not make)
    numpy   the same algorithm in float32 NumPy (two sgemm products per beta, softplus,
            uniform and normal draws; log weights in float64)
    floor   only the two dense products per beta, (R x D) @ (D x M) and (R x M) @ (M x D)

The ratios printed are cyrbm / numpy (issue 37's target: below 1) and cyrbm / floor (the
target: at most 1.5).  NumPy's BLAS is limited to the same thread count as cyrbm
(threadpoolctl).  cyrbm, the floor and NumPy run ``--repeat`` times each, alternately, and
the best and the median are reported (this shared VM's speed drifts).  On one thread the ratios
of CPU time are printed too: other programs on a busy machine disturb them less than
wall-clock time.  The model is a random
Gaussian RBM (W ~ N(0, 0.05^2)) on standard normal data: the work does not depend on
the values (no flips are followed on real-valued units).

Usage:
  gaussian_speed.py [--visible D] [--hidden M] [--rows N] [--batch B] [--runs R]
                    [--betas K] [--threads LIST] [--repeat N] [--dtype DT] [--skip-numpy]

Options:
  --visible D     Visible (Gaussian) units [default: 400].
  --hidden M      Hidden units [default: 500].
  --rows N        Training rows of the CD-1 epoch [default: 10000].
  --batch B       Mini-batch size [default: 100].
  --runs R        AIS runs [default: 100].
  --betas K       AIS betas (a linear schedule) [default: 2000].
  --threads LIST  Comma-separated thread counts [default: 1,2].
  --repeat N      Timings of cyrbm, the floor and NumPy, alternately [default: 3].
  --dtype DT      float32 or float64 [default: float32].
  --skip-numpy    Skip the NumPy reference.
"""
import platform
import sys
import time

import numpy as np
from docopt import docopt
from threadpoolctl import threadpool_info, threadpool_limits

import cyrbm
from cyrbm import Trainer
from cyrbm.estimators.annealing import Annealer
from cyrbm.models.gaussian import GaussianRBM


def _expit(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def numpy_cd_epoch(model, data, B, rng, lr=0.01, mom=0.5):
    """One CD-1 epoch in float32 NumPy (the reference)."""
    dt = data.dtype
    W, b, c, s = (a.astype(dt).copy() for a in (model.W, model.vbias, model.hbias, model.sigma))
    vW, vb, vc = np.zeros_like(W), np.zeros_like(b), np.zeros_like(c)
    for r0 in range(0, data.shape[0], B):
        v0 = data[r0:r0 + B]
        p0 = _expit((v0 / s) @ W + c)
        h0 = (rng.random(p0.shape, dtype=dt) < p0).astype(dt)
        vk = b + s * (h0 @ W.T) + s * rng.standard_normal(v0.shape, dtype=dt)
        pk = _expit((vk / s) @ W + c)
        dW = (v0 / s).T @ p0 - (vk / s).T @ pk
        db = (v0 - vk).sum(axis=0) / (s * s)
        dc = p0.sum(axis=0) - pk.sum(axis=0)
        scale = lr / v0.shape[0]
        vW *= mom
        vW += scale * dW
        W += vW
        vb *= mom
        vb += scale * db
        b += vb
        vc *= mom
        vc += scale * dc
        c += vc
    return W


def floor_cd_epoch(W, n_batches, B, dt):
    """The five dense products of a CD-1 step, per mini-batch (float32 GEMMs)."""
    D, M = W.shape
    v, h = np.ones((B, D), dt), np.ones((B, M), dt)
    x, u, g = np.empty((B, M), dt), np.empty((B, D), dt), np.empty((D, M), dt)
    WT = np.ascontiguousarray(W.T)
    for _ in range(n_batches):
        np.matmul(v, W, out=x)
        np.matmul(h, WT, out=u)
        np.matmul(u, W, out=x)
        np.matmul(v.T, x, out=g)
        np.matmul(u.T, h, out=g)


def numpy_ais(model, betas, R, mu, sd, rng):
    """AIS from independent Gaussians N(mu, sd^2) in float32 NumPy; returns ln Z-hat."""
    dt = model.W.dtype
    W, b, c, s = model.W, model.vbias, model.hbias, model.sigma
    D, M = W.shape
    mu32, sd32 = mu.astype(dt), sd.astype(dt)
    v = mu32 + sd32 * rng.standard_normal((R, D), dtype=dt)
    logw = np.zeros(R)

    def log_p(x, q, beta):
        return (beta - 1.0) * qa(v) - beta * q + np.logaddexp(0.0, beta * x).sum(axis=1)

    def qa(v):
        return (0.5 * ((v - mu32) / sd32) ** 2).sum(axis=1, dtype=np.float64)

    for k in range(1, len(betas)):
        beta, prev = betas[k], betas[k - 1]
        x = (v / s) @ W + c
        qb = (0.5 * ((v - b) / s) ** 2).sum(axis=1, dtype=np.float64)
        logw += log_p(x, qb, beta) - log_p(x, qb, prev)
        h = (rng.random((R, M), dtype=dt) < _expit(beta * x)).astype(dt)
        pa = (1.0 - beta) / (sd32 * sd32)
        lam = pa + beta / (s * s)
        m = (pa * mu32 + beta * (b / (s * s) + (h @ W.T) / s)) / lam
        v = (m + rng.standard_normal((R, D), dtype=dt) / np.sqrt(lam)).astype(dt)
    log_z_a = M * np.log(2) + np.sum(np.log(sd)) + D * 0.5 * np.log(2 * np.pi)
    mx = logw.max()
    return log_z_a + mx + np.log(np.mean(np.exp(logw - mx)))


def floor_ais(W, R, K, dt):
    D, M = W.shape
    v, h = np.ones((R, D), dt), np.ones((R, M), dt)
    x, u = np.empty((R, M), dt), np.empty((R, D), dt)
    WT = np.ascontiguousarray(W.T)
    for _ in range(K):
        np.matmul(v, W, out=x)
        np.matmul(h, WT, out=u)


def timed(fn):
    """(result, wall seconds, CPU seconds of this process)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def alternating(fns, repeat):
    """Run each function ``repeat`` times, alternately; each one's (wall, CPU) times (a
    list of pairs, in order), and its last result."""
    times = [[] for _ in fns]
    out = [None] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            out[i], wall, cpu = timed(fn)
            times[i].append((wall, cpu))
    return times, out


def summary(times, k, how):
    """The best or the median of the ``k``-th (0 wall, 1 CPU) of a list of times."""
    return (min if how == "best" else np.median)([t[k] for t in times])


def report(job, t_cy, t_np, t_fl, threads):
    """Wall-clock ratios, best and median of the repeats; on one thread also the CPU-time
    ratios, which a busy shared machine disturbs less (with two threads CPU time adds both
    threads' and includes OpenBLAS's spinning, so it is not shown)."""
    for k, kind in enumerate(("wall", "cpu") if threads == 1 else ("wall",)):
        for how in ("best", "median"):
            cy, fl = summary(t_cy, k, how), summary(t_fl, k, how)
            np_part = "numpy (skipped)"
            if t_np:
                nm = summary(t_np, k, how)
                np_part = (f"numpy {nm:8.3f} s  cyrbm/numpy {cy / nm:5.2f} "
                           f"(target < 1)")
            print(f"  {job:10s} {kind:4s} {how:6s} cyrbm {cy:8.3f} s  floor {fl:8.3f} s  "
                  f"cyrbm/floor {cy / fl:5.2f} (target <= 1.5)   {np_part}", flush=True)


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    D, M = int(args["--visible"]), int(args["--hidden"])
    N, B, R, K = (int(args[k]) for k in ("--rows", "--batch", "--runs", "--betas"))
    dt = np.dtype(args["--dtype"])
    repeat = int(args["--repeat"])
    threads = [int(t) for t in args["--threads"].split(",")]
    rng = np.random.default_rng(0)
    data = rng.standard_normal((N, D)).astype(dt)
    model = GaussianRBM(0.05 * rng.standard_normal((D, M)), np.zeros(D), np.zeros(M),
                        dtype=dt)
    blas = "; ".join(f"{i.get('internal_api')} {i.get('version')}"
                     for i in threadpool_info() if i.get("user_api") == "blas")
    print(f"Gaussian RBM {D} x {M} ({dt.name}); CD-1 epoch of {N} rows in batches of {B}; "
          f"AIS {R} runs x {K} betas")
    print(f"machine: {platform.processor() or platform.machine()}, kernels "
          f"{cyrbm.config()['kernels']}, BLAS {blas}", flush=True)
    betas = f"linear:{K}"
    for T in threads:
        print(f"threads {T}:")
        with threadpool_limits(limits=T, user_api="blas"):
            def cy_cd():
                return Trainer(M, visible="gaussian", method="cd", k=1, epochs=1,
                               batch_size=B, learning_rate=0.01, momentum=0.5, seed=1,
                               threads=T, dtype=dt, progress=False,
                               monitor_size=0).fit(data, model=model.copy())

            fns = [cy_cd, lambda: floor_cd_epoch(model.W, -(-N // B), B, dt)]
            if not args["--skip-numpy"]:
                fns.append(lambda: numpy_cd_epoch(model, data, B, np.random.default_rng(1)))
            times, _ = alternating(fns, repeat)
            report("CD-1 epoch", times[0], times[2] if len(times) > 2 else None, times[1], T)

            ann = Annealer(runs=R, schedule=betas, seed=1, threads=T, progress=False)
            mu = data.mean(axis=0).astype(np.float64)
            sd = np.maximum(data.std(axis=0).astype(np.float64), 1e-3)
            fns = [lambda: ann.log_partition(model, base_rate="data", base_data=data),
                   lambda: floor_ais(model.W, R, K - 1, dt)]
            if not args["--skip-numpy"]:
                fns.append(lambda: numpy_ais(model, ann.betas, R, mu, sd,
                                             np.random.default_rng(1)))
            times, out = alternating(fns, repeat)
            res = out[0]
            lz_np = out[2] if len(out) > 2 else float("nan")
            report("AIS", times[0], times[2] if len(times) > 2 else None, times[1], T)
            print(f"  (ln Z: cyrbm {res.log_Z:.3f} (ESS {res.ess:.1f}), numpy {lz_np:.3f})",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
