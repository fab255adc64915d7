"""Loading and checking binary data for cyrbm.

Every model in cyrbm works on binary data: a 2-D array of ``uint8`` zeros and ones,
one sample per row and one feature (visible unit) per column.  This module turns files
and in-memory arrays into that form, or refuses them with a :class:`~cyrbm.errors.DataError`
whose message is one sentence naming the problem.

Public functions
----------------
load_data
    Read a file (``.npy``, ``.npz``, ``.csv``/``.txt``, IDX, gzipped IDX) or a bundled
    data set, optionally binarize grey values, and return validated binary data.
check_binary
    Validate an in-memory array and return it as C-contiguous ``uint8``.
train_test_split
    A seeded random split of the rows of an array.
bundled_datasets
    The names of the data sets shipped with cyrbm.
load_digits
    The bundled binarized 8x8 UCI optical digits.

Conventions
-----------
Row and column numbers in error messages are **1-based**: "row 3, column 17" is
``X[2, 16]``.  Rows count samples, not lines of a text file (a skipped header or
comment line is not a row); parse errors in text files name the *line* of the file
instead.  For arrays of three or more dimensions (such as MNIST images of shape
``(n, 28, 28)``), which are flattened to ``(n, 784)``, the column is the position in
the flattened row.
"""

import gzip
import io
import math
import numbers
import os
import tokenize
import zipfile
import zlib
from importlib.resources import files

import numpy as np

from cyrbm import _io
from cyrbm.errors import DataError
from cyrbm._validation import check_binary, check_real  # noqa: F401  (re-exported)
from cyrbm._validation import as_matrix as _as_matrix, binarize as _binarize
from cyrbm._validation import check_options as _check_options
from cyrbm._validation import data_generator

__all__ = [
    "load_data",
    "check_binary",
    "train_test_split",
    "bundled_datasets",
    "load_digits",
]

# ----------------------------------------------------------------------------
# Bundled data
# ----------------------------------------------------------------------------

_DIGITS_FILE = "optdigits.npz"
_DIGITS_TOTAL = 1797
_DIGITS_TRAIN = 1397  # digits:train is rows [0, 1397), digits:test is rows [1397, 1797)

_BUNDLED = {
    "digits": "UCI optical digits, 8x8 pixels binarized at intensity >= 8 "
              "(1797 samples x 64 features)",
    "digits:train": "the first 1397 samples of 'digits'",
    "digits:test": "the last 400 samples of 'digits'",
}
_BUNDLED_SPLITS = {"digits": "all", "digits:train": "train", "digits:test": "test"}

# image patches (cyrbm.data.patches): "patches[:train|:test][:IMAGES]", real-valued
PATCHES_TRAIN, PATCHES_TEST = 10000, 2000
_BUNDLED.update({
    "patches": f"{PATCHES_TRAIN} random 20x20 grey patches of scikit-learn's sample images "
               f"(china.jpg, flower.jpg), pixels in [0, 1); patches:train:IMAGES for your "
               f"own image files or folder",
    "patches:train": "the same as 'patches' (from the left 4/5 of each image)",
    "patches:test": f"{PATCHES_TEST} test patches from the held-out right 1/5 of each image",
})

# ----------------------------------------------------------------------------
# File formats
# ----------------------------------------------------------------------------

_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = b"PK"
_TEXT_EXTENSIONS = (".csv", ".txt")

# IDX type codes (byte 3 of the magic number) and their big-endian NumPy dtypes.
_IDX_DTYPES = {
    0x08: ">u1",
    0x09: ">i1",
    0x0B: ">i2",
    0x0C: ">i4",
    0x0D: ">f4",
    0x0E: ">f8",
}

# Exceptions that a reader of a bad file may raise; they are turned into DataError.
# NumPy parses an .npy header with Python's own parser, so a damaged header can raise
# SyntaxError or tokenize.TokenError too, and a header promising a huge shape MemoryError.
_READ_ERRORS = (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error, SyntaxError,
                tokenize.TokenError, MemoryError, OverflowError, TypeError, KeyError,
                NotImplementedError, RuntimeError)



# ============================================================================
# Public API
# ============================================================================

def bundled_datasets():
    """Return the data sets shipped with cyrbm.

    Returns
    -------
    dict of str to str
        Maps each name accepted by :func:`load_data` to a one-line description.
    """
    return dict(_BUNDLED)


