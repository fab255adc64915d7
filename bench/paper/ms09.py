"""The Chib-style estimator against per-vector AIS and the variational bound on a
784-500-2000 DBN (Murray & Salakhutdinov 2009, Sec. 5.1 and Figure 2, left).

MNIST is not available offline: the DBN is trained greedily on MNIST-like 28x28 binary
digits (bench/mnistlike.py) with two ``Trainer.fit`` calls (SM08 Sec. 4.1: layer 2 on
states sampled from Q(h1 | v) of the training images).  ln Z of the top RBM comes from
one AIS run of the ``Annealer`` (the paper's 14,500 betas, 100 runs) and is shared by
the three estimates, as in the paper.  On 50 test vectors (5 of each class):

* the variational lower bound (SM08 Eq. 17-18 / 19-24), computed here in NumPy: the
  expectation by Monte Carlo with M samples from Q(h1 | v), Q's entropy exactly;
* per-vector AIS over h1 (cyrbm.chib.ais_per_vector);
* the Chib-style estimator (cyrbm.chib.chib_log_prob), S = 40, averaged over repeats;
* the estimator against S (chib_trace), as a table and, with matplotlib, a figure.

Usage:
  chib_digits.py [--train N] [--epochs E] [--steps S] [--repeats R] [--ais-betas K]
                 [--ais-runs A] [--samples M] [--trace LIST] [--figure PNG]
                 [--cache FILE] [--threads T] [--seed SEED] [--epochs2 E]

Options:
  --train N      Training images [default: 10000].
  --epochs E     CD-1 epochs of RBM1 [default: 30].
  --epochs2 E    CD-1 epochs of the top RBM (from W2 = W1^T) [default: 10].
  --steps S      Markov chain steps of the estimator [default: 40].
  --repeats R    Independent runs of the estimator per vector [default: 10].
  --ais-betas K  Uniform betas of per-vector AIS [default: 1000].
  --ais-runs A   Per-vector AIS runs [default: 10].
  --samples M    Samples from Q per vector for the bound [default: 200].
  --trace LIST   Values of S for the trace [default: 1,2,5,10,20,40].
  --figure PNG   Where to draw the trace [default: bench/chib_digits.png].
  --cache FILE   Trained DBN (two RBM files FILE.1.npz, FILE.2.npz) [default: bench/.cache/dbn_784_500_2000_t].
  --threads T    cyrbm threads (default: all cores).
  --seed SEED    Seed of everything [default: 0].
"""
import os
os.environ.pop("OPENBLAS_L2_SIZE", None)     # this VM's 512 slows OpenBLAS sgemm ~10x
import sys
import time

import numpy as np
from docopt import docopt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mnistlike import mnistlike  # noqa: E402

import cyrbm  # noqa: E402
from cyrbm.chib import ais_per_vector, chib_log_prob, chib_trace  # noqa: E402

PAPER = {"variational bound": -87.05, "per-vector AIS": -85.20, "estimator (S = 40)": -85.22}


def train_dbn(X, epochs, epochs2, seed, threads, cache):
    """Greedy training (SM08 Sec. 4.1): RBM1 on the images, then the top RBM on
    h1 ~ Q(h1 | v), started as SM08's "W2 = W1^T": its first 784 hidden units are RBM1's
    visible units (weights W1^T, biases swapped), the other 1216 start with zero weights
    and hidden biases -10 (they add at most 1216 softplus(-10) = 0.06 nats), so the DBN
    starts where RBM1's likelihood is and CD-1 moves it from there."""
    f1, f2 = cache + ".1.npz", cache + ".2.npz"
    if os.path.exists(f1) and os.path.exists(f2):
        print(f"DBN from {f1}, {f2}")
        return [cyrbm.RBM.load(f1), cyrbm.RBM.load(f2)]
    t = time.perf_counter()
    if os.path.exists(f1):
        rbm1 = cyrbm.RBM.load(f1)
    else:
        rbm1 = cyrbm.Trainer(500, method="cd", k=1, epochs=epochs, learning_rate=0.05,
                             seed=seed, threads=threads, progress=False).fit(X)
        os.makedirs(os.path.dirname(os.path.abspath(f1)), exist_ok=True)
        rbm1.save(f1)
    rng = np.random.default_rng(seed + 1)
    H = (rng.random((X.shape[0], 500)) < rbm1.hidden_probs(X)).astype(np.uint8)
    extra = 2000 - rbm1.n_visible
    # (copies: RBM() keeps the arrays it is given and fit(model=...) trains them in place)
    start = cyrbm.RBM(np.hstack([rbm1.W.T, np.zeros((500, extra), rbm1.dtype)]),
                      rbm1.hbias.copy(),
                      np.concatenate([rbm1.vbias, np.full(extra, -10.0, rbm1.dtype)]),
                      dtype=rbm1.dtype)
    rbm2 = cyrbm.Trainer(2000, method="cd", k=1, epochs=epochs2, learning_rate=0.01,
                         seed=seed + 2, threads=threads, progress=False).fit(H, model=start)
    rbm2.save(f2)
    print(f"trained 784-500-2000 greedily ({epochs} CD-1 epochs for RBM1, {epochs2} for the "
          f"top RBM from W2 = W1^T), {time.perf_counter() - t:.0f} s")
    return [rbm1, rbm2]


