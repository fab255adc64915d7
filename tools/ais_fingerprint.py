"""Every estimator's and sampler's numbers on fixed small problems, to compare two builds
(or two commits) bit for bit: AIS, ratio AIS, RAISE, exact ln Z, block-Gibbs and PT
sampling, CD/PCD/PT/AMH training, ln Z tracked through PT, the DBN bound (variational and harmonic), the
Chib-style estimator and per-vector AIS; the Gaussian RBM's AIS, Gibbs sampling and CD/PCD
training; ratio AIS between two Gaussian RBMs and between two SRBMs.  ``check`` compares the arrays both the build and the file hold (and says how
many of the build's the file lacks: one written before they were added).

The vector kernels (AVX-512, AVX2 or baseline clones) and the plain-C fallback
(CFLAGS=-DCYRBM_AK_NO_VECTOR) do the same arithmetic in the same order, so they must give
identical numbers; so must builds with and without OpenMP.  `.ci/run` writes the
fingerprint with the main build and checks it with the no-OpenMP, plain-C build.

Usage:
  ais_fingerprint.py write FILE
  ais_fingerprint.py check FILE
"""
import sys

import numpy as np
from docopt import docopt

import cyrbm
from cyrbm.estimators.annealing import Annealer


def fingerprint():
    rng = np.random.default_rng(2024)
    D = 784
    W = 0.05 * rng.standard_normal((D, 120))
    b = 0.5 * rng.standard_normal(D)
    a = 0.5 * rng.standard_normal(120)
    data = (rng.random((300, D)) < 0.2).astype(np.uint8)
    out = {}
    for dtype in (np.float32, np.float64):
        name = np.dtype(dtype).name
        model = cyrbm.RBM(W, b, a, dtype=dtype)
        small = cyrbm.RBM(W[:, :37], b, a[:37], dtype=dtype)
        ann = Annealer(runs=9, schedule="linear:301", seed=5, threads=2, refresh=40,
                       progress=False)
        res = ann.log_partition(model, base_rate="data", data=data)
        out[f"{name}_logw"], out[f"{name}_samples"] = res.log_weights, res.samples
        rat = ann.log_ratio(small, model, burn_in=50, chains=3, steps_between=7)
        out[f"{name}_ratio_logw"], out[f"{name}_ratio_samples"] = rat.log_weights, rat.samples
        # the engine's kept inputs after annealing steps and tempered sweeps: they follow
        # every flip, so a change in any summation order shows here even when it leaves
        # the samples and weights alone
        from cyrbm import _engine
        from cyrbm._random import make_run_streams
        eng = _engine.GibbsEngine(b, W[:, :37], a[:37], W, b, a, make_run_streams(5, "ais", 6),
                                  dtype=dtype, n_threads=2, refresh_every=1000)
        eng.set_visible(data[:6])
        eng.steps(np.linspace(0, 1, 60), 1, 40, 59, force_refresh=True)
        eng.sweep(30, beta=np.linspace(0.2, 1, 6), force_refresh=False, start=40)
        for key, arr in zip(("xA", "xB", "uA", "uB"), eng.inputs()):
            out[f"{name}_engine_{key}"] = arr
        # block Gibbs (RBM.sample), CD-1 and PCD-1 training, on the same model
        out[f"{name}_sample"] = model.sample(37, steps=25, seed=3, threads=2)
        out[f"{name}_pll"] = model.pseudo_log_likelihood(data[:9], threads=2)
        for method in ("cd", "pcd"):
            tr = cyrbm.Trainer(120, method=method, k=1, epochs=2, batch_size=50,
                               learning_rate=0.05, seed=11, threads=2, dtype=dtype,
                               progress=False)
            fit = tr.fit(data)
            out[f"{name}_{method}_W"] = fit.W
            out[f"{name}_{method}_biases"] = np.concatenate([fit.vbias, fit.hbias])
        out.update(_more(name, dtype, rng_state=2025))
        out.update(_gaussian(name, dtype, rng_state=2026))
    return out


