"""One set of rules for the command line and the Python API (issue 20, "Silent
nonsense"): a value or an option that makes no sense, or would be ignored, is refused in
one sentence, through ``cyrbm`` (in-process ``cyrbm.cli.main``) and through the API.
"""
import json

import numpy as np
import pytest

import cyrbm
from cyrbm import DBN, RBM, Annealer, Trainer, _io
from cyrbm.estimators.annealing import AnnealingError
from cyrbm.errors import DataError, ModelFileError
from cyrbm.training.trainer import parse_k
from _commands import run


def refused(args, capsys, *needles):
    """Exit 1, nothing on stdout, one sentence on stderr holding each needle."""
    code, out, err = run(args, capsys)
    lines = err.strip().splitlines()
    assert code == 1 and out == "" and len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], err
    return lines[0]


def small_rbm(path, n_visible=64, n_hidden=6, seed=0):
    rng = np.random.default_rng(seed)
    model = RBM(rng.normal(0, 0.1, (n_visible, n_hidden)), np.zeros(n_visible),
                np.zeros(n_hidden))
    model.save(path)
    return model


GREY = np.linspace(0, 16, 64 * 20).reshape(20, 64)


# ------------------------------------------------------------------------ binarize
@pytest.mark.parametrize("threshold, effect", [("2", "every value 0"),
                                               ("-0.5", "every value 1"),
                                               ("1", "only the largest values 1")])
def test_a_threshold_outside_zero_one_is_refused(tmp_path, capsys, threshold, effect):
    for command in (["train", "digits", "-o", tmp_path / "m.npz", "--hidden", "3"],
                    ["dbn", "digits", "-o", tmp_path / "d.npz", "--layers", "3"]):
        refused([*command, "--epochs", "1", "--binarize", "threshold", "--threshold",
                 threshold], capsys, "threshold must lie strictly between 0 and 1", effect)
    assert list(tmp_path.iterdir()) == []
    np.save(tmp_path / "g.npy", GREY)
    with pytest.raises(DataError, match="strictly between 0 and 1"):
        cyrbm.load_data(tmp_path / "g.npy", binarize="threshold", threshold=float(threshold))
    # inside (0, 1) it binarizes
    X = cyrbm.load_data(tmp_path / "g.npy", binarize="threshold", threshold=0.25)
    np.testing.assert_array_equal(X, GREY / 16 >= 0.25)


def test_a_threshold_without_binarize_threshold_is_refused(tmp_path, capsys):
    for binarize in ([], ["--binarize", "stochastic"]):
        refused(["train", "digits", "-o", tmp_path / "m.npz", "--hidden", "3", "--epochs",
                 "1", "--threshold", "0.3", *binarize], capsys,
                "--threshold applies to --binarize threshold only")
        refused(["dbn", "digits", "-o", tmp_path / "d.npz", "--layers", "3", "--epochs",
                 "1", "--threshold", "0.3", *binarize], capsys,
                "--threshold applies to --binarize threshold only")
    np.save(tmp_path / "g.npy", GREY)
    with pytest.raises(DataError, match="binarize='threshold' only"):
        cyrbm.load_data(tmp_path / "g.npy", binarize="stochastic", threshold=0.3)
    with pytest.raises(DataError, match="binarize='threshold' only"):
        cyrbm.load_data("digits", threshold=0.5)
    # the default is still 0.5
    np.testing.assert_array_equal(cyrbm.load_data(tmp_path / "g.npy", binarize="threshold"),
                                  GREY / 16 >= 0.5)


# ------------------------------------------------------------------------ training
def test_a_falling_k_ramp_is_refused(tmp_path, capsys):
    refused(["train", "digits", "-o", tmp_path / "m.npz", "--k", "5:1"], capsys,
            "--k 5:1", "must rise", "not fall from 5 to 1")
    with pytest.raises(ValueError, match="must rise"):
        Trainer(5, k="5:1")
    assert parse_k("1:5") == (1, 5) and parse_k("3:3") == (3, 3)


def test_an_amh_radius_above_the_visible_units_is_refused(tmp_path, capsys):
    refused(["train", "digits", "-o", tmp_path / "m.npz", "--hidden", "3", "--method", "amh",
             "--radius", "1000"], capsys, "radius R", "at most the number of visible units (64)",
             "not 1000")
    assert list(tmp_path.iterdir()) == []
    X = cyrbm.load_data("digits")[:100]
    with pytest.raises(ValueError, match=r"at most the number of visible units \(64\)"):
        Trainer(3, method="amh", radius=65, epochs=1).fit(X)
    Trainer(3, method="amh", radius=64, epochs=1, monitor_size=0).fit(X)     # the edge