def variational_bound(layers, V, log_z, M, seed):
    """SM08's bound per vector: mean over M draws h ~ Q of ln P*(v, h), plus H(Q), minus
    ln Z (NumPy, float64)."""
    low, top = layers
    W1, b1 = low.W.astype(np.float64), low.vbias.astype(np.float64)
    W2, b2, c2 = (top.W.astype(np.float64), top.vbias.astype(np.float64),
                  top.hbias.astype(np.float64))
    rng = np.random.default_rng(seed)
    out = np.empty(len(V))
    for n, v in enumerate(V.astype(np.float64)):
        q = np.clip(low.hidden_probs(v)[0].astype(np.float64), 1e-12, 1 - 1e-12)
        H = (rng.random((M, q.size)) < q).astype(np.float64)
        Y = H @ W1.T + b1
        lp = (Y * v).sum(1) - np.logaddexp(0, Y).sum(1) + H @ b2 + np.logaddexp(0, H @ W2 + c2).sum(1)
        entropy = -np.sum(q * np.log(q) + (1 - q) * np.log1p(-q))
        out[n] = lp.mean() + entropy - log_z
    return out


def main():
    a = docopt(__doc__)
    seed = int(a["--seed"])
    threads = int(a["--threads"]) if a["--threads"] else None
    n_train = int(a["--train"])
    X, labels = mnistlike(n_train + 2000, seed=seed, return_labels=True)
    Xtr, Xte, lte = X[:n_train], X[n_train:], labels[n_train:]
    layers = train_dbn(Xtr, int(a["--epochs"]), int(a["--epochs2"]), seed, threads,
                       a["--cache"])
    low, top = layers

    t = time.perf_counter()
    rng = np.random.default_rng(seed + 3)
    Htr = (rng.random((n_train, 500)) < low.hidden_probs(Xtr)).astype(np.uint8)
    logz = cyrbm.Annealer(runs=100, schedule="paper", seed=seed, threads=threads,
                          progress=False).log_partition(top, base_rate="data", base_data=Htr)
    lo, hi = logz.log_Z_interval(3)
    print(f"ln Z of the top RBM (AIS, 100 runs, 14,500 betas): {logz.log_Z:.3f} "
          f"(3 sigma: {lo:.3f} .. {hi:.3f}), {time.perf_counter() - t:.1f} s")

    t = time.perf_counter()
    z1 = cyrbm.Annealer(runs=100, schedule="paper", seed=seed, threads=threads,
                        progress=False).log_partition(low, base_rate="data", base_data=Xtr)
    print(f"RBM1 alone (784-500): ln Z {z1.log_Z:.3f} by AIS, {time.perf_counter() - t:.1f} s")

    pick = np.concatenate([np.flatnonzero(lte == c)[:5] for c in range(10)])
    V = Xte[pick]
    print(f"{len(V)} test vectors, 5 of each class")

    t = time.perf_counter()
    bound = variational_bound(layers, V, logz.log_Z, int(a["--samples"]), seed + 4)
    tb = time.perf_counter() - t
    steps, repeats = int(a["--steps"]), int(a["--repeats"])
    est = chib_log_prob(layers, V, logz, steps=steps, repeats=repeats, seed=seed,
                        threads=threads)
    ais = ais_per_vector(layers, V, logz, schedule=f"linear:{int(a['--ais-betas'])}",
                         runs=int(a["--ais-runs"]), seed=seed, threads=threads)

    rbm1_alone = low.log_unnormalized(V) - z1.log_Z
    rows = [("RBM1 alone (exact sum over h, AIS ln Z)", rbm1_alone.mean(),
             rbm1_alone.std(ddof=1) / np.sqrt(len(V)), None, 0.0),
            ("variational bound", bound.mean(), bound.std(ddof=1) / np.sqrt(len(V)), None, tb),
            (f"per-vector AIS ({ais.betas} betas, {ais.runs} runs)", ais.mean, ais.stderr,
             ais.mc_stderr, ais.seconds),
            (f"estimator (S = {steps}, {repeats} repeats)", est.mean, est.stderr,
             est.mc_stderr, est.seconds)]
    print()
    print(f"{'method':44} {'mean ln P':>10} {'stderr':>7} {'MC err':>7} {'seconds':>8}")
    for name, m, se, mc, sec in rows:
        mcs = f"{mc:7.3f}" if mc is not None else f"{'-':>7}"
        print(f"{name:44} {m:10.3f} {se:7.3f} {mcs} {sec:8.1f}")
    d_ais = est.mean - ais.mean
    e_ais = float(np.hypot(est.mc_stderr, ais.mc_stderr))
    d_b = est.log_probs - bound
    print(f"\nestimator - AIS (same vectors): {d_ais:+.3f} nats, Monte Carlo error "
          f"{e_ais:.3f} ({abs(d_ais) / e_ais:.1f} of it): "
          f"{'agree' if abs(d_ais) <= 3 * e_ais else 'DISAGREE'} within 3 errors")
    print(f"estimator - bound: {d_b.mean():+.3f} nats on average (stderr "
          f"{d_b.std(ddof=1) / np.sqrt(len(d_b)):.3f}), estimator >= bound for "
          f"{int(np.sum(d_b >= 0))} of {len(d_b)} vectors")
    print("MS09's MNIST figures (their DBN, real MNIST): " +
          ", ".join(f"{k} {v}" for k, v in PAPER.items()))

    trace_s = [int(s) for s in a["--trace"].split(",")]
    tr = chib_trace(layers, V, logz, steps=trace_s, repeats=repeats, seed=seed + 5,
                    threads=threads,
                    references={"variational bound": float(bound.mean()),
                                "per-vector AIS": float(ais.mean)})
    print("\nthe estimator against S (MS09 Figure 2):")
    print(tr.table())
    try:
        tr.plot(a["--figure"], title="784-500-2000 DBN, 50 MNIST-like test digits")
        print(f"figure: {a['--figure']}")
    except cyrbm.CyrbmError as exc:
        print(f"no figure: {exc}")


if __name__ == "__main__":
    main()
