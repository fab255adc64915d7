"""Tests for cyrbm.data.datasets: file formats, binarization, validation and bundled data."""

import gzip
import importlib.util
import os
import struct

import numpy as np
import pytest

import cyrbm.data.datasets as ds
from cyrbm.errors import CyrbmError, DataError


# ----------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------

def data_error(call, *details):
    """Run ``call``; assert it raises a one-line DataError that mentions every detail."""
    with pytest.raises(DataError) as info:
        call()
    error = info.value
    message = str(error)
    assert isinstance(error, CyrbmError) and isinstance(error, ValueError)
    assert message and "\n" not in message, message
    # No low-level traceback is chained onto the error.
    assert error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__
    for detail in details:
        assert detail in message, f"{detail!r} not in {message!r}"
    return message


def idx_bytes(array, type_code=0x08):
    """Encode ``array`` as an IDX file (big-endian dims, big-endian data)."""
    dtypes = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
    header = bytes([0, 0, type_code, array.ndim])
    header += b"".join(struct.pack(">I", size) for size in array.shape)
    return header + np.asarray(array, dtype=dtypes[type_code]).tobytes()


def write(path, data):
    path.write_bytes(data) if isinstance(data, bytes) else path.write_text(data)
    return path


@pytest.fixture
def binary():
    rng = np.random.default_rng(1)
    return (rng.random((7, 5)) < 0.4).astype(np.uint8)


def check_result(X, expected):
    assert X.dtype == np.uint8
    assert X.flags.c_contiguous
    assert X.ndim == 2
    np.testing.assert_array_equal(X, expected)


# ----------------------------------------------------------------------------
# Round trips of every format
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.bool_, np.int64, np.float32, np.float64])
def test_npy_round_trip(tmp_path, binary, dtype):
    path = tmp_path / "x.npy"
    np.save(path, binary.astype(dtype))
    check_result(ds.load_data(path), binary)
    check_result(ds.load_data(str(path)), binary)


def test_npz_first_array_in_file_order(tmp_path, binary):
    path = tmp_path / "x.npz"
    np.savez(path, second=binary, first=1 - binary)
    check_result(ds.load_data(path), binary)


def test_npz_compressed_and_positional(tmp_path, binary):
    path = tmp_path / "x.npz"
    np.savez_compressed(path, binary)
    check_result(ds.load_data(path), binary)


def test_npz_named_key(tmp_path, binary):
    path = tmp_path / "x.npz"
    np.savez(path, a=binary, b=1 - binary)
    check_result(ds.load_data(path, key="b"), 1 - binary)


def test_npz_colon_syntax(tmp_path, binary):
    path = tmp_path / "x.npz"
    np.savez(path, a=binary, b=1 - binary)
    check_result(ds.load_data(f"{path}:b"), 1 - binary)
    check_result(ds.load_data(f"{path}:b", key="b"), 1 - binary)


def test_npz_colon_syntax_conflicting_key(tmp_path, binary):
    path = tmp_path / "x.npz"
    np.savez(path, a=binary, b=1 - binary)
    data_error(lambda: ds.load_data(f"{path}:b", key="a"), "'b'", "key='a'")


def test_csv_round_trip(tmp_path, binary):
    text = "\n".join(",".join(str(v) for v in row) for row in binary) + "\n"
    check_result(ds.load_data(write(tmp_path / "x.csv", text)), binary)


def test_csv_with_header(tmp_path, binary):
    header = ",".join(f"pixel{j}" for j in range(binary.shape[1]))
    text = header + "\n" + "\n".join(",".join(str(v) for v in row) for row in binary)
    check_result(ds.load_data(write(tmp_path / "x.csv", text)), binary)


def test_txt_whitespace_comments_blank_lines(tmp_path, binary):
    lines = ["# a comment", ""] + [" ".join(f"{v:.1f}" for v in row) for row in binary]
    lines.insert(4, "   ")
    lines[5] += "   # trailing comment"
    check_result(ds.load_data(write(tmp_path / "x.txt", "\n".join(lines))), binary)


def test_csv_gz(tmp_path, binary):
    text = "\n".join(",".join(str(v) for v in row) for row in binary)
    path = write(tmp_path / "x.csv.gz", gzip.compress(text.encode()))
    check_result(ds.load_data(path), binary)


