"""Hu & Yu's toy experiment (Sec. 5.1) on the bundled digits: PCD-1, PT-10 and AMH-p.

Ten training vectors, one per digit 0-9 (the first of each class in the bundled 8 x 8
digits, binarized as cyrbm ships them), an RBM with 10 hidden units, so the exact
log-likelihood is a sum over 2^10 hidden states (``cyrbm.exact_log_partition``).  Each
method trains from the same start for the same number of parameter updates (one
mini-batch of all ten vectors per update, batch_size=10 persistent chains):

  PCD-1       Trainer(method="pcd", k=1)
  PT-10       Trainer(method="pt", temperatures=10 inverse temperatures spaced evenly
              between 0.9 and 1, as Hu & Yu's PT-10), one Gibbs update per chain
  AMH-p       Trainer(method="amh", hop_prob=p, modes=10, radius=R): Hu & Yu's K = 10;
              their R = 80 is for 784 pixels, here R defaults to 7 (80 x 64 / 784)

over --seeds seeds (seed s: initial weights, chains and every random number), and prints
the mean and standard deviation of the exact average log-likelihood (nats per vector)
after each --report updates, and how many seeds each method beats PCD-1 on.

Usage:
  toy_modes.py [options]

Options:
  --updates=N       Parameter updates [default: 5000].
  --report=LIST     Updates at which to report, comma-separated [default: 500,1000,2000,5000].
  --seeds=S         Seeds 0 .. S-1 [default: 10].
  --lr=LR           Learning rate [default: 0.1].
  --momentum=M      Momentum [default: 0.5].
  --hop-probs=LIST  AMH's p values [default: 0.1,1].
  --radius=R        AMH's Hamming radius [default: 7].
  --threads=T       Threads [default: 1].
"""
import os
os.environ.pop("OPENBLAS_L2_SIZE", None)        # see bench/isa_speed.py
import time

import numpy as np
from docopt import docopt

import cyrbm
from cyrbm.datasets import load_digits


def toy_data():
    X, y = load_digits("all", return_labels=True)
    return np.ascontiguousarray(X[[int(np.flatnonzero(y == d)[0]) for d in range(10)]])


def exact_ll(model, X):
    return float(np.mean(model.log_unnormalized(X)) - cyrbm.exact_log_partition(model))


def run(method, X, seed, updates, report, threads, lr, momentum, **kw):
    """The exact average log-likelihood at each update count in ``report``."""
    out = {}
    model = cyrbm.RBM.random(X.shape[1], 10, seed=seed, dtype=np.float64, data=X)

    def cb(rec):
        if rec["epoch"] in report:
            out[rec["epoch"]] = exact_ll(tr.model, X)

    tr = cyrbm.Trainer(10, method=method, epochs=updates, batch_size=10, learning_rate=lr,
                       momentum=momentum, weight_decay=0.0, seed=seed, threads=threads,
                       dtype=np.float64, monitor_size=0, progress=False, callback=cb, **kw)
    tr.fit(X, model=model)
    return out, tr


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    X = toy_data()
    updates = int(args["--updates"])
    report = [int(r) for r in args["--report"].split(",") if int(r) <= updates]
    seeds = range(int(args["--seeds"]))
    threads = int(args["--threads"])
    lr, mom = float(args["--lr"]), float(args["--momentum"])
    methods = [("PCD-1", "pcd", {}),
               ("PT-10", "pt", {"temperatures": np.linspace(0.9, 1.0, 10)})]
    for p in args["--hop-probs"].split(","):
        methods.append((f"AMH-{float(p):g}", "amh", {"hop_prob": float(p), "modes": 10,
                                                     "radius": int(args["--radius"])}))
    print(f"Hu & Yu Sec. 5.1 toy: 10 digits x 64 pixels, 10 hidden units, batch 10, "
          f"lr {lr:g}, momentum {mom:g}, {len(seeds)} seeds; exact mean ln p(v), nats")
    table, extra = {}, {}
    for name, method, kw in methods:
        t0 = time.perf_counter()
        rows = []
        for s in seeds:
            out, tr = run(method, X, s, updates, report, threads, lr, mom, **kw)
            rows.append([out[r] for r in report])
        table[name] = np.array(rows)
        hist = tr.history                 # the last seed's run
        proposed = sum(r.get("hops_proposed", 0) for r in hist)
        accepted = sum(r["hop_acceptance"] * r["hops_proposed"] for r in hist
                       if r.get("hop_acceptance") is not None)
        extra[name] = (time.perf_counter() - t0,
                       accepted / proposed if proposed else None,
                       hist[-1].get("swap_rates"), proposed)
    print(f"{'updates':>10}" + "".join(f"{r:>17}" for r in report))
    for name, arr in table.items():
        cells = "".join(f"{m:>10.3f} ±{s:5.3f}" for m, s in zip(arr.mean(0), arr.std(0)))
        print(f"{name:>10}{cells}")
    base = table["PCD-1"][:, -1]
    print(f"at {report[-1]} updates, seeds on which each method beats PCD-1 "
          f"(paired by seed), and the seconds it took for all seeds:")
    for name, arr in table.items():
        if name == "PCD-1":
            continue
        wins = int(np.sum(arr[:, -1] > base))
        diff = arr[:, -1] - base
        sec, acc, rates, proposed = extra[name]
        note = (f"; last seed: {proposed} hops, acceptance {acc:.3f}" if acc is not None else
                f"; last seed's last swap rates {min(rates):.2f}-{max(rates):.2f}" if rates else "")
        print(f"{name:>10}: {wins}/{len(base)} seeds, mean gain {diff.mean():+.3f} "
              f"± {diff.std(ddof=1) / np.sqrt(len(diff)):.3f} nats ({sec:.1f} s{note})")
    print(f"{'PCD-1':>10}: {extra['PCD-1'][0]:.1f} s")


if __name__ == "__main__":
    main()