@pytest.mark.parametrize("kw, message", [
    ({"seed": 1.5}, "seed must be a whole number, not 1.5"),
    ({"seed": True}, "seed must be a whole number, not True"),
    ({"seed": -1}, "seed must be at least 0, not -1"),
    ({"seed": "3"}, "seed must be a whole number"),
    ({"epochs": 0}, "epochs must be at least 1, not 0"),
    ({"epochs": 2.5}, "epochs must be a whole number"),
    ({"n_hidden": 2.5}, "n_hidden must be a whole number"),
    ({"batch_size": 0}, "batch_size must be at least 1"),
    ({"checkpoint_every": 0}, "checkpoint_every must be at least 1"),
    ({"monitor_size": -1}, "monitor_size"),
])
def test_trainer_refuses_what_the_command_line_refuses(kw, message):
    with pytest.raises(ValueError) as info:
        Trainer(**kw)
    assert message in str(info.value) and len(str(info.value).splitlines()) == 1


def test_trainer_takes_whole_numbers_spelled_as_floats():
    tr = Trainer(5.0, seed=2.0, epochs=3.0, batch_size=np.int64(10))
    assert (tr.n_hidden, tr.seed, tr.epochs, tr.batch_size) == (5, 2, 3, 10)
    assert isinstance(tr.seed, int)


# --------------------------------------------------------------------------- models
def test_hidden_probs_and_reconstruct_refuse_grey_data():
    model = RBM.random(8, 3, seed=0)
    grey = np.full((2, 8), 0.5)
    for method in (model.hidden_probs, model.reconstruct):
        with pytest.raises(DataError, match="v is not binary: row 1, column 1 holds 0.5"):
            method(grey)
    # mean-field input, said so
    p = model.hidden_probs(grey, probabilities=True)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-(grey @ model.W + model.hbias))),
                               rtol=1e-6)
    assert model.reconstruct(grey, probabilities=True).shape == (2, 8)
    with pytest.raises(DataError, match="probabilities must lie in"):
        model.hidden_probs(np.full((1, 8), 1.5), probabilities=True)
    # 0/1 rows as before, a single row too
    v = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    np.testing.assert_allclose(model.hidden_probs(v), model.hidden_probs(v[None, :]))
    # a DBN's recognition pass feeds probabilities up, as documented
    dbn = DBN([model, RBM.random(3, 2, seed=1)])
    assert dbn.recognition_probs(v).shape == (1, 2)


def test_a_model_whose_meta_contradicts_its_arrays_is_refused(tmp_path, capsys):
    model = small_rbm(tmp_path / "m.npz", n_hidden=25)
    arrays = model.to_arrays()
    meta = json.loads(str(arrays["meta"]))
    for key, value, words in (("n_hidden", 99, "meta says n_hidden 99 but W has 25 columns"),
                              ("n_visible", 10, "meta says n_visible 10 but W has 64 rows"),
                              ("dtype", "float32", "meta says dtype 'float32' but W is float64")):
        bad = dict(arrays, meta=_io.meta_to_array({**meta, key: value}))
        np.savez(tmp_path / "bad.npz", **bad)
        with pytest.raises(ModelFileError, match="is corrupt"):
            RBM.load(tmp_path / "bad.npz")
        refused(["info", tmp_path / "bad.npz"], capsys, "is corrupt", words)
    dbn = DBN([RBM.random(64, 5), RBM.random(5, 4)])
    arrays = dbn.to_arrays()
    meta = json.loads(str(arrays["meta"]))
    np.savez(tmp_path / "bad.npz", **dict(arrays, meta=_io.meta_to_array(
        {**meta, "sizes": [64, 5, 9]})))
    with pytest.raises(ModelFileError, match=r"meta says sizes \[64, 5, 9\] but its arrays "
                                             r"have \[64, 5, 4\]"):
        DBN.load(tmp_path / "bad.npz")