def test_idx_plain_2d(tmp_path, binary):
    path = write(tmp_path / "x-idx2-ubyte", idx_bytes(binary))
    check_result(ds.load_data(path), binary)


def test_idx_3d_is_flattened(tmp_path):
    rng = np.random.default_rng(2)
    images = (rng.random((6, 4, 3)) < 0.5).astype(np.uint8)
    path = write(tmp_path / "images-idx3-ubyte", idx_bytes(images))
    check_result(ds.load_data(path), images.reshape(6, 12))


def test_idx_gz(tmp_path):
    rng = np.random.default_rng(3)
    images = (rng.random((6, 4, 3)) < 0.5).astype(np.uint8)
    path = write(tmp_path / "images-idx3-ubyte.gz", gzip.compress(idx_bytes(images)))
    check_result(ds.load_data(path), images.reshape(6, 12))


def test_idx_recognised_by_magic_not_name(tmp_path, binary):
    check_result(ds.load_data(write(tmp_path / "anything.bin", idx_bytes(binary))), binary)
    gz = write(tmp_path / "other.dat", gzip.compress(idx_bytes(binary)))
    check_result(ds.load_data(gz), binary)


@pytest.mark.parametrize("code", [0x09, 0x0B, 0x0C, 0x0D, 0x0E])
def test_idx_other_dtypes(tmp_path, binary, code):
    check_result(ds.load_data(write(tmp_path / "x.idx", idx_bytes(binary, code))), binary)


def test_3d_npy_is_flattened(tmp_path):
    images = np.zeros((3, 2, 2), dtype=np.uint8)
    images[1, 1, 0] = 1
    path = tmp_path / "x.npy"
    np.save(path, images)
    X = ds.load_data(path)
    assert X.shape == (3, 4) and X[1, 2] == 1 and X.sum() == 1


# ----------------------------------------------------------------------------
# Binarization
# ----------------------------------------------------------------------------

def test_threshold_uint8_scales_by_255(tmp_path):
    grey = np.array([[0, 127, 128, 255], [200, 10, 255, 0]], dtype=np.uint8)
    path = write(tmp_path / "g-idx2-ubyte.gz", gzip.compress(idx_bytes(grey)))
    check_result(ds.load_data(path, binarize="threshold"), grey >= 127.5)
    check_result(ds.load_data(path, binarize="threshold", threshold=0.04), grey >= 10.2)


def test_threshold_other_data_scales_by_max(tmp_path):
    # Intensities 0..16 as in the optical digits: /16, then >= 0.5 means >= 8.
    grey = np.array([[0, 7, 8, 16], [16, 9, 3, 12]])
    text = "\n".join(",".join(str(v) for v in row) for row in grey)
    path = write(tmp_path / "g.csv", text)
    check_result(ds.load_data(path, binarize="threshold"), grey >= 8)


def test_threshold_explicit_scale(tmp_path):
    grey = np.array([[0.0, 5.0, 10.0], [2.0, 7.5, 1.0]])
    np.save(tmp_path / "g.npy", grey)
    check_result(ds.load_data(tmp_path / "g.npy", binarize="threshold", scale=20), grey >= 10)


def test_threshold_on_values_below_one_is_not_scaled(tmp_path):
    grey = np.array([[0.1, 0.5, 0.9], [0.49, 0.51, 1.0]])
    np.save(tmp_path / "g.npy", grey)
    check_result(ds.load_data(tmp_path / "g.npy", binarize="threshold"), grey >= 0.5)


def test_explicit_scale_without_binarize(tmp_path, binary):
    np.save(tmp_path / "x.npy", binary * 255)
    check_result(ds.load_data(tmp_path / "x.npy", scale=255), binary)


