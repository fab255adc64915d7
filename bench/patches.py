"""MS09 Sec. 5.2 (natural image patches) at a size this machine can run (issue 22).

Murray & Salakhutdinov (2009) model 20 x 20 patches of natural images (130,000 training,
20,000 test; van Hateren's images "preprocessed and whitened as described in" Osindero &
Hinton 2008) with a two-layer DBN: a Gaussian RBM of 400 visible and 2,000 hidden units,
then a semi-restricted BM of 2,000 visible and 500 hidden units; ln Z by AIS with 15,000
intermediate distributions and 100 runs.  Here:

* data: ``cyrbm.data.patches`` (scikit-learn's two sample images; grey, dequantized, pixels
  in [0, 1); test patches from the held-out right fifth of each image), ZCA-whitened on
  the training patches (the whitening is kept in the model file);
* the first layer: a Gaussian RBM with 400 visible units of sigma 1 (whitened data; or
  learned, --learn-sigma) and H binary hidden units (2,000 in the paper), trained by CD-1 (Osindero & Hinton's
  first layer is "a stack of RBMs learned one at a time" with CD; their learning
  rate, momentum and weight decay are not in MS09, so these are the usual ones: the
  learning rate of the option, momentum 0.9, weight decay 0.0002, batches of 100);
* ln Z by AIS from independent Gaussians fitted to the training patches, K betas
  spaced as SM08's schedule (1/29 of them in [0, 0.5), 8/29 in [0.5, 0.9), the rest in
  [0.9, 1]) and R runs; the test log-likelihood per patch with its 3-sigma interval;
* baselines with exact test log-likelihoods fitted to the same whitened patches: a
  full-covariance Gaussian, factor analysis (scikit-learn), a mixture of full-covariance
  Gaussians (scikit-learn's GaussianMixture, in place of MS09's mixture of factor
  analysers) and square ICA (FastICA's orthogonal unmixing W of the whitened patches, so
  ln|det W| = 0, with logistic sources: ln p(y) = ln|det W| + sum_i ln p_i((W y)_i),
  p_i logistic of location 0 and scale fitted per source by maximum likelihood on the
  training sources);
* every number in nats per test patch, in the whitened space (where MS09's models live:
  the paper does not say which space its numbers are in, but its first layer sees the
  whitened patches with unit-variance Gaussian units, and a unit Gaussian in 400
  whitened dimensions scores -400 (1 + ln 2 pi) / 2 = -567.58, between its DBN and its
  ICA numbers, so they are read as whitened-space numbers), and in pixel space (plus
  ln|det A| of the whitening, the same shift for every model).

* the DBN: an SRBM top (the first layer's H hidden units as its visible units, with
  lateral weights, and H2 hidden units; 500 in the paper) trained by CD-1 with a damped
  mean-field reconstruction on 0/1 samples of Q(h1 | v), ln Z of the top by AIS (the same
  K betas and R runs, from the base rates of Q(h1 | v)); on test patches the variational
  bound (all of them), and on a random few (MS09's Figure 2: 50) the bound, the Chib-style
  estimator (S = 40) and per-vector AIS over h1, paired, with AIS given about the
  estimator's time as MS09 Sec. 5.1; whether the bound is loose (MS09: by 20.34 nats on
  patches, about 2 on MNIST);
* first, the same three estimators on a DBN small enough to sum exactly (400-16-12, the
  same patches), against exact ln p(v).

Usage:
  patches.py [--quick] [--hidden H] [--train N] [--test N] [--epochs E] [--lr LR]
             [--betas K] [--runs R] [--whiten KIND] [--learn-sigma] [--seed S]
             [--save FILE] [--top-hidden H2] [--top-epochs E2] [--top-lr LR2]
             [--vectors N] [--vector-betas K2]

Options:
  --quick         Minutes: 200 hidden units, 5,000 / 1,000 patches, 5 epochs, 1,500
                  betas, 20 runs, at most 30 FastICA iterations (100 otherwise)
                  (overrides the sizes below).
  --hidden H      Hidden units of the Gaussian RBM (the paper: 2,000) [default: 500].
  --train N       Training patches (the paper: 130,000) [default: 30000].
  --test N        Test patches (the paper: 20,000) [default: 5000].
  --epochs E      CD-1 epochs [default: 10].
  --lr LR         Learning rate [default: 0.001].
  --betas K       AIS betas (the paper: 15,000) [default: 15000].
  --runs R        AIS runs (the paper: 100) [default: 100].
  --whiten KIND   zca, pca or standardize [default: zca].
  --learn-sigma   Learn the visible units' sigma too (default: fixed at 1).
  --seed S        The one seed [default: 0].
  --save FILE     Write the trained Gaussian RBM (with its whitening) to FILE.
  --top-hidden H2     Hidden units of the SRBM top (the paper: 500) [default: 500].
  --top-epochs E2     Its CD-1 epochs [default: 10].
  --top-lr LR2        Its learning rate [default: 0.001].
  --vectors N         Test patches for the Chib-style estimator and per-vector AIS
                      (MS09: 50) [default: 50].
  --vector-betas K2   Betas of per-vector AIS (16 runs each) [default: 1000].
  (--quick: a 100-hidden top, 5 epochs, 20 patches, 2 repeats, 4 runs x 1,000 betas.)
"""
import math
import os
import sys
import time
import warnings

