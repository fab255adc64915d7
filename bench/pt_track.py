"""The cost of tracking ln Z through PT training from its own tempered draws (issue 36,
target: at most 10% of the PT training's time; cyrbm.training.pt_tracking).

Trains the same RBM by parallel tempering in one process, alternately without and with
tracking: ``cyrbm.Trainer(H, method="pt", epochs=E, batch_size=B, chains=M,
temperatures=K, monitor_size=0, progress=False, seed=0, threads=T).fit(X)``, and the
same with ``track_logz="filter", track_every=S`` and, with --ladder, with the checkpoint
ladder (``track_logz="ladder"``, cyrbm.training.tracking) on the same training (the
trainer never sees its tracker: the models are the same bits); each repeat runs them in
turn, in the reverse order every other repeat (ABBA).  It prints the CPU time of each
``fit`` (``time.process_time``: all the process's threads; steadier than the wall clock
when other programs share the cores) and its wall clock, the minimum of each over the
repeats, the extra share of the minima, of the medians and of each repeat's pair (the
runs next to each other in time, whose ratio a drift of the machine's speed moves
least) with the median of those, the tracker's own calls' share of the tracked runs'
time, and the tracked curve (ln Z +- se per epoch, the smallest effective sample size
and BAR overlap of the epoch's updates).
With a number of AIS runs (ais), the model after each epoch of the last tracked run is
also measured by a fresh AIS (its betas from the data's base rate) to compare with the
tracked value: the difference and its z-score over both errors.

Usage:
  pt_track.py [DATA] [options]

Arguments:
  DATA                "mnistlike" (bench/mnistlike.py, --rows images; the default), or a
                      data file or bundled data set for cyrbm.load_data (binarized at 0.5).

Options:
  --rows=N            Training rows (mnistlike's, or the first of DATA) [default: 10000].
  --hidden=H          Hidden units [default: 500].
  --batch=B           Mini-batch size [default: 100].
  --chains=M          PT ladders [default: 100].
  --temperatures=K    PT temperatures: a count, a list or "adaptive:N" [default: 21].
  --epochs=E          Epochs of each fit [default: 2].
  --lr=X              Learning rate [default: 0.01].
  --k=R               PT rounds per update (Trainer's k) [default: 1].
  --ladder            Also track by the checkpoint ladder, for comparison.
  --plot=PNG          Draw the tracked ln Z (+- 3 se) and the fresh AIS (needs --ais and
                      matplotlib) to this file.
  --track-every=S     Updates between the tracker's transitions (default: every update).
  --repeat=R          Runs of each, in turn (ABBA) [default: 2].
  --threads=T         cyrbm threads [default: 1].
  --ais=R             Fresh AIS runs on the last model (0: none) [default: 0].
  --rounds=N          Also time N rounds of the ladders alone with the filter's sums and N
                      without, alternately, at the last model [default: 0].
  --betas=N           Betas of the fresh AIS [default: 14500].
  -h --help           Show this text.
"""
import os
import sys
import time

import numpy as np
from docopt import docopt

import cyrbm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))     # mnistlike


def hook_timer():
    """Time the PT tracker's own calls (its hooks and records), in the run that tracks:
    their share of that run's processor time is free of the drift between runs."""
    from cyrbm.training.pt_tracking import PTLogZTracker
    spent = [0.0]
    for name in ("before_round", "after_round", "step"):
        f = getattr(PTLogZTracker, name)

        def timed(*a, f=f, **k):
            c = time.process_time()
            try:
                return f(*a, **k)
            finally:
                spent[0] += time.process_time() - c
        setattr(PTLogZTracker, name, timed)
    return spent