def load_digits(split="all", *, return_labels=False):
    """Load the bundled binarized UCI optical digits.

    The images are the 1797 8x8 digits of the UCI "Optical Recognition of
    Handwritten Digits" test set (E. Alpaydin and C. Kaynak, 1998; CC BY 4.0),
    each pixel intensity (0..16) binarized as ``intensity >= 8`` as in Cho, Raiko
    and Ilin (2010).  About 32% of the pixels are on.

    Parameters
    ----------
    split : {"all", "train", "test"}
        ``"all"`` gives all 1797 samples; ``"train"`` the first 1397 and ``"test"``
        the last 400, in the original order.  The split is fixed so that results
        are comparable between runs and machines.
    return_labels : bool
        Also return the digit classes (0..9).

    Returns
    -------
    X : numpy.ndarray of uint8, shape (n_samples, 64)
        Binary pixels, row-major within each 8x8 image.
    labels : numpy.ndarray of uint8, shape (n_samples,)
        Only if ``return_labels`` is true.

    Raises
    ------
    DataError
        If ``split`` is unknown or the bundled file is missing or damaged.
    """
    rows = {
        "all": slice(0, _DIGITS_TOTAL),
        "train": slice(0, _DIGITS_TRAIN),
        "test": slice(_DIGITS_TRAIN, _DIGITS_TOTAL),
    }
    if split not in rows:
        raise DataError(f"unknown digits split {split!r}: expected 'all', 'train' or 'test'.")
    images, labels = _read_digits()
    X = np.ascontiguousarray(images[rows[split]])
    if return_labels:
        return X, np.ascontiguousarray(labels[rows[split]])
    return X


def load_data(source, *, key=None, binarize=None, threshold=None, seed=None, scale=None,
              real=False):
    """Load binary training or test data from a file or a bundled data set.

    Parameters
    ----------
    source : str or os.PathLike
        A bundled data set name (see :func:`bundled_datasets`: ``"digits"``,
        ``"digits:train"``, ``"digits:test"``; a name takes precedence over a
        file of the same name, so write ``./digits`` for such a file) or a path.
        The format of a file is chosen as follows:

        * IDX (the MNIST format) is recognised by its magic number whatever the
          file is called; the file may be gzipped (recognised by the gzip magic).
        * ``.npy``: the array in the file.
        * ``.npz``: the first array in file order, or the array named ``key``.
          ``"file.npz:name"`` also selects array ``name`` when no file of that
          full name exists.
        * ``.csv`` / ``.txt``: numbers separated by commas (when the first line
          holds a comma) or by whitespace; blank lines and ``#`` comments are
          ignored.  The first line is skipped as a header if *none* of its fields
          is a number; a partly numeric first line is treated as data (and is
          then an error).
        * ``.csv.gz``, ``.txt.gz``, ``.npy.gz``: the same, gzipped.

        Arrays of three or more dimensions, such as MNIST images
        ``(n, rows, cols)``, are flattened to ``(n, rows * cols)``.
    key : str, optional
        The array to read from an ``.npz`` file.
    binarize : {None, "threshold", "stochastic"}
        ``None``: the data must already be 0/1 and are refused otherwise.
        ``"threshold"``: ``x >= threshold`` after scaling.
        ``"stochastic"``: each value, after scaling, is replaced by a sample of
        Bernoulli(x), as in Salakhutdinov & Murray (2008); values must lie in
        [0, 1] after scaling.
    threshold : float, optional
        The threshold for ``binarize="threshold"``, applied to scaled values: strictly
        between 0 and 1 (default 0.5).  Refused with any other ``binarize``.
    seed : None, int or numpy.random.Generator
        For ``binarize="stochastic"``: the draws come from
        ``cyrbm._random.seed_sequence(seed, "data", 0)``, like every random choice in
        cyrbm (a Generator is used as it is); the same seed gives the same data.
        Ignored otherwise.
    scale : float, optional
        Divide the data by this positive number before binarizing or checking.
        ``None`` means: with ``binarize=None`` do not scale; otherwise, if the
        largest value exceeds 1, divide ``uint8`` data (such as MNIST IDX files)
        by 255 and any other data by its largest value.  So the 0..16 optical
        digits are divided by 16 and MNIST by 255.
    real : bool
        Real-valued data (for a :class:`cyrbm.models.gaussian.GaussianRBM`): returned as float64,
        divided by ``scale`` when given, only NaN and infinities refused; ``binarize``
        must then be None.

    Image patches: ``"patches"`` (or ``"patches:train"``) is 10,000 random 20 x 20 grey
    patches of scikit-learn's sample images, ``"patches:test"`` 2,000 from their
    held-out regions, and ``"patches:train:IMAGES"`` / ``"patches:test:IMAGES"`` the same
    from an image file or a folder of them (:func:`cyrbm.data.patches.load_patches`, which
    also takes other sizes and counts).  Their pixels lie in [0, 1) (real-valued: give
    ``real=True``, or binarize them); ``seed`` picks the positions (None: 0, so each
    name is one fixed set).

    Returns
    -------
    numpy.ndarray of uint8, shape (n_samples, n_features)
        C-contiguous, holding only 0 and 1.

    Raises
    ------
    DataError
        For a missing, empty, unreadable, truncated or corrupt file, an unknown
        format, a missing ``.npz`` key, an array that is not 2-D (or 3-D and
        over), zero samples or features, NaN or infinite values, values that are
        not 0/1 (with ``binarize=None``) or outside [0, 1] (stochastic), and bad
        options.  Messages name the file and, for bad values, the first bad row
        and column, numbered from 1.
    """
    threshold = _check_options(binarize, threshold, scale)
    if real and binarize is not None:
        raise DataError("real-valued data are not binarized: give binarize=None with real=True.")
    array, what = _read_source(source, key, seed)
    X = _as_matrix(array, what, allow_1d=False, flatten=True)
    if real:
        return check_real(X if scale is None else np.asarray(X, np.float64) / scale, name=what)
    return _binarize(X, what, binarize, threshold, seed, scale)