import numpy as np
from docopt import docopt

import cyrbm
from cyrbm.training.greedy import up_pass
from cyrbm.data.patches import fit_whitening, load_patches

#: MS09 Sec. 5.2, as printed (nats per test patch, their whitened van Hateren patches)
PAPER = {"DBN, variational lower bound": -583.73, "DBN, Chib-style estimator": -563.39,
         "square ICA": -551.14, "MFA, 50 components, 30 latent dimensions": -502.30}


def sm08_shaped(K):
    """K betas from 0 to 1 spaced as SM08's 14,500 (500 / 4,000 / 10,000 in [0, 0.5),
    [0.5, 0.9), [0.9, 1])."""
    a, b = round(K / 29), round(8 * K / 29)
    return np.concatenate([np.linspace(0, 0.5, a, endpoint=False),
                           np.linspace(0.5, 0.9, b, endpoint=False),
                           np.linspace(0.9, 1.0, K - a - b)])


# ----------------------------------------------------------------------- baselines
def gaussian_baseline(Y, T):
    """Mean test ln N(t; mean, cov) with the training rows' maximum-likelihood mean and
    covariance."""
    mu = Y.mean(axis=0)
    cov = np.cov(Y.T, bias=True)
    L = np.linalg.cholesky(cov)
    z = np.linalg.solve(L, (T - mu).T)
    D = Y.shape[1]
    return float(-0.5 * np.mean(np.sum(z * z, axis=0)) - np.sum(np.log(np.diag(L)))
                 - 0.5 * D * math.log(2 * math.pi))


def factor_analysis(Y, T, n_components, seed):
    from sklearn.decomposition import FactorAnalysis
    fa = FactorAnalysis(n_components=n_components, random_state=seed).fit(Y)
    return float(fa.score(T))                       # the mean log-likelihood, nats


def gaussian_mixture(Y, T, n_components, seed):
    from sklearn.mixture import GaussianMixture
    gm = GaussianMixture(n_components=n_components, covariance_type="full",
                         reg_covar=1e-4, random_state=seed, max_iter=100).fit(Y)
    return float(gm.score(T))