def test_stochastic_is_seeded(tmp_path):
    grey = np.random.default_rng(4).random((50, 40))
    np.save(tmp_path / "g.npy", grey)
    a = ds.load_data(tmp_path / "g.npy", binarize="stochastic", seed=11)
    b = ds.load_data(tmp_path / "g.npy", binarize="stochastic", seed=11)
    c = ds.load_data(tmp_path / "g.npy", binarize="stochastic", seed=12)
    assert a.dtype == np.uint8 and a.flags.c_contiguous and set(np.unique(a)) <= {0, 1}
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_stochastic_draws_come_from_the_one_seeding_path(tmp_path):
    """Stochastic binarization draws from (seed, "data", 0) of cyrbm._random.seed_sequence,
    like every random choice in cyrbm; derived here from numpy's SeedSequence directly
    (purpose "data" is 6).  A Generator is used as it is given."""
    grey = np.random.default_rng(4).random((50, 40))
    np.save(tmp_path / "g.npy", grey)
    for seed in (0, 11):
        data_stream = np.random.SeedSequence(seed, spawn_key=(6, 0))
        uniforms = np.random.default_rng(data_stream).random(grey.shape)
        check_result(ds.load_data(tmp_path / "g.npy", binarize="stochastic", seed=seed),
                     uniforms < grey)
    check_result(ds.load_data(tmp_path / "g.npy", binarize="stochastic",
                              seed=np.random.default_rng(3)),
                 np.random.default_rng(3).random(grey.shape) < grey)


def test_stochastic_mean_matches_probability(tmp_path):
    n = 1000 * 1000
    np.save(tmp_path / "g.npy", np.full((1000, 1000), 0.3))
    X = ds.load_data(tmp_path / "g.npy", binarize="stochastic", seed=5)
    standard_error = np.sqrt(0.3 * 0.7 / n)
    assert abs(X.mean() - 0.3) < 5 * standard_error


