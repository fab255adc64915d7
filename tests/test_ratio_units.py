"""Ratio AIS between two Gaussian RBMs and between two SRBMs (cyrbm.estimators.ratio, the kernels of
cyrbm._ratio; SM08 Sec. 3.2), checked against exact ln Z_B - ln Z_A of models small
enough to enumerate (GaussianRBM.log_partition sums the hidden states, SRBM's the visible
states), with fixed seeds.

Tolerance: |estimate - exact| within 4 of the stated standard errors at every seed; the
power checks run deliberately wrong kernels (the mixed precision of v | hA, hB replaced
by B's alone; A's hidden term left out of ln p*_k; A's lateral field left out of the
unit updates) and a shifted model B (hidden biases moved by 0.3), each of which must
fail that same tolerance.  Bits: 1 and 2 threads, and any slices of the runs.
"""
import numpy as np
import pytest

import cyrbm
from cyrbm import Annealer, RBM
from cyrbm.errors import AnnealingError, CyrbmError, ModelMismatchError
from cyrbm.models.gaussian import GaussianRBM
from cyrbm.estimators.ratio import own_log_ratio
from cyrbm.models.srbm import SRBM

TOL = 4.0
SEEDS = (0, 1, 2, 3)


def gaussian_pair(seed=0, D=6, MA=3, MB=5):
    rng = np.random.default_rng(100 + seed)
    A = GaussianRBM(rng.normal(0, 0.5, (D, MA)), rng.normal(0, 1, D), rng.normal(0, 1, MA),
                    sigma=rng.uniform(0.5, 0.8, D), dtype=np.float64)
    B = GaussianRBM(rng.normal(0, 0.5, (D, MB)), rng.normal(0, 1, D), rng.normal(0, 1, MB),
                    sigma=rng.uniform(1.2, 1.8, D), dtype=np.float64)
    return A, B


def lateral(rng, D, scale=0.5):
    L = rng.normal(0, scale, (D, D))
    L = L + L.T
    np.fill_diagonal(L, 0.0)
    return L


def srbm_pair(seed=0, D=7, MA=3, MB=5):
    rng = np.random.default_rng(200 + seed)
    A = SRBM(rng.normal(0, 0.5, (D, MA)), rng.normal(0, 1, D), rng.normal(0, 1, MA),
             lateral(rng, D), dtype=np.float64)
    B = SRBM(rng.normal(0, 0.5, (D, MB)), rng.normal(0, 1, D), rng.normal(0, 1, MB),
             lateral(rng, D), dtype=np.float64)
    return A, B


def annealer(seed, runs=200, betas=1000, threads=2):
    return Annealer(runs=runs, schedule=np.linspace(0.0, 1.0, betas), seed=seed,
                    threads=threads, progress=False)


def se_of(res):
    """The stated standard error of ln r-hat: sigma-hat(r) / r-hat (Eq. 12)."""
    return np.exp(res.log_sigma_ratio - res.log_ratio)


def z_of(res, exact):
    return (res.log_ratio - exact) / se_of(res)


PAIRS = {"gaussian": gaussian_pair, "lateral": srbm_pair}


@pytest.mark.parametrize("kind", PAIRS)
def test_exact_start_lands_on_the_exact_ratio(kind):
    worst, wrong = 0.0, {1: np.inf, 2: np.inf, "shifted": np.inf}
    for seed in SEEDS:
        A, B = PAIRS[kind](seed)
        exact = B.log_partition() - A.log_partition()
        res = annealer(seed).log_ratio(A, B)
        assert res.kind == "ratio" and res.extra["start"] == "exact"
        assert res.extra["visible"] == kind
        assert res.log_Z - res.log_ratio == pytest.approx(A.log_partition())
        worst = max(worst, abs(z_of(res, exact)))
        for variant in (1, 2):              # power: wrong kernels
            bad = own_log_ratio(annealer(seed), A, B, _variant=variant)
            wrong[variant] = min(wrong[variant], abs(z_of(bad, exact)))
        B2 = B.copy()                       # power: the ratio of a shifted model B
        B2.hbias += 0.3
        wrong["shifted"] = min(wrong["shifted"], abs(z_of(res, B2.log_partition()
                                                         - A.log_partition())))
    print(f"{kind}: worst |z| {worst:.2f}; power |z| {wrong}")
    assert worst <= TOL
    assert all(w > TOL for w in wrong.values()), wrong


