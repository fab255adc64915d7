"""Cho, Raiko & Ilin (2010) Sec. VI.B on the bundled 8 x 8 digits: PT against CD-1.

A 64 x 100 RBM is trained on the bundled digits' training split (1397 rows) in the
paper's batch style (every update uses all training rows), learning rate eta_0 = 0.05
with the search-then-converge schedule eta_0 / (1 + t / 300) (footnote 3), for
N updates (the paper: 635 epochs), by

  CD-1       Trainer(method="cd", k=1, batch_size=1397): 1397 Gibbs sweeps per update
  PT         Trainer(method="pt", temperatures=21 (0, 0.05, ..., 1), chains=67):
             21 x 67 = 1407 sweeps per update, as the paper matched K = 20, M = 192
             to CD-1 on its 3822 rows
  PT adapt   the same with temperatures="adaptive:21" (spacing re-tuned every 50
             updates for equal swap rates)

with the given momentum (default 0: the paper's update w <- w + eta [<.>_data - <.>_model]
has none), no weight decay, over S seeds (the paper: 30).  The paper compared the
methods after 635 epochs (updates); its first experiment trained for 2000.  Each model's average
test log-probability (the 400 held-out digits) is estimated by the Annealer's AIS
(Annealer(runs=100, schedule="paper"): 14,500 betas, base rate fitted to the training
rows); the table gives the mean and standard deviation over seeds, and the AIS
estimate's own +-3 sigma for the last seed.

Usage:
  cho_digits.py [options]

Options:
  --updates=N       Parameter updates [default: 635].
  --seeds=S         Seeds 0 .. S-1 [default: 5].
  --momentum=M      Momentum (the paper's update has none) [default: 0].
  --batch=B         Rows per update; 0: all (the paper's batch style) [default: 0].
  --temps=K1        Temperatures per PT ladder, K+1 [default: 21].
  --tmin=T0         The lowest temperature of the ladder [default: 0].
  --lr=LR           eta_0 [default: 0.05].
  --threads=T       Threads [default: 1].
"""
import os
os.environ.pop("OPENBLAS_L2_SIZE", None)        # see bench/isa_speed.py
import time

import numpy as np
from docopt import docopt

import cyrbm


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    X = cyrbm.load_data("digits:train")
    T = cyrbm.load_data("digits:test")
    updates, threads = int(args["--updates"]), int(args["--threads"])
    seeds = range(int(args["--seeds"]))
    B = int(args["--batch"]) or X.shape[0]
    K1 = int(args["--temps"])
    t0_ = float(args["--tmin"])
    ladder = K1 if t0_ == 0 else np.linspace(t0_, 1.0, K1)
    M = max(1, round(B / K1))                  # PT's Gibbs sweeps per update match CD-1's
    epochs = max(1, round(updates * B / X.shape[0]))
    common = dict(epochs=epochs, batch_size=B, learning_rate=float(args["--lr"]), lr_decay=300,
                  momentum=float(args["--momentum"]), weight_decay=0.0, threads=threads,
                  monitor_size=0, progress=False)
    methods = [("CD-1", dict(method="cd", k=1)),
               ("PT", dict(method="pt", temperatures=ladder, chains=M)),
               ("PT adapt", dict(method="pt", chains=M, temperatures="adaptive:" + ",".join(
                   f"{t:.17g}" for t in np.linspace(t0_, 1.0, K1))))]
    n_up = epochs * -(-X.shape[0] // B)
    print(f"Cho et al. Sec. VI.B: 64 x 100 RBM, {X.shape[0]} training digits, batch {B}, "
          f"{n_up} updates, eta {common['learning_rate']:g} / (1 + t/300), momentum "
          f"{common['momentum']:g}; Gibbs sweeps per update: CD-1 {B}, PT {K1} x {M} = "
          f"{K1 * M} (temperatures {t0_:g} to 1); "
          f""
          f"test ln p(v) on {T.shape[0]} digits by AIS (100 runs, 14,500 betas)")
    results = {}
    for name, kw in methods:
        t0 = time.perf_counter()
        vals = []
        for s in seeds:
            tr = cyrbm.Trainer(100, seed=s, **common, **kw)
            model = tr.fit(X)
            res = cyrbm.Annealer(runs=100, schedule="paper", seed=s, threads=threads,
                                 progress=False).log_partition(model, base_rate="data",
                                                               data=T, base_data=X)
            vals.append(res.avg_log_prob)
        lo, hi = res.avg_log_prob_interval(3)
        extra = ""
        if "swap_rates" in tr.history[-1]:
            r = tr.history[-1]["swap_rates"]
            extra = f"  last swap rates {min(r):.2f}-{max(r):.2f}"
            if str(kw.get("temperatures")).startswith("adaptive"):
                t = tr.history[-1]["temperatures"]
                extra += "  ladder " + " ".join(f"{x:.2f}" for x in t[::4]) + " ..."
        results[name] = np.array(vals)
        print(f"{name:>9}: {np.mean(vals):9.3f} ± {np.std(vals):.3f} nats   "
              f"(last seed's AIS ±3σ: [{lo:.3f}, {hi:.3f}]; {time.perf_counter() - t0:.1f} s)"
              f"{extra}")
    cd = results["CD-1"]
    for name, base in (("PT", "CD-1"), ("PT adapt", "CD-1"), ("PT adapt", "PT")):
        d = results[name] - results[base]
        se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else float("nan")
        print(f"{name} - {base}: {d.mean():+.3f} ± {se:.3f} nats (paired by seed, ± its "
              f"standard error; {int((d > 0).sum())}/{d.size} seeds better)")


if __name__ == "__main__":
    main()
