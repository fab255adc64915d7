"""AIS when many units flip per step: an untrained model against the dense floor.

An untrained 784 x 500 RBM (W ~ N(0, 0.01^2), zero biases) and a uniform schedule of
4,000 betas make about half the hidden units flip at every step, where updating the
inputs by the flipped rows costs as much as recomputing them.  cyrbm's AIS (100 runs,
base rate from random data) is timed against the dense floor (the two dense products
per beta, (100 x 784) @ (784 x 500) and (100 x 500) @ (500 x 784), with NumPy's BLAS in
the same dtype), alternately, ``--repeat`` times, in float32 and float64.

Usage:
  ais_dense.py [--repeat N] [--betas K] [--runs R] [--threads T]

Options:
  --repeat N   Timings of each, taken alternately [default: 3].
  --betas K    Uniform schedule length [default: 4000].
  --runs R     AIS runs [default: 100].
  --threads T  cyrbm threads (default: all cores).
"""
import os
import sys
import time

import numpy as np
from docopt import docopt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cyrbm  # noqa: E402
from cyrbm.estimators.annealing import Annealer  # noqa: E402
from ais_speed import blas_floor, blas_info  # noqa: E402


def main(argv=None):
    opts = docopt(__doc__, argv=argv)
    repeat, K, runs = int(opts["--repeat"]), int(opts["--betas"]), int(opts["--runs"])
    threads = None if opts["--threads"] is None else int(opts["--threads"])
    rng = np.random.default_rng(0)
    D, M = 784, 500
    W = 0.01 * rng.standard_normal((D, M))
    data = (rng.random((1000, D)) < 0.13).astype(np.uint8)
    print(f"cyrbm {cyrbm.__version__}, kernels {cyrbm.config()['kernels']}, threads "
          f"{threads or cyrbm.config()['threads']}; BLAS: {blas_info()}")
    print(f"setting: untrained {D} x {M} RBM, {runs} runs, uniform schedule of {K} betas")
    for dtype in (np.float32, np.float64):
        model = cyrbm.RBM(W, np.zeros(D), np.zeros(M), dtype=dtype)
        tc, tf = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            res = Annealer(runs=runs, schedule=f"linear:{K}", seed=0, threads=threads,
                           progress=False).log_partition(model, base_rate="data", data=data)
            tc.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            blas_floor(D, M, runs, K - 1, seed=1, dtype=dtype)
            tf.append(time.perf_counter() - t0)
        name = np.dtype(dtype).name
        print(f"{name}: cyrbm {min(tc):.2f} s best / {np.median(tc):.2f} median, floor "
              f"{min(tf):.2f} s best / {np.median(tf):.2f} median: cyrbm takes "
              f"{min(tc) / min(tf):.2f} (best) / {np.median(tc) / np.median(tf):.2f} (median) "
              f"of the floor's time; ln Z = {res.log_Z:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
