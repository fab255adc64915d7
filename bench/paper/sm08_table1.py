"""Salakhutdinov & Murray (2008) Table 1, Figure 3 and Sec. 5.1: AIS on RBMs, against
exact ln Z where the hidden layer can be enumerated, and the mixture-of-Bernoullis
baseline.

Data: MNIST's IDX files given by --mnist, else Fashion-MNIST (Debian's
dataset-fashion-mnist; not MNIST: its log-probabilities are not the paper's), binarized
stochastically as SM08 (a pixel is 1 with probability its intensity, one fixed draw).

1. Small RBMs, CD1(25), CD3(25), CD1(20) (SM08's names: CDk(hidden units)): exact ln Z by
   enumerating the hidden layer (SM08 Eq. 3), AIS with the paper's 14,500 betas from the
   data's base rate, the first 100 runs for the table, ln Z-hat against the number of
   runs (10 ... --runs) with ln(Z-hat +- 3 sigma-hat) for Figure 3, and the test and
   training log-probabilities, true and estimated.
2. 500 hidden units trained by CD1, CD3 and CD raised from 1 to 25 (Trainer k="1:25"),
   AIS with 14,500 betas (ln Z-hat against runs: Figure 3's bottom row).
3. ln(Z_CD25 / Z_CD3) by ratio AIS (SM08 Sec. 3.2: 10,000 uniform betas; starting states
   from Gibbs chains on CD3(500)) against the difference of the two separate estimates.
4. Mixtures of Bernoullis with 10, 100 and 500 components (cyrbm.BernoulliMixture, EM
   with a Beta(2, 2) prior, i.e. smoothing 1; SM08 do not say how theirs were trained):
   exact test and training log-probability.

The RBMs are trained with batch 100, learning rate 0.05, momentum 0.5, weight decay 2e-4
(SM08 give none of these; common.SM08_TRAIN) and saved in --models for sm08_table2.py
and ms09.py.

Usage:
  sm08_table1.py [options]

Options:
  --quick         Minutes: 10,000 training and 2,000 test images, hidden sizes 20 and 15
                  for the enumerable models, 10 epochs, fewer AIS runs and EM iterations.
  --mnist=DIR     Real MNIST's IDX files (default: Fashion-MNIST).
  --epochs=E      Epochs of every RBM [default: 20].
  --runs=N        AIS runs of the small models (the table uses the first 100) [default: 1000].
  --big-runs=N    AIS runs of the 500-hidden models and of the ratio [default: 100].
  --em=N          EM iterations of the mixtures [default: 100].
  --models=DIR    Where the trained RBMs go (and are reused from)
                  [default: <repo>/bench/.cache/sm08].
  --threads=T     Threads [default: 1].
  --seed=S        Seed of everything [default: 0].
  --figure=PNG    Where to draw Figure 3 [default: <repo>/bench/paper/sm08_table1.png].
"""
import os
os.environ.pop("OPENBLAS_L2_SIZE", None)        # see bench/isa_speed.py
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Clock, check, figure, first_runs, log_sd, option,  # noqa: E402
                    parse_args, print_table, save_figure, sm08_rbm, sm08_setup)

import cyrbm  # noqa: E402

# SM08 Table 1 and Sec. 5.1, as printed (nats)
PAPER_SMALL = {  # true ln Z, ln Z-hat, test true, test est, train true, train est
    "CD1(25)": (255.41, 256.52, -151.57, -152.68, -152.35, -153.46),
    "CD3(25)": (307.47, 307.63, -143.03, -143.20, -143.94, -144.11),
    "CD1(20)": (279.59, 279.57, -164.52, -164.50, -164.89, -164.87)}
PAPER_BIG = {"CD1(500)": (350.15, -125.53, -122.86), "CD3(500)": (280.09, -105.50, -102.81),
             "CD25(500)": (451.28, -86.34, -83.10)}
PAPER_RATIO = (169.96, 171.19)
PAPER_MOB = {10: -168.95, 100: -142.63, 500: -137.64}


def run_counts(runs):
    """10, 30, 100, ... below ``runs``, and ``runs``: the x axis of SM08 Figure 3."""
    return sorted({n for n in (10, 30, 100, 300, 1000, 3000) if n < runs} | {runs})


