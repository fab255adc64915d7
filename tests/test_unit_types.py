"""Every public operation on every unit type (issue 35's matrix).

The three model classes (binary ``RBM``, ``GaussianRBM``, ``SRBM``) each take every
operation below.  A pair either computes, checked here against an answer computed
straight from the energy by enumeration or numerical integration on a model small
enough for it (samplers by their moments, with a power check that a wrong model fails
the same tolerance), or refuses in one sentence: cyrbm's own exception (``CyrbmError``),
or ``ValueError`` for a refused setting.  ``OUTCOMES`` lists every pair; no pair may
raise anything else, and a public method that two classes have and the third lacks
fails ``test_no_public_method_is_missing_from_one_class``.
"""
import itertools
import json
import math

import numpy as np
import pytest
from scipy import integrate

import cyrbm
from cyrbm import Annealer, GaussianRBM, RBM, SRBM, Trainer
from cyrbm.errors import CyrbmError

from _commands import one_error_line, run

KINDS = ("RBM", "GaussianRBM", "SRBM")
D, M = 4, 3          # small enough to enumerate (and, Gaussian, to integrate over v)


def states(n):
    return np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.float64)


def make(kind, seed=0, shift=0.0):
    """A small model of ``kind``; ``shift`` moves its visible biases (the power checks'
    wrong model)."""
    rng = np.random.default_rng(seed)
    W = rng.normal(0, 0.6, (D, M))
    b = rng.normal(0, 0.5, D) + shift
    c = rng.normal(0, 0.5, M)
    if kind == "RBM":
        return RBM(W, b, c, dtype=np.float64)
    if kind == "GaussianRBM":
        return GaussianRBM(W, b, c, rng.uniform(0.7, 1.3, D), dtype=np.float64)
    L = rng.normal(0, 0.5, (D, D))
    L = np.triu(L, 1)
    return SRBM(W, b, c, L + L.T, dtype=np.float64)


def data_for(kind, n=60, seed=3):
    """Rows the model of ``kind`` takes: 0/1, or real values for Gaussian units."""
    rng = np.random.default_rng(seed)
    if kind == "GaussianRBM":
        return rng.normal(0, 1, (n, D))
    return (rng.random((n, D)) < 0.4).astype(np.uint8)


# --------------------------------------------------------- answers from the energy
def neg_energy(m, v, h):
    """-E(v, h) for rows v (n x D) and states h (S x M): n x S, from the definitions
    (SM08 Eq. 1; MS09 Sec. 5.2 for Gaussian units and lateral weights)."""
    W, b, c = (np.asarray(a, np.float64) for a in (m.W, m.vbias, m.hbias))
    if isinstance(m, GaussianRBM):
        s = np.asarray(m.sigma, np.float64)
        return (-0.5 * np.sum(((v - b) / s) ** 2, axis=1))[:, None] + (v / s) @ W @ h.T \
            + (h @ c)[None, :]
    e = (v @ b)[:, None] + v @ W @ h.T + (h @ c)[None, :]
    if isinstance(m, SRBM):
        e = e + 0.5 * np.einsum("ni,ij,nj->n", v, np.asarray(m.L, np.float64), v)[:, None]
    return e


def brute_log_p_star(m, v):
    """ln p*(v) = ln sum_h exp(-E(v, h)), h enumerated."""
    return np.logaddexp.reduce(neg_energy(m, np.atleast_2d(v), states(M)), axis=1)


def brute_log_partition(m):
    """ln Z from the energy: sum over (v, h) of exp(-E); for Gaussian units the integral
    over v of each h's exp(-E(v, h)), a Gaussian in v, by linear algebra
    (ln sqrt((2 pi)^D / det A) + beta^T A^-1 beta / 2, A = diag(1 / s^2))."""
    if not isinstance(m, GaussianRBM):
        return float(np.logaddexp.reduce(brute_log_p_star(m, states(D))))
    W, b, c, s = (np.asarray(a, np.float64) for a in (m.W, m.vbias, m.hbias, m.sigma))
    A = np.diag(1 / s ** 2)
    terms = []
    for h in states(M):
        beta = b / s ** 2 + (W @ h) / s
        terms.append(h @ c - np.sum(b ** 2 / (2 * s ** 2)) + 0.5 * D * math.log(2 * math.pi)
                     - 0.5 * np.linalg.slogdet(A)[1] + 0.5 * beta @ np.linalg.solve(A, beta))
    return float(np.logaddexp.reduce(terms))


