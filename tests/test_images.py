"""`cyrbm sample` and `cyrbm filters`: images a person can look at (issue 11, point 5)."""
import sys

import numpy as np
import pytest

from cyrbm import RBM, images
from cyrbm.cli import main
from _commands import run

Image = pytest.importorskip("PIL.Image")


@pytest.fixture(scope="module")
def digits_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("img") / "m.npz"
    assert main(["train", "digits:train", "-o", str(path), "--hidden", "25", "--epochs", "20",
                 "--lr", "0.1", "--no-progress"]) == 0
    return path


def grey(path):
    with Image.open(path) as picture:
        assert picture.format == "PNG" and picture.mode == "L"
        return np.asarray(picture)


def test_sample_writes_a_grid_of_digits(digits_model, tmp_path, capsys):
    out = tmp_path / "samples.png"
    code, text, err = run(["sample", digits_model, "-o", out, "--n", "30", "--steps", "200",
                           "--seed", "3"], capsys)
    assert code == 0, err
    pixels = grey(out)
    # 30 tiles in 6 columns x 5 rows of 8 x 8 pixels, one pixel apart, enlarged 4 times
    assert pixels.shape == (4 * (5 * 9 + 1), 4 * (6 * 9 + 1))
    tiles = [pixels[4 * (1 + 9 * r):4 * (9 + 9 * r), 4 * (1 + 9 * c):4 * (9 + 9 * c)]
             for r in range(5) for c in range(6)]
    on = np.array([(t == 255).mean() for t in tiles])
    # samples are binary images, neither blank nor full: digit strokes cover part of a tile
    assert set(np.unique(np.concatenate([t.ravel() for t in tiles]))) <= {0, 255}
    assert np.all(on > 0.05) and np.all(on < 0.8), on
    assert len({t.tobytes() for t in tiles}) > 20      # different chains, different digits
    assert "30 samples of 8x8 pixels" in text
    # the same seed draws the same picture
    again = tmp_path / "again.png"
    run(["sample", digits_model, "-o", again, "--n", "30", "--steps", "200", "--seed", "3",
         "--threads", "1"], capsys)
    assert np.array_equal(grey(again), pixels)


def test_filters_show_the_hidden_units(digits_model, tmp_path, capsys):
    out = tmp_path / "filters.png"
    code, text, err = run(["filters", digits_model, "-o", out], capsys)
    assert code == 0, err
    pixels = grey(out)
    assert pixels.shape == (4 * (5 * 9 + 1), 4 * (5 * 9 + 1))      # 25 units, 5 x 5
    model = RBM.load(digits_model)
    # unit 0's tile is its weights scaled by its largest magnitude: both signs appear
    tile0 = pixels[4:36:4, 4:36:4].astype(float)
    expect = np.round(255 * (0.5 + 0.5 * model.W[:, 0] / np.abs(model.W[:, 0]).max()))
    assert np.array_equal(tile0.ravel(), expect)
    assert tile0.min() == 0 or tile0.max() == 255
    assert pixels.std() > 20


def test_shape_that_does_not_fit_is_one_sentence(digits_model, tmp_path, capsys):
    code, _, err = run(["sample", digits_model, "-o", tmp_path / "x.png", "--shape", "8x9"],
                       capsys)
    assert code == 1
    assert err.strip() == ("cyrbm sample: error: the shape 8x9 has 72 pixels but the model "
                           "has 64 visible units.")
    code, _, err = run(["filters", digits_model, "-o", tmp_path / "x.png", "--shape", "8by8"],
                       capsys)
    assert code == 1 and "must be written HxW" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.png").exists()


def test_non_square_model_needs_a_shape(tmp_path, capsys):
    path = tmp_path / "m.npz"
    RBM.random(12, 3, seed=0).save(path)
    code, _, err = run(["filters", path, "-o", tmp_path / "f.png"], capsys)
    assert code == 1 and "not a square image; give its shape as HxW" in err
    code, _, err = run(["filters", path, "-o", tmp_path / "f.png", "--shape", "3x4"], capsys)
    assert code == 0, err
    # 3 units in 2 columns x 2 rows of 3 x 4 pixels, enlarged 7 times (longer side >= 28)
    assert grey(tmp_path / "f.png").shape == (7 * (2 * 4 + 1), 7 * (2 * 5 + 1))


def test_output_and_sampler_errors(digits_model, tmp_path, capsys):
    code, _, err = run(["sample", digits_model], capsys)
    assert code == 2 and "needs -o IMAGE" in err
    code, _, err = run(["sample", digits_model, "-o", tmp_path / "x.png", "--sampler", "mh"],
                       capsys)
    assert code == 1 and "--sampler must be" in err
    code, _, err = run(["sample", digits_model, "-o", tmp_path / "no" / "x.png"], capsys)
    assert code == 1 and "does not exist" in err


def test_without_pillow_the_message_says_what_to_install(digits_model, tmp_path, capsys,
                                                         monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    code, _, err = run(["filters", digits_model, "-o", tmp_path / "f.png"], capsys)
    assert code == 1 and 'pip install "cyrbm[images]"' in err
    assert not (tmp_path / "f.png").exists()


def test_image_shape_rules():
    assert images.image_shape(784) == (28, 28)
    assert images.image_shape(6, "2x3") == (2, 3)
    with pytest.raises(ValueError, match="visible units"):
        images.image_shape(6, (3, 3))