def train_test_split(X, test_fraction=0.2, *, seed=0):
    """Split the rows of ``X`` at random into a training and a test part.

    Parameters
    ----------
    X : array_like, shape (n_samples, ...)
        The data; rows are samples.
    test_fraction : float
        The share of rows that go to the test part, strictly between 0 and 1;
        the test part has ``round(n_samples * test_fraction)`` rows.
    seed : None, int or numpy.random.Generator
        The permutation comes from ``cyrbm._random.seed_sequence(seed, "data", 1)``, like
        every random choice in cyrbm (a Generator is used as it is).

    Returns
    -------
    train, test : numpy.ndarray
        New arrays holding the rows of ``X`` in permuted order.

    Raises
    ------
    DataError
        If ``test_fraction`` is not in (0, 1) or either part would be empty.
    """
    if (isinstance(test_fraction, bool) or not isinstance(test_fraction, numbers.Real)
            or not 0 < test_fraction < 1):
        raise DataError(f"test_fraction must be a number between 0 and 1 (exclusive), "
                        f"not {test_fraction!r}.")
    X = np.asarray(X)
    if X.ndim == 0:
        raise DataError("cannot split a 0-D array: expected an array of samples.")
    n = X.shape[0]
    n_test = int(round(n * float(test_fraction)))
    if n_test == 0 or n_test == n:
        side = "test" if n_test == 0 else "training"
        raise DataError(f"a test fraction of {test_fraction} of {n} samples "
                        f"leaves the {side} set empty.")
    order = data_generator(seed, 1).permutation(n)
    return X[order[n_test:]], X[order[:n_test]]


# ============================================================================
# Reading sources
# ============================================================================

def _read_source(source, key, seed=None):
    """Return (array, description for messages) for a bundled name or a path."""
    if not isinstance(source, (str, os.PathLike)):
        raise DataError(f"a data source must be a file path or a bundled data set name, "
                        f"not {type(source).__name__}.")
    if isinstance(source, str) and (source == "patches" or source.startswith("patches:")):
        return _read_patches(source, key, seed)
    if isinstance(source, str) and source in _BUNDLED:
        what = f"bundled data set '{source}'"
        if key is not None:
            raise DataError(f"key= applies to .npz files only, not to the {what}.")
        return load_digits(_BUNDLED_SPLITS[source]), what

    path = os.fspath(source)
    if not isinstance(path, str):
        raise DataError("a data file path must be text, not bytes.")
    if not os.path.exists(path):
        path, key = _split_npz_key(path, key)
    what = f"data file '{path}'"
    if os.path.isdir(path):
        raise DataError(f"{what} is a directory, not a file.")
    return _read_file(path, what, key), what


def _read_patches(source, key, seed):
    """The patches named by ``patches[:train|:test][:IMAGES]`` (cyrbm.data.patches)."""
    from cyrbm.data.patches import load_patches
    _, _, rest = source.partition(":")
    split, _, images = rest.partition(":")
    if split not in ("", "train", "test"):
        raise DataError(f"data source '{source}': patches are 'patches:train' or "
                        f"'patches:test', optionally followed by ':' and image files.")
    if key is not None:
        raise DataError(f"key= applies to .npz files only, not to the patches '{source}'.")
    split = split or "train"
    n = PATCHES_TRAIN if split == "train" else PATCHES_TEST
    X = load_patches(images or None, n=n, split=split, seed=0 if seed is None else seed)
    return X, f"the patches '{source}'"


