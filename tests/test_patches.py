"""Image patches and their whitening (cyrbm.data.patches; MS09 Sec. 5.2's data): the
``patches`` source of load_data (shapes, pixel range, seeds, the held-out regions), bad
input in one sentence, and the whitening kept in a Gaussian RBM's file, applied to test
data with the right Jacobian."""
import math

import numpy as np
import pytest
from scipy import stats

from cyrbm.data.datasets import load_data
from cyrbm.errors import DataError, ModelFileError
from cyrbm.models.gaussian import GaussianRBM
from cyrbm.data.patches import Whitening, fit_whitening, load_patches

PIL = pytest.importorskip("PIL.Image")


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory):
    """Two small RGB images (smooth gradients plus noise) and a text file."""
    d = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(1)
    for i, (h, w) in enumerate([(40, 60), (36, 50)]):
        y, x = np.mgrid[0:h, 0:w]
        rgb = np.stack([(x * 4 + i * 30) % 256, (y * 5) % 256, (x + y) % 256], axis=-1)
        rgb = np.clip(rgb + rng.integers(-20, 20, rgb.shape), 0, 255).astype(np.uint8)
        PIL.fromarray(rgb).save(d / f"im{i}.png")
    (d / "notes.txt").write_text("not an image")
    return d


def test_patch_shapes_range_and_seeds(image_dir):
    X = load_patches(image_dir, size=8, n=300, seed=3)
    assert X.shape == (300, 64) and X.dtype == np.float64 and X.flags.c_contiguous
    assert X.min() >= 0 and X.max() < 1
    np.testing.assert_array_equal(X, load_patches(image_dir, size=8, n=300, seed=3))
    assert not np.array_equal(X, load_patches(image_dir, size=8, n=300, seed=4))
    # the test set does not depend on the training set's size
    T = load_patches(image_dir, size=8, n=50, split="test", seed=3)
    np.testing.assert_array_equal(T, load_patches(image_dir, size=8, n=50, split="test",
                                                  seed=3))
    # floor(256 x) is the 8-bit luminance: grey = Pillow's L of the image
    grey = np.asarray(PIL.open(image_dir / "im0.png").convert("L"))
    levels = np.floor(X * 256).astype(int)
    found = 0
    windows = np.lib.stride_tricks.sliding_window_view(grey, (8, 8)).reshape(-1, 64)
    for row in levels[:20]:
        found += np.any(np.all(windows == row, axis=1))
    assert found >= 5                       # the rest come from the other image


def test_test_patches_come_from_held_out_columns(tmp_path):
    """An image whose columns are numbered by their grey level: training patches hold
    only the left 4/5 of the columns, test patches only the right 1/5."""
    width = 100
    grey = np.tile(np.arange(width, dtype=np.uint8) * 2, (30, 1))
    PIL.fromarray(grey).save(tmp_path / "cols.png")
    X = load_patches(tmp_path / "cols.png", size=10, n=500, split="train")
    T = load_patches(tmp_path / "cols.png", size=10, n=500, split="test")
    col_x = np.floor(X * 256).astype(int) // 2
    col_t = np.floor(T * 256).astype(int) // 2
    assert col_x.max() < 80 <= col_t.min()
    assert col_x.min() == 0 and col_t.max() == width - 1     # the regions are covered


def test_load_data_patches_source():
    pytest.importorskip("sklearn")
    X = load_data("patches:test", real=True)
    assert X.shape == (2000, 400)
    np.testing.assert_array_equal(X, load_data("patches:test", real=True, seed=0))
    # patches are real-valued: refused as binary data in one sentence
    with pytest.raises(DataError, match="row 1"):
        load_data("patches:test")


@pytest.mark.parametrize("call, needle", [
    (lambda d: load_patches(d / "im0.png", size=61), "bigger than the image"),
    (lambda d: load_patches(d / "notes.txt"), "not an image file"),
    (lambda d: load_patches(d / "empty"), "no images found"),
    (lambda d: load_patches(d / "missing.png"), "no such image file"),
    (lambda d: load_patches(d, size=0), "patch size"),
    (lambda d: load_patches(d, split="valid"), "split"),
    (lambda d: load_patches(d / "im0.png", size=30), "too narrow"),
    (lambda d: load_data("patches:dev"), "patches:train"),
    (lambda d: load_data(f"patches:train:{d / 'notes.txt'}", real=True), "not an image"),
])
def test_bad_input_is_one_sentence(image_dir, call, needle):
    (image_dir / "empty").mkdir(exist_ok=True)
    with pytest.raises(DataError, match=needle) as info:
        call(image_dir)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------------ whitening
