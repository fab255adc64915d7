"""Checking user data: shapes, NaN, binary values, binarizing grey data.

The one place where cyrbm validates arrays, shared by every entry point: the file
loaders (:func:`cyrbm.data.datasets.load_data`), the model methods, the trainer, the annealer
and the command line.  Errors are :class:`~cyrbm.errors.DataError` with one sentence
naming the first bad row and column (numbered from 1).

Messages are in the Python API's words; an error whose message names a parameter or
gives a hint (:data:`HINTS`) lists them (:func:`worded`), and the command line, where it
prints the message, says them as its options.
"""
import math
import numbers

import numpy as np

from cyrbm.errors import DataError, ModelMismatchError

__all__ = ["check_binary", "check_options", "check_whole", "as_matrix", "binarize", "hint", "worded"]

#: The hints in error messages (the way to fix the problem), in the Python API's words.
#: An error that gives one names its key in ``exc.hints`` (:func:`worded`), so that another
#: interface says it in its own words (the command line: cyrbm.cli.options.CLI_HINTS).
HINTS = {
    "binarize_file": "use binarize='threshold' or 'stochastic'",
    "binarize_array": "binarize it first, e.g. with load_data(..., binarize='threshold')",
    "exact_too_big": "use Annealer().log_partition (AIS) instead",
    "start_gibbs": "use start='gibbs'",
    "dbn_finished": "give more layers to add one on top, or train afresh with resume=False",
    "dbn_no_checkpoint": "train without resume first",
    "threshold_alone": "a threshold applies to binarize='threshold' only",
}


def hint(key):
    """The hint ``key`` (:data:`HINTS`); the error that gives it is :func:`worded` with it."""
    return HINTS[key]


def worded(exc, *, parameters=(), hints=()):
    """``exc`` with the Python parameter names (``burn_in``) and the hint keys its message
    uses added to ``exc.parameters`` and ``exc.hints`` (see cyrbm.errors.CyrbmError), so
    that another interface can name its own options and hints instead; returns ``exc``."""
    exc.parameters = tuple(getattr(exc, "parameters", ())) + tuple(parameters)
    exc.hints = tuple(getattr(exc, "hints", ())) + tuple(hints)
    return exc


def check_visible_rows(v, n_visible, name="data", owner="the model"):
    """Rows of 0/1 visible vectors for a model of ``n_visible`` visible units: the array
    from :func:`check_binary` (a 1-D array is one row), or a ModelMismatchError naming
    ``owner`` when the widths differ."""
    v = check_binary(v, name=name, allow_1d=True)
    if v.shape[1] != n_visible:
        raise ModelMismatchError(
            f"{name} has {v.shape[1]} columns but {owner} has {n_visible} visible units.")
    return v


def check_binary(X, *, name="data", allow_1d=False):
    """Check that an in-memory array is binary and return it as ``uint8``.

    This is the one check used across cyrbm to validate user arrays.  It is
    vectorised; the first bad element is only searched for when the check fails.

    Parameters
    ----------
    X : array_like
        Numbers or booleans: a nested list or an ndarray of any integer, float or
        bool dtype.
    name : str
        What the array is, used as the subject of error messages
        (e.g. ``"training data"``).
    allow_1d : bool
        Accept a 1-D array as a single sample and return shape ``(1, d)``.

    Returns
    -------
    numpy.ndarray of uint8, shape (n_samples, n_features)
        C-contiguous.  ``X`` itself is returned when it already is a
        C-contiguous ``uint8`` array; otherwise a copy (a view for ``bool``).

    Raises
    ------
    DataError
        If ``X`` is not numeric, not 2-D (or 1-D with ``allow_1d``), has no
        samples or features, or holds NaN, infinity or any value other than 0
        and 1.  The message names the first bad row and column, numbered from 1.
    """
    X = _as_numeric_array(X, name)
    X = as_matrix(X, name, allow_1d=allow_1d, flatten=False)
    return _require_binary(X, name, "binarize_array")