def _split_npz_key(path, key):
    """Handle a missing ``path``: either ``file.npz:name`` or a missing file."""
    prefix, colon, name = path.rpartition(":")
    if colon and prefix.lower().endswith(".npz") and os.path.isfile(prefix):
        if not name:
            raise DataError(f"data source '{path}' names no array after the ':'.")
        if key is not None and key != name:
            raise DataError(f"data source '{path}' names array '{name}' "
                            f"but key='{key}' was also given.")
        return prefix, name
    message = f"no such data file '{path}'"
    looks_like_name = "/" not in path and os.sep not in path and "." not in path
    if looks_like_name:
        message += f" (bundled data sets: {', '.join(_BUNDLED)})"
    raise DataError(message + ".")


def _read_file(path, what, key):
    """Read an existing file into an ndarray, choosing the format as documented."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        raise DataError(f"cannot read {what}: {_reason(exc)}.") from None
    if not head:
        raise DataError(f"{what} is empty.")

    lower = path.lower()
    if key is not None and not lower.endswith(".npz"):
        raise DataError(f"key= applies to .npz files only, not to {what}.")

    if head.startswith(_GZIP_MAGIC):
        data = _gunzip(_read_bytes(path, what), what)
        if _is_idx(data):
            return _parse_idx(data, what)
        inner = lower[:-3] if lower.endswith(".gz") else lower
        if inner.endswith(_TEXT_EXTENSIONS):
            return _parse_text(data, what)
        if inner.endswith(".npy"):
            return _load_npy(io.BytesIO(data), what)
        raise DataError(f"{what} is gzipped but holds neither an IDX file nor "
                        f"a .csv, .txt or .npy file.")
    if _is_idx(head):
        return _parse_idx(_read_bytes(path, what), what)
    if lower.endswith(".npy"):
        return _load_npy(path, what)
    if lower.endswith(".npz"):
        if not head.startswith(_ZIP_MAGIC):
            kind = _io.looks_like(_io.read_head(path))
            raise DataError(f"{what} is not a valid .npz file (it is not a zip archive"
                            + (f"; it looks like {kind})." if kind else ")."))
        return _load_npz(path, what, key)
    if lower.endswith(_TEXT_EXTENSIONS):
        return _parse_text(_read_bytes(path, what), what)
    if "idx" in os.path.basename(lower) or lower.endswith("ubyte"):
        raise DataError(f"{what} is not an IDX file (it does not start with an "
                        f"IDX magic number).")
    raise DataError(f"{what} has an unknown format: expected .npy, .npz, .csv, .txt "
                    f"or an IDX file (gzipped or not).")


def _read_bytes(path, what):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise DataError(f"cannot read {what}: {_reason(exc)}.") from None


def _gunzip(raw, what):
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"{what} is a truncated or corrupt gzip file ({_reason(exc)}).") from None


def _is_idx(head):
    """True if ``head`` starts with an IDX magic number: 0, 0, type code, ndim >= 1."""
    return (len(head) >= 4 and head[0] == 0 and head[1] == 0
            and head[2] in _IDX_DTYPES and head[3] >= 1)


def _parse_idx(data, what):
    """Parse the bytes of an (uncompressed) IDX file."""
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DataError(f"{what} is a truncated IDX file: its header is incomplete.")
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    dtype = np.dtype(_IDX_DTYPES[data[2]])
    expected = header + math.prod(dims) * dtype.itemsize
    if len(data) < expected:
        raise DataError(f"{what} is a truncated IDX file: its header promises "
                        f"{expected} bytes but the file holds {len(data)}.")
    if len(data) > expected:
        raise DataError(f"{what} is a corrupt IDX file: it holds {len(data) - expected} "
                        f"bytes after the end of its data.")
    array = np.frombuffer(data, dtype=dtype, count=math.prod(dims), offset=header)
    return array.reshape(dims).astype(dtype.newbyteorder("="))


def _load_npy(source, what):
    """``source``: a path or a BytesIO (a gunzipped file)."""
    head = source.getvalue()[:512] if isinstance(source, io.BytesIO) else _io.read_head(source)
    if not head.startswith((_io.NPY_MAGIC, *_io.ZIP_MAGICS)):   # an .npz: said below
        kind = _io.looks_like(head)
        raise DataError(f"{what} is not a NumPy .npy file (it looks like {kind})." if kind
                        else f"{what} is not a NumPy .npy file (it does not start as one).")
    try:
        array = np.load(source, allow_pickle=False)
    except _READ_ERRORS as exc:
        if "pickle" in str(exc):
            raise DataError(f"{what} {_io.PICKLED}.") from None
        raise DataError(f"{what} is not a valid .npy file ({_reason(exc)}).") from None
    if not isinstance(array, np.ndarray):
        array.close()
        raise DataError(f"{what} is an .npz archive, not an .npy file.")
    return array


def _load_npz(path, what, key):
    try:
        with np.load(path, allow_pickle=False) as archive:
            names = list(archive.files)
            if names and key is None:
                key = names[0]
            array = archive[key] if key in names else None
    except _READ_ERRORS as exc:
        if "pickle" in str(exc):
            raise DataError(f"{what} {_io.PICKLED}.") from None
        raise DataError(f"{what} is not a valid .npz file ({_reason(exc)}).") from None
    if not names:
        raise DataError(f"{what} holds no arrays.")
    if array is None:
        raise DataError(f"{what} has no array named '{key}' (it holds: {', '.join(names)}).")
    if not isinstance(array, np.ndarray):
        raise DataError(f"{what} member '{key}' is not a NumPy array.")
    return array


def _parse_text(data, what):
    """Parse comma- or whitespace-separated numbers, skipping a non-numeric header."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError(f"{what} is not a text file of numbers (it is not valid UTF-8).") from None
    lines = text.splitlines()
    content = [(i, _strip_comment(line)) for i, line in enumerate(lines)]
    content = [(i, line) for i, line in content if line.strip()]
    if not content:
        raise DataError(f"{what} holds no samples.")

    first_index, first_line = content[0]
    delimiter = "," if "," in first_line else None
    start = first_index
    if not any(_is_number(field) for field in _split_fields(first_line, delimiter)):
        start = first_index + 1  # a header line: skip it
        if len(content) == 1:
            raise DataError(f"{what} holds a header line but no samples.")
    body = lines[start:]
    try:
        return np.loadtxt(body, delimiter=delimiter, comments="#", dtype=np.float64, ndmin=2)
    except ValueError as exc:
        message = _locate_text_error(body, start, delimiter, what)
        raise DataError(message or f"{what} cannot be read as numbers ({_reason(exc)}).") from None


