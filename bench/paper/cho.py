"""Cho, Raiko & Ilin (2010) Sec. VI.B and Figure 3 on the bundled 8 x 8 digits: CD1, CD5,
CD25 and PT; test, training and random-data log-probability against processor time.

A 64 x 100 RBM is trained on the bundled digits' training split (1397 rows; the paper:
OptDigits' 3822) in the paper's batch style (every update uses all training rows),
learning rate eta_0 = 0.05 with the search-then-converge schedule eta_0 / (1 + t / 300)
(footnote 3), no momentum and no weight decay (the paper's update has neither), by

  CD1, CD5, CD25  Trainer(method="cd", k=n, batch_size=1397): n x 1397 sweeps per update
  PT              Trainer(method="pt", temperatures=21 (0, 0.05, ..., 1), chains=67):
                  21 x 67 = 1407 sweeps per update, as the paper matched K = 20, M = 192
                  to CD1 on its 3822 rows

for --updates updates (the paper: 635 epochs) over --seeds seeds (the paper: 30).  At
about log-spaced updates the model's average log-probability of the test digits (the 400
held out), of the training digits and of 1,000 uniformly random 64-bit vectors (CRI10
footnote 2) is estimated by AIS as CRI10 did it, 50 runs and 5,000 betas (spaced
uniformly; the paper does not say how), from a base rate fitted to the training rows.
Processor time counts training only (this process, one thread).  The table gives mean and
standard deviation over seeds after the last update, beside the paper's claims (CRI10
prints no number: Figures 3 and 4 only); the figure is CRI10's Figure 3 (test and random
data against processor time, log scale) plus the training data.

Usage:
  cho.py [options]

Options:
  --quick           Minutes: the paper's 635 updates, 2 seeds.
  --updates=N       Parameter updates [default: 635].
  --seeds=S         Seeds 0 .. S-1 [default: 30].
  --temps=K1        Temperatures per PT ladder, K+1 [default: 21].
  --lr=LR           eta_0 [default: 0.05].
  --random=N        Uniformly random vectors [default: 1000].
  --threads=T       Threads [default: 1].
  --figure=PNG      Where to draw [default: <repo>/bench/paper/cho.png].
"""
import os
os.environ.pop("OPENBLAS_L2_SIZE", None)        # see bench/isa_speed.py
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Clock, check, figure, parse_args, print_table,  # noqa: E402
                    save_figure)

import cyrbm  # noqa: E402

CLAIMS = ("PT achieves the highest average likelihood and the highest average probability "
          "of the test data, and at the same time achieves the lowest probability of the "
          "random data at the fastest rate (CRI10 Sec. VI.B)")


def eval_points(updates):
    pts = [1, 3, 10, 30, 100, 200, 300, 635, 1000, 2000]
    return sorted({p for p in pts if p < updates} | {updates})


def measure(model, X, T, R, seed, threads):
    """Mean ln p(v) of test, train and random rows: one AIS run (CRI10: 50 runs, 5,000
    betas) shared by the three."""
    ann = cyrbm.Annealer(runs=50, schedule="linear:5000", seed=seed, threads=threads,
                         progress=False)
    res = ann.log_partition(model, base_rate="data", base_data=X)
    return [float(np.mean(model.log_unnormalized(D)) - res.log_Z) for D in (T, X, R)]


def run(name, kw, X, T, R, seed, points, common):
    """[(processor seconds of training, update, test, train, random)] at ``points``."""
    rows = []
    spent = [0.0, time.process_time()]          # training time so far, start of this stretch

    def cb(rec):
        if rec["epoch"] in points:
            spent[0] += time.process_time() - spent[1]
            vals = measure(tr.model, X, T, R, seed, common["threads"])
            rows.append((spent[0], rec["epoch"], *vals))
            spent[1] = time.process_time()

    tr = cyrbm.Trainer(100, seed=seed, callback=cb, **common, **kw)
    tr.fit(X)
    return rows


