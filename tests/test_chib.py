"""The Chib-style estimator (Murray & Salakhutdinov 2009) and per-vector AIS, against
exact answers on a 10-8-6 DBN (h1 enumerated: 2^8 states; ln Z of the top RBM by summing
both of its layers).

Monte Carlo checks use fixed seeds and tolerances in standard errors, and each check of
unbiasedness has power: a deliberately wrong reverse operator (the forward sweep used as
T-tilde) fails the same check.
"""
import math

import time

import numpy as np
import pytest

import cyrbm
from cyrbm.estimators import chib
from cyrbm.estimators.chib import EstimatorError, ais_per_vector, chib_log_prob, chib_trace
from cyrbm.errors import CyrbmError, DataError, ModelMismatchError

from _reference import dbn_exact, dbn_variational_bound, tiny_dbn

REPEATS = 4000


@pytest.fixture(scope="module")
def case():
    layers = tiny_dbn((10, 8, 6), seed=1)
    V = (np.random.default_rng(2).random((5, 10)) < 0.5).astype(np.uint8)
    exact, log_z = dbn_exact(layers, V)
    return layers, V, exact, log_z


def z_scores(res, exact):
    """(mean P-hat - P) / standard error of that mean, per vector, and the relative
    standard errors (the check's resolution)."""
    P = np.exp(res.samples)
    se = P.std(axis=1, ddof=1) / math.sqrt(P.shape[1])
    return (P.mean(axis=1) - np.exp(exact)) / se, se / np.exp(exact)


@pytest.mark.parametrize("steps", [1, 3, 10])
def test_unbiased_in_p_at_every_s(case, steps):
    layers, V, exact, log_z = case
    res = chib_log_prob(layers, V, log_z, steps=steps, repeats=REPEATS, seed=steps)
    z, rel = z_scores(res, exact)
    assert np.all(rel < 0.03), rel                 # the check resolves a 9% bias at 3 SE
    assert np.all(np.abs(z) < 3), z
    # the deliberately wrong reverse operator (T-tilde = T, the forward order) fails
    wrong = chib_log_prob(layers, V, log_z, steps=steps, repeats=REPEATS, seed=steps,
                          _tilde_backward=False)
    zw, _ = z_scores(wrong, exact)
    assert np.max(np.abs(zw)) > 3, zw


@pytest.mark.parametrize("steps", [1, 3, 10])
def test_mean_log_estimate_is_below_exact(case, steps):
    layers, V, exact, log_z = case
    res = chib_log_prob(layers, V, log_z, steps=steps, repeats=REPEATS, seed=100 + steps)
    mean_log = res.samples.mean(axis=1)
    se_log = res.samples.std(axis=1, ddof=1) / math.sqrt(REPEATS)
    # E[ln P-hat] <= ln P (Jensen): each vector's mean within 3 of its standard errors of
    # lying below, and below on average over the vectors
    assert np.all(mean_log - exact < 3 * se_log), (mean_log - exact) / se_log
    assert np.mean(mean_log - exact) <= 0
    # at S = 1 the gap is real, not noise: larger than 3 standard errors for every vector
    if steps == 1:
        assert np.all(exact - mean_log > 3 * se_log)


def test_repeats_are_averaged_in_p(case):
    layers, V, exact, log_z = case
    res = chib_log_prob(layers, V, log_z, steps=3, repeats=50, seed=7)
    shift = res.samples.max(axis=1)
    np.testing.assert_allclose(res.log_probs,
                               shift + np.log(np.exp(res.samples - shift[:, None]).mean(1)),
                               rtol=0, atol=1e-12)
    assert res.repeats == 50 and res.steps == 3 and res.log_Z == log_z
    assert res.mean == pytest.approx(res.log_probs.mean())
    assert res.mc_stderr > 0


def test_per_vector_ais_matches_exact(case):
    layers, V, exact, log_z = case
    for base in ("q", "uniform"):
        res = ais_per_vector(layers, V, log_z, schedule="linear:300", runs=200, seed=3,
                             base=base)
        err = res.log_probs - exact
        assert np.all(res.mc_stderrs < 0.02), res.mc_stderrs
        assert np.all(np.abs(err) < 3 * res.mc_stderrs + 1e-9), (base, err, res.mc_stderrs)
        assert res.runs == 200 and res.betas == 300


