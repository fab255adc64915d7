"""PTT against PT and PCD (issue 26, point 4): exact log-likelihoods, several seeds.

Parallel trajectory tempering (Béreux et al. 2025; ``Trainer(method="ptt")``) keeps
chains at the training's own earlier models and swaps states between neighbours; PT
(Cho, Raiko & Ilin 2010; ``method="pt"``) swaps between temperatures of the current
model; PCD-1 (Tieleman 2008) has no swaps.  Two problems small enough for the exact
log-likelihood (``cyrbm.exact_log_partition``, by enumerating the hidden layer):

1. Hu & Yu's Sec. 5.1 toy (bench/paper/hu_yu.py): ten digits, one per class, of the
   bundled 8 x 8 digits, 10 hidden units, batch 10, lr 0.1, momentum 0.5, every method
   from the same start for the same number of updates; mean ln p(v) of the ten digits.
2. The bundled digits: 1,797 8 x 8 digits, the last 297 held out; 16 hidden units,
   batch 100, lr 0.05, momentum 0.5; mean ln p(v) of the training and the test digits.

Each row gives mean ± sd over the seeds (seed s: initial weights, chains, every random
number), the seeds on which the method beats PCD-1 (paired by seed), and the processor
time of all seeds.  PT-10 is Hu & Yu's (10 inverse temperatures evenly from 0.9 to 1);
PT-21 is CRI10's (0, 0.05, ..., 1); PTT uses the batch size of chains per rung and
freezes a rung when the last pair's swap rate falls below 0.3 (up to 32 rungs).

Usage:
  ptt_compare.py [options]

Options:
  --quick           Minutes: toy 1,000 updates, digits 20 epochs, 3 seeds.
  --updates=N       Toy: parameter updates [default: 5000].
  --epochs=E        Digits: epochs [default: 100].
  --seeds=S         Seeds 0 .. S-1 [default: 10].
  --threads=T       Threads [default: 1].
"""
import sys
import time

import numpy as np
from docopt import docopt

import cyrbm
from cyrbm.data.datasets import load_digits

METHODS = [("PCD-1", dict(method="pcd")),
           ("PT-10", dict(method="pt", temperatures=np.linspace(0.9, 1.0, 10))),
           ("PT-21", dict(method="pt")),
           ("PTT", dict(method="ptt"))]


def exact_ll(model, X):
    return float(np.mean(model.log_unnormalized(X)) - cyrbm.exact_log_partition(model))


def train(X, n_hidden, seed, epochs, batch, lr, threads, kw):
    model = cyrbm.RBM.random(X.shape[1], n_hidden, seed=seed, dtype=np.float64, data=X)
    tr = cyrbm.Trainer(n_hidden, epochs=epochs, batch_size=batch, learning_rate=lr,
                       momentum=0.5, weight_decay=0.0, seed=seed, threads=threads,
                       dtype=np.float64, monitor_size=0, progress=False, **kw)
    t0 = time.process_time()
    m = tr.fit(X, model=model)
    return m, tr, time.process_time() - t0


def compare(title, X, T, n_hidden, seeds, epochs, batch, lr, threads):
    print(f"\n{title}")
    results = {}
    for name, kw in METHODS:
        rows, cpu, last = [], 0.0, None
        for s in seeds:
            m, tr, sec = train(X, n_hidden, s, epochs, batch, lr, threads, kw)
            cpu += sec
            rows.append((exact_ll(m, X), exact_ll(m, T) if T is not None else np.nan))
            last = tr.history[-1]
        results[name] = (np.array(rows), cpu, last)
    base = results["PCD-1"][0]
    cols = "train ln p(v)" + ("        test ln p(v)" if T is not None else "")
    print(f"{'method':>7}   {cols}   beats PCD-1 ({'test' if T is not None else 'train'})  "
          f"processor s   last seed's last epoch")
    for name, (arr, cpu, last) in results.items():
        k = 1 if T is not None else 0
        wins = int(np.sum(arr[:, k] > base[:, k]))
        diff = arr[:, k] - base[:, k]
        gain = (f"{wins:2d}/{len(arr)} {diff.mean():+7.3f} ± "
                f"{diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else 0:.3f}")
        extra = ""
        if last.get("swap_rates"):
            r = [x for x in last["swap_rates"] if x is not None]
            extra = (f"rungs {last['rungs']}, " if "rungs" in last else "") + \
                (f"swap rates {min(r):.2f}-{max(r):.2f}" if r else "")
        cells = f"{arr[:, 0].mean():9.3f} ±{arr[:, 0].std():6.3f}"
        if T is not None:
            cells += f"   {arr[:, 1].mean():9.3f} ±{arr[:, 1].std():6.3f}"
        print(f"{name:>7}   {cells}   {gain if name != 'PCD-1' else '':>19}   "
              f"{cpu:11.1f}   {extra}")
    return results


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    quick = args["--quick"]
    seeds = range(3 if quick else int(args["--seeds"]))
    threads = int(args["--threads"])
    X, y = load_digits("all", return_labels=True)
    toy = np.ascontiguousarray(X[[int(np.flatnonzero(y == d)[0]) for d in range(10)]])
    updates = 1000 if quick else int(args["--updates"])
    epochs = 20 if quick else int(args["--epochs"])
    t0 = time.perf_counter()
    compare(f"Hu & Yu Sec. 5.1 toy: 10 digits x 64 pixels, 10 hidden, batch 10, lr 0.1, "
            f"momentum 0.5, {updates} updates, {len(seeds)} seeds; exact mean ln p(v), nats",
            toy, None, 10, seeds, updates, 10, 0.1, threads)
    compare(f"Bundled digits: {X.shape[0] - 297} training, 297 test, 64 x 16, batch 100, "
            f"lr 0.05, momentum 0.5, {epochs} epochs, {len(seeds)} seeds; exact mean ln p(v)",
            np.ascontiguousarray(X[:-297]), np.ascontiguousarray(X[-297:]), 16, seeds, epochs,
            100, 0.05, threads)
    print(f"\n{time.perf_counter() - t0:.0f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