# ------------------------------------------------------------------ ratio, evaluate
@pytest.fixture
def two_models(tmp_path):
    return small_rbm(tmp_path / "a.npz", n_hidden=6), small_rbm(tmp_path / "b.npz",
                                                                n_hidden=8, seed=1)


@pytest.mark.parametrize("extra, named", [
    (["--start", "exact", "--chains", "5"], "--chains sets"),
    (["--start", "exact", "--burn-in", "5"], "--burn-in sets"),
    (["--start", "exact", "--steps-between", "5"], "--steps-between sets"),
    (["--chains", "5", "--burn-in", "3"], "--chains and --burn-in set"),
])
def test_ratio_refuses_chain_options_with_exact_starts(tmp_path, capsys, two_models,
                                                       extra, named):
    line = refused(["ratio", tmp_path / "a.npz", tmp_path / "b.npz", "--runs", "10",
                    "--schedule", "linear:10", *extra], capsys, named,
                   "start from exact draws of model A", "would be ignored",
                   "use --start gibbs")
    assert ("smaller layer has 6 units" in line) == ("--start" not in extra)
    code, out, err = run(["ratio", tmp_path / "a.npz", tmp_path / "b.npz", "--runs", "10",
                          "--schedule", "linear:10", "--start", "gibbs", "--chains", "5",
                          "--burn-in", "3", "--steps-between", "2", "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["chains"] == 5


def test_log_ratio_api_refuses_chain_options_with_exact_starts(two_models):
    a, b = two_models
    annealer = Annealer(runs=10, schedule="linear:10", progress=False)
    for kw in ({"chains": 5}, {"burn_in": 0}, {"steps_between": 3}):
        with pytest.raises(AnnealingError, match="would be ignored; use start='gibbs'"):
            annealer.log_ratio(a, b, start="exact", **kw)
        with pytest.raises(AnnealingError, match="start auto"):
            annealer.log_ratio(a, b, **kw)
    res = annealer.log_ratio(a, b, start="gibbs", burn_in=2, chains=5)
    assert res.extra["burn_in"] == 2 and res.extra["steps_between"] == 100


def test_evaluate_refuses_a_burn_in_with_exact_starts(tmp_path, capsys, two_models):
    refused(["evaluate", tmp_path / "b.npz", "--data", "digits:test", "--base-model",
             tmp_path / "a.npz", "--burn-in", "10", "--runs", "4", "--schedule", "linear:5"],
            capsys, "--burn-in sets the Gibbs chains", "would be ignored")


# --------------------------------------------------------------------------- bound
@pytest.fixture
def dbn_file(tmp_path):
    DBN([RBM.random(64, 6, seed=0), RBM.random(6, 5, seed=1)]).save(tmp_path / "d.npz")
    return tmp_path / "d.npz"


@pytest.mark.parametrize("method, extra, needle", [
    ("chib", ["--entropy", "sampled"], "--entropy applies to --method variational, not to chib"),
    ("ais", ["--entropy", "analytic"], "--entropy applies to --method variational, not to ais"),
    ("harmonic", ["--entropy", "sampled"], "--entropy applies to --method variational"),
    ("chib", ["--samples", "3"], "--samples applies to --method variational and harmonic"),
    ("ais", ["--samples", "3"], "--samples applies to --method variational and harmonic"),
    ("harmonic", ["--logz", "5"], "--logz applies to --method variational, chib and ais"),
    ("harmonic", ["--runs", "5"], "the harmonic mean needs no ln Z"),
    ("harmonic", ["--schedule", "linear:5"], "the harmonic mean needs no ln Z"),
    ("variational", ["--repeats", "2"], "--steps and --repeats apply to --method chib and ais"),
    ("ais", ["--trace"], "--trace applies to --method chib"),
    ("variational", ["--checkpoint", "c.npz"], "--checkpoint applies to --method chib and "
                                               "ais, not to variational"),
    ("ais", ["--checkpoint", "c.npz", "--scheduler", "tcp://localhost:1"],
     "give either --scheduler or --checkpoint, not both"),
])
def test_bound_refuses_options_its_method_ignores(dbn_file, capsys, method, extra, needle):
    refused(["bound", dbn_file, "--data", "digits:test", "--method", method, *extra], capsys,
            needle)


@pytest.mark.parametrize("kw, message", [
    (dict(method="cd", chains=4), "chains is a setting of method pt or ptt, not of cd"),
    (dict(method="pcd", temperatures=5), "temperatures is a setting of method pt, not of pcd"),
    (dict(method="amh", adapt_every=3), "adapt_every is a setting of method pt, not of amh"),
    (dict(method="pt", hop_prob=0.2), "hop_prob is a setting of method amh, not of pt"),
    (dict(method="cd", modes=3), "modes is a setting of method amh, not of cd"),
    (dict(method="cd", radius=3), "radius is a setting of method amh, not of cd"),
    (dict(method="cd", hop_weight="prob"), "hop_weight is a setting of method amh"),
    (dict(method="pcd", mode_every=3), "mode_every is a setting of method amh"),
    (dict(method="pcd", swap_threshold=0.5), "swap_threshold is a setting of method ptt"),
    (dict(method="pt", max_rungs=3), "max_rungs is a setting of method ptt, not of pt"),
])
def test_trainer_refuses_another_methods_sampler_settings(kw, message):
    with pytest.raises(ValueError, match=message):
        Trainer(3, **kw)


def test_train_resume_refuses_another_methods_option(tmp_path, capsys):
    """Without --resume the option is refused by the command line; with it the method is
    the checkpoint's, and the Trainer refuses the option in the command line's words."""
    model = tmp_path / "m.npz"
    code, _, err = run(["train", "digits", "-o", model, "--hidden", "3", "--epochs", "1",
                        "--monitor", "0", "--no-progress"], capsys)
    assert code == 0, err
    refused(["train", "digits", "-o", model, "--epochs", "2", "--resume", "--hop-prob", "0.3"],
            capsys, "--hop-prob is a setting of --method amh, not of cd")
    refused(["train", "digits", "-o", model, "--epochs", "2", "--chains", "4"], capsys,
            "--chains is a setting of --method pt or ptt, not of cd")


def test_a_one_layer_dbn_refuses_settings_of_the_layers_above(tmp_path, capsys):
    for extra, needle in ((["--init-transpose"], "--init-transpose sets the layers above"),
                          (["--layer-input", "probs"], "--layer-input probs sets the layers")):
        refused(["dbn", "digits", "-o", tmp_path / "d.npz", "--layers", "5", "--epochs", "1",
                 *extra], capsys, needle, "a DBN of one layer has none")
    from cyrbm.training.greedy import train_dbn
    with pytest.raises(ValueError, match="init_transpose sets the layers above the first"):
        train_dbn(cyrbm.load_data("digits")[:50], [5], init_transpose=True, epochs=1)


def test_evaluate_refuses_a_base_data_it_would_not_use(tmp_path, capsys, two_models):
    common = ["evaluate", tmp_path / "b.npz", "--data", "digits:test", "--base-model",
              tmp_path / "a.npz", "--base-data", "digits:train", "--runs", "4",
              "--schedule", "linear:5"]
    refused(common, capsys, "--base-data fits the base-rate model", "here that ln Z is exact",
            "would be ignored")
    refused(common + ["--base-logz", "3"], capsys, "given by --base-logz")


def test_the_command_line_says_the_apis_parameters_and_hints_as_its_options(tmp_path, capsys):
    """The API words its messages in Python only (no global switched by the command line);
    the error lists the parameters and hints it names (exc.parameters, exc.hints), and the
    command line says them as its options where it prints the message."""
    from cyrbm._validation import check_binary, hint, worded
    from cyrbm.cli.options import in_cli_words
    exc = worded(ValueError("chains is a setting of method pt, not of cd; chains stay"),
                 parameters=("chains", "method"))
    assert in_cli_words(exc, "train") == \
        "--chains is a setting of --method pt, not of cd; chains stay"
    exc = worded(DataError(f"x is not binary ({hint('binarize_array')})."),
                 hints=("binarize_array",))
    assert in_cli_words(exc, "train") == \
        "x is not binary (binarize it first with --binarize threshold or --binarize stochastic)."
    assert in_cli_words(exc, "ais") == \
        "x is not binary (these commands take 0/1 data only; binarize it first)."
    grey = tmp_path / "grey.npy"
    np.save(grey, np.full((3, 4), 0.5))
    refused(["train", grey, "-o", tmp_path / "m.npz"], capsys, "--binarize threshold")
    with pytest.raises(DataError, match="binarize='threshold'") as caught:
        check_binary(np.full((3, 4), 0.5))
    assert caught.value.hints == ("binarize_array",)