def square_ica(Y, T, seed, max_iter):
    """Square ICA on whitened rows: FastICA's orthogonal unmixing W (whiten=False), ln
    p(y) = ln|det W| + sum_i ln Logistic((W (y - m))_i; 0, s_i), s_i fitted by maximum
    likelihood on the training sources.  Returns (mean test ln p, ln|det W|, seconds)."""
    from scipy import optimize
    from sklearn.decomposition import FastICA
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # a convergence warning is reported below
        ica = FastICA(n_components=Y.shape[1], whiten=False, fun="logcosh",
                      max_iter=max_iter, tol=1e-4, random_state=seed).fit(Y)
    W, m = ica.components_, Y.mean(axis=0)
    log_det = float(np.linalg.slogdet(W)[1])
    S, St = (Y - m) @ W.T, (T - m) @ W.T

    def logistic_lp(s, scale):
        z = np.abs(s) / scale              # ln p = -z - 2 ln(1 + e^-z) - ln scale, z = |s|/scale
        return -z - 2 * np.log1p(np.exp(-z)) - np.log(scale)

    total = np.zeros(T.shape[0])
    for i in range(W.shape[0]):
        fit = optimize.minimize_scalar(lambda ls: -np.mean(logistic_lp(S[:, i], math.exp(ls))),
                                       bounds=(-6, 4), method="bounded")
        total += logistic_lp(St[:, i], math.exp(fit.x))
    return float(np.mean(total)) + log_det, log_det, time.perf_counter() - t0, ica.n_iter_


