"""Where an AIS step spends its time: per-phase cycle counts of the paper setting.

Needs a build with the kernels' phase counters:
    CFLAGS=-DCYRBM_AK_PROFILE pip install .
Runs the paper setting of bench/ais_speed.py (784 x 500 RBM, 100 runs, the paper's
14,500 betas) in windows of 500 steps and prints, per run and step, the TSC cycles of
each phase (summed over threads) and the number of units that flipped.  The VM's speed
drifts from minute to minute, so the lower quartile over the windows of the last
10,000 steps (beta in [0.9, 1], most of the work) is reported, with the median.

Usage:
  ais_profile.py [--threads T] [--model FILE]

Options:
  --threads T    cyrbm threads (default: all cores).
  --model FILE   Model file (default: bench/.cache/rbm784x500_cd1.npz, made by
                 bench/ais_speed.py).
"""
import os
import sys
import time

import numpy as np
from docopt import docopt

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from mnistlike import mnistlike  # noqa: E402

import cyrbm  # noqa: E402
from cyrbm import RBM, _anneal  # noqa: E402
from cyrbm.annealing import ais_streams, base_rate_biases, make_schedule  # noqa: E402

PHASES = ["update of x", "hidden half-step and log weights", "update of u",
          "visible half-step"]


def main(argv=None):
    opts = docopt(__doc__, argv=argv)
    threads = int(opts["--threads"] or cyrbm.config()["threads"])
    path = opts["--model"] or os.path.join(HERE, ".cache", "rbm784x500_cd1.npz")
    if not os.path.exists(path):
        raise SystemExit(f"no model at {path}: run bench/ais_speed.py first, or give --model.")
    model = RBM.load(path).astype(np.float32)
    betas = make_schedule("paper")
    data = mnistlike(10000, seed=0)
    bA = base_rate_biases(data).astype(np.float32).astype(np.float64)
    engine = _anneal.AISEngine(bA, None, None, model.W, model.vbias, model.hbias,
                               ais_streams(0, 100), dtype=np.float32, n_threads=threads,
                               refresh_every=200)
    engine.sample_visible(0.0)
    _anneal._profile()
    K = betas.size - 1
    k, seconds, counts = 1, [], []
    while k <= K:
        k1 = min(K + 1, k + 500)
        t0 = time.perf_counter()
        engine.steps(betas, k, k1, K, True, k == 1)
        t = time.perf_counter() - t0
        c = np.array(_anneal._profile()[:6], dtype=float) / (100 * (k1 - k))
        if betas[k] >= 0.9:
            seconds.append(t / (k1 - k))
            counts.append(c)
        k = k1
    counts = np.array(counts)
    if not counts[:, :4].any():
        raise SystemExit("this build has no phase counters: reinstall with "
                         "CFLAGS=-DCYRBM_AK_PROFILE.")
    q25, q50 = np.percentile(counts, 25, axis=0), np.percentile(counts, 50, axis=0)
    print(f"784 x {model.n_hidden} RBM, 100 runs, {threads} threads; windows of 500 steps at "
          f"beta >= 0.9: {len(seconds)}")
    print(f"time per step x 14,500: lower quartile {np.percentile(seconds, 25) * 14500:.2f} s, "
          f"median {np.median(seconds) * 14500:.2f} s")
    total = q25[:4].sum()
    for name, a, b in zip(PHASES, q25[:4], q50[:4]):
        print(f"  {name:34s} {a:7.0f} cycles per run and step ({a / total:4.0%}), median {b:.0f}")
    print(f"  flipped per run and step: {q50[4]:.0f} hidden, {q50[5]:.0f} visible units")
    return 0


if __name__ == "__main__":
    sys.exit(main())
