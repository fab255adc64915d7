"""Hu & Yu, Sec. 5.1-5.2: the exact-likelihood toy, and AMH's acceptance ratio against the
number of hidden units.

Sec. 5.1, on the bundled digits: PCD-1, PT-10 and AMH-p.

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
after each --report updates, and how many seeds each method beats PCD-1 on; the figure
draws the mean against updates (Hu & Yu's Figure 1a).

Sec. 5.2: AMH-1 (a hop proposed every update) trained on the first --rows training
images (Hu & Yu: the first 10,000 of MNIST; here Fashion-MNIST, or --mnist DIR) with
|h| in --hidden, K = |h| modes at Hamming radius R = 80 (their Figure 2b), the mode set
rebuilt every 20 updates, PCD-1 between hops; the acceptance ratio of the hops over training, per |h| (their Figure 2b; the
mode-free random walk of their Figure 2a is not a cyrbm sampler and is not run).

Usage:
  hu_yu.py [options]

Options:
  --quick           Minutes: 1,000 updates, 3 seeds; Sec. 5.2 on 2,000 rows, 10 epochs.
  --hidden=LIST     |h| values of Sec. 5.2 [default: 10,25,50,100,200].
  --rows=N          Training rows of Sec. 5.2 [default: 10000].
  --epochs=E        Epochs of Sec. 5.2 [default: 5].
  --mnist=DIR       Real MNIST's IDX files (default: Fashion-MNIST).
  --figure=PNG      Where to draw [default: <repo>/bench/paper/hu_yu.png].
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

import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (Clock, check, figure, load_images, parse_args,  # noqa: E402
                    print_table, save_figure)

import cyrbm  # noqa: E402
from cyrbm.data.datasets import load_digits  # noqa: E402


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


def acceptance_by_hidden(X, hidden, epochs, threads, seed=0):
    """Sec. 5.2: AMH-1 with K = |h|, R = 80; (|h|, acceptance ratio of all hops, of the
    first and last epoch's hops, hops proposed, seconds) per |h|."""
    rows = []
    for n_h in hidden:
        clock = Clock()
        tr = cyrbm.Trainer(n_h, method="amh", hop_prob=1.0, modes=n_h, radius=80, k=1,
                           epochs=epochs, batch_size=100, learning_rate=0.05, momentum=0.5,
                           mode_every=20,
                           seed=seed, threads=threads, monitor_size=0, progress=False)
        tr.fit(X)
        hist = [r for r in tr.history if r.get("hops_proposed")]
        prop = sum(r["hops_proposed"] for r in hist)
        acc = sum(r["hop_acceptance"] * r["hops_proposed"] for r in hist
                  if r.get("hop_acceptance") is not None)
        rows.append((n_h, acc / prop if prop else float("nan"),
                     hist[0]["hop_acceptance"] if hist else float("nan"),
                     hist[-1]["hop_acceptance"] if hist else float("nan"), prop, clock.wall()))
    return rows


def main(argv=None):
    args = parse_args(__doc__, argv)
    clock = Clock()
    quick = args["--quick"]
    X = toy_data()
    updates = 1000 if quick else int(args["--updates"])
    report = [int(r) for r in args["--report"].split(",") if int(r) <= updates]
    if quick:
        report = [100, 250, 500, 1000]
    seeds = range(3 if quick else int(args["--seeds"]))
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
    print("Hu & Yu Fig. 1 prints no value; their text: 'AMH shows an excellent performance'.")
    best = max((n for n in table if n.startswith("AMH")), key=lambda n: table[n][:, -1].mean())
    check("AMH reaches a likelihood competitive with PT-10 and above PCD-1",
          table[best][:, -1].mean() >= table["PCD-1"][:, -1].mean(),
          f"{best} {table[best][:, -1].mean():.3f}, PT-10 {table['PT-10'][:, -1].mean():.3f}, "
          f"PCD-1 {table['PCD-1'][:, -1].mean():.3f} nats at {report[-1]} updates")

    # Sec. 5.2: acceptance ratio against |h|
    rows_n = 2000 if quick else int(args["--rows"])
    epochs = 10 if quick else int(args["--epochs"])
    hidden = [int(h) for h in args["--hidden"].split(",")]
    Xi, = load_images(args["--mnist"], n_train=rows_n, n_test=1)[:1]
    acc = acceptance_by_hidden(Xi, hidden, epochs, threads)
    print_table(f"Hu & Yu Sec. 5.2: AMH-1, K = |h|, R = 80, {rows_n} training images, "
                f"{epochs} epochs (batch 100); the paper gives no value (Figure 2 only)",
                ["|h|", "acceptance", "first epoch", "last epoch", "hops", "seconds"],
                [(h, a, f, l, p, s) for h, a, f, l, p, s in acc])
    check("AMH's acceptance ratio 'always stays in a reasonable range regardless of high "
          "dimensionality' (Fig. 2b)", min(r[1] for r in acc) > 0.01,
          ", ".join(f"|h| = {r[0]}: {r[1]:.3f}" for r in acc))

    plt = figure()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for name, arr in table.items():
        axes[0].errorbar(report, arr.mean(0), yerr=arr.std(0), marker="o", capsize=2,
                         label=name)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("parameter updates")
    axes[0].set_ylabel("exact mean ln p(v), nats")
    axes[0].set_title("Sec. 5.1 toy (cf. Hu & Yu Fig. 1a)")
    axes[0].legend(fontsize=8)
    axes[1].plot([r[0] for r in acc], [r[1] for r in acc], "o-", label="all hops")
    axes[1].plot([r[0] for r in acc], [r[3] for r in acc], "s--", label="last epoch")
    axes[1].set_xscale("log")
    axes[1].set_ylim(0, 1)
    axes[1].set_xlabel("hidden units |h|")
    axes[1].set_ylabel("AMH acceptance ratio")
    axes[1].set_title("Sec. 5.2, K = |h|, R = 80 (cf. Fig. 2b)")
    axes[1].legend(fontsize=8)
    save_figure(fig, args["--figure"])
    print(f"total: {clock.wall():.0f} s wall, {clock.cpu():.0f} s processor")


if __name__ == "__main__":
    main()