# --------------------------------------------------------------------------- main
def dbn_section(rbm, Y, T, o, quick, seed, K, R, rbm_lp):
    """MS09 Sec. 5.2's DBN on these patches: an SRBM top trained on 0/1 samples of
    Q(h1 | v) of the training patches, its ln Z by AIS (K betas, R runs), and on test
    patches the variational bound (MS09 Eq. 17 / SM08 Eq. 19-24), the Chib-style estimator
    (MS09 Figure 1, S steps) and per-vector AIS over h1.  Returns the bound, the Chib-style
    estimate and per-vector AIS on the same test patches (the last two's subset)."""
    H2, E2, lr2, M, n_vec, S, reps, pv_runs, pv_betas = (
        (100, 5, 0.001, 5, 20, 40, 2, 4, 1000) if quick else
        (int(o["--top-hidden"]), int(o["--top-epochs"]), float(o["--top-lr"]), 10,
         int(o["--vectors"]), 40, 10, 16, int(o["--vector-betas"])))
    H1 = rbm.n_hidden
    x = up_pass(rbm, Y, mode="sample", seed=seed, layer=0)
    t0 = time.perf_counter()
    top = cyrbm.Trainer(H2, lateral=True, reconstruction="mean-field", method="cd", k=1,
                        epochs=E2, batch_size=100, learning_rate=lr2, momentum=0.9,
                        weight_decay=0.0002, seed=seed, progress=False,
                        monitor_size=0).fit(x)
    dbn = cyrbm.DBN([rbm, top])
    print(f"DBN 400-{H1}-{H2}: the top layer an SRBM of {H1} visible units (lateral weights, "
          f"|L| mean {np.abs(top.L).sum() / (H1 * (H1 - 1)):.4f}) and {H2} hidden units, "
          f"CD-1 with damped mean-field, {E2} epochs, lr {lr2}, momentum 0.9, weight decay "
          f"0.0002, on samples of Q(h1 | v): {time.perf_counter() - t0:.0f} s")
    q = rbm.hidden_probs(Y).astype(np.float64)
    on = q.sum(axis=0)
    base = np.log(on + 1.0) - np.log(q.shape[0] - on + 1.0)
    ann = cyrbm.Annealer(runs=R, schedule=sm08_shaped(K), seed=seed, progress=False)
    za = ann.log_partition(top, base_rate=base)
    lo, hi = za.log_Z_interval(3)
    print(f"  the SRBM's ln Z by AIS (from the base rates of Q(h1 | v), {K} betas, {R} runs): "
          f"{za.log_Z:.3f} (3 sigma [{lo - za.log_Z:+.3f}, {hi - za.log_Z:+.3f}]), ESS "
          f"{za.ess:.1f}, {za.seconds:.0f} s")
    est = cyrbm.BoundEstimator(dbn, log_Z=za, seed=seed)
    allb = est.variational(T, samples=M)
    lo, hi = allb.ais_interval(3)
    print(f"  variational bound, all {T.shape[0]} test patches, M = {M}: {allb.mean:.2f} "
          f"(+- {allb.stderr:.2f} over patches; ln Z's 3 sigma shifts it by [{lo:+.2f}, {hi:+.2f}]; "
          f"{allb.seconds:.1f} s)")
    pick = np.sort(np.random.default_rng(seed).choice(T.shape[0], n_vec, replace=False))
    v = T[pick]
    b = est.variational(v, samples=M)
    c = est.chib(v, steps=S, repeats=reps)
    a = est.ais_per_vector(v, runs=pv_runs, schedule=f"linear:{pv_betas}")
    # MS09's point: AIS over h1 given about the estimator's time is worse than both
    short_betas = max(10, int(pv_betas * c.seconds / max(a.seconds, 1e-9)))
    a_short = est.ais_per_vector(v, runs=pv_runs, schedule=f"linear:{short_betas}")
    print(f"  on {n_vec} random test patches (the same for each; MS09's Figure 2 uses 50):")
    for name, res, note in (
            (f"variational bound, M = {M}", b, ""),
            (f"Chib-style estimator, S = {S}, {reps} repeats", c, ""),
            (f"per-vector AIS, {pv_runs} runs x {pv_betas} betas", a, ""),
            (f"per-vector AIS, {pv_runs} runs x {short_betas} betas (the estimator's time)",
             a_short, "")):
        print(f"    {name:<62} {res.mean:9.2f} +- {res.stderr:.2f} over patches"
              f"{'' if res.mc_stderr is None else f', MC +- {res.mc_stderr:.2f}'}"
              f"  {res.seconds:7.1f} s")
    d_cb = c.values - b.values
    d_ab = a.values - b.values
    d_ca = c.values - a.values
    se = lambda d: d.std(ddof=1) / math.sqrt(d.size)
    print(f"    paired differences: Chib - bound {d_cb.mean():+.2f} +- {se(d_cb):.2f}, "
          f"AIS - bound {d_ab.mean():+.2f} +- {se(d_ab):.2f}, Chib - AIS "
          f"{d_ca.mean():+.2f} +- {se(d_ca):.2f} (ln Z cancels in each)")
    print(f"  DBN bound minus the Gaussian RBM alone (AIS), all test patches: "
          f"{allb.mean - rbm_lp:+.2f}")
    # for comparison: a plain RBM top of the same size (no lateral weights), CD-1, lr 0.01
    rtop = cyrbm.Trainer(H2, method="cd", k=1, epochs=E2, batch_size=100, learning_rate=0.01,
                         momentum=0.9, weight_decay=0.0002, seed=seed, progress=False,
                         monitor_size=0).fit(x)
    zr = ann.log_partition(rtop, base_rate=base)
    rb = cyrbm.BoundEstimator(cyrbm.DBN([rbm, rtop]), log_Z=zr, seed=seed).variational(
        T, samples=M)
    print(f"  for comparison, an RBM top {H1}-{H2} (no lateral weights, CD-1, lr 0.01, {E2} "
          f"epochs; AIS ln Z {zr.log_Z:.3f}, ESS {zr.ess:.1f}): bound {rb.mean:.2f} on all "
          f"test patches, {rb.mean - rbm_lp:+.2f} from the RBM alone")
    return b.mean, c.mean, a.mean