def test_stochastic_keeps_zeros_and_ones(tmp_path):
    values = np.array([[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    np.save(tmp_path / "g.npy", values)
    check_result(ds.load_data(tmp_path / "g.npy", binarize="stochastic", seed=0), values)


def test_stochastic_scales_uint8(tmp_path):
    grey = np.array([[0, 255, 0], [255, 0, 255]], dtype=np.uint8)
    np.save(tmp_path / "g.npy", grey)
    check_result(ds.load_data(tmp_path / "g.npy", binarize="stochastic", seed=0), grey // 255)


def test_stochastic_refuses_values_outside_unit_interval(tmp_path):
    np.save(tmp_path / "g.npy", np.array([[0.1, 0.2], [-0.5, 0.3]]))
    data_error(lambda: ds.load_data(tmp_path / "g.npy", binarize="stochastic"),
               "g.npy", "row 2, column 1", "-0.5")


@pytest.mark.parametrize("options, detail", [
    ({"binarize": "round"}, "binarize"),
    ({"binarize": "threshold", "threshold": float("nan")}, "threshold"),
    ({"scale": 0}, "scale"),
    ({"scale": -2.0}, "scale"),
])
def test_bad_options(tmp_path, binary, options, detail):
    np.save(tmp_path / "x.npy", binary)
    data_error(lambda: ds.load_data(tmp_path / "x.npy", **options), detail)


# ----------------------------------------------------------------------------
# Refused data and files
# ----------------------------------------------------------------------------

def test_missing_file(tmp_path):
    path = tmp_path / "nothere.csv"
    message = data_error(lambda: ds.load_data(path), "no such data file", "nothere.csv")
    assert "digits" not in message


def test_missing_name_lists_bundled():
    data_error(lambda: ds.load_data("digitz"), "no such data file 'digitz'",
               "digits", "digits:train", "digits:test")


def test_empty_file(tmp_path):
    for name in ("e.csv", "e.npy", "e.npz", "e-idx3-ubyte"):
        data_error(lambda: ds.load_data(write(tmp_path / name, b"")), name, "empty")


def test_zero_samples(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((0, 5), dtype=np.uint8))
    data_error(lambda: ds.load_data(tmp_path / "x.npy"), "x.npy", "no samples")
    write(tmp_path / "h.csv", "a,b,c\n\n")
    data_error(lambda: ds.load_data(tmp_path / "h.csv"), "h.csv", "no samples")
    write(tmp_path / "c.csv", "# only a comment\n\n")
    data_error(lambda: ds.load_data(tmp_path / "c.csv"), "c.csv", "no samples")


def test_zero_samples_3d(tmp_path):
    path = write(tmp_path / "e-idx3-ubyte", idx_bytes(np.zeros((0, 4, 4), np.uint8)))
    data_error(lambda: ds.load_data(path), "e-idx3-ubyte", "no samples")


def test_zero_features(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((5, 0), dtype=np.uint8))
    data_error(lambda: ds.load_data(tmp_path / "x.npy"), "x.npy", "no features")


def test_one_dimensional_array(tmp_path):
    np.save(tmp_path / "x.npy", np.array([0, 1, 1], dtype=np.uint8))
    data_error(lambda: ds.load_data(tmp_path / "x.npy"), "x.npy",
               "expected a 2-D array of samples × features")


def test_one_dimensional_idx_labels(tmp_path):
    path = write(tmp_path / "labels-idx1-ubyte", idx_bytes(np.array([1, 0, 1], np.uint8)))
    data_error(lambda: ds.load_data(path), "labels-idx1-ubyte", "expected a 2-D array")


@pytest.mark.parametrize("bad, shown", [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_non_finite_values(tmp_path, bad, shown):
    X = np.zeros((4, 6))
    X[2, 4] = bad
    X[3, 0] = 0.5  # a later non-binary value: the non-finite one is reported
    np.save(tmp_path / "x.npy", X)
    for binarize in (None, "threshold", "stochastic"):
        data_error(lambda: ds.load_data(tmp_path / "x.npy", binarize=binarize),
                   "x.npy", "row 3, column 5", shown)


def test_nan_in_csv_names_data_row(tmp_path):
    write(tmp_path / "x.csv", "a,b,c\n0,1,0\n1,nan,0\n")
    data_error(lambda: ds.load_data(tmp_path / "x.csv"), "x.csv", "row 2, column 2", "nan")


def test_not_binary_names_first_bad_element(tmp_path):
    X = np.zeros((5, 20))
    X[2, 16] = 0.4
    X[4, 1] = 3
    np.save(tmp_path / "x.npy", X)
    message = data_error(lambda: ds.load_data(tmp_path / "x.npy"),
                         "data file", "x.npy", "is not binary", "row 3, column 17", "0.4",
                         "binarize='threshold'")
    assert message.endswith(".")


def test_not_binary_integers(tmp_path):
    np.save(tmp_path / "x.npy", np.array([[0, 1], [1, 2]], dtype=np.uint8))
    data_error(lambda: ds.load_data(tmp_path / "x.npy"), "row 2, column 2", "holds 2")
    np.save(tmp_path / "y.npy", np.array([[0, -1], [1, 0]], dtype=np.int16))
    data_error(lambda: ds.load_data(tmp_path / "y.npy"), "row 1, column 2", "holds -1")


def test_not_binary_after_explicit_scale(tmp_path):
    np.save(tmp_path / "x.npy", np.array([[0, 255], [128, 0]], dtype=np.uint8))
    data_error(lambda: ds.load_data(tmp_path / "x.npy", scale=255),
               "x.npy", "not binary after dividing by 255", "row 2, column 1")


def test_grey_data_refused_without_binarize(tmp_path):
    grey = np.array([[0, 200], [255, 3]], dtype=np.uint8)
    path = write(tmp_path / "g-idx2-ubyte", idx_bytes(grey))
    data_error(lambda: ds.load_data(path), "g-idx2-ubyte", "row 1, column 2", "200")


def test_csv_partly_numeric_header(tmp_path):
    write(tmp_path / "x.csv", "id,1,0\n0,1,0\n")
    data_error(lambda: ds.load_data(tmp_path / "x.csv"), "x.csv", "'id'",
               "line 1, column 1")


def test_csv_non_number(tmp_path):
    write(tmp_path / "x.csv", "a,b,c\n0,1,0\n\n1,yes,0\n")
    data_error(lambda: ds.load_data(tmp_path / "x.csv"), "x.csv", "'yes'",
               "line 4, column 2")


def test_csv_ragged(tmp_path):
    write(tmp_path / "x.csv", "0,1,0\n1,0\n")
    data_error(lambda: ds.load_data(tmp_path / "x.csv"), "x.csv", "2 values on line 2",
               "3 on line 1")


def test_csv_empty_field(tmp_path):
    write(tmp_path / "x.csv", "0,1,0\n1,,0\n")
    data_error(lambda: ds.load_data(tmp_path / "x.csv"), "x.csv", "empty value",
               "line 2, column 2")


def test_csv_not_text(tmp_path):
    write(tmp_path / "x.csv", b"\xff\xfe\x00garbage\x80\x81")
    data_error(lambda: ds.load_data(tmp_path / "x.csv"), "x.csv", "UTF-8")


def test_unknown_extension(tmp_path):
    write(tmp_path / "x.json", "[[0, 1]]")
    data_error(lambda: ds.load_data(tmp_path / "x.json"), "x.json", "unknown format")


def test_directory(tmp_path):
    (tmp_path / "d.npy").mkdir()
    data_error(lambda: ds.load_data(tmp_path / "d.npy"), "d.npy", "directory")


def test_corrupt_npy(tmp_path):
    write(tmp_path / "x.npy", b"this is not numpy data at all")
    data_error(lambda: ds.load_data(tmp_path / "x.npy"), "x.npy")


def test_truncated_npy(tmp_path, binary):
    np.save(tmp_path / "full.npy", binary.astype(np.float64))
    raw = (tmp_path / "full.npy").read_bytes()
    write(tmp_path / "short.npy", raw[:-8])
    data_error(lambda: ds.load_data(tmp_path / "short.npy"), "short.npy", "not a valid .npy")
    write(tmp_path / "header.npy", raw[:40])
    data_error(lambda: ds.load_data(tmp_path / "header.npy"), "header.npy", "not a valid .npy")


def test_pickled_npy(tmp_path):
    np.save(tmp_path / "x.npy", np.array([[0, 1]], dtype=object), allow_pickle=True)
    data_error(lambda: ds.load_data(tmp_path / "x.npy"), "x.npy", "pickled")


def test_npz_named_npy(tmp_path, binary):
    np.savez(tmp_path / "x.npy", a=binary)  # numpy appends .npz: rename
    os.replace(tmp_path / "x.npy.npz", tmp_path / "x.npy")
    data_error(lambda: ds.load_data(tmp_path / "x.npy"), "x.npy", ".npz archive")


def test_string_array(tmp_path):
    np.save(tmp_path / "x.npy", np.array([["0", "1"]]))
    data_error(lambda: ds.load_data(tmp_path / "x.npy"), "x.npy", "dtype")


def test_corrupt_npz(tmp_path, binary):
    write(tmp_path / "x.npz", b"not a zip file")
    data_error(lambda: ds.load_data(tmp_path / "x.npz"), "x.npz", "not a valid .npz")
    np.savez(tmp_path / "full.npz", a=binary)
    raw = (tmp_path / "full.npz").read_bytes()
    write(tmp_path / "short.npz", raw[: len(raw) // 2])
    data_error(lambda: ds.load_data(tmp_path / "short.npz"), "short.npz", "not a valid .npz")


def test_npz_missing_key_lists_keys(tmp_path, binary):
    np.savez(tmp_path / "x.npz", alpha=binary, beta=binary)
    data_error(lambda: ds.load_data(tmp_path / "x.npz", key="gamma"),
               "x.npz", "'gamma'", "alpha, beta")
    data_error(lambda: ds.load_data(f"{tmp_path / 'x.npz'}:gamma"),
               "x.npz", "'gamma'", "alpha, beta")


def test_npz_without_arrays(tmp_path):
    np.savez(tmp_path / "x.npz")
    data_error(lambda: ds.load_data(tmp_path / "x.npz"), "x.npz", "no arrays")


def test_key_on_non_npz(tmp_path, binary):
    np.save(tmp_path / "x.npy", binary)
    data_error(lambda: ds.load_data(tmp_path / "x.npy", key="a"), "x.npy", "key=")


def test_truncated_idx(tmp_path, binary):
    raw = idx_bytes(binary)
    write(tmp_path / "a-idx2-ubyte", raw[:-3])
    data_error(lambda: ds.load_data(tmp_path / "a-idx2-ubyte"), "a-idx2-ubyte", "truncated")
    write(tmp_path / "b-idx2-ubyte", raw[:9])
    data_error(lambda: ds.load_data(tmp_path / "b-idx2-ubyte"), "b-idx2-ubyte", "truncated")
    write(tmp_path / "c-idx2-ubyte", raw + b"\x00\x00")
    data_error(lambda: ds.load_data(tmp_path / "c-idx2-ubyte"), "c-idx2-ubyte", "corrupt")


def test_idx_named_file_without_magic(tmp_path):
    write(tmp_path / "train-images-idx3-ubyte", b"\x01\x02\x03\x04\x05")
    data_error(lambda: ds.load_data(tmp_path / "train-images-idx3-ubyte"),
               "train-images-idx3-ubyte", "not an IDX file")


def test_truncated_and_corrupt_gzip(tmp_path, binary):
    raw = gzip.compress(idx_bytes(binary))
    write(tmp_path / "t-idx2-ubyte.gz", raw[: len(raw) // 2])
    data_error(lambda: ds.load_data(tmp_path / "t-idx2-ubyte.gz"), "t-idx2-ubyte.gz", "gzip")
    write(tmp_path / "c-idx2-ubyte.gz", raw[:10] + b"\xff" * 20 + raw[30:])
    data_error(lambda: ds.load_data(tmp_path / "c-idx2-ubyte.gz"), "c-idx2-ubyte.gz", "gzip")


def test_gzip_of_unknown_content(tmp_path):
    write(tmp_path / "x.gz", gzip.compress(b"hello"))
    data_error(lambda: ds.load_data(tmp_path / "x.gz"), "x.gz", "gzipped")


def test_source_of_wrong_type():
    data_error(lambda: ds.load_data(42), "file path", "int")


# ----------------------------------------------------------------------------
# check_binary
# ----------------------------------------------------------------------------

def test_check_binary_accepts_lists_and_dtypes(binary):
    check_result(ds.check_binary(binary.tolist()), binary)
    for dtype in (np.bool_, np.int8, np.uint16, np.int64, np.float16, np.float32, np.float64):
        check_result(ds.check_binary(binary.astype(dtype)), binary)


def test_check_binary_returns_uint8_input_itself(binary):
    assert ds.check_binary(binary) is binary


def test_check_binary_makes_c_contiguous(binary):
    fortran = np.asfortranarray(binary.astype(np.float64))
    check_result(ds.check_binary(fortran), binary)
    check_result(ds.check_binary(binary[:, ::2]), binary[:, ::2])


def test_check_binary_first_bad_element_is_row_major():
    X = np.asfortranarray(np.zeros((4, 4)))
    X[3, 0] = 2.0
    X[1, 2] = 0.5
    data_error(lambda: ds.check_binary(X, name="training data"),
               "training data is not binary", "row 2, column 3", "0.5")


def test_check_binary_nan():
    X = np.zeros((3, 3), dtype=np.float32)
    X[0, 2] = 7
    X[2, 1] = np.nan
    data_error(lambda: ds.check_binary(X), "data", "row 3, column 2", "nan")


def test_check_binary_shapes():
    data_error(lambda: ds.check_binary([0, 1, 1]), "expected a 2-D array of samples × features")
    data_error(lambda: ds.check_binary(np.zeros((2, 2, 2))), "(2, 2, 2)", "expected a 2-D")
    data_error(lambda: ds.check_binary(1), "scalar")
    data_error(lambda: ds.check_binary(np.zeros((0, 4))), "no samples")
    data_error(lambda: ds.check_binary(np.zeros((4, 0))), "no features")
    data_error(lambda: ds.check_binary([[0, 1], [1]]), "rectangular")
    data_error(lambda: ds.check_binary([["a", "b"]]), "dtype")
    data_error(lambda: ds.check_binary(np.ones((2, 2), dtype=complex)), "complex")


def test_check_binary_allow_1d():
    X = ds.check_binary([0, 1, 1], allow_1d=True)
    check_result(X, [[0, 1, 1]])
    data_error(lambda: ds.check_binary([0, 2], allow_1d=True), "row 1, column 2")
    data_error(lambda: ds.check_binary([], allow_1d=True), "no features")


# ----------------------------------------------------------------------------
# train_test_split
# ----------------------------------------------------------------------------

def test_split_sizes_and_disjointness():
    X = np.arange(100 * 3).reshape(100, 3)
    train, test = ds.train_test_split(X, 0.25, seed=3)
    assert train.shape == (75, 3) and test.shape == (25, 3)
    rows = np.sort(np.concatenate([train[:, 0], test[:, 0]]))
    np.testing.assert_array_equal(rows, X[:, 0])


def test_split_is_seeded():
    X = np.arange(50).reshape(50, 1)
    a = ds.train_test_split(X, seed=7)
    b = ds.train_test_split(X, seed=7)
    c = ds.train_test_split(X, seed=8)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[1], c[1])


def test_split_comes_from_the_one_seeding_path():
    """The permutation comes from (seed, "data", 1) of cyrbm._random.seed_sequence; derived
    here from numpy's SeedSequence directly.  A Generator is used as it is given."""
    X = np.arange(50).reshape(50, 1)
    for seed in (0, 7):
        data_stream = np.random.SeedSequence(seed, spawn_key=(6, 1))
        order = np.random.default_rng(data_stream).permutation(50)
        train, test = ds.train_test_split(X, 0.2, seed=seed)
        np.testing.assert_array_equal(test[:, 0], order[:10])
        np.testing.assert_array_equal(train[:, 0], order[10:])
    train, test = ds.train_test_split(X, 0.2, seed=np.random.default_rng(5))
    np.testing.assert_array_equal(test[:, 0], np.random.default_rng(5).permutation(50)[:10])


@pytest.mark.parametrize("fraction", [0, 1, -0.1, 1.5, float("nan"), "0.2", True])
def test_split_bad_fraction(fraction):
    data_error(lambda: ds.train_test_split(np.zeros((10, 2)), fraction), "test_fraction")


def test_split_leaving_a_side_empty():
    data_error(lambda: ds.train_test_split(np.zeros((5, 2)), 0.05), "test set empty")
    data_error(lambda: ds.train_test_split(np.zeros((5, 2)), 0.95), "training set empty")


# ----------------------------------------------------------------------------
# Bundled digits
# ----------------------------------------------------------------------------

def test_bundled_names():
    names = ds.bundled_datasets()
    assert set(names) == {"digits", "digits:train", "digits:test", "patches", "patches:train",
                          "patches:test"}
    assert all(isinstance(text, str) and "\n" not in text for text in names.values())


def test_digits():
    X = ds.load_digits()
    assert X.shape == (1797, 64) and X.dtype == np.uint8 and X.flags.c_contiguous
    assert set(np.unique(X)) == {0, 1}
    # 37151 of the 115008 pixels are >= 8: density 0.3230.
    assert X.sum() == 37151
    assert 0.32 < X.mean() < 0.326


def test_digits_splits():
    train, test = ds.load_digits("train"), ds.load_digits("test")
    assert train.shape == (1397, 64) and test.shape == (400, 64)
    np.testing.assert_array_equal(np.vstack([train, test]), ds.load_digits())
    np.testing.assert_array_equal(ds.load_data("digits:train"), train)
    np.testing.assert_array_equal(ds.load_data("digits:test"), test)
    np.testing.assert_array_equal(ds.load_data("digits"), ds.load_digits("all"))


def test_digits_labels():
    X, labels = ds.load_digits("test", return_labels=True)
    assert labels.shape == (400,) and labels.dtype == np.uint8
    assert set(np.unique(ds.load_digits(return_labels=True)[1])) == set(range(10))


def test_digits_bad_split():
    data_error(lambda: ds.load_digits("valid"), "'valid'")


def test_digits_with_binarize_options_unchanged():
    X = ds.load_digits()
    np.testing.assert_array_equal(ds.load_data("digits", binarize="threshold"), X)
    np.testing.assert_array_equal(ds.load_data("digits", binarize="stochastic", seed=1), X)


def test_digits_match_scikit_learn_source():
    """If scikit-learn is installed, the bundled file equals its csv binarized at >= 8."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or spec.origin is None:
        pytest.skip("scikit-learn is not installed")
    source = os.path.join(os.path.dirname(spec.origin), "datasets", "data", "digits.csv.gz")
    if not os.path.exists(source):
        pytest.skip("scikit-learn has no digits.csv.gz")
    # The last column is the label; with binarize='threshold' the 0..16 pixels are
    # divided by the data maximum (16) and compared with 0.5, i.e. intensity >= 8.
    table = ds.load_data(source, binarize="threshold")
    X, labels = ds.load_digits(return_labels=True)
    np.testing.assert_array_equal(table[:, :64], X)
