# cython: language_level=3, boundscheck=False, wraparound=False
"""Per-chain random streams derived from one seed.

Each chain owns a xoshiro256++ state (four uint64 words).  The states of ``n`` chains are
drawn from ``numpy.random.SeedSequence``, keyed by the user's seed and a *purpose* (so
the streams for, say, the training chains and for the weight initialisation never
overlap).  A chain's numbers therefore depend only on (seed, purpose, chain index): never
on the number of threads or on how the work is scheduled.
"""
import numpy as np
from libc.stdint cimport uint64_t
from cyrbm._random cimport cyrbm_rng

# Purposes: fixed small integers folded into the SeedSequence spawn key.
PURPOSES = {
    "init": 1,        # initial weights
    "shuffle": 2,     # mini-batch order, one child per epoch
    "chains": 3,      # Gibbs chains of training (one stream per chain slot)
    "sample": 4,      # RBM.sample
    "ais": 5,         # annealing runs
    "data": 6,        # stochastic binarization, splits
    "monitor": 7,     # choice of monitoring rows
    "chib": 9,        # DBN estimators over h1 (key 0: Chib-style chains, 1: per-vector AIS)
    "bound": 8,       # DBN bounds: samples of Q, one stream per data vector
}


def seed_sequence(seed, purpose, *extra):
    """The SeedSequence for ``purpose`` (a key of PURPOSES) under ``seed``.

    ``seed`` is an int, None (fresh entropy) or a SeedSequence; ``extra`` integers
    (an epoch number, say) give further independent children.
    """
    if isinstance(seed, np.random.SeedSequence):
        entropy = seed.entropy
        key = tuple(seed.spawn_key)
    else:
        entropy = None if seed is None else int(seed)
        key = ()
    if entropy is not None and entropy < 0:
        raise ValueError(f"seed must be a non-negative integer, not {seed}.")
    return np.random.SeedSequence(entropy, spawn_key=key + (PURPOSES[purpose],) + tuple(int(e) for e in extra))


def make_streams(seed, purpose, Py_ssize_t n_chains, *extra):
    """States of ``n_chains`` independent streams: a (n_chains, 4) uint64 array.

    Stream ``i`` depends only on (seed, purpose, extra, i): asking for more chains
    leaves the first ones unchanged.
    """
    ss = seed_sequence(seed, purpose, *extra)
    states = ss.generate_state(4 * max(n_chains, 1), dtype=np.uint64)[: 4 * n_chains]
    states = states.reshape(n_chains, 4).copy()
    # xoshiro must not start from the all-zero state (probability 2**-256, but be exact).
    zero = ~states.any(axis=1)
    states[zero, 0] = 0x9E3779B97F4A7C15
    return states


def make_run_streams(seed, purpose, Py_ssize_t runs, *extra):
    """States of ``runs`` engine chains (AIS runs): a (runs, 32) uint64 array.

    A run owns 8 xoshiro256++ lanes (the kernels draw 8 or 16 numbers at a time); lane l
    of run r is stream 8r + l of ``make_streams(seed, purpose, 8 * runs, *extra)``, stored
    word-major (word w of lane l at w*8 + l) as the kernels read them (rng.h's AIS
    layout).  So a run's numbers depend only on the seed and its index.
    """
    s = make_streams(seed, purpose, 8 * runs, *extra)           # (8 runs, 4)
    return np.ascontiguousarray(s.reshape(runs, 8, 4).transpose(0, 2, 1).reshape(runs, 32))


# --- the streams of each algorithm: the one statement of which purpose, key and layout
# it draws from, used by the Python API and by the C API's make_*_streams alike

def ais_streams(seed, Py_ssize_t runs, key=0):
    """The streams of ``runs`` AIS runs (SM08 Eq. 13-18): (runs, 32) uint64, purpose
    "ais".  Keys: 0-3 the Annealer's (runs, ratio chains, ...), 4-8 evaluation's (RAISE,
    the adaptive pilot, the simulation, its RAISE, a base model's ln Z)."""
    return make_run_streams(seed, "ais", runs, key)


def sample_streams(seed, Py_ssize_t chains):
    """The streams of ``RBM.sample``'s chains (one per chain; for PT, one per chain of
    every ladder): (chains, 4) uint64, purpose "sample"."""
    return make_streams(seed, "sample", chains)


def pt_swap_streams(seed, Py_ssize_t ladders):
    """The swap streams of ``RBM.sample(sampler="pt")``: one per ladder (CRI10 Eq. 5)."""
    return make_streams(seed, "sample", ladders, 2)


def chib_streams(seed, Py_ssize_t items, Py_ssize_t steps):
    """The streams of the Chib-style estimator (MS09 Figure 1): one per test vector and
    repeat, keyed by the chain length S."""
    return make_streams(seed, "chib", items, 0, steps)


def per_vector_ais_streams(seed, Py_ssize_t items):
    """The streams of per-vector AIS over h1 (MS09 Sec. 5): one per vector and run."""
    return make_streams(seed, "chib", items, 1)


def bound_streams(seed, Py_ssize_t n):
    """The streams of the DBN bound's samples of Q (SM08 Eq. 19-24): one per data vector."""
    return make_streams(seed, "bound", n)


def gaussian_ais_streams(seed, Py_ssize_t runs, key=0):
    """The streams of AIS runs on a Gaussian RBM (cyrbm.models.gaussian: one chain stream a run,
    cyrbm_gauss_block): (runs, 4) uint64, purpose "ais", keys 16 + key (clear of the
    binary runs' keys 0-8)."""
    return make_streams(seed, "ais", runs, 16 + key)


def srbm_ais_streams(seed, Py_ssize_t runs, key=0):
    """The streams of AIS runs on a semi-restricted Boltzmann machine (cyrbm.models.srbm: one
    chain stream a run, cyrbm_srbm_steps): (runs, 4) uint64, purpose "ais", keys 32 + key
    (clear of the binary runs' keys 0-8 and the Gaussian runs' 16 + key)."""
    return make_streams(seed, "ais", runs, 32 + key)


def ratio_streams(seed, Py_ssize_t runs, key=0):
    """The streams of ratio AIS between two Gaussian RBMs or two SRBMs (cyrbm.estimators.ratio, the
    kernels of cyrbm._ratio: one chain stream a run): (runs, 4) uint64, purpose "ais",
    keys 48 + key (key 0 the runs, 1 the Gibbs chains on model A; clear of the binary
    runs' 0-8, the Gaussian runs' 16 + key and the SRBM runs' 32 + key)."""
    return make_streams(seed, "ais", runs, 48 + key)
