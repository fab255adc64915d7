"""Every kernel variant gives the same bits (cyrbm/_kernels/simd.h).

The default build holds one variant per instruction set of the target (avx512, avx2, sse2,
generic on x86-64); each is chosen in turn at run time (cyrbm._dispatch.use_kernels, the
one switch of the one dispatch table, as the CYRBM_FORCE_ISA environment variable does at
import) and must reproduce the default
variant's numbers exactly: base-rate AIS, ratio AIS, exact ln Z, the pseudo-log-likelihood,
RBM.sample and CD/PCD training, the Gaussian RBM's AIS, RAISE, sampling and PCD, in
float32 and float64.  .ci/run also builds restricted variants
(CYRBM_ISA=...) and shows that a changed summation order breaks the same check.
"""
import numpy as np
import pytest

import cyrbm
from cyrbm import _anneal, _chib, _dbn, _dispatch, _engine, _gauss, _gibbs
from cyrbm.estimators.annealing import Annealer


@pytest.fixture
def variant():
    saved = _dispatch.kernels_in_use()

    def use(isa):
        assert _dispatch.use_kernels(isa) == isa

    yield use
    _dispatch.use_kernels(saved)


def numbers(dtype):
    rng = np.random.default_rng(7)
    D, M = 70, 37        # not multiples of any vector width: every tail path runs
    W = 0.1 * rng.standard_normal((D, M))
    b = 0.5 * rng.standard_normal(D)
    a = 0.5 * rng.standard_normal(M)
    data = (rng.random((120, D)) < 0.3).astype(np.uint8)
    model = cyrbm.RBM(W, b, a, dtype=dtype)
    small = cyrbm.RBM(W[:, :11], b, a[:11], dtype=dtype)
    ann = Annealer(runs=11, schedule="linear:150", seed=5, threads=2, refresh=13,
                   progress=False)
    out = {}
    res = ann.log_partition(model, base_rate="data", data=data)
    out["ais"], out["ais_v"] = res.log_weights, res.samples
    rat = ann.log_ratio(small, model, start="gibbs", burn_in=20, chains=3, steps_between=4)
    out["ratio"], out["ratio_v"] = rat.log_weights, rat.samples
    out["exact"] = cyrbm.exact_log_partition(small)
    out["pll"] = model.pseudo_log_likelihood(data[:7], threads=2)
    # the engine's kept inputs: they follow every flip, so they show any change of
    # summation order even when samples and weights do not move
    eng = _engine.GibbsEngine(b, W[:, :11], a[:11], W, b, a, ann._streams(0, 5),
                              dtype=dtype, n_threads=2, refresh_every=1000)
    eng.set_visible(data[:5])
    eng.steps(np.linspace(0, 1, 40), 1, 30, 39, force_refresh=True)
    eng.sweep(20, beta=np.linspace(0.1, 1, 5), force_refresh=False, start=30)
    for key, arr in zip(("xA", "xB", "uA", "uB"), eng.inputs()):
        out["engine_" + key] = arr
    out["sample"] = model.sample(19, steps=9, seed=3, threads=2)
    # reverse annealing (RAISE): the engine's steps over a decreasing schedule
    from cyrbm.estimators.evaluation import raise_log_weights
    out["raise"] = raise_log_weights(model, data[:4], b, np.linspace(0, 1, 150), chains=3,
                                     seed=5, threads=2, refresh=13, batch=5)
    out["raise_ratio"] = raise_log_weights(model, data[:4], small, np.linspace(0, 1, 150),
                                           log_Z_base=out["exact"], chains=3, seed=5,
                                           threads=2, refresh=13, batch=5)
    # the DBN estimators over h1 (Chib-style, per-vector AIS): 70-37-11, every tail path
    from cyrbm.estimators.chib import ais_per_vector, chib_log_prob
    top = cyrbm.RBM(0.3 * rng.standard_normal((M, 11)), a, 0.5 * rng.standard_normal(11),
                    dtype=dtype)
    dbn = [model, top]
    out["chib"] = chib_log_prob(dbn, data[:3], 1.0, steps=3, repeats=2, seed=4,
                                threads=2).samples
    out["chib_ais"] = ais_per_vector(dbn, data[:3], 1.0, schedule="linear:20", runs=2,
                                     seed=4, threads=2).samples
    # parallel tempering: the tempered configuration (c added after beta) and the swaps
    out["sample_pt"] = model.sample(7, steps=9, seed=3, threads=2, sampler="pt",
                                    temperatures=[0.0, 0.4, 0.7, 1.0])
    # mode hopping (modehop_t.h): the chains after a round of hops and the terms of Eq. 6
    from cyrbm.training import modehop
    modes = modehop.ModeSet(6, 2, "distance", D)
    modes.rebuild(cyrbm.RBM(3 * W, b, a, dtype=dtype), data[:60])
    assert len(modes) >= 2
    from cyrbm.capi import make_streams
    v, st, terms = data[60:].copy(), make_streams(6, 60, "chains"), []
    modehop.hop(cyrbm.RBM(3 * W, b, a, dtype=dtype), v, modes, 0.8, st, n_threads=2,
                terms=terms)
    out["amh_hops"] = np.concatenate([v.ravel(), terms[0][1].ravel()])
    for method in ("pt", "amh"):
        fit = cyrbm.Trainer(M, method=method, epochs=2, batch_size=30, learning_rate=0.05,
                            seed=11, threads=2, dtype=dtype, monitor_size=0, progress=False,
                            **(dict(temperatures="adaptive:4", adapt_every=2) if method == "pt"
                               else dict(hop_prob=0.5, mode_every=3, radius=3))).fit(data)
        out[method] = np.concatenate([fit.W.ravel(), fit.vbias, fit.hbias])
    for method in ("cd", "pcd"):
        fit = cyrbm.Trainer(M, method=method, k=2, epochs=2, batch_size=30,
                            learning_rate=0.05, seed=11, threads=2, dtype=dtype,
                            monitor_size=0, progress=False).fit(data)
        out[method] = np.concatenate([fit.W.ravel(), fit.vbias, fit.hbias])
    # Gaussian visible units (gauss_t.h: blocks of 16 chains, vmath.h's ln and cos):
    # AIS, RAISE, sampling and PCD training on real-valued data
    from cyrbm.models.gaussian import GaussianRBM
    gauss = GaussianRBM(W, b, a, 0.5 + rng.random(D), dtype=dtype)
    real = gauss.sample(60, steps=5, seed=2, threads=2)
    sandwich = ann.evaluate(gauss, real[:3], base_data=real, chains=2)
    out["gauss_ais"], out["gauss_raise"] = sandwich.ais.log_weights, sandwich.raise_log_weights
    out["gauss_sample"] = real
    fit = cyrbm.Trainer(M, method="pcd", k=2, epochs=2, batch_size=30, seed=11, threads=2,
                        dtype=dtype, monitor_size=0, progress=False,
                        visible="gaussian").fit(real)
    out["gauss_pcd"] = np.concatenate([fit.W.ravel(), fit.vbias, fit.hbias])
    # lateral connections (cyrbm_srbm_steps): AIS and sequential Gibbs sampling
    from cyrbm.models.srbm import SRBM
    lat = 0.2 * np.triu(rng.standard_normal((D, D)), 1)
    srbm = SRBM(W, b, a, lat + lat.T, dtype=dtype)
    out["srbm_ais"] = ann.log_partition(srbm, data=data).log_weights
    out["srbm_sample"] = srbm.sample(20, steps=5, seed=2, threads=2)
    return out


