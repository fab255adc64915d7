"""cyrbm.models.mixture.BernoulliMixture (SM08 Sec. 5.1's baseline): exact ln p(v) against
enumeration, EM's monotone objective, the seed, files and bad input."""
import itertools

import numpy as np
import pytest

import cyrbm
from cyrbm.errors import DataError, ModelFileError, ModelMismatchError
from cyrbm.models.mixture import BernoulliMixture


def _all_states(d):
    return np.array(list(itertools.product([0, 1], repeat=d)), dtype=np.uint8)


def _tiny(seed=3, K=4, D=8):
    rng = np.random.default_rng(seed)
    w = rng.random(K)
    return BernoulliMixture(w / w.sum(), rng.uniform(0.02, 0.98, (K, D)))


def test_log_prob_is_exact_by_enumeration():
    """ln p(v) against the sum over components written out with Python loops, and the
    probabilities of all 2^8 vectors sum to 1."""
    m = _tiny()
    V = _all_states(m.n_visible)
    def p(v):
        return sum(m.weights[k] * np.prod(np.where(v == 1, m.means[k], 1 - m.means[k]))
                   for k in range(m.n_components))
    want = np.log([p(v) for v in V])
    got = m.log_prob(V)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert abs(np.exp(got).sum() - 1) < 1e-12


def test_samples_follow_the_exact_distribution():
    """Frequencies of 20,000 draws over the 2^8 states against p(v): chi-square statistic
    within 5 standard deviations of its mean (fixed seed)."""
    m = _tiny(K=2)
    n = 20000
    x = m.sample(n, seed=5)
    idx = x @ (1 << np.arange(m.n_visible)[::-1])
    counts = np.bincount(idx, minlength=2 ** m.n_visible)
    p = np.exp(m.log_prob(_all_states(m.n_visible)))
    chi2 = np.sum((counts - n * p) ** 2 / (n * p))
    dof = p.size - 1
    assert abs(chi2 - dof) < 5 * np.sqrt(2 * dof)


@pytest.mark.parametrize("smoothing", [0.0, 1.0])
def test_em_never_lowers_its_objective(smoothing):
    """Maximum likelihood (a = 0): the training log-likelihood never decreases; with a
    prior (a = 1), the log posterior does; both rise overall."""
    X = cyrbm.load_data("digits:train")
    m = BernoulliMixture.fit(X, 8, iterations=25, seed=2, smoothing=smoothing)
    obj = np.array(m.meta["training"]["objective"])
    assert len(obj) == 25
    assert np.all(np.diff(obj) >= -1e-10)
    assert obj[-1] > obj[0] + 1.0
    ll = np.array(m.meta["training"]["log_likelihood"])
    if smoothing == 0:
        np.testing.assert_array_equal(obj, ll)
    # the recorded value for the final parameters matches log_prob (one more E-step)
    last = BernoulliMixture.fit(X, 8, iterations=26, seed=2, smoothing=smoothing)
    assert abs(last.meta["training"]["log_likelihood"][-1] - np.mean(m.log_prob(X))) < 1e-9


def test_em_recovers_a_known_mixture():
    """Data drawn from a 2-component mixture with well-separated means: EM's fit has a
    mean ln p within 0.05 nats of the truth's on the same data."""
    D = 20
    means = np.vstack([np.full(D, 0.9), np.full(D, 0.1)])
    truth = BernoulliMixture([0.3, 0.7], means)
    X = truth.sample(3000, seed=1)
    fit = BernoulliMixture.fit(X, 2, iterations=50, seed=0)
    assert abs(np.mean(fit.log_prob(X)) - np.mean(truth.log_prob(X))) < 0.05
    np.testing.assert_allclose(np.sort(fit.weights), [0.3, 0.7], atol=0.03)


def test_the_seed_fixes_the_fit():
    X = cyrbm.load_data("digits:train")[:300]
    a = BernoulliMixture.fit(X, 5, iterations=5, seed=7, smoothing=0.5)
    b = BernoulliMixture.fit(X, 5, iterations=5, seed=7, smoothing=0.5)
    c = BernoulliMixture.fit(X, 5, iterations=5, seed=8, smoothing=0.5)
    np.testing.assert_array_equal(a.means, b.means)
    assert not np.array_equal(a.means, c.means)


def test_save_and_load(tmp_path):
    m = BernoulliMixture.fit(cyrbm.load_data("digits:train")[:200], 3, iterations=3, seed=0)
    path = tmp_path / "mob.npz"
    m.save(path)
    back = BernoulliMixture.load(path)
    np.testing.assert_array_equal(back.means, m.means)
    np.testing.assert_array_equal(back.weights, m.weights)
    assert back.meta["training"]["seed"] == 0
    assert [p.name for p in tmp_path.iterdir()] == ["mob.npz"]     # no temporaries left


def test_bad_input_is_one_sentence(tmp_path):
    m = _tiny()
    with pytest.raises(ModelMismatchError, match="has 5 columns but the mixture has 8"):
        m.log_prob(np.zeros((2, 5), dtype=np.uint8))
    with pytest.raises(DataError):
        m.log_prob(np.full((2, 8), 0.5))
    with pytest.raises(ValueError, match="n_components must be between 1"):
        BernoulliMixture.fit(np.zeros((3, 4), dtype=np.uint8), 5)
    with pytest.raises(ModelMismatchError, match="sum to 1"):
        BernoulliMixture([0.5, 0.6], np.full((2, 3), 0.5))
    cyrbm.RBM.random(4, 3).save(tmp_path / "rbm.npz")
    with pytest.raises(ModelFileError, match="lacks the arrays 'weights', 'means'"):
        BernoulliMixture.load(tmp_path / "rbm.npz")
    with pytest.raises(ModelFileError, match="no such mixture file"):
        BernoulliMixture.load(tmp_path / "none.npz")


def test_public_name():
    assert cyrbm.BernoulliMixture is BernoulliMixture
    assert "BernoulliMixture" in cyrbm.__all__