def test_estimate_at_least_the_variational_bound_on_average(case):
    layers, _, _, log_z = case
    V = (np.random.default_rng(5).random((40, 10)) < 0.5).astype(np.uint8)
    exact, _ = dbn_exact(layers, V)
    bound = dbn_variational_bound(layers, V, log_z)
    assert np.all(bound <= exact + 1e-9)             # the reference bound is a bound
    res = chib_log_prob(layers, V, log_z, steps=10, repeats=1, seed=11)
    assert res.mean >= bound.mean(), (res.mean, bound.mean())
    assert res.mean - bound.mean() > 3 * res.stderr / math.sqrt(2) or \
        res.mean > bound.mean() + 0.1


def test_float32_model_agrees_with_float64(case):
    layers, V, exact, log_z = case
    l32 = [m.astype(np.float32) for m in layers]
    a = chib_log_prob(l32, V, log_z, steps=5, repeats=400, seed=1)
    b = chib_log_prob(layers, V, log_z, steps=5, repeats=400, seed=1)
    assert a.dtype == "float32" and b.dtype == "float64"
    # the same random numbers: the estimates differ only by float32 rounding
    np.testing.assert_allclose(a.log_probs, b.log_probs, atol=2e-3)


def test_same_bits_for_any_thread_count(case):
    layers, V, _, log_z = case
    for dbn in (layers, [m.astype(np.float32) for m in layers]):
        one = chib_log_prob(dbn, V, log_z, steps=4, repeats=7, seed=2, threads=1)
        two = chib_log_prob(dbn, V, log_z, steps=4, repeats=7, seed=2, threads=2)
        np.testing.assert_array_equal(one.samples, two.samples)
        a1 = ais_per_vector(dbn, V, log_z, schedule="linear:50", runs=5, seed=2, threads=1)
        a2 = ais_per_vector(dbn, V, log_z, schedule="linear:50", runs=5, seed=2, threads=2)
        np.testing.assert_array_equal(a1.samples, a2.samples)


def test_items_side_by_side_give_the_bits_of_items_alone(case):
    """The kernels run up to ITEMS_IN_FLIGHT items side by side (their passes share the
    table reads): every item's numbers equal those of a call that runs it alone, for the
    estimator with items that end unevenly (steps 1 and 6: items finish at different
    passes) and for per-vector AIS."""
    from cyrbm import _chib
    from cyrbm._random import chib_streams, per_vector_ais_streams
    layers, V, _, _ = case
    assert _chib.ITEMS_IN_FLIGHT > 1
    for dtype in (np.float64, np.float32):
        low, top = layers
        model = _chib.ChibModel(low.W, low.vbias, low.hbias, top.W, top.vbias, top.hbias,
                                dtype=dtype)
        vec = np.arange(11, dtype=np.int32) % V.shape[0]
        for steps in (1, 6):
            streams = chib_streams(3, vec.size, steps)
            together = model.estimate(V, vec, steps, streams.copy(), 1)
            alone = [model.estimate(V, vec[i:i + 1], steps, streams[i:i + 1].copy(), 1)
                     for i in range(vec.size)]
            for k in range(2):
                np.testing.assert_array_equal(together[k], [a[k][0] for a in alone])
            assert np.unique(together[1]).size > 1      # the items differ
        # per-vector AIS: the items go through the betas together
        betas = np.linspace(0.0, 1.0, 30)
        streams = per_vector_ais_streams(4, vec.size)
        together = model.ais(V, vec, betas, streams.copy(), 1)
        alone = [model.ais(V, vec[i:i + 1], betas, streams[i:i + 1].copy(), 1)[0]
                 for i in range(vec.size)]
        np.testing.assert_array_equal(together, alone)
        assert np.unique(together).size > 1