def exact_check(Y, T, seed):
    """The same estimators on a DBN small enough to sum exactly, trained on the same
    patches (400-16-12, the SRBM top with lateral weights): each against exact ln p(v)
    (h1 summed over its 2^16 states, h2 summed out, the Gaussian integral done)."""
    from cyrbm.estimators.gaussian_dbn import exact_log_prob
    rbm = cyrbm.Trainer(16, visible="gaussian", method="cd", k=1, epochs=5, batch_size=100,
                        learning_rate=0.01, momentum=0.9, weight_decay=0.0002, seed=seed,
                        progress=False, monitor_size=0).fit(Y[:5000])
    x = up_pass(rbm, Y[:5000], mode="sample", seed=seed, layer=0)
    top = cyrbm.Trainer(12, lateral=True, method="cd", k=1, epochs=10, batch_size=100,
                        learning_rate=0.05, momentum=0.9, seed=seed, progress=False,
                        monitor_size=0).fit(x)
    v = T[:20].astype(np.float64)
    exact, log_z = exact_log_prob(rbm, top, v)
    est = cyrbm.BoundEstimator(cyrbm.DBN([rbm, top]), log_Z=log_z, seed=seed)
    b = est.variational(v, samples=200)
    c = est.chib(v, steps=40, repeats=10)
    a = est.ais_per_vector(v, runs=16, schedule="linear:1000")
    print(f"exact check, DBN 400-16-12 (|L| mean {np.abs(top.L).mean():.3f}) on 20 test "
          f"patches, exact ln Z: exact {exact.mean():.3f}; bound {b.mean - exact.mean():+.3f}, "
          f"Chib-style (S = 40, 10 repeats) {c.mean - exact.mean():+.3f} (largest |error| "
          f"{np.abs(c.values - exact).max():.3f}), per-vector AIS (16 x 1,000) "
          f"{a.mean - exact.mean():+.3f} (largest {np.abs(a.values - exact).max():.3f})")


