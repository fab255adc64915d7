"""Speed of the Chib-style estimator (Murray & Salakhutdinov 2009) on a 784-500-2000 DBN:
test vectors per second with S = 40 steps, and the projected time for 10,000.

Reference in the same run: the same estimator in plain NumPy (float64, the same
single-site updates with the kept inputs moved by one weight row per flip and the
softplus sums recomputed per site), timed on a few vectors.  The DBN is the one
the former bench/chib_digits.py trained (its cache), else random weights of the same sizes.
The paper took about 50 minutes for 50 vectors with S = 40 (MS09 Sec. 5.1).

Usage:
  chib_speed.py [--vectors N] [--steps S] [--threads T] [--numpy N] [--cache FILE] [--repeat K]

Options:
  --vectors N   Test vectors timed [default: 200].
  --steps S     Markov chain steps [default: 40].
  --threads T   cyrbm threads (default: all cores).
  --numpy N     Vectors for the NumPy reference (0: skip) [default: 1].
  --cache FILE  Trained DBN of the former chib_digits.py (default: .cache/dbn_784_500_2000_t
                beside this script, wherever it is run from).
  --repeat K    Timings of cyrbm (best and median reported) [default: 3].
"""
import os
os.environ.pop("OPENBLAS_L2_SIZE", None)     # this VM's 512 slows OpenBLAS sgemm ~10x
import sys
import time

import numpy as np
from docopt import docopt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mnistlike import mnistlike  # noqa: E402

import cyrbm  # noqa: E402
from cyrbm.estimators.chib import chib_log_prob  # noqa: E402


def load_dbn(cache):
    f1, f2 = cache + ".1.npz", cache + ".2.npz"
    if os.path.exists(f1) and os.path.exists(f2):
        return [cyrbm.RBM.load(f1), cyrbm.RBM.load(f2)], "trained (former chib_digits.py)"
    rng = np.random.default_rng(0)
    low = cyrbm.RBM(0.05 * rng.standard_normal((784, 500)), -1 + 0.5 * rng.standard_normal(784),
                    -1 + 0.5 * rng.standard_normal(500), dtype=np.float32)
    top = cyrbm.RBM(0.05 * rng.standard_normal((500, 2000)), 0.5 * rng.standard_normal(500),
                    -1 + 0.5 * rng.standard_normal(2000), dtype=np.float32)
    return [low, top], "random weights"


def sp(x):
    return np.logaddexp(0.0, x)


def site_delta(W1T, W2, vw, b2, h, y, z, j):
    """ln P*(v, h1 with h_j = 1) - ln P*(v, h1 with h_j = 0), the top layer summed out
    (MS09 Sec. 3), from the inputs y = W1 h1 + b1 and z = W2^T h1 + c2 (NumPy)."""
    w1, w2 = W1T[j], W2[j]
    if h[j]:
        yon, yoff, zon, zoff = y, y - w1, z, z - w2
    else:
        yon, yoff, zon, zoff = y + w1, y, z + w2, z
    return vw[j] + b2[j] - (sp(yon) - sp(yoff)).sum() + (sp(zon) - sp(zoff)).sum()


def numpy_estimate(layers, v, log_z, S, rng):
    """MS09 Figure 1 in plain NumPy (float64): the same algorithm, vectorized per site."""
    low, top = layers
    W1, b1, c1 = (x.astype(np.float64) for x in (low.W, low.vbias, low.hbias))
    W2, b2, c2 = (x.astype(np.float64) for x in (top.W, top.vbias, top.hbias))
    W1T = np.ascontiguousarray(W1.T)
    v = v.astype(np.float64)
    vw = v @ W1
    H1 = W1.shape[1]

    def inputs(h):
        return W1 @ h + b1, h @ W2 + c2

    def delta(h, y, z, j):
        return site_delta(W1T, W2, vw, b2, h, y, z, j)

    def flip(h, y, z, j, on):
        h[j] = on
        s = 1.0 if on else -1.0
        return y + s * W1T[j], z + s * W2[j]

    def sweep(h, y, z, order):
        for j in order:
            on = rng.random() < 1.0 / (1.0 + np.exp(-delta(h, y, z, j)))
            if on != h[j]:
                y, z = flip(h, y, z, j, on)
        return y, z

    def log_t(h, y, z, hstar):
        h = h.copy()
        lt = 0.0
        for j in range(H1):
            d = delta(h, y, z, j)
            lt -= sp(-d if hstar[j] else d)
            if h[j] != hstar[j]:
                y, z = flip(h, y, z, j, hstar[j])
        return lt

    h = (rng.random(H1) < 1.0 / (1.0 + np.exp(-(vw + c1)))).astype(np.float64)
    y, z = inputs(h)
    for _ in range(100):
        changed = False
        for j in range(H1):
            d = delta(h, y, z, j)
            want = d >= 0 if h[j] else d > 0
            if want != h[j]:
                y, z = flip(h, y, z, j, want)
                changed = True
        if not changed:
            break
    hstar = h.copy()
    y, z = inputs(h)
    lpstar = (v * y).sum() - sp(y).sum() + b2 @ h + sp(z).sum()
    s = int(rng.integers(1, S + 1))
    fwd, bwd = range(H1), range(H1 - 1, -1, -1)
    logt = {}
    y, z = sweep(h, y, z, bwd)
    logt[s] = log_t(h, y, z, hstar)
    saved = (h.copy(), y.copy(), z.copy())
    for t in range(s - 1, 0, -1):
        y, z = sweep(h, y, z, bwd)
        logt[t] = log_t(h, y, z, hstar)
    h, y, z = saved
    for t in range(s + 1, S + 1):
        y, z = sweep(h, y, z, fwd)
        logt[t] = log_t(h, y, z, hstar)
    lt = np.array(list(logt.values()))
    return lpstar - log_z - (lt.max() + np.log(np.mean(np.exp(lt - lt.max()))))


def main():
    a = docopt(__doc__)
    n, S = int(a["--vectors"]), int(a["--steps"])
    threads = int(a["--threads"]) if a["--threads"] else None
    cache = a["--cache"] or os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache",
                                         "dbn_784_500_2000_t")
    layers, kind = load_dbn(cache)
    V = mnistlike(n, seed=123)
    log_z = 0.0          # ln Z only shifts the estimates; it does not change the work
    print(f"784-500-2000 DBN ({kind}, {layers[0].dtype}), S = {S}, {n} MNIST-like test vectors")
    times = []
    for _ in range(int(a["--repeat"])):
        t = time.perf_counter()
        res = chib_log_prob(layers, V, log_z, steps=S, repeats=1, seed=0, threads=threads)
        times.append(time.perf_counter() - t)
    best, med = min(times), float(np.median(times))
    rate = n / best
    print(f"cyrbm: {best:.2f} s best, {med:.2f} s median for {n} vectors ({res.threads} threads): "
          f"{rate:.1f} vectors/s, 10,000 vectors in {10000 / rate:.0f} s "
          f"({10000 / rate / 60:.1f} min; median {10000 / (n / med) / 60:.1f} min)")
    m = int(a["--numpy"])
    if m > 0:
        rng = np.random.default_rng(0)
        t = time.perf_counter()
        for v in V[:m]:
            numpy_estimate(layers, v, log_z, S, rng)
        tn = (time.perf_counter() - t) / m
        print(f"NumPy reference: {tn:.1f} s per vector (10,000 in {tn * 10000 / 3600:.0f} h): "
              f"cyrbm is {tn * rate:.0f}x faster")
    print("MS09: about 50 minutes for 50 vectors (60 s a vector) on a 3 GHz Xeon")


if __name__ == "__main__":
    main()
