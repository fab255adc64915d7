"""Salakhutdinov & Murray (2008) Table 2 and Sec. 5.2: two-layer DBNs (500-2000) on the
three 500-hidden RBMs of sm08_table1.py, their variational lower bound (SM08 Eq. 19-24)
with its error split, M = 5 against M = 100, and the W2 = W1^T start.

Data: MNIST's IDX files given by --mnist, else Fashion-MNIST (not MNIST: its ln p values
are not the paper's), binarized stochastically as SM08.  For CD1(500), CD3(500) and
CD25(500) (trained as sm08_table1.py does, or read from --models), a top RBM of 2000
hidden units is trained on samples of Q(h1 | v) by CD1, CD3 and CD raised 1 -> 25 from
random weights (DBN-CD1, DBN-CD3, DBN-CD25), and by CD1 from SM08's W2 = W1^T start on
CD25(500) (common.greedy_top).  ln Z of each top RBM by AIS (14,500 betas; SM08: 15,000
betas, 500 runs); ln Z of each first RBM alone by AIS too, for its test log-probability.
The bound (BoundEstimator.variational) on the test and training images with M = 5
samples of Q per vector, and on the test images with M = 100.

Usage:
  sm08_table2.py [options]

Options:
  --quick         Minutes: 10,000 training and 2,000 test images, RBMs as
                  sm08_table1.py --quick, 1 epoch per top RBM, 10 AIS runs per top RBM.
  --mnist=DIR     Real MNIST's IDX files (default: Fashion-MNIST).
  --epochs=E      Epochs of the first RBMs (as sm08_table1.py) [default: 20].
  --epochs2=E     Epochs of the top RBMs [default: 20].
  --runs=N        AIS runs for ln Z of each top RBM [default: 500].
  --rbm-runs=N    AIS runs for ln Z of each first RBM [default: 100].
  --models=DIR    Trained models (shared with sm08_table1.py)
                  [default: <repo>/bench/.cache/sm08].
  --threads=T     Threads [default: 1].
  --seed=S        Seed of everything [default: 0].
  --figure=PNG    Where to draw the bounds beside the first RBMs
                  [default: <repo>/bench/paper/sm08_table2.png].

At full size the run resumes: each top RBM trains with a checkpoint beside its model file
in --models/full/, and each ln Z is kept there (table2_*.pkl) once estimated; remove those
files to start over.
"""
import os
os.environ.pop("OPENBLAS_L2_SIZE", None)        # see bench/isa_speed.py
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (SM08_TRAIN, Clock, cached, check, figure,  # noqa: E402
                    greedy_top, option, parse_args, print_table, save_figure, sm08_rbm,
                    sm08_setup)

import cyrbm  # noqa: E402
from cyrbm.training.greedy import up_pass  # noqa: E402

# SM08 Table 2 as printed: test bound, its ±3 std, AIS error; train bound, its ±3 std
PAPER = {"DBN-CD1": (-100.64, 0.77, (-1.43, 0.57), -97.67, 0.30),
         "DBN-CD3": (-98.29, 0.75, (-0.91, 0.31), -94.86, 0.29),
         "DBN-CD25": (-86.22, 0.67, (-0.84, 0.65), -82.47, 0.25),
         "DBN-CD25, W2 = W1^T": (-85.97, None, None, None, None)}
PAPER_RBM = {"DBN-CD1": -125.53, "DBN-CD3": -105.50, "DBN-CD25": -86.34,
             "DBN-CD25, W2 = W1^T": -86.34}


