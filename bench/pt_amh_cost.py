"""Cost per parameter update of PT and AMH against PCD-1 (issue 11, point 4), 784 x 500.

Trains on MNIST-like digits (bench/mnistlike.py) with ``cyrbm.Trainer(500,
method=..., batch_size=100, epochs=1, monitor_size=0, threads=T)`` and reports the
seconds per update (the epoch's time from the history over its updates; the median of
R epochs, each from a fresh start of the same model, same run) for:

  PCD-1               method="pcd", k=1 (the reference)
  AMH p               method="amh", hop_prob=p (mode set of capacity K, radius R, rebuilt
                      every N updates: its share of the cost is included)
  PT K+1              method="pt", temperatures=K+1 evenly spaced from 0 to 1 (K+1 = 21
                      is CRI10's ladder 0, 0.05, ..., 1), chains = batch size

and the ratios PT / ((K+1) PCD-1) (target <= 1.1) and AMH / PCD-1 (target <= 1.3).
A PT update costs a fixed part (the positive phase and the gradient, storing the
parameters in the engine, the swaps' softplus sums) plus about one engine sweep of the
batch's chains per temperature, so the ratio falls with K+1: the last lines say from
which measured ladder on it holds.
All methods take the same mini-batches; the model is first trained 1 epoch by PCD-1 so
the chains and modes are not those of random weights.  For the BLAS floor of the
gradient itself see bench/train_speed.py.

Usage:
  pt_amh_cost.py [options]

Options:
  --rows=N          Training rows (updates per epoch = N / 100) [default: 3000].
  --ladders=LIST    Temperatures per PT ladder (K+1), comma-separated [default: 2,5,11,21].
  --hop-prob=P      AMH's p [default: 0.1].
  --modes=K            AMH's mode-set capacity [default: 10].
  --radius=R           AMH's Hamming radius [default: 10].
  --rebuild-every=N    AMH's mode-set rebuild period, in updates [default: 100].
  --repeat=R        Epochs per method; the median is reported [default: 3].
  --threads=T       Threads [default: 1].
"""
import os
os.environ.pop("OPENBLAS_L2_SIZE", None)        # see bench/isa_speed.py
import sys
import time

import numpy as np
from docopt import docopt

import cyrbm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mnistlike import mnistlike  # noqa: E402


def per_update(X, model, repeat, threads, **kw):
    times = []
    for r in range(repeat):
        tr = cyrbm.Trainer(500, epochs=1, batch_size=100, learning_rate=0.01, seed=r,
                           threads=threads, monitor_size=0, progress=False, **kw)
        tr.fit(X, model=model.copy() if hasattr(model, "copy") else
               cyrbm.RBM(model.W.copy(), model.vbias.copy(), model.hbias.copy()))
        times.append(tr.history[-1]["seconds"] / (X.shape[0] // 100))
    return float(np.median(times)), tr


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    X = mnistlike(int(args["--rows"]), seed=0)
    threads = int(args["--threads"])
    repeat = int(args["--repeat"])
    start = cyrbm.Trainer(500, method="pcd", epochs=1, batch_size=100, learning_rate=0.05,
                          seed=0, threads=threads, monitor_size=0, progress=False).fit(X)
    print(f"784 x 500, batch 100, {X.shape[0] // 100} updates per epoch, threads {threads}, "
          f"median of {repeat} epochs; kernels {cyrbm.config()['kernels']}")
    pcd, _ = per_update(X, start, repeat, threads, method="pcd", k=1)
    print(f"{'PCD-1':>14}: {1e3 * pcd:8.2f} ms/update")
    p = float(args["--hop-prob"])
    amh, tr = per_update(X, start, repeat, threads, method="amh", hop_prob=p,
                         modes=int(args["--modes"]), radius=int(args["--radius"]),
                         mode_every=int(args["--rebuild-every"]))
    rec = tr.history[-1]
    print(f"{'AMH p=' + format(p, 'g'):>14}: {1e3 * amh:8.2f} ms/update   "
          f"AMH / PCD-1 = {amh / pcd:5.2f}  (target <= 1.3; |L| = {rec['modes']}, "
          f"acceptance {rec['hop_acceptance']})")
    ratios = {}
    for K1 in (int(k) for k in args["--ladders"].split(",")):
        pt, _ = per_update(X, start, repeat, threads, method="pt", temperatures=K1)
        ratios[K1] = pt / (K1 * pcd)
        print(f"{'PT K+1=' + str(K1):>14}: {1e3 * pt:8.2f} ms/update   "
              f"PT / ((K+1) PCD-1) = {ratios[K1]:5.2f}  (target <= 1.1)")
    print(f"AMH p={p:g}: {'meets' if amh / pcd <= 1.3 else 'does NOT meet'} <= 1.3 x PCD-1")
    held = [K1 for K1 in sorted(ratios) if all(ratios[k] <= 1.1 for k in ratios if k >= K1)]
    print("PT: <= 1.1 (K+1) PCD-1 " + (f"for every measured ladder from K+1 = {held[0]} on "
                                        f"(measured: {', '.join(map(str, sorted(ratios)))})"
                                        if held else "for none of the measured ladders"))


if __name__ == "__main__":
    main()
