"""The tracked ln Z curve against fresh AIS at checkpoints (issue 26, point 2).

Trains a binary RBM with cyrbm's public API and ln Z tracked through training,
``cyrbm.Trainer(H, epochs=E, track_logz=True, seed=0, ...).fit(X, test_data=T)`` (the
default ladder: a model at the end of every epoch, ``cyrbm.defaults.TRACK_RUNS`` runs
of ``TRACK_BETAS`` betas each way between neighbours), keeps the model of --checkpoints
evenly spaced epochs (the callback copies ``trainer.model``), and estimates each one's
ln Z afresh by AIS from the data's base rate (``cyrbm.Annealer(runs, schedule,
seed=1).log_partition(model, base_rate="data", data=X)``; the full size is SM08's 100
runs of 14,500 betas).  It prints both with their standard errors (AIS's by the delta
method, sigma-hat / Z-hat of SM08 Eq. 12) and z = (tracked - AIS) / sqrt(se1^2 + se2^2):
agreement within the errors of both is |z| < 3.

Full size (issue 26): ``python bench/track_accuracy.py mnistlike --rows 60000 --epochs
20 --checkpoints 5``.  A reduced size runs in minutes: ``--rows 10000 --epochs 5``.

Usage:
  track_accuracy.py [DATA] [options]

Arguments:
  DATA                A data file or bundled data set for cyrbm.load_data (binarized at
                      0.5; its last --test rows are the test data), or "mnistlike"
                      (bench/mnistlike.py) [default: mnistlike].

Options:
  --rows=N            Training rows of mnistlike [default: 10000].
  --test=N            Test rows [default: 2000].
  --hidden=H          Hidden units [default: 500].
  --epochs=E          Epochs [default: 5].
  --lr=LR             Learning rate [default: 0.05].
  --checkpoints=C     Checkpoints measured afresh by AIS [default: 5].
  --runs=R            Fresh AIS runs [default: 100].
  --schedule=S        Fresh AIS schedule [default: paper].
  --refine=N          The ladder's track_refine (links short of overlap run again with
                      more betas, up to N times) [default: 0].
  --track-runs=R      The ladder's runs each way [default: 16].
  --overlap=X         The ladder's track_overlap (also a rung when the overlap with the
                      last one falls below X; default: none).
  --method=M          Training method [default: cd].
  --threads=T         cyrbm threads (default: all cores).
  -h --help           Show this text.
"""
import math
import os
import sys
import time

import numpy as np
from docopt import docopt

import cyrbm
from cyrbm import defaults

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))     # mnistlike


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    H, E, C = int(args["--hidden"]), int(args["--epochs"]), int(args["--checkpoints"])
    n_test = int(args["--test"])
    threads = None if args["--threads"] is None else int(args["--threads"])
    if args["DATA"] in (None, "mnistlike"):
        from mnistlike import mnistlike
        X = mnistlike(int(args["--rows"]) + n_test, seed=0)
        source = "MNIST-like digits (bench/mnistlike.py)"
    else:
        X = cyrbm.load_data(args["DATA"], binarize="threshold")
        source = args["DATA"]
    X, T = X[:-n_test], X[-n_test:]
    marks = sorted({int(round(e)) for e in np.linspace(1, E, C)})
    print(f"data: {source}, {X.shape[0]} x {X.shape[1]} (test {T.shape[0]}); {H} hidden, CD-1, "
          f"{E} epochs, lr {args['--lr']}, {args['--method']}; tracking every epoch, "
          f"{args['--track-runs']} runs of {defaults.TRACK_BETAS} betas each way, refined up "
          f"to {args['--refine']} times, overlap rungs {args['--overlap']}; fresh AIS: {args['--runs']} runs, "
          f"schedule {args['--schedule']}, at epochs {marks}")
    kept = {}
    trainer = cyrbm.Trainer(H, epochs=E, learning_rate=float(args["--lr"]), monitor_size=0,
                            progress=False, seed=0, threads=threads, track_logz=True,
                            track_refine=int(args["--refine"]),
                            track_overlap=None if args["--overlap"] is None
                            else float(args["--overlap"]),
                            track_runs=int(args["--track-runs"]), method=args["--method"],
                            callback=lambda r: kept.__setitem__(r["epoch"], (
                                trainer.model.copy(), r)) if r["epoch"] in marks else None)
    t0, c0 = time.perf_counter(), time.process_time()
    trainer.fit(X, test_data=T)
    print(f"training with tracking: {time.perf_counter() - t0:.1f} s wall, "
          f"{time.process_time() - c0:.1f} s processor")
    betas = [r["betas"] for h in trainer.history for r in h.get("tracked", []) if "betas" in r]
    flagged = sum(1 for h in trainer.history for r in h.get("tracked", [])
                  if r.get("overlap_warning"))
    print(f"links: {len(betas)}, betas per link {min(betas)}-{max(betas)}, "
          f"{flagged} flagged for poor overlap\n")
    annealer = cyrbm.Annealer(int(args["--runs"]), args["--schedule"], seed=1, threads=threads,
                              progress=False)
    print(" epoch   tracked ln Z (se)     fresh AIS ln Z (se)     z     test ln p (tracked)")
    worst = 0.0
    for epoch in marks:
        model, record = kept[epoch]
        t1 = time.perf_counter()
        ais = annealer.log_partition(model, base_rate="data", data=X)
        se_ais = math.exp(ais.log_sigma - ais.log_Z)
        z = (record["log_Z"] - ais.log_Z) / math.hypot(record["log_Z_se"], se_ais)
        worst = max(worst, abs(z))
        print(f" {epoch:5d}   {record['log_Z']:9.3f} ({record['log_Z_se']:.3f})   "
              f"{ais.log_Z:9.3f} ({se_ais:.3f}) {time.perf_counter() - t1:5.0f} s  {z:+6.2f}   "
              f"{record['log_likelihood']:.3f}"
              + ("  overlap warning" if record.get("overlap_warning") else ""))
    print(f"\nlargest |z| {worst:.2f}: {'agree' if worst < 3 else 'DISAGREE'} within the "
          f"errors of both (|z| < 3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