def main(argv=None):
    args = parse_args(__doc__, argv)
    clock = Clock()
    quick = args["--quick"]
    seed, threads, X, T, dname, _ = sm08_setup(args)
    epochs = option(args, "--epochs", 10)
    runs = option(args, "--runs", 200)
    big_runs = option(args, "--big-runs", 20)
    em = option(args, "--em", 20)
    big, small_h = (20, 15) if quick else (25, 20)
    models = args["--models"]
    print(f"SM08 Table 1 on {dname}: {X.shape[0]} training, {T.shape[0]} test images; "
          f"{epochs} epochs per RBM; AIS 14,500 betas")

    # 1. small RBMs: exact against AIS
    small = [(f"CD1({big})", 1, big, "CD1(25)"), (f"CD3({big})", 3, big, "CD3(25)"),
             (f"CD1({small_h})", 1, small_h, "CD1(20)")]
    ann = cyrbm.Annealer(runs=runs, schedule="paper", seed=seed, threads=threads,
                         progress=False)
    rows, conv, ok_small = [], {}, True
    for name, k, nh, paper in small:
        model, _ = sm08_rbm(X, k, nh, models, quick, epochs, seed, threads)
        c = Clock()
        true = cyrbm.exact_log_partition(model)
        t_exact = c.wall()
        res = ann.log_partition(model, base_rate="data", base_data=X)
        r100 = first_runs(res, min(100, runs))
        pt, px = np.mean(model.log_unnormalized(T)), np.mean(model.log_unnormalized(X))
        lo1, hi1 = r100.log_Z_interval(1)
        lo3, hi3 = r100.log_Z_interval(3)
        rows.append((name, true, r100.log_Z, f"{lo1:.2f}, {hi1:.2f}", f"{lo3:.2f}, {hi3:.2f}",
                     f"{res.seconds * r100.runs / res.runs:.1f} s ({t_exact:.0f} s exact)",
                     pt - true, pt - r100.log_Z, px - true, px - r100.log_Z))
        rows.append((f"  SM08 {paper}", *PAPER_SMALL[paper][:2], "", "", "3.1-3.3 min",
                     *PAPER_SMALL[paper][2:]))
        conv[name] = (true, [first_runs(res, n) for n in run_counts(runs)])
        final = conv[name][1][-1]
        ok_small &= check(f"{name}: AIS within a fraction of a nat of exact ln Z",
                          abs(final.log_Z - true) < 0.5,
                          f"exact {true:.3f}, AIS ({final.runs} runs) {final.log_Z:.3f} "
                          f"± {log_sd(final):.3f} (1 sigma-hat); 100 runs {r100.log_Z:.3f}")
        errs = [abs(r.log_Z - true) for r in conv[name][1]]
        check(f"{name}: AIS converges as the runs grow",
              errs[-1] <= max(errs[0], 0.05) and
              all(r.log_Z_interval(3)[0] <= true <= r.log_Z_interval(3)[1]
                  for r in conv[name][1][1:]),
              "|error| at " + ", ".join(f"{r.runs}: {e:.3f}" for r, e in zip(conv[name][1], errs))
              + "; exact inside ln(Z-hat ± 3 sigma-hat) from 30 runs on")
    print_table("Table 1, small RBMs (100 AIS runs; time of those runs); SM08's rows as "
                "printed, on MNIST",
                ["model", "true ln Z", "ln Z-hat", "ln(Z ± σ)", "ln(Z ± 3σ)", "time",
                 "test true", "test est", "train true", "train est"], rows)

    # 2. 500 hidden units
    big_models, rows = {}, []
    bann = cyrbm.Annealer(runs=big_runs, schedule="paper", seed=seed, threads=threads,
                          progress=False)
    for name, k in (("CD1(500)", 1), ("CD3(500)", 3), ("CD25(500)", "1:25")):
        model, secs = sm08_rbm(X, k, 500, models, quick, epochs, seed, threads)
        res = bann.log_partition(model, base_rate="data", base_data=X)
        big_models[name] = (model, res)
        pt, px = np.mean(model.log_unnormalized(T)), np.mean(model.log_unnormalized(X))
        lo1, hi1 = res.log_Z_interval(1)
        lo3, hi3 = res.log_Z_interval(3)
        rows.append((name, res.log_Z, f"{lo1:.2f}, {hi1:.2f}", f"{lo3:.2f}, {hi3:.2f}",
                     f"{res.seconds:.0f} s AIS, {secs:.0f} s training",
                     pt - res.log_Z, px - res.log_Z))
        rows.append((f"  SM08 {name}", PAPER_BIG[name][0], "", "", "10.4 min AIS",
                     *PAPER_BIG[name][1:]))
    print_table(f"Table 1, 500 hidden units ({big_runs} AIS runs); SM08's rows as printed",
                ["model", "ln Z-hat", "ln(Z ± σ)", "ln(Z ± 3σ)", "time", "test est",
                 "train est"], rows)
    test = {n: np.mean(m.log_unnormalized(T)) - r.log_Z for n, (m, r) in big_models.items()}
    check("CD25 > CD3 > CD1 in test log-probability (SM08: -86.34 > -105.50 > -125.53)",
          test["CD25(500)"] > test["CD3(500)"] > test["CD1(500)"],
          ", ".join(f"{n} {v:.2f}" for n, v in test.items()))

    # 3. the ratio Z_CD25 / Z_CD3 directly
    (m3, r3), (m25, r25) = big_models["CD3(500)"], big_models["CD25(500)"]
    rann = cyrbm.Annealer(runs=big_runs, schedule="linear:10000", seed=seed, threads=threads,
                          progress=False)
    rr = rann.log_ratio(m3, m25, start="gibbs", init=X[:big_runs])
    diff = r25.log_Z - r3.log_Z
    sd = np.sqrt(log_sd(rr) ** 2 + log_sd(r25) ** 2 + log_sd(r3) ** 2)
    print_table("ln(Z_CD25(500) / Z_CD3(500)); SM08 as printed: direct 169.96, difference "
                "451.28 - 280.09 = 171.19",
                ["direct (ratio AIS)", "σ-hat", "difference of separate", "σ-hat", "seconds"],
                [(rr.log_ratio, log_sd(rr), diff, np.hypot(log_sd(r25), log_sd(r3)),
                  f"{rr.seconds:.0f}")])
    check("the direct ratio agrees with the difference within 3 sigma-hat",
          abs(rr.log_ratio - diff) <= 3 * sd,
          f"|{rr.log_ratio:.2f} - {diff:.2f}| = {abs(rr.log_ratio - diff):.2f} against "
          f"3 sigma-hat = {3 * sd:.2f} (the three sigma-hats combined)")

    # 4. mixtures of Bernoullis
    rows, mob = [], {}
    for K in (10, 100, 500):
        c = Clock()
        m = cyrbm.BernoulliMixture.fit(X, K, iterations=em, seed=seed, smoothing=1.0)
        mob[K] = np.mean(m.log_prob(T))
        rows.append((K, mob[K], np.mean(m.log_prob(X)), PAPER_MOB[K], f"{c.wall():.0f}"))
    print_table(f"Mixtures of Bernoullis (EM, {em} iterations, smoothing 1): exact mean ln p",
                ["components", "test", "train", "SM08 test", "seconds"], rows)
    best_rbm = max(test, key=test.get)
    check("the mixtures overfit: worse test log-probability than the RBMs (SM08: -137.64 "
          "at best against -86.34)", max(mob.values()) < test[best_rbm],
          f"best mixture {max(mob.values()):.2f} against {best_rbm} {test[best_rbm]:.2f}; "
          f"train - test gap of MoB(500) {rows[-1][2] - rows[-1][1]:.2f} nats")

    # Figure 3
    plt = figure()
    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    panels = [(name, ests, true) for name, (true, ests) in conv.items()]
    panels += [(name, [first_runs(res, n) for n in run_counts(res.runs)], None)
               for name, (_, res) in big_models.items()]
    for ax, (name, ests, true) in zip(axes.ravel(), panels):
        n = [r.runs for r in ests]
        z = np.array([r.log_Z for r in ests])
        lo = np.array([r.log_Z_interval(3)[0] for r in ests])
        hi = np.array([r.log_Z_interval(3)[1] for r in ests])
        lo = np.where(np.isfinite(lo), lo, z - 3 * (hi - z))   # Z - 3 sigma <= 0: drawn long
        ax.errorbar(n, z, yerr=[z - lo, hi - z], fmt="o", capsize=3)
        if true is not None:
            ax.axhline(true, color="k", lw=0.8, label="true ln Z")
            ax.legend(fontsize=8)
        ax.set_xscale("log")
        ax.set_title(name)
        ax.set_xlabel("AIS runs")
    for ax in axes[:, 0]:
        ax.set_ylabel("ln Z-hat, ln(Z-hat ± 3σ-hat)")
    save_figure(fig, args["--figure"])
    print(f"total: {clock.wall():.0f} s wall, {clock.cpu():.0f} s processor")


if __name__ == "__main__":
    main()