@pytest.mark.parametrize("method", ["chib", "ais"])
def test_an_interrupted_run_resumes_from_its_checkpoint(case, tmp_path, monkeypatch, method):
    """A run stopped after two slices resumes from its checkpoint to the bits of an
    uninterrupted run, counting both calls' seconds; the file of another run (another
    seed) is refused, and so is a checkpoint beside a cluster client."""
    layers, V, _, log_z = case
    path = tmp_path / "est.npz"

    def run(**kw):
        if method == "chib":
            return chib_log_prob(layers, V, log_z, steps=4, repeats=7, threads=1, **kw)
        return ais_per_vector(layers, V, log_z, schedule="linear:50", runs=7, threads=1, **kw)

    want = run(seed=2)
    calls, item_slice = [], chib._item_slice

    def stopping(*args, **kw):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(args[2:4])
        return item_slice(*args, **kw)

    monkeypatch.setattr(chib, "_item_slice", stopping)
    with pytest.raises(KeyboardInterrupt):
        run(seed=2, checkpoint=path, chunk=6)
    assert calls == [(0, 6), (6, 12)]
    from cyrbm import _io
    assert int(_io.read_npz(path)["done"]) == 12
    monkeypatch.setattr(chib, "_item_slice", item_slice)
    earlier = float(_io.read_npz(path)["seconds"])
    t0 = time.perf_counter()
    got = run(seed=2, checkpoint=path, chunk=6)
    wall = time.perf_counter() - t0
    np.testing.assert_array_equal(got.samples, want.samples)
    np.testing.assert_array_equal(got.log_probs, want.log_probs)
    # the first call's slices plus this whole call, each counted once
    assert earlier > 0 and earlier < got.seconds <= earlier + wall
    again = run(seed=2, checkpoint=path, chunk=6)          # all done: read back
    np.testing.assert_array_equal(again.samples, want.samples)
    with pytest.raises(EstimatorError, match="was written for another model, other data or "
                                             "other settings"):
        run(seed=3, checkpoint=path)
    with pytest.raises(EstimatorError, match="give either client or checkpoint"):
        run(seed=2, checkpoint=path, client=object())
    with pytest.raises(EstimatorError, match="chunk must be a whole number of at least 1, "
                                             "not 0"):
        run(seed=2, checkpoint=tmp_path / "other.npz", chunk=0)
    kept = _io.read_npz(path)
    _io.atomic_savez(path, {**kept, "done": np.array(kept["done"] + 1)})
    with pytest.raises(EstimatorError, match=r"checkpoint '.*' is damaged \(its count of "
                                             r"finished items does not fit its arrays\)"):
        run(seed=2, checkpoint=path)


@pytest.mark.parametrize("method", ["chib", "ais"])
def test_a_checkpoint_of_another_kernel_build_is_refused(case, tmp_path, monkeypatch, method):
    """Estimator checkpoints are keyed by the kernels' build (cyrbm._version.build_key:
    a hash of the kernel and engine sources, written into the build by setup.py), not
    only by cyrbm's version: a checkpoint of another build is refused in one sentence
    naming both builds, and one of this build resumes."""
    from cyrbm import _io, _version
    layers, V, _, log_z = case
    path = tmp_path / "est.npz"

    def run(**kw):
        if method == "chib":
            return chib_log_prob(layers, V, log_z, steps=2, repeats=3, threads=1, seed=2,
                                 checkpoint=path, chunk=4, **kw)
        return ais_per_vector(layers, V, log_z, schedule="linear:20", runs=3, threads=1,
                              seed=2, checkpoint=path, chunk=4, **kw)

    this = _version.build_key()
    assert isinstance(this, str) and this not in ("", "unknown")
    monkeypatch.setattr(_version, "build_key", lambda: "0123456789abcdef")
    first = run()
    assert str(_io.read_npz(path)["build"]) == "0123456789abcdef"
    monkeypatch.setattr(_version, "build_key", lambda: this)
    with pytest.raises(EstimatorError) as err:
        run()
    message = str(err.value)
    assert message == (f"checkpoint '{path}' was written by another build of cyrbm's "
                       f"kernels (0123456789abcdef, not this build's {this}), whose numbers "
                       f"may differ: give a new path, or remove it."), message
    # a file of an older cyrbm, without the key, is refused the same way
    kept = {k: a for k, a in _io.read_npz(path).items() if k != "build"}
    _io.atomic_savez(path, kept)
    with pytest.raises(EstimatorError, match="another build of cyrbm's kernels \\(an older"):
        run()
    path.unlink()
    fresh = run()
    again = run()                          # this build's file: read back
    np.testing.assert_array_equal(again.samples, fresh.samples)
    np.testing.assert_array_equal(first.samples, fresh.samples)