def main(argv=None):
    a = parse_args(__doc__, argv)
    clock = Clock()
    quick = a["--quick"]
    seed, threads, X, T, dname, _ = sm08_setup(a)
    epochs = option(a, "--epochs", 10)
    epochs2 = option(a, "--epochs2", 1)
    runs = option(a, "--runs", 10)
    rbm_runs = option(a, "--rbm-runs", 20)
    tag = "quick" if quick else "full"
    print(f"SM08 Table 2 on {dname}: {X.shape[0]} training, {T.shape[0]} test images; top "
          f"RBMs of 2000 units, {epochs2} epochs; ln Z of each top by AIS ({runs} runs, "
          f"14,500 betas)")
    rows, m100, gains, bars = [], [], {}, {}
    for name, k, start, k2 in (("DBN-CD1", 1, "random", 1), ("DBN-CD3", 3, "random", 3),
                               ("DBN-CD25", "1:25", "random", "1:25"),
                               ("DBN-CD25, W2 = W1^T", "1:25", "transpose", 1)):
        c = Clock()
        rbm1, _ = sm08_rbm(X, k, 500, a["--models"], quick, epochs, seed, threads)
        stem = os.path.join(a["--models"], tag, f"table2_{str(k).replace(':', 'to')}_"
                            f"e{epochs}_s{seed}")

        def log_z(model, n, data, name):
            # at full size each ln Z is kept (pickled) beside the models: a stopped run
            # resumes after it
            def run():
                return cyrbm.Annealer(runs=n, schedule="paper", seed=seed, threads=threads,
                                      progress=False).log_partition(model, base_rate="data",
                                                                    base_data=data)
            return run() if quick else cached(f"{stem}_{name}_logz{n}.pkl", run)

        z1 = log_z(rbm1, rbm_runs, X, "rbm1")
        rbm_test = float(np.mean(rbm1.log_unnormalized(T)) - z1.log_Z)
        path = os.path.join(a["--models"], tag, f"top2000_{str(k2).replace(':', 'to')}_"
                            f"{start}_on_{str(k).replace(':', 'to')}_e{epochs2}.npz")
        lr = 0.01 if start == "transpose" else SM08_TRAIN["learning_rate"]
        dbn, secs = greedy_top(rbm1, X, 2000, path, start=start, seed=seed, k=k2,
                               epochs=epochs2, threads=threads,
                               **dict(SM08_TRAIN, learning_rate=lr))
        z2 = log_z(dbn.top, runs, up_pass(rbm1, X, seed=seed),
                   os.path.basename(path)[:-len(".npz")])
        est = cyrbm.BoundEstimator(dbn, log_Z=z2, seed=seed, threads=threads)
        bt, bx = est.variational(T, samples=5), est.variational(X, samples=5)
        b100 = est.variational(T[:500], samples=100)
        b5 = est.variational(T[:500], samples=5)
        lo, hi = bt.ais_interval(3)
        p = PAPER[name]
        rows.append((name, bt.mean, f"±{3 * bt.stderr:.2f}", f"{lo:+.2f}, {hi:+.2f}",
                     bx.mean, f"±{3 * bx.stderr:.2f}", rbm_test,
                     f"{c.wall():.0f} ({secs:.0f} top)"))
        rows.append((f"  SM08 {name}", p[0], f"±{p[1]}" if p[1] else "",
                     f"{p[2][0]:+.2f}, {p[2][1]:+.2f}" if p[2] else "", p[3] or "",
                     f"±{p[4]}" if p[4] else "", PAPER_RBM[name], ""))
        m100.append((name, b5.mean, b100.mean, b100.mean - b5.mean, 3 * b5.stderr))
        gains[name] = (bt.mean, rbm_test, bt.total_stderr)
        bars[name] = (bt.mean, 3 * bt.stderr, (lo, hi), rbm_test)
    print_table("Table 2: mean bound on ln p(v) (nats), its Monte Carlo error (±3 std), the "
                "AIS error ln(Z ± 3σ) - ln Z as a shift of the bound; the first RBM alone by "
                "AIS; SM08's rows as printed (MNIST)",
                ["model", "test bound", "±3 std", "AIS error", "train bound", "±3 std",
                 "RBM1 test", "seconds"], rows)
    print_table("M = 5 against M = 100 samples of Q, first 500 test images (SM08: 'Setting "
                "M=100 did not make much difference')",
                ["model", "M = 5", "M = 100", "difference", "±3 std (M = 5)"], m100)
    b, r, se = gains["DBN-CD1"]
    check("the DBN's bound improves on a poorly trained first RBM (SM08: DBN-CD1 -100.64 "
          "against CD1(500) -125.53, +24.89)", b > r,
          f"DBN-CD1 {b:.2f} against CD1(500) {r:.2f}: {b - r:+.2f} nats (total σ of the "
          f"bound {se:.2f})")
    b, r, se = gains["DBN-CD25"]
    print(f"DBN-CD25 {b:.2f} against CD25(500) {r:.2f}: {b - r:+.2f} nats (SM08: -86.22 "
          f"against -86.34, 'we cannot confidently assert that DBN-CD25 is better')")
    b, r, se = gains["DBN-CD25, W2 = W1^T"]
    print(f"W2 = W1^T start: {b:.2f} against CD25(500) {r:.2f}: {b - r:+.2f} nats (SM08: "
          f"-85.97)")
    draw(bars, dname, a["--figure"])
    print(f"total: {clock.wall():.0f} s wall, {clock.cpu():.0f} s processor")


def draw(bars, dname, path):
    """Table 2 as a figure: each DBN's test bound (±3 std, and the AIS error of the top's
    ln Z as a second bar) beside its first RBM alone; SM08's printed values in a second
    panel (MNIST: another scale)."""
    plt = figure()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    names = list(bars)
    x = np.arange(len(names))
    bound = np.array([bars[n][0] for n in names])
    ax.errorbar(x - 0.1, bound, yerr=[bars[n][1] for n in names], fmt="o", capsize=4,
                label="DBN: test bound ± 3 std")
    ais = np.array([bars[n][2] for n in names])
    ais = np.where(np.isfinite(ais), ais, 0.0)          # an unbounded end drawn at 0
    ax.errorbar(x - 0.1, bound, yerr=[-ais[:, 0], ais[:, 1]], fmt="none", capsize=8,
                ecolor="0.6", label="AIS error of the top's ln Z")
    ax.plot(x + 0.1, [bars[n][3] for n in names], "s", label="first RBM alone (AIS)")
    ax.set_title(f"{dname.split(' ')[0]}: mean test ln p(v)")
    bx.plot(x - 0.1, [PAPER[n][0] for n in names], "o", label="DBN: test bound")
    bx.plot(x + 0.1, [PAPER_RBM[n] for n in names], "s", label="first RBM alone")
    bx.set_title("SM08 Table 2 as printed (MNIST)")
    for a in (ax, bx):
        a.set_xticks(x)
        a.set_xticklabels([n.replace(", ", "\n") for n in names], fontsize=8)
        a.set_ylabel("nats")
        a.legend(fontsize=8)
    save_figure(fig, path)


if __name__ == "__main__":
    main()