def rounds(trainer, X, n, threads):
    """The part of the filter's cost inside the rounds (its sums from the first sweep's
    hidden draws, the top sums, the parameters' check): ``n`` rounds of the same ladders
    at ``trainer``'s model, alternately as PT training takes them (``step``, which sets
    the parameters itself) and as the tracked training does (``prepare(dbias=)``, in the
    filter's hook and so in its own calls' share, then ``step``), the processor time of
    the ``step`` calls each."""
    from cyrbm.models.tempering import TemperedChains
    model, M = trainer.model, trainer.chains
    temps = np.asarray(trainer.history[-1]["temperatures"])
    rng = np.random.default_rng(0)
    ladders = TemperedChains(temps, X.shape[1], model.n_hidden, M, seed=1, n_threads=threads,
                             init=X[rng.integers(0, X.shape[0], M * temps.size)],
                             dtype=model.dtype)
    dbias = np.zeros(X.shape[1])
    for _ in range(5):
        ladders.step(model)
    plain = sums = 0.0
    for _ in range(n):
        c = time.process_time()
        ladders.step(model)
        plain += time.process_time() - c
        ladders.prepare(model, dbias=dbias)
        c = time.process_time()
        ladders.step(model)
        sums += time.process_time() - c
    print(f"  rounds alone ({n} of each, alternately): {1e3 * plain / n:.2f} ms plain, "
          f"{1e3 * sums / n:.2f} ms with the filter's sums: {1e3 * (sums - plain) / n:+.2f} ms "
          f"({100 * (sums / plain - 1):+.1f}%) a round")


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    H, B, E = int(args["--hidden"]), int(args["--batch"]), int(args["--epochs"])
    every = None if args["--track-every"] is None else int(args["--track-every"])
    threads, repeat = int(args["--threads"]), int(args["--repeat"])
    if args["DATA"] in (None, "mnistlike"):
        from mnistlike import mnistlike
        X = mnistlike(int(args["--rows"]), seed=0)
        source = "MNIST-like digits (bench/mnistlike.py)"
    else:
        X = cyrbm.load_data(args["DATA"], binarize="threshold")[:int(args["--rows"])]
        source = f"{args['DATA']} (its first {X.shape[0]} rows, thresholded at 0.5)"
    settings = dict(method="pt", epochs=E, batch_size=B, chains=int(args["--chains"]),
                    temperatures=(int(args["--temperatures"])
                                  if args["--temperatures"].isdigit()
                                  else args["--temperatures"]),
                    learning_rate=float(args["--lr"]), k=int(args["--k"]), monitor_size=0,
                    progress=False, seed=0, threads=threads)
    print(f"data: {source}, {X.shape[0]} x {X.shape[1]}; {H} hidden, PT with "
          f"{settings['chains']} ladders of {settings['temperatures']} temperatures, "
          f"{settings['k']} round(s) an update, batch {B}, lr {settings['learning_rate']}, "
          f"{E} epochs, {threads} thread(s); tracking: a transition every "
          f"{every or 1} update(s); cyrbm {cyrbm.__version__} ({cyrbm.config()['kernels']})")
    names = ("plain", "tracked") + (("ladder",) if args["--ladder"] else ())
    times = {name: [] for name in names}
    trainers, models = {}, []
    spent, hooks = hook_timer(), []
    for i in range(repeat):
        # ABBA: the order alternates, so a steady drift of the machine's speed cancels
        # from the pairs' ratios
        for name in (names if i % 2 == 0 else names[::-1]):
            extra = ({"tracked": dict(track_logz="filter", track_every=every),
                      "ladder": dict(track_logz="ladder")}.get(name, {}))
            t = cyrbm.Trainer(H, **settings, **extra)
            if name == "tracked":
                models = []
                t.callback = lambda record, t=t, models=models: models.append(t.model.copy())
            c0, w0, s0 = time.process_time(), time.perf_counter(), spent[0]
            t.fit(X)
            times[name].append((time.process_time() - c0, time.perf_counter() - w0))
            if name == "tracked":
                hooks.append((spent[0] - s0) / times[name][-1][0])
            trainers[name] = t
    cpu = {name: min(c for c, _ in times[name]) for name in names}
    wall = {name: min(w for _, w in times[name]) for name in names}
    med = {name: float(np.median([c for c, _ in times[name]])) for name in names}
    print(f"PT training: CPU {cpu['plain']:.2f} s, median {med['plain']:.2f} s (wall "
          f"{wall['plain']:.2f} s)")
    for name, what in (("tracked", "PT's filter"), ("ladder", "the checkpoint ladder")):
        if name in names:
            print(f"  with {what}: CPU {cpu[name]:.2f} s, median {med[name]:.2f} s (wall "
                  f"{wall[name]:.2f} s); extra CPU {100 * (cpu[name] / cpu['plain'] - 1):+.1f}%"
                  f", of the medians {100 * (med[name] / med['plain'] - 1):+.1f}% (wall "
                  f"{100 * (wall[name] / wall['plain'] - 1):+.1f}%)")
    for name, what in (("tracked", "PT's filter"), ("ladder", "the checkpoint ladder")):
        if name in names:
            pairs = [c / p for (c, _), (p, _) in zip(times[name], times["plain"])]
            print(f"  {what}: extra CPU of each repeat's pair (run one after the other) "
                  f"{', '.join(f'{100 * (r - 1):+.1f}%' for r in pairs)}; median "
                  f"{100 * (float(np.median(pairs)) - 1):+.1f}%, mean "
                  f"{100 * (float(np.mean(pairs)) - 1):+.1f}%"
                  + (f" +- {100 * float(np.std(pairs, ddof=1)) / np.sqrt(len(pairs)):.1f}%"
                     if len(pairs) > 1 else ""))
    if hooks:
        print(f"  the filter's own calls (hooks and records) in the tracked runs: "
              f"{100 * min(hooks):.1f}-{100 * max(hooks):.1f}% of their processor time "
              f"(the rest of its cost, the round's sums from its hidden draws, is inside "
              f"the rounds)")
    print("  every run's CPU seconds: " + "; ".join(
        f"{name} " + " ".join(f"{c:.2f}" for c, _ in times[name]) for name in names))
    for r in trainers["tracked"].history:
        ess = min(x["ess"] for x in r["tracked"])
        overlap = min(x["overlap"] for x in r["tracked"])
        print(f"  epoch {r['epoch']}: ln Z = {r['log_Z']:.3f} +- {r['log_Z_se']:.3f} "
              f"(smallest ESS fraction {ess:.3f}, BAR overlap {overlap:.3f})"
              + (f"  WARNING: {r['overlap_warning']}" if r.get("overlap_warning") else ""))
    runs = int(args["--ais"])
    fresh = []
    ladder = trainers["ladder"].history if "ladder" in names else [None] * len(models)
    for record, lrec, model in zip(trainers["tracked"].history, ladder,
                                   models if runs else []):
        ann = cyrbm.Annealer(runs, f"linear:{int(args['--betas'])}", seed=1, threads=threads,
                             progress=False)
        res = ann.log_partition(model, data=X)
        se = float(np.exp(res.log_sigma - res.log_Z))       # of ln Z-hat, delta method
        fresh.append((record["epoch"], res.log_Z, se))
        line = (f"  epoch {record['epoch']}: fresh AIS ({runs} runs, {args['--betas']} betas) "
                f"ln Z = {res.log_Z:.3f} +- {se:.3f}")
        for what, rec in (("filter", record), ("ladder", lrec)):
            if rec is not None:
                z = (rec["log_Z"] - res.log_Z) / np.hypot(rec["log_Z_se"], se)
                line += (f"; {what} {rec['log_Z']:.3f} +- {rec['log_Z_se']:.3f}, - AIS = "
                         f"{rec['log_Z'] - res.log_Z:+.3f} (z = {z:+.2f})")
        print(line, flush=True)
    if int(args["--rounds"]):
        rounds(trainers["tracked"], X, int(args["--rounds"]), threads)
    if args["--plot"] and fresh:
        plot(args["--plot"], source, trainers, fresh)


def plot(path, source, trainers, fresh):
    """The tracked curves with their +- 3 se bands and the fresh AIS (+- 3 se) per epoch."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for name, label in (("tracked", "PT's filter (DCB11)"), ("ladder", "checkpoint ladder")):
        if name not in trainers:
            continue
        h = [r for r in trainers[name].history if np.isfinite(r["log_Z_se"])
             and r["log_Z_se"] < 5]
        e = np.array([r["epoch"] for r in h])
        z, s = np.array([r["log_Z"] for r in h]), np.array([r["log_Z_se"] for r in h])
        ax.fill_between(e, z - 3 * s, z + 3 * s, alpha=0.25)
        ax.plot(e, z, "o-", ms=3, label=f"{label} +- 3 se")
    e, z, s = (np.array(c) for c in zip(*fresh))
    ax.errorbar(e, z, yerr=3 * s, fmt="x", color="k", label="fresh AIS, 100 x 14,500 betas")
    ax.set_xlabel("epoch")
    ax.set_ylabel("ln Z")
    ax.set_title(f"ln Z through PT training: {source.split(' (')[0].split('/')[-1]}",
                 fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"figure written to {path}")


if __name__ == "__main__":
    main()