def log_integral_along(m, v, i):
    """ln of the integral of p*(v) over v_i (the others fixed), by quadrature."""
    ref = float(brute_log_p_star(m, v)[0])

    def f(t):
        w = v.copy()
        w[i] = t
        return math.exp(float(brute_log_p_star(m, w)[0]) - ref)
    val, _ = integrate.quad(f, -np.inf, np.inf, epsabs=0, epsrel=1e-10, limit=200)
    return ref + math.log(val)


def brute_pseudo_log_likelihood(m, v):
    out = []
    for row in np.atleast_2d(np.asarray(v, np.float64)):
        total = 0.0
        for i in range(D):
            if isinstance(m, GaussianRBM):
                total += float(brute_log_p_star(m, row)[0]) - log_integral_along(m, row, i)
            else:
                flip = row.copy()
                flip[i] = 1 - flip[i]
                a, b = brute_log_p_star(m, np.stack([row, flip]))
                total += a - np.logaddexp(a, b)
        out.append(total)
    return np.array(out)


def exact_moments(m):
    """E[v] and the sd of each v_i under the model, from the energy: enumerating v
    (binary, lateral), or the mixture over h of Gaussians N(b + s W h, s^2) with
    p(h) ~ exp(c.h + sum_i (b_i u_i / s_i + u_i^2 / 2)), u = W h."""
    if not isinstance(m, GaussianRBM):
        lp = brute_log_p_star(m, states(D))
        p = np.exp(lp - lp.max())
        mean = (p / p.sum()) @ states(D)
        return mean, np.sqrt(mean * (1 - mean))
    W, b, c, s = (np.asarray(a, np.float64) for a in (m.W, m.vbias, m.hbias, m.sigma))
    u = states(M) @ W.T
    e = states(M) @ c + u @ (b / s) + 0.5 * np.sum(u * u, axis=1)
    p = np.exp(e - e.max())
    p /= p.sum()
    mean = p @ (b + s * u)
    return mean, np.sqrt(p @ ((b + s * u) ** 2) + s ** 2 - mean ** 2)


def check_moments(kind, samples, tol=4.5):
    """The samples' means within ``tol`` standard errors of the exact means, and (power)
    outside them for a model whose visible biases are moved by 0.6."""
    samples = np.asarray(samples, np.float64)
    n = samples.shape[0]
    mean, sd = exact_moments(make(kind))
    se = sd / math.sqrt(n)
    z = (samples.mean(axis=0) - mean) / se
    assert np.max(np.abs(z)) < tol, z
    wrong = (samples.mean(axis=0) - exact_moments(make(kind, shift=0.6))[0]) / se
    assert np.max(np.abs(wrong)) > tol, wrong


# ------------------------------------------------------------------ the operations
def op_exact_log_partition(m, kind):
    assert cyrbm.exact_log_partition(m) == pytest.approx(brute_log_partition(m), abs=1e-7)


def op_log_partition(m, kind):
    assert m.log_partition(threads=2) == pytest.approx(brute_log_partition(m), abs=1e-7)


def op_log_unnormalized(m, kind):
    v = data_for(kind, n=5)
    np.testing.assert_allclose(m.log_unnormalized(v), brute_log_p_star(m, v), atol=1e-10)
    np.testing.assert_allclose(m.free_energy(v), -brute_log_p_star(m, v), atol=1e-10)


def op_log_prob(m, kind):
    v = data_for(kind, n=5)
    np.testing.assert_allclose(m.log_prob(v), brute_log_p_star(m, v) - brute_log_partition(m),
                               atol=1e-7)


def op_pseudo_log_likelihood(m, kind):
    v = data_for(kind, n=3)
    np.testing.assert_allclose(m.pseudo_log_likelihood(v), brute_pseudo_log_likelihood(m, v),
                               atol=1e-7)