@pytest.mark.parametrize("dense", ["auto", "always"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_variant_gives_the_default_bits(variant, dtype, dense):
    """With the engine's default choice of input updates, and with the subset tables
    ("Many flips" in anneal.c) at every step."""
    isas = _dispatch.kernels_runnable()
    assert "generic" in isas
    previous = _anneal.use_dense_tables(dense)
    try:
        check_variants(isas, variant, dtype)
    finally:
        _anneal.use_dense_tables(previous)


def check_variants(isas, variant, dtype):
    default = numbers(dtype)
    for isa in isas:
        variant(isa)
        got = numbers(dtype)
        for key in default:
            np.testing.assert_array_equal(got[key], default[key], err_msg=f"{isa}: {key}")


def test_runnable_variants_leave_the_choice_alone():
    before = _dispatch.kernels_in_use()
    assert before in _dispatch.kernels_runnable()
    assert _dispatch.kernels_in_use() == before


def test_unknown_variant_is_refused():
    before = _dispatch.kernels_in_use()
    with pytest.raises(ValueError, match="not in this build"):
        _dispatch.use_kernels("avx1024")
    assert _dispatch.kernels_in_use() == before
    assert cyrbm.config()["kernels"] in cyrbm.config()["kernels_built"].split(",")


def test_one_switch_for_every_family(variant):
    """One table: choosing a variant anywhere chooses it for every engine module, and
    config() reports that one choice; the modules' use_kernels are the one switch."""
    for module in (_gibbs, _anneal, _chib, _dbn):
        assert module.use_kernels is _dispatch.use_kernels
        assert module.kernels_in_use is _dispatch.kernels_in_use
    for isa in _dispatch.kernels_runnable():
        variant(isa)
        assert cyrbm.config()["kernels"] == isa


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bound_terms_every_variant(dtype):
    """The DBN bound's row kernel (bound_t.h: draws from Q, softplus sums, entropies) and
    its binary products (row sums for sparse states, subset tables for dense ones: the
    data are sparse, then dense; h_1 is dense and h_2 sparse, its biases being low)."""
    from cyrbm import _dbn
    from cyrbm.estimators.bounds import BoundEstimator
    rng = np.random.default_rng(3)
    layers = [cyrbm.RBM(rng.standard_normal((37, 21)), rng.standard_normal(37),
                        rng.standard_normal(21), dtype=dtype),
              cyrbm.RBM(rng.standard_normal((21, 13)), rng.standard_normal(21),
                        rng.standard_normal(13) - 4, dtype=dtype),
              cyrbm.RBM(rng.standard_normal((13, 9)), rng.standard_normal(13),
                        rng.standard_normal(9), dtype=dtype)]
    dbn = cyrbm.DBN(layers)
    data = [(rng.random((50, 37)) < p).astype(np.uint8) for p in (0.1, 0.7)]
    saved = _dispatch.kernels_in_use()
    try:
        est = BoundEstimator(dbn, log_Z=0.0, seed=1)
        default = [est._terms(dbn.layers, V, 3, None) for V in data]
        for isa in _dispatch.kernels_runnable():
            # the row kernel (_dbn) and the binary products (_gibbs.padded_product) alike
            assert _dispatch.use_kernels(isa) == isa
            for V, want in zip(data, default):
                got = est._terms(dbn.layers, V, 3, None)
                for name, a, b in zip(("lpv", "lrest", "lq", "ent"), got, want):
                    np.testing.assert_array_equal(a, b, err_msg=f"{isa}: {name}")
    finally:
        _dispatch.use_kernels(saved)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gaussian_runs_every_variant_and_thread_count(variant, dtype):
    """cyrbm_gauss_block (gauss_t.h) straight from its driver: 37 runs (two blocks of 16
    and a part) of 70 x 53 units, AIS steps with weights and Gibbs steps without (the
    first one's p(h | v) kept), then the CD step's statistics on them, on 1 and 2 threads
    in every variant: the same states, hidden units, streams, weights, probabilities,
    gradient and bias statistics."""
    from cyrbm._random import gaussian_ais_streams
    rng = np.random.default_rng(21)
    D, M, R = 70, 53, 37
    W = (0.2 * rng.standard_normal((D, M))).astype(dtype)
    b, c = ((0.3 * rng.standard_normal(n)).astype(dtype) for n in (D, M))
    s = (0.5 + rng.random(D)).astype(dtype)
    mu, sd = rng.standard_normal(D), 0.5 + rng.random(D)
    betas = np.linspace(0, 1, 30)

    def run(threads):
        v, h = np.zeros((R, D), dtype), np.zeros((R, M), np.uint8)
        st, lw = gaussian_ais_streams(4, R), np.zeros(R)
        _gauss.gauss_run(W, b, c, s, mu, sd, v, h, betas, 0, 20, True, st, lw, threads)
        data = v.copy()
        first = np.empty((R, M), dtype)
        _gauss.gauss_run(W, b, c, s, mu, sd, v, h, np.ones(5), 1, 5, False, st, lw, threads,
                         first)
        # the CD step's statistics (gauss_hidden, gauss_gradient) on those rows
        p0, pk, dW = np.empty((R, M), dtype), np.empty((R, M), dtype), np.empty_like(W)
        db, dc = np.empty_like(b), np.empty_like(c)
        _gauss.gauss_cd_products(W, c, s, data, v, p0, pk, dW, db, dc, threads)
        return v, h, st, lw, first, p0, pk, dW, db, dc

    names = ("v", "h", "streams", "logw", "p_first", "p0", "pk", "dW", "db", "dc")
    want = run(1)
    assert np.all(want[3] != 0) and np.all(np.isfinite(want[0]))
    for isa in _dispatch.kernels_runnable():
        variant(isa)
        for threads in (1, 2):
            for name, got, ref in zip(names, run(threads), want):
                np.testing.assert_array_equal(got, ref, err_msg=f"{isa}, {threads}: {name}")
