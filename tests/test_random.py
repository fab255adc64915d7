"""cyrbm._random: per-chain xoshiro256++ streams keyed by (seed, purpose, index)."""
import numpy as np
import pytest

from cyrbm import _kernel_tests, _random
from _reference import xoshiro_reference


def test_streams_match_reference_xoshiro():
    states = _random.make_streams(123, "chains", 3)
    expected = [xoshiro_reference(row, 20) for row in states]
    got = _kernel_tests.uniform(states.copy(), 20)
    np.testing.assert_array_equal(got, np.array(expected))


def test_streams_are_keyed_by_seed_purpose_and_index():
    a = _random.make_streams(5, "chains", 4)
    b = _random.make_streams(5, "chains", 10)
    np.testing.assert_array_equal(a, b[:4])          # more chains leave the first unchanged
    assert not np.array_equal(a, _random.make_streams(6, "chains", 4))
    assert not np.array_equal(a, _random.make_streams(5, "sample", 4))
    assert len({tuple(r) for r in b}) == 10


def test_every_driver_checks_its_streams_by_one_rule():
    """The drivers that take chain streams refuse a wrong shape in one sentence that
    names them (_random.check_streams), before any state is touched."""
    from cyrbm import _anneal, _engine, _gauss, _ratio, _srbm, _tempering
    R, D, M = 3, 4, 2
    W, b, c = np.zeros((D, M)), np.zeros(D), np.zeros(M)
    betas, lw = np.linspace(0.0, 1.0, 3), np.zeros(R)

    def v01():
        return np.zeros((R, D), np.uint8)

    drivers = {
        "gibbs_sample: streams": lambda st: _engine.gibbs_sample(
            W, b, c, v01(), np.zeros((R, M), np.uint8), 1, st),
        "chain_uniforms: streams": lambda st: _anneal.chain_uniforms(st, 2),
        "gauss_run: streams": lambda st: _gauss.gauss_run(
            W, b, c, np.ones(D), b, np.ones(D), np.zeros((R, D)), np.zeros((R, M), np.uint8),
            betas, 0, 2, True, st, lw),
        "srbm_run: streams": lambda st: _srbm.srbm_run(
            W, b, c, np.zeros((D, D)), b, v01(), np.zeros((R, M), np.uint8),
            np.zeros((R, D)), betas, 0, 2, True, True, st, lw),
        "gauss_ratio_run: streams": lambda st: _ratio.gauss_ratio_run(
            W, b, c, np.ones(D), W, b, c, np.ones(D), np.zeros((R, D)), betas, 1, 2, True,
            st, lw),
        "srbm_ratio_run: streams": lambda st: _ratio.srbm_ratio_run(
            W, b, c, np.zeros((D, D)), W, b, c, np.zeros((D, D)), v01(), betas, 1, 2, True,
            st, lw),
        "bernoulli: streams": lambda st: _kernel_tests.bernoulli(np.full((R, D), 0.5), st),
        "streams": lambda st: _tempering.pt_sample(
            W, b, c, v01(), np.array([0.2, 0.6, 1.0]), 1, st,
            _random.make_streams(1, "chains", 1), np.zeros((1, 2), np.int64)),
    }
    for what, call in drivers.items():
        good = _random.make_streams(0, "chains", R)
        bads = [good[:R - 1], np.zeros((R, 3), np.uint64)]
        if what == "chain_uniforms: streams":
            bads = bads[1:]                   # any number of streams is right for it
        for bad in bads:
            before = bad.copy()
            with pytest.raises(ValueError) as err:
                call(np.ascontiguousarray(bad))
            at_least = "at least " if what == "bernoulli: streams" else ""
            assert str(err.value) == (f"{what} must have shape ({at_least}{R}, 4), "
                                      f"not {bad.shape[0], bad.shape[1]}."), what
            np.testing.assert_array_equal(bad, before)
        call(good)                            # the right shape runs