def check_probabilities(X, *, name="data"):
    """Check that an in-memory array holds probabilities (finite reals in [0, 1], 0/1
    states included) and return it as C-contiguous float64; the message names the first
    bad row and column (from 1).  Only where probabilities are asked for explicitly
    (``Trainer.fit(..., probabilities=True)``); everything else takes 0/1 data."""
    X = as_matrix(_as_numeric_array(X, name), name, allow_1d=False, flatten=False)
    X = np.ascontiguousarray(X, dtype=np.float64)
    _require_finite(X, name)
    bad = (X < 0) | (X > 1)
    if bad.any():
        row, column = _first(bad)
        raise DataError(f"{name} holds {_value(X, row, column)} at row {row}, column "
                        f"{column}; probabilities must lie in [0, 1].")
    return X


def check_real(X, *, name="data", allow_1d=False, dtype=np.float64):
    """Check that an in-memory array holds finite real numbers (the data of Gaussian
    visible units) and return it as C-contiguous ``dtype`` (float64, or a model's
    float32: no copy when it is so already); NaN or an infinity is refused with a message
    naming the first bad row and column (from 1), and so is a value too large for
    ``dtype``."""
    X = as_matrix(_as_numeric_array(X, name), name, allow_1d=allow_1d, flatten=False)
    _require_finite(X, name)
    wide = X.dtype.kind == "f" and X.dtype.itemsize > np.dtype(dtype).itemsize
    with np.errstate(over="ignore"):            # the overflow is reported below
        X = np.ascontiguousarray(X, dtype=dtype)
    if wide and not np.isfinite(X).all():
        row, column = _first(~np.isfinite(X))
        raise DataError(f"{name} holds a value at row {row}, column {column} too large for "
                        f"{np.dtype(dtype).name}.")
    return X


def check_options(binarize, threshold, scale):
    """Check load_data's options; return the threshold (0.5 when None)."""
    if binarize not in (None, "threshold", "stochastic"):
        raise DataError(f"binarize must be None, 'threshold' or 'stochastic', not {binarize!r}.")
    if threshold is not None and binarize != "threshold":
        raise worded(DataError(f"{hint('threshold_alone')}, so {threshold!r} would be "
                               f"ignored."), hints=("threshold_alone",))
    if threshold is None:
        threshold = 0.5
    if not _is_finite_real(threshold):
        raise DataError(f"threshold must be a finite number, not {threshold!r}.")
    if binarize == "threshold" and not 0 < threshold < 1:
        effect = ("every value 1" if threshold <= 0 else "every value 0" if threshold > 1
                  else "only the largest values 1")
        raise DataError(f"the threshold must lie strictly between 0 and 1, the range the "
                        f"data are scaled to, not {threshold!r} (it would make {effect}).")
    if scale is not None and not (_is_finite_real(scale) and scale > 0):
        raise DataError(f"scale must be a positive finite number, not {scale!r}.")
    return threshold


def check_whole(value, name, least=0):
    """``value`` as an int if it is a whole number (an int, or a float such as 1e6 that is
    one; not a bool) of at least ``least``, else a ValueError of one sentence naming
    ``name``.  The one rule for whole-number settings of the Python API, as the command
    line's options have it."""
    whole = (isinstance(value, numbers.Integral) or
             (isinstance(value, numbers.Real) and math.isfinite(value)
              and float(value).is_integer()))
    if isinstance(value, bool) or not whole:
        raise ValueError(f"{name} must be a whole number, not {value!r}.")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, not {value!r}.")
    return int(value)


def _is_finite_real(value):
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and math.isfinite(value))


def _as_numeric_array(X, what):
    """``np.asarray`` with a DataError for ragged nested lists."""
    try:
        return np.asarray(X)
    except (ValueError, TypeError):
        raise DataError(f"{what} is not a rectangular array of numbers "
                        f"(its rows differ in length or hold something else).") from None


def as_matrix(X, what, *, allow_1d, flatten):
    """Check the shape of ``X`` and return it as (n_samples, n_features)."""
    if X.dtype.kind not in "biuf":
        raise DataError(f"{what} must hold real numbers or booleans, "
                        f"not values of dtype {X.dtype}.")
    if X.ndim == 1 and allow_1d:
        X = X.reshape(1, -1)
    elif X.ndim >= 3 and flatten:
        X = X.reshape(X.shape[0], math.prod(X.shape[1:]))
    if X.ndim != 2:
        shape = "a scalar" if X.ndim == 0 else f"an array of shape {X.shape}"
        raise DataError(f"{what} holds {shape}; expected a 2-D array of samples × features.")
    if X.shape[0] == 0:
        raise DataError(f"{what} holds no samples.")
    if X.shape[1] == 0:
        raise DataError(f"{what} holds no features.")
    return X


