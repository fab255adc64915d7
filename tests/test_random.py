"""cyrbm._random: per-chain xoshiro256++ streams keyed by (seed, purpose, index)."""
import numpy as np

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
