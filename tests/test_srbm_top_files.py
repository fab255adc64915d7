"""Files and commands of DBNs whose top layer is an SRBM (issue 22; MS09 Sec. 5.2's patch
DBN: a Gaussian bottom under a semi-restricted top): the DBN file's version 3 (round
trips, older versions still read), ``cyrbm info`` of one, ``cyrbm bound`` (variational,
Chib-style, per-vector AIS) on one with real-valued data, ln Z of the top by AIS on the
SRBM checked against its exact value, and corrupt or mismatched files refused in one
sentence.  Tiny models (D = 3, H1 = 7, H2 = 3: h1 enumerated exactly)."""
import json

import numpy as np
import pytest

from cyrbm import DBN, GaussianRBM, RBM, SRBM
from cyrbm.errors import ModelFileError
from cyrbm.estimators.gaussian_dbn import exact_log_prob
from _commands import one_error_line, run


def lateral(n, rng, scale=0.5):
    L = np.triu(scale * rng.standard_normal((n, n)), 1)
    return L + L.T


def srbm_top(H1=7, H2=3, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return SRBM(rng.standard_normal((H1, H2)), 0.5 * rng.standard_normal(H1),
                0.5 * rng.standard_normal(H2), lateral(H1, rng), dtype=dtype)


def patch_dbn(D=3, H1=7, H2=3, seed=0):
    """A Gaussian bottom (D x H1, sigma not 1) under an SRBM top (H1 x H2)."""
    rng = np.random.default_rng(seed)
    low = GaussianRBM(0.8 * rng.standard_normal((D, H1)), rng.standard_normal(D),
                      0.5 * rng.standard_normal(H1), rng.uniform(0.6, 1.4, D),
                      dtype=np.float64)
    return DBN([low, srbm_top(H1, H2, seed + 1)], meta={"note": "x"})


def same_layers(a, b):
    assert [type(r) for r in a.layers] == [type(r) for r in b.layers]
    for x, y in zip(a.layers, b.layers):
        for name in ("W", "vbias", "hbias", "L", "sigma"):
            if hasattr(x, name):
                np.testing.assert_array_equal(getattr(x, name), getattr(y, name))


def file_meta(path):
    with np.load(path) as z:
        return json.loads(str(z["meta"])), sorted(z.files)


def test_round_trip_version_and_older_versions(tmp_path):
    dbn = patch_dbn()
    path = tmp_path / "p.npz"
    dbn.save(path)
    meta, names = file_meta(path)
    assert meta["format_version"] == 3 and meta["top"] == "lateral"
    assert meta["visible"] == "gaussian" and "layer1_L" in names
    assert meta["layers"][1]["format"] == "cyrbm.srbm"
    back = DBN.load(path)
    same_layers(dbn, back)
    assert back.top_kind == "lateral" and back.visible == "gaussian"
    assert back.meta == {"note": "x"}
    # float32 on request, the lateral weights too
    assert DBN.load(path, dtype=np.float32).top.L.dtype == np.float32
    # a binary bottom under an SRBM top
    rng = np.random.default_rng(3)
    binary = DBN([RBM(rng.standard_normal((5, 7)), np.zeros(5), np.zeros(7)), srbm_top()])
    binary.save(tmp_path / "b.npz")
    meta, _ = file_meta(tmp_path / "b.npz")
    assert meta["format_version"] == 3 and "visible" not in meta
    same_layers(binary, DBN.load(tmp_path / "b.npz"))
    # the lowest version that holds the DBN: 1 and 2 as before, and both still read
    rbm_top = RBM(dbn.top.W, dbn.top.vbias, dbn.top.hbias)
    for layers, version in (([binary.layers[0], rbm_top], 1), ([dbn.layers[0], rbm_top], 2)):
        DBN(layers).save(tmp_path / "old.npz")
        meta, names = file_meta(tmp_path / "old.npz")
        assert meta["format_version"] == version and "top" not in meta
        assert not any(n.endswith("_L") for n in names)
        same_layers(DBN(layers), DBN.load(tmp_path / "old.npz"))


def test_corrupt_or_mismatched_files_in_one_sentence(tmp_path, capsys):
    arrays = patch_dbn().to_arrays()

    def refused(change, needle):
        bad = dict(arrays)
        change(bad)
        np.savez(tmp_path / "bad.npz", **bad)
        with pytest.raises(ModelFileError) as exc:
            DBN.load(tmp_path / "bad.npz")
        text = str(exc.value)
        assert "\n" not in text and text.endswith(".") and needle in text, text
        code, _, err = run(["info", tmp_path / "bad.npz"], capsys)
        assert code != 0
        one_error_line(err, needle)

    def asymmetric(a):
        a["layer1_L"] = a["layer1_L"].copy()
        a["layer1_L"][0, 1] += 1.0

    def newer(a):
        meta = json.loads(str(a["meta"]))
        meta["format_version"] = 4
        a["meta"] = np.array(json.dumps(meta))

    def unknown_top(a):
        meta = json.loads(str(a["meta"]))
        meta["top"] = "hopfield"
        a["meta"] = np.array(json.dumps(meta))

    refused(asymmetric, "symmetric")
    refused(lambda a: a.update(layer1_L=np.zeros((6, 6))), "7 x 7")
    refused(lambda a: a.update(layer1_L=np.eye(7)), "zero diagonal")
    refused(lambda a: a.update(layer1_L=np.full((7, 7), np.nan)), "NaN")
    refused(lambda a: a.pop("layer1_L"), "lacks the array 'L'")
    refused(newer, "newer than this cyrbm")
    refused(unknown_top, "'hopfield'")
    # lateral weights on the only layer of a DBN file
    one = {k[len("layer1_"):] and f"layer0_{k[len('layer1_'):]}": v
           for k, v in arrays.items() if k.startswith("layer1_")}
    one["meta"] = np.array(json.dumps({"format": "cyrbm.dbn", "format_version": 3,
                                       "n_layers": 1, "top": "lateral"}))
    np.savez(tmp_path / "one.npz", **one)
    with pytest.raises(ModelFileError, match="one layer with lateral weights"):
        DBN.load(tmp_path / "one.npz")


def test_info_and_bound_on_a_gaussian_srbm_dbn(tmp_path, capsys):
    dbn = patch_dbn(seed=4)
    path = tmp_path / "p.npz"
    dbn.save(path)
    code, out, err = run(["info", path], capsys)
    assert code == 0, err
    assert "DBN 3-7-3 (2 layers, Gaussian visible units, top SRBM 7 x 3 with lateral " \
           "connections)" in out and "format version 3" in out
    code, out, err = run(["info", path, "--json"], capsys)
    info = json.loads(out)
    assert info["top"] == "lateral" and info["visible"] == "gaussian" and info["sizes"] == [3, 7, 3]
    V = dbn.layers[0].sample(6, steps=20, seed=2).astype(np.float64)
    np.save(tmp_path / "v.npy", V)
    exact, log_z = exact_log_prob(*dbn.layers, V)
    assert log_z == pytest.approx(dbn.top.log_partition(), abs=1e-9)
    ais = {"--runs": "100", "--schedule": "linear:300", "--seed": "3"}
    results = {}
    for method in ("variational", "chib", "ais"):
        extra = {"chib": ["--repeats", "50"], "ais": ["--repeats", "20", "--steps", "100"]}
        code, out, err = run(["bound", path, "--data", tmp_path / "v.npy", "--method", method,
                              *sum(ais.items(), ()), *extra.get(method, []), "--json"], capsys)
        assert code == 0, err
        results[method] = res = json.loads(out)
        # ln Z of the top by AIS on the SRBM: within 3 of its stated errors of the exact one
        assert abs(res["log_Z"] - log_z) < 3 * res["log_Z_stderr"] + 1e-3, res
    var, chib, pv = results["variational"], results["chib"], results["ais"]
    # the same AIS (one seed) under every method
    assert var["log_Z"] == chib["log_Z"] == pv["log_Z"]
    assert var["mean"] < exact.mean() + 3 * var["stderr"]
    # the error of the mean over these rows: the samples' and ln Z-hat's ("total_stderr"
    # adds the spread over the rows, no error of the mean over the same rows)
    errors = {id(res): np.hypot(res["mc_stderr"], res["log_Z_stderr"]) for res in (chib, pv)}
    for res in (chib, pv):
        assert abs(res["mean"] - exact.mean()) < 4 * errors[id(res)], res
    # power: a model whose bottom layer's visible biases are shifted is rejected by the
    # same tolerance
    low = dbn.layers[0]
    shifted = exact_log_prob(GaussianRBM(low.W, low.vbias + 1.0, low.hbias, low.sigma,
                                         dtype=np.float64), dbn.top, V)[0].mean()
    for res in (chib, pv):
        assert abs(res["mean"] - shifted) > 4 * errors[id(res)], (res, shifted)
    # real rows given to a DBN of a binary bottom (under an SRBM top): one sentence
    rng = np.random.default_rng(5)
    DBN([RBM(rng.standard_normal((3, 7)), np.zeros(3), np.zeros(7)), srbm_top()]).save(
        tmp_path / "b.npz")
    code, _, err = run(["bound", tmp_path / "b.npz", "--data", tmp_path / "v.npy"], capsys)
    assert code != 0
    one_error_line(err)

