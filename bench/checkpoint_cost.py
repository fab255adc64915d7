"""The share of a training run spent writing checkpoints (issue 20).

Trains the issue's toy run -- PCD, 10 hidden units, batch 10, 2000 epochs on 10 rows
(the first 10 bundled digits, 64 visible units) -- with no checkpoint, with the default
cadence (at most one per ``checkpoint_seconds`` = 5 s, and one at the end) and with one
after every epoch (the old default, ``checkpoint_seconds=0``), alternately --repeat
times in one process.  Prints, per cadence, the median wall time of ``Trainer.fit``, the
checkpoints written, the time spent writing them (``Trainer._save_checkpoint`` timed
with time.perf_counter) and that time's share of the run.

Usage:
  checkpoint_cost.py [--epochs=E] [--repeat=R] [--threads=T]

Options:
  --epochs=E     Epochs [default: 2000].
  --repeat=R     Runs of each cadence [default: 3].
  --threads=T    OpenMP threads [default: 1].
"""
import os
import statistics
import tempfile
import time

from docopt import docopt

import cyrbm
from cyrbm.training.trainer import Trainer

CADENCES = [("none", None), ("default (5 s)", {}), ("every epoch", {"checkpoint_seconds": 0})]


def timed_saves(trainer):
    """Wrap ``trainer._save_checkpoint`` to add up its time; returns the tally."""
    tally = {"n": 0, "seconds": 0.0}
    save = trainer._save_checkpoint

    def timed(state, fingerprint):
        t0 = time.perf_counter()
        save(state, fingerprint)
        tally["seconds"] += time.perf_counter() - t0
        tally["n"] += 1

    trainer._save_checkpoint = timed
    return tally


def run_once(X, epochs, threads, cadence, workdir):
    checkpoint = None if cadence is None else os.path.join(workdir, "toy.ckpt.npz")
    if checkpoint is not None and os.path.exists(checkpoint):
        os.remove(checkpoint)
    trainer = Trainer(10, method="pcd", epochs=epochs, batch_size=10, seed=0,
                      threads=threads, checkpoint=checkpoint, **(cadence or {}))
    tally = timed_saves(trainer)
    t0 = time.perf_counter()
    trainer.fit(X)
    return time.perf_counter() - t0, tally["n"], tally["seconds"]


def main():
    args = docopt(__doc__)
    epochs, repeat, threads = (int(args[k]) for k in ("--epochs", "--repeat", "--threads"))
    X = cyrbm.load_data("digits")[:10]
    print(f"toy run: PCD, {X.shape[1]} x 10 RBM, batch 10, {epochs} epochs on {X.shape[0]} "
          f"rows, {threads} thread(s); median of {repeat} runs, alternated")
    results = {label: [] for label, _ in CADENCES}
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(repeat):
            for label, cadence in CADENCES:
                results[label].append(run_once(X, epochs, threads, cadence, workdir))
    base = statistics.median(r[0] for r in results["none"])
    for label, _ in CADENCES:
        runs = results[label]
        wall = statistics.median(r[0] for r in runs)
        n = statistics.median(r[1] for r in runs)
        saving = statistics.median(r[2] for r in runs)
        print(f"{label:>14}: {wall:7.2f} s, {n:6.0f} checkpoints taking {saving:6.3f} s = "
              f"{100 * saving / wall:5.1f}% of the run ({wall / base:.2f} x no checkpoints)")


if __name__ == "__main__":
    main()