def _gaussian(name, dtype, rng_state):
    """Gaussian visible units (gauss_t.h): AIS from fitted Gaussians, a Gibbs sample and
    CD-1 / PCD-2 training, 41 runs or chains (two full blocks of 16 and a part)."""
    from cyrbm.models.gaussian import GaussianRBM
    rng = np.random.default_rng(rng_state)
    D, M = 70, 53
    model = GaussianRBM(0.1 * rng.standard_normal((D, M)), 0.3 * rng.standard_normal(D),
                        0.3 * rng.standard_normal(M), 0.5 + rng.random(D), dtype=dtype)
    out = {}
    real = model.sample(41, steps=7, seed=5, threads=2)
    out[f"{name}_gauss_sample"] = real
    ann = Annealer(runs=41, schedule="linear:200", seed=6, threads=2, progress=False)
    res = ann.log_partition(model, base_rate="data", data=real)
    out[f"{name}_gauss_ais_logw"], out[f"{name}_gauss_ais_samples"] = res.log_weights, res.samples
    # ratio AIS between two Gaussian RBMs (cyrbm._ratio): from exact draws of a 12-unit A
    # to the model, and from Gibbs chains on the model to A; and between two SRBMs
    small = GaussianRBM(model.W[:, :12], model.vbias, model.hbias[:12], model.sigma * 1.3,
                        dtype=dtype)
    rat = ann.replace(runs=17).log_ratio(small, model, real)
    out[f"{name}_gauss_ratio_logw"], out[f"{name}_gauss_ratio_samples"] = rat.log_weights, rat.samples
    rat = ann.replace(runs=17).log_ratio(model, small, start="gibbs", burn_in=5, chains=6,
                                         steps_between=2)
    out[f"{name}_gauss_ratio_gibbs_logw"] = rat.log_weights
    from cyrbm.models.srbm import SRBM
    L = 0.2 * rng.standard_normal((14, 14))
    L = L + L.T
    np.fill_diagonal(L, 0.0)
    sA, sB = (SRBM(0.3 * rng.standard_normal((14, m)), 0.3 * rng.standard_normal(14),
                   0.3 * rng.standard_normal(m), L * k, dtype=dtype) for m, k in ((5, 1), (9, 0.5)))
    rat = ann.replace(runs=17).log_ratio(sA, sB)
    out[f"{name}_srbm_ratio_logw"], out[f"{name}_srbm_ratio_samples"] = rat.log_weights, rat.samples
    for method, k in (("cd", 1), ("pcd", 2)):
        fit = cyrbm.Trainer(M, method=method, k=k, epochs=2, batch_size=41, seed=13, threads=2,
                            dtype=dtype, monitor_size=0, progress=False,
                            visible="gaussian").fit(real)
        out[f"{name}_gauss_{method}"] = np.concatenate([fit.W.ravel(), fit.vbias, fit.hbias])
    # parallel tempering on its tempered family (tempering.TemperedStates) and PTT
    out[f"{name}_gauss_pt_sample"] = model.sample(17, steps=5, seed=7, threads=2,
                                                  sampler="pt", temperatures=[0, 0.5, 1])
    for method in ("pt", "ptt"):
        fit = cyrbm.Trainer(M, method=method, epochs=2, batch_size=41, seed=14, threads=2,
                            dtype=dtype, monitor_size=0, progress=False, visible="gaussian",
                            **({"temperatures": 3} if method == "pt" else {})).fit(real)
        out[f"{name}_gauss_{method}"] = np.concatenate([fit.W.ravel(), fit.vbias, fit.hbias])
    return out