def main(argv=None):
    o = docopt(__doc__, argv=argv)
    quick = o["--quick"]
    H, n_train, n_test, epochs, K, R = ((200, 5000, 1000, 5, 1500, 20) if quick else
                                        (int(o["--hidden"]), int(o["--train"]),
                                         int(o["--test"]), int(o["--epochs"]),
                                         int(o["--betas"]), int(o["--runs"])))
    lr, seed, kind = float(o["--lr"]), int(o["--seed"]), o["--whiten"]
    t_all = time.perf_counter()

    X = load_patches(n=n_train, split="train", seed=seed)
    Xt = load_patches(n=n_test, split="test", seed=seed)
    whitening = fit_whitening(X, kind)
    Y, T = whitening.transform(X), whitening.transform(Xt)
    jac = whitening.log_det
    print(f"data: {n_train} training and {n_test} test 20x20 grey patches of scikit-learn's "
          f"china.jpg and flower.jpg (test: the held-out right fifth of each image), pixels "
          f"(L + u) / 256; {kind}-whitened on the training patches, ln|det A| = {jac:.2f}")
    print(f"  whitened test patches: mean variance {T.var(axis=0).mean():.3f} per dimension "
          f"(training: {Y.var(axis=0).mean():.3f})")
    rows = []

    def report(name, value, note=""):
        rows.append((name, value, note))
        print(f"  {name:<46} {value:10.2f} whitened  {value + jac:10.2f} pixels  {note}",
              flush=True)

    D = Y.shape[1]
    print("baselines (nats per test patch):")
    report("full-covariance Gaussian", gaussian_baseline(Y, T),
           "(in the whitened space: N(0, I))")
    t0 = time.perf_counter()
    n_fa = 30 if quick else 100
    report(f"factor analysis, {n_fa} factors", factor_analysis(Y, T, n_fa, seed),
           f"({time.perf_counter() - t0:.0f} s)")
    t0 = time.perf_counter()
    n_gm = 5
    report(f"mixture of {n_gm} full-covariance Gaussians", gaussian_mixture(Y, T, n_gm, seed),
           f"({time.perf_counter() - t0:.0f} s)")
    ica_max = 30 if quick else 100
    ica, ica_det, ica_s, ica_iter = square_ica(Y, T, seed, ica_max)
    report("square ICA (FastICA, logistic sources)", ica,
           f"(ln|det W| = {ica_det:.1e}, {ica_iter} iterations"
           f"{' (the most allowed: not converged)' if ica_iter >= ica_max else ''}, "
           f"{ica_s:.0f} s)")

    # ------------------------------------------------------------- the Gaussian RBM
    t0 = time.perf_counter()
    learn = o["--learn-sigma"]
    trainer = cyrbm.Trainer(H, visible="gaussian", learn_sigma=learn, method="cd", k=1,
                            epochs=epochs,
                            batch_size=100, learning_rate=lr, momentum=0.9,
                            weight_decay=0.0002, seed=seed, progress=False, monitor_size=0)
    model = trainer.fit(Y)
    model.whitening = whitening
    train_s = time.perf_counter() - t0
    sigma = (f"sigma learned, now {model.sigma.min():.3f} to {model.sigma.max():.3f}"
             if learn else "sigma 1")
    print(f"Gaussian RBM 400 x {H} ({sigma}), CD-1, {epochs} epochs, lr {lr}, momentum 0.9, "
          f"weight decay 0.0002, batch 100: {train_s:.0f} s; reconstruction error "
          f"{model.reconstruction_error(T[:1000]):.1f} per test patch")
    if o["--save"]:
        model.save(o["--save"])
    annealer = cyrbm.Annealer(runs=R, schedule=sm08_shaped(K), seed=seed, progress=False)
    annealer.schedule_spec = f"SM08-shaped:{K}"
    r = annealer.log_partition(model, base_rate="data", data=T, base_data=Y)
    lo, hi = r.avg_log_prob_interval(3)
    print(f"AIS ln Z = {r.log_Z:.3f} (ln(Z +- 3 sigma) - ln Z: "
          f"[{r.log_Z_interval(3)[0] - r.log_Z:+.3f}, {r.log_Z_interval(3)[1] - r.log_Z:+.3f}]), "
          f"{K} betas, {R} runs, ESS {r.ess:.1f}, {r.seconds:.0f} s")
    report(f"Gaussian RBM 400-{H} (AIS ln Z)", r.avg_log_prob,
           f"(3 sigma [{lo:.2f}, {hi:.2f}])")
    print(f"  RBM minus full-covariance Gaussian: {r.avg_log_prob - rows[0][1]:+.2f} nats")

    # ------------------------------------------------------------------------ DBN
    # MS09's second layer: an SRBM (lateral connections among its visible units, the first
    # layer's hidden units) trained by CD-1 with a damped mean-field reconstruction
    # (Osindero & Hinton 2008) on 0/1 samples of Q(h1 | v) of the training patches.
    exact_check(Y, T, seed)
    dbn_rows = dbn_section(model, Y, T, o, quick, seed, K, R, r.avg_log_prob)

    print("MS09 Sec. 5.2, as printed (nats per test patch, their whitened van Hateren "
          "patches, 400-2000-500 DBN; not the same images as above):")
    for name, value in PAPER.items():
        print(f"  {name:<46} {value:10.2f}")
    bound, chib, pv = dbn_rows
    best = max(chib, pv)
    print(f"is the bound loose? the Chib-style estimate and per-vector AIS are both lower "
          f"than ln p(v) in expectation, so the larger, {best:.2f}, is the better; it is "
          f"{best - bound:+.2f} nats above the bound on the same test patches (MS09: "
          f"{PAPER['DBN, Chib-style estimator'] - PAPER['DBN, variational lower bound']:+.2f} "
          f"on patches, about +2 on MNIST); Chib-style minus per-vector AIS {chib - pv:+.2f} "
          f"(MS09 on MNIST: -0.02)")
    print(f"  (derived: a unit Gaussian in 400 whitened dimensions scores "
          f"{-0.5 * D * (1 + math.log(2 * math.pi)):.2f} on data of unit variance)")
    print(f"total {time.perf_counter() - t_all:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
