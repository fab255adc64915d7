"""Murray & Salakhutdinov (2009) Sec. 5.1 and Figure 2 (left): on 50 test vectors (5 of
each class) of a 784-500-2000 DBN, the variational bound, per-vector AIS and the
Chib-style estimator against the number of Markov-chain steps S; per-vector AIS given
the estimator's time; then the estimator on the whole test set.

Data: MNIST's IDX files given by --mnist, else Fashion-MNIST (not MNIST: its ln p values
are not the paper's), binarized stochastically as SM08.  Two DBNs on one RBM1, CD25(500)
of sm08_table1.py (the same training, read from --models when that script has run), each
with a top RBM of 2000 hidden units trained on samples of Q(h1 | v) (common.greedy_top):

* the easy one: the top trained by CD1 from SM08's "W2 = W1^T" start, so that the DBN
  starts as RBM1 (its posterior over h1 stays close to Q);
* MS09's: SM08's DBN-CD25, the top trained from random weights by CD raised 1 -> 25 (the
  same model file as sm08_table2.py's DBN-CD25).

For each, ln Z of the top RBM comes from one AIS estimate (14,500 betas) shared by every
method, as in MS09:

* the variational bound (SM08 Eq. 19-24; BoundEstimator.variational, M samples of Q);
* per-vector AIS over h1 (cyrbm.estimators.chib.ais_per_vector), the gold standard, --ais-betas
  uniform betas (MS09: 10,000, hand-tuned), and with 100 betas (MS09's "AIS given the
  estimator's time": -89.59, below the bound);
* the Chib-style estimator (cyrbm.estimators.chib.chib_log_prob), S = 40, --repeats runs averaged
  (MS09: 10), and against S (chib_trace: MS09 Figure 2);
* the estimator (S = 40, one run) on --whole test vectors (MS09: all 10,000, -84.55).

Usage:
  ms09.py [options]

Options:
  --quick         Minutes: 10,000 training images, 10 epochs for RBM1, 1 for each top, 20
                  AIS runs for ln Z, 300 betas x 4 runs of per-vector AIS, 3 repeats,
                  100 vectors for the whole-set estimate.
  --mnist=DIR     Real MNIST's IDX files (default: Fashion-MNIST).
  --epochs=E      Epochs of RBM1 (as sm08_table1.py) [default: 20].
  --epochs2=E     CD1 epochs of the top RBM from W2 = W1^T [default: 10].
  --epochs-random=E  Epochs of the top RBM from random weights (CD 1 -> 25, as
                  sm08_table2.py's DBN-CD25); default 20, or 1 with --quick (which
                  this option overrides).
  --dbn=WHICH     Which DBN: transpose (the top from W2 = W1^T), random (from random
                  weights) or both [default: both].
  --steps=S       Markov chain steps of the estimator [default: 40].
  --repeats=R     Independent runs of the estimator per vector [default: 10].
  --ais-betas=K   Uniform betas of per-vector AIS [default: 10000].
  --ais-runs=A    Per-vector AIS runs [default: 16].
  --runs=N        AIS runs for ln Z of the top RBM [default: 100].
  --samples=M     Samples from Q per vector for the bound [default: 100].
  --whole=N       Test vectors for the whole-set estimate (0: all) [default: 0].
  --models=DIR    Trained models (shared with sm08_table1.py)
                  [default: <repo>/bench/.cache/sm08].
  --threads=T     Threads [default: 1].
  --seed=S        Seed of everything [default: 0].

At full size the long stages resume: ln Z of each top (pickled) and the estimators
(their checkpoints) are kept beside the models in --models/full/ms09_*, so a stopped run
picks up where it was; remove those files to start over.
  --figure=PNG    Where to draw the trace of the W2 = W1^T DBN
                  [default: <repo>/bench/paper/ms09.png].
  --figure-random=PNG  Where to draw the trace of the DBN from random weights
                  [default: <repo>/bench/paper/ms09_random.png].
"""
import os
os.environ.pop("OPENBLAS_L2_SIZE", None)     # this VM's 512 slows OpenBLAS sgemm ~10x
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (SM08_TRAIN, Clock, cached, check, greedy_top,  # noqa: E402
                    option, parse_args, print_table, sm08_rbm, sm08_setup)

import cyrbm  # noqa: E402
from cyrbm.estimators.chib import ais_per_vector, chib_log_prob, chib_trace  # noqa: E402
from cyrbm.training.greedy import up_pass  # noqa: E402

# MS09 Sec. 5.1 as printed (their DBN, real MNIST; nats)
PAPER = {"bound (50 vectors)": -87.05, "per-vector AIS, 10,000 betas": -85.20,
         "estimator S = 40, 10 runs": -85.22, "AIS, 100 betas": -89.59,
         "AIS, 1,000 betas": -86.05, "estimator, whole test set": -84.55,
         "bound, whole test set": -86.22}


