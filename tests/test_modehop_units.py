"""Mode-hopping SML (Hu & Yu, AMH-p) on an SRBM: the mode set by the SRBM's own local
optimiser mu (h = argmax P(h | v), then sequential v_i = argmax given h and the other
units), hops accepted by Eq. 6 with ln P*(v) = -F(v) including the lateral term
(SRBM._amh_hops).  A Gaussian RBM refuses AMH (tests/test_tempering_units).

Checked: the NumPy hops take the compiled kernel's decisions on an RBM (same streams, same
uniforms); hops alone leave the SRBM's exact distribution invariant (chains started at
exact draws, chi-square p >= 1e-4), and the same hops with ln P* lacking the lateral
term do not (power check); training runs, reports its acceptance and resumes bit for bit.
"""
import numpy as np
import pytest

import cyrbm
from cyrbm import _gibbs
from cyrbm._random import make_streams
from cyrbm.training import modehop
from cyrbm.models.srbm import SRBM
from cyrbm.training.trainer import Trainer
from _reference import SIGNIFICANCE, all_states, chi_square_pvalue
from test_tempering_units import srbm_model, srbm_probs


def mode_set(model, seed=0, capacity=5, radius=2):
    rng = np.random.default_rng(seed)
    modes = modehop.ModeSet(capacity, radius, "uniform", model.n_visible)
    modes.rebuild(model, (rng.random((40, model.n_visible)) < 0.5).astype(np.uint8))
    modes.update_proposal(model)
    return modes


def test_numpy_hops_take_the_kernels_decisions_on_an_rbm():
    """With L = 0 an SRBM is an RBM: its NumPy hops then take the compiled kernel's
    decisions (same streams, same uniforms, same terms of Eq. 6)."""
    rng = np.random.default_rng(1)
    rbm = cyrbm.RBM(1.5 * rng.standard_normal((8, 4)), rng.standard_normal(8),
                    rng.standard_normal(4), dtype=np.float64)
    flat = SRBM(rbm.W, rbm.vbias, rbm.hbias, dtype=np.float64)
    modes = mode_set(rbm)
    chains = (rng.random((300, 8)) < 0.5).astype(np.uint8)
    streams = make_streams(4, "chains", 300)
    rows = np.arange(0, 300, 2, dtype=np.int64)
    a_chains, a_streams, a_terms = chains.copy(), streams.copy(), np.empty((rows.size, 8))
    b_chains, b_streams, b_terms = chains.copy(), streams.copy(), np.empty((rows.size, 8))
    na = _gibbs.amh_hops(rbm.W, rbm.vbias, rbm.hbias, modes.proposal, a_chains, rows,
                         a_streams, a_terms, 2)
    nb = flat._amh_hops(modes.proposal, b_chains, rows, b_streams, b_terms)
    assert na == nb and 0 < na < rows.size
    np.testing.assert_array_equal(a_chains, b_chains)
    np.testing.assert_array_equal(a_streams, b_streams)
    np.testing.assert_allclose(a_terms, b_terms, rtol=1e-9, atol=1e-9)


def test_srbm_local_mode_is_a_fixed_point_of_lower_energy():
    s = srbm_model()
    modes = mode_set(s)
    assert len(modes) >= 2
    np.testing.assert_array_equal(s._local_mode(modes.modes), modes.modes)
    v = (np.random.default_rng(2).random((50, 6)) < 0.5).astype(np.uint8)
    m = s._local_mode(v)
    # the h-step and the v-sweep each lower E(v, h), so the mode's E(m, h*(m)) is lower
    W, b, c, L = s._f64()

    def best_joint(x):                     # max_h -E(x, h)
        x = x.astype(np.float64)
        return x @ b + 0.5 * np.sum((x @ L) * x, 1) + np.maximum(x @ W + c, 0).sum(1)
    assert np.all(best_joint(m) >= best_joint(v) - 1e-12)


def test_srbm_hops_leave_the_exact_distribution_invariant(monkeypatch):
    s = srbm_model(seed=1)
    p = srbm_probs(s)
    modes = mode_set(s)
    n = 20000
    V = all_states(6).astype(np.uint8)

    def hopped():
        chains = np.ascontiguousarray(V[np.random.default_rng(5).choice(len(V), n, p=p)])
        streams = make_streams(6, "chains", n)
        counts = np.zeros(2, np.int64)
        for _ in range(6):
            counts += modehop.hop(s, chains, modes, 1.0, streams)
        return chains, counts

    chains, (proposed, accepted) = hopped()
    assert proposed == 6 * n and 0.05 < accepted / proposed < 0.95, accepted / proposed
    assert chi_square_pvalue(chains, p)[0] >= SIGNIFICANCE
    # power: ln P* without the lateral term in Eq. 6 (an RBM's) must fail
    monkeypatch.setattr(SRBM, "_log_unnormalized_rows", lambda self, v, threads=None: (
        v @ self.vbias.astype(np.float64)
        + np.logaddexp(0.0, self._hidden_inputs(v)).sum(1)))
    wrong, _ = hopped()
    assert chi_square_pvalue(wrong, p)[0] < SIGNIFICANCE


def test_srbm_amh_training_reports_hops_and_resumes_bit_for_bit(tmp_path):
    X = cyrbm.load_data("digits")[:240, 24:40]
    kw = dict(lateral=True, method="amh", reconstruction="gibbs", hop_prob=0.5, modes=4,
              radius=2, mode_every=3, batch_size=40, learning_rate=0.05, seed=2,
              dtype=np.float64, monitor_size=0)
    start = srbm_model(seed=4, D=16, M=5)          # several modes from the start
    trainer = Trainer(5, epochs=2, threads=1, **kw)
    model = trainer.fit(X, model=start)
    record = trainer.history[-1]
    assert record["hops_proposed"] > 0 and 0 < record["hop_acceptance"] <= 1
    assert record["modes"] >= 2 and trainer.modes_.shape[1] == 16
    two = Trainer(5, epochs=2, threads=2, **kw).fit(X, model=start)
    np.testing.assert_array_equal(two.L, model.L)
    ck = tmp_path / "ck.npz"
    Trainer(5, epochs=1, checkpoint=ck, checkpoint_seconds=0, **kw).fit(X, model=start)
    again = Trainer(5, epochs=2, checkpoint=ck, checkpoint_seconds=0, **kw).fit(X, resume=True)
    np.testing.assert_array_equal(again.W, model.W)
    np.testing.assert_array_equal(again.L, model.L)
    trainer.save_modes(tmp_path / "modes.npz")
    with np.load(tmp_path / "modes.npz") as f:
        np.testing.assert_allclose(f["log_unnormalized"], model.log_unnormalized(f["modes"]))


def test_srbm_amh_needs_gibbs_reconstructions():
    with pytest.raises(ValueError, match="an SRBM trains with amh only with "
                                         "reconstruction='gibbs'"):
        Trainer(3, lateral=True, method="amh")


def test_cli_trains_an_srbm_by_amh(tmp_path, capsys):
    import json
    from _commands import run
    np.save(tmp_path / "x.npy", cyrbm.load_data("digits")[:120, 24:40])
    code, out, err = run(["train", str(tmp_path / "x.npy"), "-o", str(tmp_path / "s.npz"),
                          "--lateral", "--method", "amh", "--reconstruction", "gibbs",
                          "--hop-prob", "0.5", "--hidden", "4", "--epochs", "1", "--batch",
                          "40", "--json"], capsys)
    assert code == 0, err
    record = json.loads(out)["history"][-1]
    assert "hops_proposed" in record and record["modes"] >= 1