def main(argv=None):
    args = parse_args(__doc__, argv)
    clock = Clock()
    quick = args["--quick"]
    X = cyrbm.load_data("digits:train")
    T = cyrbm.load_data("digits:test")
    R = (np.random.default_rng(12345).random((int(args["--random"]), X.shape[1])) < 0.5
         ).astype(np.uint8)
    updates = 635 if quick else int(args["--updates"])
    seeds = range(2 if quick else int(args["--seeds"]))
    threads = int(args["--threads"])
    B = X.shape[0]
    K1 = int(args["--temps"])
    M = max(1, round(B / K1))                  # PT's Gibbs sweeps per update match CD1's
    common = dict(epochs=updates, batch_size=B, learning_rate=float(args["--lr"]),
                  lr_decay=300, momentum=0.0, weight_decay=0.0, threads=threads,
                  monitor_size=0, progress=False)
    methods = [("CD1", dict(method="cd", k=1)), ("CD5", dict(method="cd", k=5)),
               ("CD25", dict(method="cd", k=25)),
               ("PT", dict(method="pt", temperatures=K1, chains=M))]
    points = eval_points(updates)
    print(f"Cho et al. Sec. VI.B: 64 x 100 RBM, {B} training digits (batch style), {updates} "
          f"updates, eta {common['learning_rate']:g} / (1 + t/300); sweeps per update: CDn "
          f"n x {B}, PT {K1} x {M} = {K1 * M}; {len(seeds)} seeds; mean ln p(v) by AIS "
          f"(50 runs, 5,000 betas) of {T.shape[0]} test digits, the training digits and "
          f"{R.shape[0]} random vectors")
    curves = {}
    for name, kw in methods:
        curves[name] = np.array([run(name, kw, X, T, R, s, points, common) for s in seeds])
        print(f"  {name}: done ({clock.wall():.0f} s)", flush=True)
    rows = []
    for name, arr in curves.items():
        last = arr[:, -1]
        rows.append((name, *(f"{last[:, i].mean():.2f} ± {last[:, i].std():.2f}"
                             for i in (2, 3, 4)), f"{last[:, 0].mean():.1f}"))
    print_table(f"after {updates} updates, mean ± sd over {len(seeds)} seeds (nats per vector);"
                f" CRI10 prints no value (Figures 3-4 only)",
                ["method", "test", "train", "random", "train cpu s"], rows)
    print(f"CRI10 (as printed): {CLAIMS}.")
    fin = {n: a[:, -1] for n, a in curves.items()}
    cds = ("CD1", "CD5", "CD25")
    check("PT's test ln p above CD1, CD5 and CD25",
          all(fin["PT"][:, 2].mean() > fin[c][:, 2].mean() for c in cds),
          ", ".join(f"{n} {fin[n][:, 2].mean():.2f}" for n in fin))
    check("PT's random-data ln p the lowest", all(fin["PT"][:, 4].mean() < fin[c][:, 4].mean()
                                                 for c in cds),
          ", ".join(f"{n} {fin[n][:, 4].mean():.2f}" for n in fin))
    check("PT's cost per update comparable to CD1's, CD25's much larger",
          fin["PT"][:, 0].mean() < 0.5 * fin["CD25"][:, 0].mean(),
          ", ".join(f"{n} {fin[n][:, 0].mean():.1f} s" for n in fin))
    if len(seeds) > 1:
        d = fin["PT"][:, 2] - fin["CD1"][:, 2]
        print(f"PT - CD1 test: {d.mean():+.3f} ± {d.std(ddof=1) / np.sqrt(d.size):.3f} nats "
              f"(paired by seed; {int((d > 0).sum())}/{d.size} seeds better); sd over seeds "
              f"PT {fin['PT'][:, 2].std():.3f}, CD1 {fin['CD1'][:, 2].std():.3f}, CD25 "
              f"{fin['CD25'][:, 2].std():.3f} (CRI10 Fig. 4: PT's variance the largest)")

    plt = figure()
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
    for col, (i, what) in enumerate(((2, "test"), (3, "training"), (4, "random data"))):
        ax = axes[col]
        for name, arr in curves.items():
            ax.plot(arr[:, :, 0].mean(0), arr[:, :, i].mean(0), "o-", ms=3, label=name)
            for t, y, u in zip(arr[:, :, 0].mean(0), arr[:, :, i].mean(0), arr[0, :, 1]):
                if u in (points[0], points[-1]):
                    ax.annotate(str(int(u)), (t, y), fontsize=7)
        ax.set_xscale("log")
        ax.set_xlabel("processor seconds of training (one thread)")
        ax.set_ylabel(f"mean ln p(v), {what}")
        ax.set_title(f"{what} (cf. CRI10 Fig. 3)")
        ax.legend(fontsize=8)
    save_figure(fig, args["--figure"])
    print(f"total: {clock.wall():.0f} s wall, {clock.cpu():.0f} s processor")


if __name__ == "__main__":
    main()