def test_the_build_key_follows_the_kernel_sources(tmp_path):
    """source_key changes with any kernel or engine source and with CYRBM_NATIVE; it is
    None where no kernel source is."""
    from cyrbm._version import source_key
    (tmp_path / "_kernels").mkdir()
    assert source_key(tmp_path, {}) is None
    (tmp_path / "_kernels" / "gibbs.c").write_text("int x = 1;")
    (tmp_path / "_engine.pyx").write_text("x = 1")
    base = source_key(tmp_path, {})
    assert len(base) == 16 and source_key(tmp_path, {}) == base
    assert source_key(tmp_path, {"CYRBM_NATIVE": "1"}) != base
    (tmp_path / "_kernels" / "gibbs.c").write_text("int x = 2;")
    changed_kernel = source_key(tmp_path, {})
    (tmp_path / "_engine.pyx").write_text("x = 2")
    assert len({base, changed_kernel, source_key(tmp_path, {})}) == 3


def test_log_z_from_an_ais_result(case):
    layers, V, _, _ = case
    res = cyrbm.Annealer(runs=10, schedule="linear:100", seed=0,
                         progress=False).log_partition(layers[1])
    a = chib_log_prob(layers, V, res, steps=2, repeats=3, seed=0)
    b = chib_log_prob(layers, V, res.log_Z, steps=2, repeats=3, seed=0)
    assert a.log_Z == res.log_Z
    np.testing.assert_array_equal(a.log_probs, b.log_probs)


class _DBN:
    def __init__(self, layers):
        self.layers = layers


def test_objects_with_layers_are_dbns(case):
    layers, V, _, log_z = case
    a = chib_log_prob(_DBN(layers), V, log_z, steps=2, seed=0)
    b = chib_log_prob(tuple(layers), V, log_z, steps=2, seed=0)
    np.testing.assert_array_equal(a.log_probs, b.log_probs)


def test_trace_against_s(case, tmp_path):
    layers, V, exact, log_z = case
    tr = chib_trace(layers, V, log_z, steps=[1, 4], repeats=2, seed=0,
                    references={"exact": float(exact.mean())})
    assert tr.steps == [1, 4] and len(tr.results) == 2
    text = tr.table()
    assert "exact" in text and len(text.splitlines()) == 4
    assert tr.to_dict()["results"][1]["steps"] == 4
    pytest.importorskip("matplotlib")
    tr.plot(tmp_path / "trace.png")
    assert (tmp_path / "trace.png").read_bytes()[:4] == b"\x89PNG"


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kwargs, words", [
    ({"steps": 0}, "at least 1"),
    ({"steps": 2.5}, "whole number"),
    ({"repeats": 0}, "at least 1"),
])
def test_bad_steps_and_repeats(case, kwargs, words):
    layers, V, _, log_z = case
    with pytest.raises(EstimatorError, match=words) as exc:
        chib_log_prob(layers, V, log_z, **kwargs)
    assert "\n" not in str(exc.value)


