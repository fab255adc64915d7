"""Exact partition functions of models small enough to enumerate (SM08 Eq. 3).

:func:`exact_log_partition` takes any model of cyrbm's unit types and asks it for its
``log_partition`` (each class knows which of its layers is finite and enumerates it).
The binary RBM's enumeration lives here, below the model classes
(:func:`binary_log_partition`): Z = sum over every state of the smaller layer, in
compiled code, Gray-code order, float64, a stable log-sum-exp; in pieces of about 0.1 s
so Ctrl-C is answered.
"""
import time

import numpy as np

from cyrbm import _exact
from cyrbm._omp import resolve_threads
from cyrbm._threads import pieces
from cyrbm._validation import hint, worded
from cyrbm.errors import AnnealingError, ModelTypeError

__all__ = ["exact_log_partition", "binary_log_partition", "estimate_exact_seconds",
           "check_enumerable", "EXACT_MAX_UNITS", "EXACT_START_UNITS"]

#: Largest smaller-layer size :func:`exact_log_partition` accepts by default (2^30 terms).
EXACT_MAX_UNITS = 30
#: start="auto" draws a ratio's starting states exactly (and gets ln Z_A) when model A's
#: smaller layer has at most this many units (2^20 terms: about a second for 784 x 20).
EXACT_START_UNITS = 20


def exact_log_partition(model, *, threads=None, max_units=None):
    """ln Z of ``model``, exactly, by enumerating its finite layer (SM08 Eq. 3).

    The model's own :meth:`log_partition`: an :class:`cyrbm.RBM` sums over every state of
    its smaller layer (:func:`binary_log_partition`), a :class:`cyrbm.GaussianRBM` over
    its hidden states (a Gaussian integral over v each), a :class:`cyrbm.SRBM` over its
    visible states (h summed out in closed form).

    Parameters
    ----------
    model : RBM, GaussianRBM or SRBM
    threads : int or None
    max_units : int or None
        Refuse (AnnealingError) when the enumerated layer is larger; None: the model
        class's ``exact_max_units`` (30 for an RBM, 20 for the others).

    Returns
    -------
    float
    """
    log_partition = getattr(model, "log_partition", None)
    if not callable(log_partition) or not hasattr(model, "exact_max_units"):
        raise ModelTypeError(f"exact_log_partition takes an RBM, a GaussianRBM or an SRBM, "
                             f"not {type(model).__name__}.")
    return log_partition(threads=threads, max_units=max_units)


def binary_log_partition(model, *, threads=None, max_units=EXACT_MAX_UNITS):
    """ln Z of a binary RBM (``model.W``, ``vbias``, ``hbias``), exactly, by summing over
    every state of its smaller layer.

    With M <= D hidden units: Z = sum_h exp(a.h) prod_i (1 + exp(b_i + sum_j W_ij h_j)),
    2^M terms (SM08 Sec. 5.1: "summing out the 784 visible units for each configuration
    of the hiddens"); otherwise the same over the visible states.  States are visited in
    Gray-code order so each changes the other layer's inputs by one weight row (recomputed
    exactly every 1024 states); everything is in float64 with a log-sum-exp relative to
    the running maximum.  The 2^m states are cut into chunks of a fixed size, combined in
    a fixed order: the result does not depend on ``threads``.  float32 models are summed
    with their stored values converted exactly to float64.  Refuses (AnnealingError,
    with a time estimate) a smaller layer of more than ``max_units`` units.
    """
    n_threads = resolve_threads(threads)
    check_enumerable(model, n_threads, max_units, "an exact ln Z", "exact_too_big")
    # The enumeration is taken in pieces of about 0.1 s, so Ctrl-C (KeyboardInterrupt)
    # is answered between them; the pieces give the one-call result bit for bit.
    m = min(model.n_visible, model.n_hidden)
    n_chunks = 1 << (m - min(_EXACT_CHUNK_BITS, m))
    chunks = np.empty(2 * n_chunks)
    for c, c1 in pieces(0, n_chunks, n_threads):
        _exact.exact_chunk_range(model.W, model.vbias, model.hbias, chunks, c, c1,
                                 n_threads, _EXACT_CHUNK_BITS)
    return _exact.exact_combine_chunks(chunks)


_EXACT_CHUNK_BITS = 12


def check_enumerable(model, n_threads, max_units, what, instead):
    """Refuse (AnnealingError, with a time estimate) to enumerate a too-large layer;
    ``instead``: the key of the hint that ends the message (cyrbm._validation.HINTS)."""
    m = min(model.n_visible, model.n_hidden)
    if m > max_units:
        seconds = estimate_exact_seconds(model, threads=n_threads)
        raise worded(AnnealingError(
            f"{what} would sum 2^{m} terms ({m} units in the smaller layer), about "
            f"{_human_time(seconds)} on {n_threads} thread{'s' if n_threads > 1 else ''}; "
            f"the limit is {max_units} units, so {hint(instead)}."), hints=(instead,))


def estimate_exact_seconds(model, *, threads=None):
    """Seconds an exact ln Z of the binary RBM ``model`` would take here, from timing
    2^12 of its terms."""
    n_threads = resolve_threads(threads)
    W = np.asarray(model.W, dtype=np.float64)
    b = np.asarray(model.vbias, dtype=np.float64)
    a = np.asarray(model.hbias, dtype=np.float64)
    if W.shape[1] <= W.shape[0]:
        W, a = W[:, :12], a[:12]
    else:
        W, b = W[:12, :], b[:12]
    m = min(model.n_visible, model.n_hidden)
    m_sub = min(W.shape)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        _exact.exact_log_partition(W, b, a, 1)
        best = min(best, time.perf_counter() - t0)
    return best * 2.0 ** (m - m_sub) / max(1, n_threads)


def _human_time(seconds):
    if seconds < 120:
        return f"{seconds:.0f} seconds"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} minutes"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} hours"
    if seconds < 2 * 365 * 86400:
        return f"{seconds / 86400:.0f} days"
    return f"{seconds / (365 * 86400):.3g} years"