def _more(name, dtype, rng_state):
    """RAISE, exact ln Z, PT sampling, PT/AMH training, the DBN estimators."""
    rng = np.random.default_rng(rng_state)
    D, H = 64, 14
    W = 0.3 * rng.standard_normal((D, H))
    b = 0.3 * rng.standard_normal(D)
    a = 0.3 * rng.standard_normal(H)
    data = (rng.random((40, D)) < 0.3).astype(np.uint8)
    model = cyrbm.RBM(W, b, a, dtype=dtype)
    out = {}
    ann = Annealer(runs=7, schedule="linear:120", seed=4, threads=2, progress=False)
    ev = ann.evaluate(model, data[:12], base_rate="data", base_data=data, chains=3)
    out[f"{name}_raise"] = np.array([ev.ais_mean_log_prob, ev.ais_se, ev.raise_mean_log_prob,
                                     ev.raise_se, ev.gap])
    out[f"{name}_exact_logz"] = np.array([cyrbm.exact_log_partition(model, threads=2)])
    out[f"{name}_pt_sample"] = model.sample(9, steps=30, seed=6, threads=2, sampler="pt",
                                            temperatures=[0, 0.4, 0.8, 1])
    for method, extra in (("pt", {"temperatures": [0, 0.5, 1], "chains": 10}),
                          ("amh", {"hop_prob": 0.5, "modes": 4, "radius": 3})):
        fit = cyrbm.Trainer(H, method=method, k=1, epochs=2, batch_size=10,
                            learning_rate=0.05, seed=12, threads=2, dtype=dtype,
                            progress=False, monitor_size=0, **extra).fit(data)
        out[f"{name}_{method}_W"] = fit.W
        out[f"{name}_{method}_biases"] = np.concatenate([fit.vbias, fit.hbias])
    # PT with 2 rounds an update and its tracker of ln Z (the engine's sums, DCB11)
    tr = cyrbm.Trainer(H, method="pt", k=2, epochs=2, batch_size=10, learning_rate=0.05,
                       seed=13, threads=2, dtype=dtype, progress=False, monitor_size=0,
                       temperatures=[0, 0.3, 0.7, 1], chains=10, track_logz="filter")
    tr.fit(data)
    out[f"{name}_pt_tracked"] = np.array([[r["log_Z"], r["log_Z_se"]] for r in tr.history])
    top = cyrbm.RBM(0.3 * rng.standard_normal((H, 10)), 0.2 * rng.standard_normal(H),
                    0.2 * rng.standard_normal(10), dtype=dtype)
    dbn = cyrbm.DBN([model, top])
    log_z = cyrbm.exact_log_partition(top)
    est = cyrbm.BoundEstimator(dbn, log_Z=log_z, seed=8, threads=2)
    out[f"{name}_bound"] = est.variational(data[:10], samples=3).values
    out[f"{name}_bound_sampled"] = est.variational(data[:10], samples=3,
                                                   entropy="sampled").values
    out[f"{name}_harmonic"] = est.harmonic(data[:10], samples=20).values
    out[f"{name}_chib"] = est.chib(data[:10], steps=6, repeats=2).values
    out[f"{name}_ais_per_vector"] = est.ais_per_vector(data[:10], runs=4,
                                                       schedule="linear:50").values
    return out


def main(argv=None):
    args = docopt(__doc__, argv=argv)
    fp = fingerprint()
    path = args["FILE"]
    if args["write"]:
        np.savez(path, **fp)
        print(f"AIS fingerprint of this build written to {path}")
        return 0
    ref = np.load(path)
    # compared: the arrays both hold (a file written before an array was added lacks it)
    both = [k for k in fp if k in ref.files]
    bad = [k for k in both if not np.array_equal(fp[k], ref[k])]
    if bad:
        print(f"AIS fingerprint differs from {path} in: {', '.join(bad)}", file=sys.stderr)
        return 1
    skipped = len(fp) - len(both)
    print(f"AIS fingerprint identical to {path} ({len(both)} arrays"
          + (f"; {skipped} of this build's not in the file, not compared)" if skipped else ")"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
