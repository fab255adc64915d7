"""Exact ln Z of a 784 x 20 RBM: cyrbm's Gray-code enumeration against a NumPy sum.

Both sum over the 2^20 hidden states of the same model in one process:
ln Z = logsumexp_h [a.h + sum_i softplus(b_i + (W h)_i)].  The NumPy reference computes
the visible activations with a BLAS product for blocks of hidden states.  Target (issue
"Annealer"): cyrbm under 2 seconds.

Usage:
  exact_speed.py [--hidden M] [--threads T] [--repeat R]

Options:
  --hidden M    Hidden units (the enumerated layer) [default: 20].
  --threads T   cyrbm threads (default: all cores).
  --repeat R    Runs of cyrbm; the minimum is reported [default: 3].
"""
import time

import numpy as np
from docopt import docopt

import cyrbm


def numpy_log_partition(model, block=1 << 14):
    W, b, a = (np.asarray(x, dtype=np.float64) for x in (model.W, model.vbias, model.hbias))
    M = W.shape[1]
    bits = (1 << np.arange(M))
    parts = []
    for start in range(0, 1 << M, block):
        H = ((np.arange(start, min(start + block, 1 << M))[:, None] & bits) > 0).astype(np.float64)
        parts.append(np.logaddexp.reduce(H @ a + np.logaddexp(0, H @ W.T + b).sum(1)))
    return float(np.logaddexp.reduce(parts))


def main():
    opts = docopt(__doc__)
    M = int(opts["--hidden"])
    threads = None if opts["--threads"] is None else int(opts["--threads"])
    rng = np.random.default_rng(0)
    model = cyrbm.RBM(0.1 * rng.standard_normal((784, M)), rng.normal(-1, 1, 784),
                      rng.standard_normal(M), dtype=np.float32)
    best = float("inf")
    for _ in range(int(opts["--repeat"])):
        t0 = time.perf_counter()
        log_z = cyrbm.exact_log_partition(model, threads=threads)
        best = min(best, time.perf_counter() - t0)
    t0 = time.perf_counter()
    ref = numpy_log_partition(model)
    t_ref = time.perf_counter() - t0
    print(f"784 x {M} RBM, 2^{M} hidden states")
    print(f"cyrbm : {best:8.3f} s   ln Z = {log_z:.9f}")
    print(f"numpy : {t_ref:8.3f} s   ln Z = {ref:.9f}   (difference {abs(log_z - ref):.2e})")
    print(f"cyrbm is {t_ref / best:.1f}x faster; target under 2 s: {'met' if best < 2 else 'NOT met'}")


if __name__ == "__main__":
    main()