def _strip_comment(line):
    return line.split("#", 1)[0]


def _split_fields(line, delimiter):
    return line.split(delimiter) if delimiter else line.split()


def _is_number(field):
    try:
        float(field)
    except ValueError:
        return False
    return True


def _locate_text_error(body, start, delimiter, what):
    """Find the first malformed line of a text file; return a message or None."""
    width = width_line = None
    for offset, line in enumerate(body):
        stripped = _strip_comment(line)
        if not stripped.strip():
            continue
        line_number = start + offset + 1
        fields = _split_fields(stripped, delimiter)
        for column, field in enumerate(fields, start=1):
            if not field.strip():
                return f"{what} has an empty value on line {line_number}, column {column}."
            if not _is_number(field):
                return (f"{what} holds {field.strip()!r}, which is not a number, "
                        f"on line {line_number}, column {column}.")
        if width is None:
            width, width_line = len(fields), line_number
        elif len(fields) != width:
            return (f"{what} has {len(fields)} values on line {line_number} "
                    f"but {width} on line {width_line}.")
    return None


def _read_digits():
    """Return (images uint8 (1797, 64), labels uint8 (1797,)) from the bundled file."""
    resource = files("cyrbm") / "data" / _DIGITS_FILE
    try:
        raw = resource.read_bytes()
        with np.load(io.BytesIO(raw), allow_pickle=False) as archive:
            packed = archive["images"]
            n_features = int(archive["n_features"])
            labels = archive["labels"]
        images = np.unpackbits(packed, axis=1, count=n_features)
    except (*_READ_ERRORS, KeyError, TypeError) as exc:
        raise DataError(f"the bundled digits file {_DIGITS_FILE} is missing or damaged "
                        f"({_reason(exc)}); reinstall cyrbm.") from None
    if images.shape != (_DIGITS_TOTAL, 64) or labels.shape != (_DIGITS_TOTAL,):
        raise DataError(f"the bundled digits file {_DIGITS_FILE} is damaged "
                        f"(unexpected shape {images.shape}); reinstall cyrbm.")
    return images, labels


def _reason(exc):
    """A short one-line reason (the first sentence) taken from a low-level exception."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    text = " ".join(str(exc).split()).split(". ")[0].rstrip(".")
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        text = text[0].lower() + text[1:]
    return text or type(exc).__name__