def test_bad_models_and_data(case):
    layers, V, _, log_z = case
    with pytest.raises(EstimatorError, match="two layers.*has 1"):
        chib_log_prob([layers[0]], V, log_z)
    with pytest.raises(EstimatorError, match="two layers.*has 1"):
        ais_per_vector(layers[0], V, log_z)
    with pytest.raises(EstimatorError, match="has 3"):
        chib_log_prob(layers + [layers[1]], V, log_z)
    with pytest.raises(ModelMismatchError, match="do not chain"):
        chib_log_prob([layers[0], cyrbm.RBM(np.zeros((5, 3)), np.zeros(5), np.zeros(3))],
                      V, log_z)
    with pytest.raises(ModelMismatchError, match="9 columns but the DBN has 10"):
        chib_log_prob(layers, V[:, :9], log_z)
    with pytest.raises(DataError):
        chib_log_prob(layers, V * 2, log_z)
    with pytest.raises(EstimatorError, match="finite"):
        chib_log_prob(layers, V, float("nan"))
    with pytest.raises(EstimatorError, match="at least 2"):
        ais_per_vector(layers, V, log_z, runs=1)
    with pytest.raises(EstimatorError, match="'q' or 'uniform'"):
        ais_per_vector(layers, V, log_z, base="data")
    big = [cyrbm.RBM(layers[0].W * 1000, layers[0].vbias, layers[0].hbias), layers[1]]
    with pytest.raises(EstimatorError, match="magnitude"):
        chib_log_prob(big, V, log_z)
    for err in (EstimatorError,):
        assert issubclass(err, CyrbmError)


def test_float32_with_large_weights_runs_in_float64(case):
    layers, V, exact, log_z = case
    low = cyrbm.RBM(layers[0].W * 100, layers[0].vbias, layers[0].hbias, dtype=np.float32)
    res = chib_log_prob([low, layers[1].astype(np.float32)], V, log_z, steps=1, seed=0)
    assert res.dtype == "float64" and np.all(np.isfinite(res.log_probs))


def test_public_names():
    assert set(chib.__all__) >= {"chib_log_prob", "ais_per_vector", "chib_trace"}


def _tracked_against_exact_pairs(shift=0.0, scale=0.5, steps=40):
    """Largest |difference| (nats) of ln P*(v, h*) - ln p-hat between chains whose flips move
    the logistic pairs by the e^w tables for all S = ``steps`` sweeps (refresh_every = 0)
    and chains whose inputs and pairs are recomputed exactly every sweep (refresh_every =
    1), on a float32 60-40-80 DBN with weights ``scale`` N(0, 1), the same streams (the top's
    hidden biases shifted by ``shift`` in the second: the power check)."""
    from cyrbm import _chib
    rng = np.random.default_rng(5)
    W1, b1, c1 = scale * rng.standard_normal((60, 40)), rng.standard_normal(60), rng.standard_normal(40)
    W2, b2, c2 = scale * rng.standard_normal((40, 80)), rng.standard_normal(40), rng.standard_normal(80)
    V = (rng.random((30, 60)) < 0.4).astype(np.uint8)
    vec = np.arange(30, dtype=np.int32)
    streams = rng.integers(1, 2**63, size=(30, 4), dtype=np.uint64)
    out = []
    for refresh, c in ((0, c2), (1, c2 + shift)):
        model = _chib.ChibModel(W1, b1, c1, W2, b2, c, dtype=np.float32)
        lp, ph = model.estimate(V, vec, steps, streams.copy(), n_threads=1,
                                refresh_every=refresh)
        out.append(lp - ph)
    assert np.all(np.isfinite(out[0]))
    return float(np.max(np.abs(out[0] - out[1])))


def test_pairs_moved_by_the_tables_stay_exact():
    """Flips move the unnormalised pairs p : q = sigma(y) : sigma(-y) by e^(+-w) and rescale
    them by a power of two (no exp, no division: chib_t.h's chib_move): over 40 sweeps
    without a refresh the estimates stay within 1e-4 nats of chains recomputed exactly
    every sweep (measured: 7e-7), and so over 400 sweeps with weights up to 14 in size
    (measured: 7e-7; with no rescaling the pairs would leave float32's range); a model
    error of 0.001 in the top's hidden biases exceeds that tolerance."""
    assert _tracked_against_exact_pairs() < 1e-4
    assert _tracked_against_exact_pairs(scale=4.0, steps=400) < 1e-4
    assert _tracked_against_exact_pairs(shift=0.001) > 1e-4