def correlated(n, D=6, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(D, D)) + 2 * np.eye(D)
    return rng.normal(size=(n, D)) @ A.T + rng.normal(size=D)


@pytest.mark.parametrize("kind", ["zca", "pca", "standardize"])
def test_whitening_and_its_log_determinant(kind):
    X = correlated(2000)
    w = fit_whitening(X, kind)
    Y = w.transform(X)
    cov = np.cov(Y.T, bias=True)
    if kind == "standardize":
        np.testing.assert_allclose(np.diag(cov), 1, atol=1e-12)
    else:
        np.testing.assert_allclose(cov, np.eye(6), atol=1e-10)
    if kind == "zca":
        np.testing.assert_allclose(w.matrix, w.matrix.T, atol=1e-12)
    np.testing.assert_allclose(Y.mean(axis=0), 0, atol=1e-12)
    assert w.log_det == pytest.approx(math.log(abs(np.linalg.det(w.matrix))), abs=1e-10)
    np.testing.assert_allclose(w.inverse(Y), X, atol=1e-9)


def test_jacobian_gaussian_in_whitened_space_equals_pixel_space():
    """ln p(x) of a Gaussian fitted in the whitened space plus ln|det A| is the pixel
    space Gaussian's ln p(x), fitted to the same training rows, on test rows."""
    X, T = correlated(3000, seed=1), correlated(500, seed=2)
    for kind in ("zca", "pca", "standardize"):
        w = fit_whitening(X, kind)
        Y, U = w.transform(X), w.transform(T)
        white = stats.multivariate_normal(Y.mean(0), np.cov(Y.T, bias=True)).logpdf(U)
        pixel = stats.multivariate_normal(X.mean(0), np.cov(X.T, bias=True)).logpdf(T)
        np.testing.assert_allclose(white + w.log_det, pixel, rtol=0, atol=1e-8)


def test_whitening_saved_with_the_model_and_applied_to_test_data(tmp_path):
    X, T = correlated(500, seed=3), correlated(50, seed=4)
    w = fit_whitening(X, "pca")
    rng = np.random.default_rng(0)
    m = GaussianRBM(rng.normal(0, 0.3, (6, 3)), np.zeros(6), np.zeros(3), whitening=w)
    m.save(tmp_path / "m.npz")
    back = GaussianRBM.load(tmp_path / "m.npz")
    assert back.whitening.kind == "pca" and back.whitening.log_det == w.log_det
    np.testing.assert_array_equal(back.whitening.transform(T), w.transform(T))
    np.testing.assert_array_equal(back.log_prob(back.whitening.transform(T)),
                                  m.log_prob(w.transform(T)))
    assert "whitening" not in back.meta              # kept as the object, not twice
    assert back.astype(np.float32).whitening is back.whitening
    # the pixel-space density integrates to one: a 1-D model, numerically
    w1 = fit_whitening(correlated(400, D=1, seed=5), "standardize")
    m1 = GaussianRBM([[0.8, -0.5]], [0.2], [0.1, -0.3], whitening=w1)
    x = np.linspace(-60, 60, 200001)[:, None]
    p = np.exp(m1.log_prob(w1.transform(x)) + w1.log_det)
    assert np.trapezoid(p, x[:, 0]) == pytest.approx(1, abs=1e-6)
    # a damaged whitening in a file: one sentence
    arrays = dict(np.load(tmp_path / "m.npz"))
    del arrays["whitening_mean"]
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ModelFileError, match="whitening_mean"):
        GaussianRBM.load(tmp_path / "bad.npz")


def test_whitening_bad_input():
    with pytest.raises(DataError, match="one of zca"):
        fit_whitening(correlated(10), "sphere")
    with pytest.raises(DataError, match="singular"):
        fit_whitening(np.c_[correlated(100), np.ones(100)], "zca")
    with pytest.raises(DataError, match="constant"):
        fit_whitening(np.c_[correlated(100), np.ones(100)], "standardize")
    with pytest.raises(DataError, match="columns"):
        fit_whitening(correlated(100)).transform(np.zeros((2, 5)))
    with pytest.raises(DataError, match="invertible"):
        Whitening(np.zeros(2), np.zeros((2, 2)))