def op_hidden_probs(m, kind):
    v = data_for(kind, n=5)
    H = states(M)
    e = neg_energy(m, np.asarray(v, np.float64), H)
    p = np.exp(e - e.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(m.hidden_probs(v), p @ H, atol=1e-10)


def op_reconstruction_error(m, kind):
    assert np.isfinite(m.reconstruction_error(data_for(kind, n=5)))


def op_save_load(m, kind, tmp_path):
    m.save(tmp_path / "m.npz")
    back = type(m).load(tmp_path / "m.npz")
    v = data_for(kind, n=5)
    np.testing.assert_array_equal(back.log_unnormalized(v), m.log_unnormalized(v))


def op_sample_gibbs(m, kind):
    check_moments(kind, m.sample(4000, 20, seed=1))


def op_ais(m, kind):
    res = Annealer(runs=200, schedule="linear:300", seed=0).log_partition(
        m, data=data_for(kind), base_data=data_for(kind))
    lo, hi = res.log_Z_interval(4)
    assert lo <= brute_log_partition(m) <= hi


def op_evaluate(m, kind):
    ev = Annealer(runs=50, schedule="linear:200", seed=0).evaluate(
        m, data_for(kind, n=10), base_data=data_for(kind))
    exact = float(np.mean(brute_log_p_star(m, data_for(kind, n=10)))) - brute_log_partition(m)
    lo, hi = ev.ais_interval(4)
    assert lo <= exact <= hi, (ev.ais_mean_log_prob - exact, ev.ais_se)
    # RAISE is conservative: at most exact, up to its own error (None: one chain)
    assert ev.raise_se is not None
    assert ev.raise_mean_log_prob <= exact + 4 * ev.raise_se, (
        ev.raise_mean_log_prob - exact, ev.raise_se)


def op_log_ratio(m, kind):
    other = make(kind, seed=5)
    res = Annealer(runs=200, schedule="linear:500", seed=0).log_ratio(m, other)
    exact = brute_log_partition(other) - brute_log_partition(m)
    lo, hi = res.log_ratio_interval(4)
    assert lo <= exact <= hi


def trainer_op(method, **settings):
    def op(m, kind):
        extra = {"visible": "gaussian"} if kind == "GaussianRBM" else \
            {"lateral": True, "reconstruction": "gibbs"} if kind == "SRBM" else {}
        t = Trainer(M, method=method, epochs=2, batch_size=20, learning_rate=0.01,
                    seed=0, **extra, **settings)
        model = t.fit(data_for(kind))
        assert type(model) is type(m)
        assert np.all(np.isfinite(model.W))
    return op


def op_sample_pt(m, kind):
    check_moments(kind, m.sample(3000, 20, seed=1, sampler="pt", temperatures=4))


def op_sample_ptt(m, kind):
    earlier = make(kind, seed=0, shift=-0.5)
    check_moments(kind, m.sample(3000, 20, seed=1, sampler="ptt", ladder=[earlier]))


OPERATIONS = {
    "exact_log_partition": op_exact_log_partition,
    "log_partition": op_log_partition,
    "log_unnormalized": op_log_unnormalized,
    "log_prob": op_log_prob,
    "pseudo_log_likelihood": op_pseudo_log_likelihood,
    "hidden_probs": op_hidden_probs,
    "reconstruction_error": op_reconstruction_error,
    "save_load": op_save_load,
    "sample_gibbs": op_sample_gibbs,
    "sample_pt": op_sample_pt,
    "sample_ptt": op_sample_ptt,
    "ais_log_partition": op_ais,
    "ais_evaluate": op_evaluate,
    "ais_log_ratio": op_log_ratio,
    "train_cd": trainer_op("cd"),
    "train_pcd": trainer_op("pcd"),
    "train_pt": trainer_op("pt", temperatures=4),
    "train_amh": trainer_op("amh"),
    "train_ptt": trainer_op("ptt"),
    "train_track_logz": trainer_op("cd", track_logz=True),
}

COMPUTES = "computes"
# The pairs that refuse, with the exception they raise and a fragment of its sentence
# (the reason).  Every other pair computes.
REFUSALS = {
    # Hu & Yu's mode set is of Hamming balls around binary states
    ("train_amh", "GaussianRBM"): (ValueError, "Hamming balls around binary states"),
}


def outcome(op, kind):
    return REFUSALS.get((op, kind), COMPUTES)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("op", list(OPERATIONS))
def test_every_operation_on_every_unit_type(op, kind, tmp_path):
    m = make(kind)
    fn = OPERATIONS[op]
    args = (m, kind, tmp_path) if op == "save_load" else (m, kind)
    expected = outcome(op, kind)
    if expected == COMPUTES:
        fn(*args)
        return
    error, fragment = expected
    with pytest.raises(error, match=fragment) as info:
        fn(*args)
    assert isinstance(info.value, CyrbmError) or type(info.value) is ValueError
    assert "\n" not in str(info.value) and str(info.value).endswith(".")


def test_the_matrix_lists_real_pairs():
    assert set(op for op, _ in REFUSALS) <= set(OPERATIONS)
    assert set(kind for _, kind in REFUSALS) <= set(KINDS)


def test_no_public_method_is_missing_from_one_class():
    names = {k: {n for n in dir(getattr(cyrbm, k)) if not n.startswith("_")} for k in KINDS}
    for name in set().union(*names.values()):
        have = [k for k in KINDS if name in names[k]]
        assert len(have) != len(KINDS) - 1, f"{name} is on {have} only"


# ------------------------------------------------------------ the command line
def _files(kind, tmp_path):
    m = make(kind)
    m.save(tmp_path / "m.npz")
    make(kind, seed=5).save(tmp_path / "other.npz")
    np.save(tmp_path / "data.npy", data_for(kind))
    return m


def cli_logz(kind, tmp_path, capsys):
    m = _files(kind, tmp_path)
    code, out, err = run(["logz", tmp_path / "m.npz", "--exact", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["log_Z"] == pytest.approx(brute_log_partition(m), abs=1e-7)


def cli_ais(kind, tmp_path, capsys):
    m = _files(kind, tmp_path)
    code, out, err = run(["ais", tmp_path / "m.npz", "--data", tmp_path / "data.npy",
                          "--runs", "100", "--schedule", "linear:300", "--json"], capsys)
    assert code == 0, err
    lo, hi = json.loads(out)["log_Z_3sigma_interval"]
    assert lo <= brute_log_partition(m) <= hi


def cli_ratio(kind, tmp_path, capsys):
    _files(kind, tmp_path)
    code, out, err = run(["ratio", tmp_path / "m.npz", tmp_path / "other.npz", "--runs", "100",
                          "--schedule", "linear:300", "--json"], capsys)
    assert code == 0, err
    exact = brute_log_partition(make(kind, seed=5)) - brute_log_partition(make(kind))
    lo, hi = json.loads(out)["log_ratio_3sigma_interval"]
    assert lo <= exact <= hi


def cli_evaluate(kind, tmp_path, capsys):
    _files(kind, tmp_path)
    code, out, err = run(["evaluate", tmp_path / "m.npz", "--data", tmp_path / "data.npy",
                          "--runs", "20", "--schedule", "linear:100", "--json"], capsys)
    assert code == 0, err


def cli_info(kind, tmp_path, capsys):
    m = _files(kind, tmp_path)
    code, out, err = run(["info", tmp_path / "m.npz", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["visible"] == m.visible


def cli_train(method):
    def op(kind, tmp_path, capsys):
        _files(kind, tmp_path)
        unit = {"GaussianRBM": ["--visible", "gaussian", "--lr", "0.01"],
                "SRBM": ["--lateral", "--reconstruction", "gibbs"], "RBM": []}[kind]
        code, out, err = run(["train", tmp_path / "data.npy", "-o", tmp_path / "t.npz",
                              "--hidden", "3", "--epochs", "1", "--batch", "20",
                              "--method", method, "--no-progress", "--json"] + unit, capsys)
        if code != 0:
            one_error_line(err)
            raise CommandRefused(err.strip())
        assert type(cyrbm.load_model(tmp_path / "t.npz")).__name__ == kind
    return op


class CommandRefused(Exception):
    """The command ended in one sentence of its own (tested: one_error_line)."""


COMMANDS = {
    "logz --exact": cli_logz,
    "ais": cli_ais,
    "ratio": cli_ratio,
    "evaluate": cli_evaluate,
    "info": cli_info,
    "train --method cd": cli_train("cd"),
    "train --method pcd": cli_train("pcd"),
    "train --method pt": cli_train("pt"),
    "train --method amh": cli_train("amh"),
    "train --method ptt": cli_train("ptt"),
}
#: the commands that refuse a unit type, with a fragment of their one sentence
COMMAND_REFUSALS = {
    ("train --method amh", "GaussianRBM"): "Hamming balls around binary states",
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_on_every_unit_type(command, kind, tmp_path, capsys):
    expected = COMMAND_REFUSALS.get((command, kind))
    if expected is None:
        COMMANDS[command](kind, tmp_path, capsys)
        return
    with pytest.raises(CommandRefused, match=expected):
        COMMANDS[command](kind, tmp_path, capsys)


def test_file_formats_keep_their_names(tmp_path):
    """The format names in model files are a contract with files already written (and
    with other tools, SPEC): moving a class between modules must not change them."""
    import json as _json
    from cyrbm import _io
    expected = {"RBM": "cyrbm.rbm", "GaussianRBM": "cyrbm.gaussian_rbm", "SRBM": "cyrbm.srbm"}
    for kind, fmt in expected.items():
        make(kind).save(tmp_path / f"{kind}.npz")
        meta = _json.loads(str(_io.read_npz(tmp_path / f"{kind}.npz")["meta"]))
        assert meta["format"] == fmt
    cyrbm.DBN([make("RBM"), RBM(np.zeros((M, 2)), np.zeros(M), np.zeros(2))]).save(
        tmp_path / "dbn.npz")
    assert _json.loads(str(_io.read_npz(tmp_path / "dbn.npz")["meta"]))["format"] == "cyrbm.dbn"
    cyrbm.BernoulliMixture(np.ones(2) / 2, np.full((2, D), 0.5)).save(tmp_path / "mix.npz")
    assert _json.loads(str(_io.read_npz(tmp_path / "mix.npz")["meta"]))["format"] == \
        "cyrbm.mixture"