def compare(name, dbn, rbm1, X, T, labels, *, runs, ais_betas, ais_runs, repeats, steps,
            M, whole, seed, threads, stage, figure, dname, title):
    """MS09 Sec. 5.1 on one DBN: ln Z of its top by AIS, then on 50 test vectors (5 of each
    class) the bound, per-vector AIS, the Chib-style estimator and short AIS, MS09's three
    comparisons, the trace against S (drawn to ``figure``), and the first ``whole`` test
    vectors.  ``stage(tag)`` names a resumable stage's file (None at quick size)."""
    def top_log_z():
        return cyrbm.Annealer(runs=runs, schedule="paper", seed=seed, threads=threads,
                              progress=False).log_partition(
            dbn.top, base_rate="data", base_data=up_pass(rbm1, X, seed=seed))

    path = stage(f"logz{runs}")
    logz = top_log_z() if path is None else cached(path.replace(".npz", ".pkl"), top_log_z)
    lo, hi = logz.log_Z_interval(3)
    print(f"\n== {name} ==\nln Z of the top by AIS ({runs} runs, 14,500 betas) "
          f"{logz.log_Z:.3f} (±3σ: {lo:.3f} .. {hi:.3f}, {logz.seconds:.0f} s)")

    pick = np.concatenate([np.flatnonzero(labels == c)[:5] for c in range(10)])
    V = T[pick]
    est_ = cyrbm.BoundEstimator(dbn, log_Z=logz, seed=seed, threads=threads)
    bound = est_.variational(V, samples=M)
    est = chib_log_prob(dbn, V, logz, steps=steps, repeats=repeats, seed=seed, threads=threads,
                        checkpoint=stage(f"chib50_S{steps}_r{repeats}"))
    # one vector's runs a slice: a few minutes each at full size
    ais = ais_per_vector(dbn, V, logz, schedule=f"linear:{ais_betas}", runs=ais_runs,
                         seed=seed, threads=threads, chunk=ais_runs,
                         checkpoint=stage(f"ais50_{ais_betas}x{ais_runs}"))
    short = ais_per_vector(dbn, V, logz, schedule="linear:100", runs=2, seed=seed + 1,
                           threads=threads)
    rows = [("variational bound", f"M = {M}", bound.mean, bound.seconds,
             PAPER["bound (50 vectors)"]),
            ("per-vector AIS", f"{ais_betas} betas x {ais_runs} runs", ais.mean, ais.seconds,
             PAPER["per-vector AIS, 10,000 betas"]),
            ("Chib-style estimator", f"S = {steps}, {repeats} runs", est.mean, est.seconds,
             PAPER["estimator S = 40, 10 runs"]),
            ("per-vector AIS, short", "100 betas x 2 runs", short.mean, short.seconds,
             PAPER["AIS, 100 betas"])]
    print_table(f"{name}, 50 test vectors, 5 of each class: mean ln P(v), nats (MS09's "
                "column: their DBN on MNIST, as printed)",
                ["method", "setting", "mean", "seconds", "MS09"], rows)
    d = est.log_probs - bound.values
    check("the Chib-style estimator is >= the bound", est.mean >= bound.mean,
          f"estimator - bound {d.mean():+.3f} nats on average, >= for {int((d >= 0).sum())} "
          f"of {d.size} vectors (MS09: +1.83)")
    e = float(np.hypot(est.mc_stderr, ais.mc_stderr))
    check("the estimator is close to per-vector AIS", abs(est.mean - ais.mean) <= 3 * e + 0.1,
          f"estimator - AIS {est.mean - ais.mean:+.3f} nats, Monte Carlo error {e:.3f} "
          f"(MS09: -0.02)")
    check("short AIS (100 betas) is worse than both",
          short.mean < min(est.mean, ais.mean),
          f"{short.mean:.3f} against estimator {est.mean:.3f}, AIS {ais.mean:.3f}, bound "
          f"{bound.mean:.3f} (MS09: -89.59, below the bound -87.05); seconds: short AIS "
          f"{short.seconds:.1f}, estimator {est.seconds:.1f}")
    check("short AIS (100 betas) is below the bound", short.mean < bound.mean,
          f"short AIS - bound {short.mean - bound.mean:+.3f} nats (MS09: -2.54)")

    tr = chib_trace(dbn, V, logz, steps=[1, 2, 5, 10, 20, 40], repeats=repeats,
                    seed=seed + 5, threads=threads,
                    references={"variational bound": float(bound.mean),
                                "per-vector AIS": float(ais.mean),
                                "per-vector AIS, 100 betas": float(short.mean)})
    print(f"\n{name}: the estimator against S (MS09 Figure 2, left):")
    print(tr.table())
    tr.plot(figure, title=f"{title}\n50 {dname.split(' ')[0]} test vectors")
    print(f"figure: {figure}")

    W = T[:whole]
    allv = chib_log_prob(dbn, W, logz, steps=steps, repeats=1, seed=seed + 7, threads=threads,
                         checkpoint=stage(f"chib{whole}_S{steps}"))
    allb = est_.variational(W, samples=5)
    print_table(f"{name}, the first {whole} test vectors (MS09: all 10,000)",
                ["method", "mean ln P(v)", "stderr", "seconds", "MS09"],
                [("variational bound (M = 5)", allb.mean, allb.stderr, allb.seconds,
                  PAPER["bound, whole test set"]),
                 (f"estimator (S = {steps})", allv.mean, allv.stderr, allv.seconds,
                  PAPER["estimator, whole test set"])])


