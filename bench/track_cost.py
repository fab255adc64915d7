"""The cost of tracking ln Z through training (issue 26, target: at most 10%).

Trains the same RBM three times in one process with cyrbm's public API: without
tracking, ``cyrbm.Trainer(H, epochs=E, batch_size=B, monitor_size=0, progress=False,
seed=0).fit(X)``; with ``track_logz=True`` (the default ladder: a model at the end of
every epoch, ``cyrbm.defaults.TRACK_RUNS`` runs of ``TRACK_BETAS`` betas each way between
neighbours); and with the test log-likelihood of every rung too, ``fit(X,
test_data=T)``.  It prints the seconds of each whole ``fit``, wall clock and the
process's CPU time (``time.process_time``: all its threads; steadier than the wall clock
when other programs share the cores), the minimum of each over --repeat alternating
runs, the extra shares, and the tracked curve (ln Z +- 3 se, the test
log-likelihood, the overlap and betas of each link: a link short of overlap is run
again with more betas, cyrbm.training.tracking).  The tracked runs also pay for their first
rung (the initial model from its W = 0 copy).  The test log-likelihood costs one
ln p*(v) per test row and rung (its share grows with --test).

Usage:
  track_cost.py [DATA] [options]

Arguments:
  DATA                A data file or bundled data set for cyrbm.load_data (grey data are
                      binarized at 0.5; its last --test rows are the test data), or
                      "mnistlike" (bench/mnistlike.py, --rows + --test images);
                      default: synthetic Bernoulli data, as bench/train_speed.py.

Options:
  --rows=N            Training rows of synthetic data [default: 60000].
  --test=N            Test rows [default: 10000].
  --visible=D         Visible units of synthetic data [default: 784].
  --density=P         Probability of a 1 in synthetic data [default: 0.13].
  --hidden=H          Hidden units [default: 500].
  --batch=B           Mini-batch size [default: 100].
  --epochs=E          Epochs of each fit [default: 3].
  --track-every=N     Updates between the ladder's models (default: every epoch).
  --refine=N          Trainer's track_refine (default: cyrbm.defaults.TRACK_REFINE).
  --overlap=X         Trainer's track_overlap (default: none).
  --repeat=R          Alternating runs of each; the minimum is reported [default: 2].
  --threads=T         cyrbm threads (default: all cores).
  -h --help           Show this text.
"""
import os
import platform
import sys
import time

import numpy as np
from docopt import docopt

import cyrbm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))     # mnistlike
from cyrbm import defaults


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    H, B, E = int(args["--hidden"]), int(args["--batch"]), int(args["--epochs"])
    n_test, repeat = int(args["--test"]), int(args["--repeat"])
    every = None if args["--track-every"] is None else int(args["--track-every"])
    refine = defaults.TRACK_REFINE if args["--refine"] is None else int(args["--refine"])
    overlap = None if args["--overlap"] is None else float(args["--overlap"])
    threads = None if args["--threads"] is None else int(args["--threads"])
    if args["DATA"] == "mnistlike":
        from mnistlike import mnistlike
        X = mnistlike(int(args["--rows"]) + n_test, seed=0)
        X, T = X[:-n_test], X[-n_test:]
        source = "MNIST-like digits (bench/mnistlike.py)"
    elif args["DATA"]:
        X = cyrbm.load_data(args["DATA"], binarize="threshold")
        X, T = X[:-n_test], X[-n_test:]
        source = args["DATA"]
    else:
        rng = np.random.default_rng(0)
        n, D, p = int(args["--rows"]), int(args["--visible"]), float(args["--density"])
        X = (rng.random((n + n_test, D), dtype=np.float32) < p).astype(np.uint8)
        X, T = X[:n], X[n:]
        source = f"synthetic Bernoulli({p})"
    cfg = cyrbm.config()
    print(f"data: {source}, {X.shape[0]} x {X.shape[1]} (test {T.shape[0]} rows); {H} hidden, "
          f"batch {B}, {E} epochs; tracking: a model every "
          f"{'epoch' if every is None else f'{every} updates'}, {defaults.TRACK_RUNS} runs "
          f"of {defaults.TRACK_BETAS} betas each way, {defaults.TRACK_BURN_IN} burn-in sweeps, "
          f"refine {refine}, overlap rungs {overlap}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"cyrbm {cfg['version']}, {threads or cfg['threads']} threads, kernels "
          f"{cfg['kernels']}; best of {repeat}, alternating")

    def fit(track, test):
        trainer = cyrbm.Trainer(H, epochs=E, batch_size=B, monitor_size=0, progress=False,
                                seed=0, threads=threads, track_logz=track, track_every=every,
                                track_refine=refine, track_overlap=overlap)
        t0, c0 = time.perf_counter(), time.process_time()
        trainer.fit(X, test_data=T if test else None)
        return np.array([time.perf_counter() - t0, time.process_time() - c0]), trainer

    best = {key: np.full(2, np.inf) for key in ("plain", "ln Z", "ln Z and test")}
    trainer = None
    for _ in range(repeat):
        best["plain"] = np.minimum(best["plain"], fit(False, False)[0])
        best["ln Z"] = np.minimum(best["ln Z"], fit(True, False)[0])
        seconds, trainer = fit(True, True)
        best["ln Z and test"] = np.minimum(best["ln Z and test"], seconds)
    plain = best["plain"]
    print("                                        wall s    CPU s   extra wall  extra CPU")
    for label, key in (("training alone", "plain"), ("training, tracking ln Z", "ln Z"),
                       ("training, tracking ln Z and test ln p", "ln Z and test")):
        extra = 100 * (best[key] - plain) / plain
        print(f"{label:38s} {best[key][0]:8.3f} {best[key][1]:8.3f}"
              + ("" if key == "plain" else f"   {extra[0]:+7.1f}%   {extra[1]:+7.1f}%"))
    print("(target: tracking ln Z at most +10%)")
    print("\n  update      ln Z    +- 3 se   test ln p(v)   overlap   betas")
    for record in trainer.history:
        for r in record["tracked"]:
            overlap = "" if "overlap" not in r else f"{r['overlap']:.3f}   {r['betas']:5d}"
            print(f"  {r['update']:6d} {r['log_Z']:9.3f} {3 * r['log_Z_se']:9.3f} "
                  f"{r['log_likelihood']:12.3f}   {overlap}"
                  + ("  (warning)" if r.get("overlap_warning") else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