@pytest.mark.parametrize("kind", PAIRS)
def test_gibbs_start_lands_on_the_exact_ratio(kind):
    A, B = PAIRS[kind](0)
    exact = B.log_partition() - A.log_partition()
    for chains in (None, 50):
        res = annealer(5).log_ratio(A, B, start="gibbs", burn_in=200, chains=chains,
                                    steps_between=None if chains is None else 20)
        assert res.extra["start"] == "gibbs"
        assert res.log_Z_base == pytest.approx(A.log_partition())
        assert abs(z_of(res, exact)) <= TOL, (chains, z_of(res, exact))


@pytest.mark.parametrize("kind", PAIRS)
def test_same_bits_for_threads_and_slices(kind):
    A, B = PAIRS[kind](1)
    for options in ({}, {"start": "gibbs", "burn_in": 20, "chains": 7, "steps_between": 3}):
        one = annealer(9, runs=37, betas=50, threads=1).log_ratio(A, B, **options)
        two = annealer(9, runs=37, betas=50, threads=2).log_ratio(A, B, **options)
        np.testing.assert_array_equal(one.log_weights, two.log_weights)
        np.testing.assert_array_equal(one.samples, two.samples)
    # the reverse direction and data: ln p*_B - ln p*_A over the rows
    rev = annealer(9, runs=20, betas=50).log_ratio(B, A, data=A.sample(5, 10, seed=0))
    assert rev.n_data == 5 and np.isfinite(rev.mean_log_unnormalized)


def test_mixed_pairs_and_bad_settings_refused():
    G, _ = gaussian_pair()
    S, _ = srbm_pair(D=6)
    R = RBM.random(6, 3, seed=0)
    ann = annealer(0, runs=4, betas=5)
    for a, b in ((R, G), (G, R), (G, S), (S, R)):
        with pytest.raises(ModelMismatchError, match="one unit type"):
            ann.log_ratio(a, b)
    with pytest.raises(ModelMismatchError, match="must be an RBM"):
        ann.log_ratio(object(), G)
    with pytest.raises(ModelMismatchError, match="visible units"):
        ann.log_ratio(G, gaussian_pair(D=5)[0])
    with pytest.raises(AnnealingError, match="ignored"):
        ann.log_ratio(G, G, burn_in=3)
    big = GaussianRBM(np.zeros((3, 21)), np.zeros(3), np.zeros(21))
    with pytest.raises(AnnealingError, match="2\\^21"):
        ann.log_ratio(big, big, start="exact")
    with pytest.raises(CyrbmError):
        ann.log_ratio(G, G, start="sideways")


@pytest.mark.parametrize("kind", PAIRS)
def test_command_line_ratio_and_tracked_training(kind, tmp_path, capsys):
    """``cyrbm ratio A.npz B.npz`` of two Gaussian RBMs or two SRBMs: the API's numbers;
    ``cyrbm train --track-logz`` with --visible gaussian or --lateral runs."""
    import json
    from _commands import run
    A, B = PAIRS[kind](0)
    A.save(tmp_path / "a.npz")
    B.save(tmp_path / "b.npz")
    code, out, err = run(["ratio", tmp_path / "a.npz", tmp_path / "b.npz", "--runs", "50",
                          "--schedule", "linear:200", "--seed", "3", "--threads", "1",
                          "--json"], capsys)
    assert code == 0, err
    got = json.loads(out)
    api = Annealer(runs=50, schedule="linear:200", seed=3, threads=1,
                   progress=False).log_ratio(A, B)
    assert got["log_ratio"] == api.log_ratio
    X = (A.sample(200, 20, seed=1) if kind == "gaussian" else
         (np.random.default_rng(0).random((200, A.n_visible)) < 0.5).astype(np.uint8))
    np.save(tmp_path / "x.npy", X)
    unit = ["--visible", "gaussian"] if kind == "gaussian" else ["--lateral"]
    code, out, err = run(["train", tmp_path / "x.npy", "-o", tmp_path / "m.npz", *unit,
                          "--hidden", "3", "--epochs", "1", "--track-logz", "--json"], capsys)
    assert code == 0, err
    history = json.loads(out)["history"]
    assert history[-1]["tracked"] and np.isfinite(history[-1]["log_Z"])