def main(argv=None):
    a = parse_args(__doc__, argv)
    clock = Clock()
    quick = a["--quick"]
    seed, threads, X, T, dname, labels = sm08_setup(a, quick_test=None)
    epochs = option(a, "--epochs", 10)
    epochs2 = option(a, "--epochs2", 1)
    epochs_random = int(a["--epochs-random"] or (1 if quick else 20))
    runs = option(a, "--runs", 20)
    ais_betas, ais_runs = (300, 4) if quick else (int(a["--ais-betas"]), int(a["--ais-runs"]))
    repeats = option(a, "--repeats", 3)
    whole = 100 if quick else (int(a["--whole"]) or T.shape[0])
    steps, M = int(a["--steps"]), int(a["--samples"])
    settings = dict(runs=runs, ais_betas=ais_betas, ais_runs=ais_runs, repeats=repeats,
                    steps=steps, M=M, whole=whole, seed=seed, threads=threads, dname=dname)

    rbm1, _ = sm08_rbm(X, "1:25", 500, a["--models"], quick, epochs, seed, threads)
    folder = os.path.join(a["--models"], "quick" if quick else "full")
    print(f"MS09 Sec. 5.1 on {dname}: two DBNs 784-500-2000 on RBM1 = CD25(500) "
          f"({epochs} epochs)")

    # at full size the long stages keep their results in the model cache (the estimators'
    # checkpoints, the tops' ln Z pickled), so that a stopped run resumes where it was
    def stager(tag):
        def stage(name):
            return None if quick else os.path.join(folder, f"ms09_{name}_{tag}_s{seed}.npz")
        return stage

    which = a["--dbn"]
    if which not in ("both", "transpose", "random"):
        sys.exit(f"ms09.py: --dbn must be transpose, random or both, not {which!r}.")
    if which != "random":
        easy(a, rbm1, X, T, labels, folder, epochs2, stager, settings)
    if which != "transpose":
        hard(a, rbm1, X, T, labels, folder, epochs_random, stager, settings)
    print(f"total: {clock.wall():.0f} s wall, {clock.cpu():.0f} s processor (this call; "
          f"resumed stages count their earlier calls' seconds in their own columns)")


def easy(a, rbm1, X, T, labels, folder, epochs2, stager, settings):
    """SM08's "W2 = W1^T" start: the easy DBN (it starts as RBM1)."""
    seed, threads = settings["seed"], settings["threads"]
    top_path = os.path.join(folder, f"ms09_top2000_e{epochs2}.npz")
    dbn, t_top = greedy_top(rbm1, X, 2000, top_path, start="transpose", seed=seed, k=1,
                            epochs=epochs2, batch_size=100, learning_rate=0.01,
                            momentum=0.5, weight_decay=2e-4, threads=threads)
    compare(f"top CD1 from W2 = W1^T, {epochs2} epochs ({t_top:.0f} s)", dbn, rbm1, X, T,
            labels, stage=stager(f"e{epochs2}"), figure=a["--figure"],
            title="784-500-2000 DBN, top from W2 = W1^T", **settings)


def hard(a, rbm1, X, T, labels, folder, epochs_random, stager, settings):
    """MS09's DBN (SM08's DBN-CD25): the top trained from random weights by CD raised
    1 -> 25, the same model file as sm08_table2.py's DBN-CD25 (either script reuses the
    other's)."""
    seed, threads = settings["seed"], settings["threads"]
    hard_path = os.path.join(folder, f"top2000_1to25_random_on_1to25_e{epochs_random}.npz")
    dbn, t_hard = greedy_top(rbm1, X, 2000, hard_path, start="random", seed=seed, k="1:25",
                              epochs=epochs_random, threads=threads, **SM08_TRAIN)
    compare(f"top CD1->25 from random weights (SM08's DBN-CD25), {epochs_random} epochs "
            f"({t_hard:.0f} s)", dbn, rbm1, X, T, labels,
            stage=stager(f"random_e{epochs_random}"), figure=a["--figure-random"],
            title="DBN-CD25, top from random weights", **settings)


if __name__ == "__main__":
    main()