def _first(mask):
    """1-based (row, column) of the first true element of a 2-D mask, row-major."""
    flat = int(np.argmax(mask.reshape(-1)))
    row, column = np.unravel_index(flat, mask.shape)
    return int(row) + 1, int(column) + 1


def _value(X, row, column):
    return str(X[row - 1, column - 1])


def _require_finite(X, what):
    if X.dtype.kind == "f" and not np.isfinite(X).all():
        row, column = _first(~np.isfinite(X))
        raise DataError(f"{what} holds {_value(X, row, column)} at row {row}, column {column}; "
                        f"NaN and infinite values are not allowed.")


def _require_binary(X, what, key, after=""):
    """Return ``X`` as C-contiguous uint8 if it holds only 0 and 1, else raise with the
    hint ``key``.

    ``after`` (e.g. " after dividing by 255") qualifies "is not binary" in the message.
    """
    kind = X.dtype.kind
    if kind == "b":
        return np.ascontiguousarray(X).view(np.uint8)
    if kind == "u":
        ok = X.max() <= 1
    elif kind == "i":
        ok = X.min() >= 0 and X.max() <= 1
    else:
        ok = not np.any((X != 0) & (X != 1))
    if not ok:
        _require_finite(X, what)
        row, column = _first((X != 0) & (X != 1))
        raise worded(DataError(f"{what} is not binary{after}: row {row}, column {column} "
                               f"holds {_value(X, row, column)} ({hint(key)})."), hints=(key,))
    return np.ascontiguousarray(X, dtype=np.uint8)


def binarize(X, what, binarize, threshold, seed, scale):
    """Scale and binarize (or just check) a 2-D numeric array, as in load_data."""
    if binarize is None and scale is None:
        return _require_binary(X, what, "binarize_file")

    values = X.astype(np.float64)
    _require_finite(values, what)
    if scale is None:
        largest = values.max()
        scale = (255.0 if X.dtype == np.uint8 else largest) if largest > 1 else 1.0
    if scale != 1:
        values /= scale

    if binarize is None:
        return _require_binary(values, what, "binarize_file", f" after dividing by {scale:g}")
    if binarize == "threshold":
        return (values >= threshold).view(np.uint8)

    outside = (values < 0) | (values > 1)
    if outside.any():
        row, column = _first(outside)
        raise DataError(f"{what} cannot be binarized stochastically: row {row}, column "
                        f"{column} holds {_value(values, row, column)} after scaling, "
                        f"outside [0, 1].")
    rng = data_generator(seed, 0)
    return (rng.random(values.shape) < values).view(np.uint8)


def data_generator(seed, use):
    """The generator of (seed, "data", use): 0 stochastic binarization, 1 train_test_split,
    2 and 3 the training and test image patches (cyrbm.data.patches) (one seeding path:
    cyrbm._random.seed_sequence); a Generator is used as given."""
    if isinstance(seed, np.random.Generator):
        return seed
    from cyrbm._random import seed_sequence
    return np.random.default_rng(seed_sequence(seed, "data", use))


# ============================================================================
# Sizes that cannot fit in memory
# ============================================================================

def memory_bytes():
    """This machine's physical memory in bytes, or None when it cannot be told."""
    import os
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    return total if total > 0 else None


def human_bytes(n):
    """A byte count in words: '3.1 GB'."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def check_memory(nbytes, what, advice=""):
    """Refuse (SizeError, one sentence) when ``what`` needs more bytes than this machine
    has memory; ``advice`` ends the sentence (e.g. "use fewer runs")."""
    from cyrbm.errors import SizeError
    total = memory_bytes()
    if total is not None and nbytes > total:
        tail = f"; {advice}" if advice else ""
        raise SizeError(f"{what} would need about {human_bytes(nbytes)} of memory, more than "
                        f"this machine has ({human_bytes(total)}){tail}.")


def check_run_memory(runs, D, n_hidden):
    """Refuse runs whose states cannot fit in memory (about 32 bytes a unit a run)."""
    check_memory(runs * (512 + 32 * (D + n_hidden)), f"{runs} AIS runs of a model with "
                 f"{D} visible and {n_hidden} hidden units", "use fewer runs")
