"""Parallel tempering (Cho, Raiko & Ilin 2010, Sec. IV) over cyrbm's Gibbs engine.

The chains of a ladder follow the RBMs R_k with parameters (T_k W, b, c), 0 <= T_0 < ...
< T_K = 1 (CRI10 Table I): each round, one tempered block-Gibbs sweep of every chain
(``GibbsEngine.sweep`` with a temperature per chain, in the engine's tempered
configuration ``set_tempered``), then swaps of neighbours from the top down by the
Metropolis rule, Eq. 5 (``GibbsEngine.swap``; chains keep their states and random
streams and trade temperatures).  ``TemperedChains`` holds M such ladders for training
(persistent, the T = 1 states are the negative phase) and ``retune`` the adaptive
ladder: spacing re-tuned so that neighbouring pairs swap at equal rates.
"""
import numpy as np

from cyrbm import _anneal
from cyrbm._random import make_run_streams, make_streams

#: CRI10's ladder: 0, 0.05, ..., 1 (K = 20).
DEFAULT_TEMPERATURES = np.linspace(0.0, 1.0, 21)


def check_temperatures(temps, what="temperatures"):
    """A float64 ladder 0 <= T_0 < ... < T_K = 1, or a ValueError in one sentence."""
    try:
        t = np.asarray(temps, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numbers, not {temps!r}.") from None
    if t.size < 1 or not np.all(np.isfinite(t)):
        raise ValueError(f"{what} must be finite numbers, at least one.")
    if t.size > 1 and not np.all(np.diff(t) > 0):
        raise ValueError(f"{what} must increase strictly, not {_show(t)}.")
    if t[0] < 0:
        raise ValueError(f"{what} must not be negative (the first is {t[0]:g}).")
    if t[-1] != 1.0:
        raise ValueError(f"{what} must end at 1 (the model itself), not at {t[-1]:g}.")
    return t


def _show(t):
    return ", ".join(f"{x:g}" for x in t[:8]) + (", ..." if t.size > 8 else "")


def parse_temperatures(spec):
    """(ladder, adaptive) from a specification: None (CRI10's 0, 0.05, ..., 1), N (N
    evenly spaced temperatures from 0 to 1, N >= 2), a list or "0,0.5,1", or
    "adaptive:N" (N evenly spaced to start, then re-tuned during training; its ends
    stay) or "adaptive:LIST" (that ladder to start)."""
    if spec is None:
        return DEFAULT_TEMPERATURES.copy(), False
    adaptive = False
    if isinstance(spec, str):
        text = spec.strip()
        if text.lower().startswith("adaptive:"):
            adaptive = True
            text = text.split(":", 1)[1]
        parts = [p for p in text.replace(" ", "").split(",") if p != ""]
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"temperatures must be a count N, a list such as '0,0.5,1' or "
                             f"'adaptive:N', not {spec!r}.") from None
        if len(values) == 1 and (adaptive or "." not in parts[0]):
            spec = values[0]
        else:
            return check_temperatures(values), adaptive
    if np.ndim(spec) == 0:
        n = float(spec)
        if not n.is_integer() or n < 2:
            raise ValueError(f"the number of temperatures must be a whole number of at least 2, "
                             f"not {spec!r}.")
        return np.linspace(0.0, 1.0, int(n)), adaptive
    return check_temperatures(spec), adaptive


def retune(temps, accept_rate, damping=0.5, floor=1e-3):
    """A ladder with the same ends whose neighbouring pairs should swap at equal rates.

    The rejection rate 1 - a_k of pair (T_{k-1}, T_k) is spread evenly over that interval;
    the new temperatures sit at equal quantiles of the cumulative rejection, and the
    result is ``damping`` of the way from the old ladder to that one (so noisy rates
    do not throw the ladder about).  T_0 and T_K = 1 stay; the order stays strict.
    """
    t = np.asarray(temps, dtype=np.float64)
    K = t.size - 1
    if K < 2:
        return t.copy()
    rej = np.maximum(1.0 - np.asarray(accept_rate, dtype=np.float64), floor)
    cum = np.concatenate([[0.0], np.cumsum(rej)])
    target = np.linspace(0.0, cum[-1], K + 1)
    new = np.interp(target, cum, t)
    out = (1.0 - damping) * t + damping * new
    out[0], out[-1] = t[0], 1.0
    # keep a strict order (a tiny minimum gap)
    gap = 1e-6 * (out[-1] - out[0])
    for k in range(1, K + 1):
        out[k] = max(out[k], out[k - 1] + gap)
    out[-1] = 1.0
    return out


class TemperedChains:
    """M persistent parallel-tempering ladders of K+1 chains on one Gibbs engine.

    ``step(W, vbias, hbias)`` is one round of CRI10 Table I (one sweep per chain at its
    temperature, then the swaps from the top down) with the current parameters;
    ``top()`` the T = 1 states (M x n_visible), the negative phase of PT training.
    The state (``arrays()`` / ``from_arrays``) is the chains' visible states, their
    engine streams, the ladders' swap streams and their run order at each temperature:
    the kept inputs are recomputed at each round (the parameters changed), so a resumed
    run continues bit for bit.
    """

    def __init__(self, temps, n_visible, n_hidden, chains, *, dtype=np.float32, n_threads=1,
                 seed=0, init=None, adaptive=False, state=None):
        self.temps = check_temperatures(temps)
        self.adaptive = bool(adaptive)
        K1 = self.temps.size
        self.M, self.K1 = int(chains), K1
        R = self.M * K1
        self.n_visible = n_visible
        if state is None:
            state = {
                "chains": np.ascontiguousarray(init, dtype=np.uint8),
                "streams": make_run_streams(seed, "chains", R, 2),
                "swap_streams": make_streams(seed, "chains", self.M, 3),
                "order": np.arange(R, dtype=np.int32).reshape(self.M, K1),
                "window": np.zeros((2, max(K1 - 1, 1)), dtype=np.int64),
            }
        self.order = np.ascontiguousarray(state["order"], dtype=np.int32)
        self.swap_streams = np.ascontiguousarray(state["swap_streams"], dtype=np.uint64)
        self.window = np.ascontiguousarray(state["window"], dtype=np.int64)
        if "temperatures" in state:
            self.temps = check_temperatures(state["temperatures"])
        chains_v = np.ascontiguousarray(state["chains"], dtype=np.uint8)
        if chains_v.shape != (R, n_visible) or self.order.shape != (self.M, K1) \
                or self.swap_streams.shape != (self.M, 4):
            raise ValueError("tempered chain state of the wrong shape.")
        self.beta = np.empty(R)
        self.beta[self.order.ravel()] = np.tile(self.temps, self.M)
        zeros_b = np.zeros(n_visible)
        # no subset tables: the parameters change at every update, and rebuilding the
        # tables (about 8 n_visible n_hidden additions) costs more than they save on the
        # refreshed sweeps of fewer than about a thousand chains (bench/README.md)
        previous = _anneal.use_dense_tables("never")
        try:
            self.engine = _anneal.GibbsEngine(zeros_b, None, None,
                                              np.zeros((n_visible, n_hidden)), zeros_b,
                                              np.zeros(n_hidden), state["streams"],
                                              dtype=dtype, n_threads=n_threads)
        finally:
            _anneal.use_dense_tables(previous)
        self.engine.set_visible(chains_v)
        self.accepted = np.zeros((self.M, max(K1 - 1, 1)), dtype=np.int64)

    def step(self, W, vbias, hbias, n_threads=None):
        """One round with the parameters (W, vbias, hbias): sweep, then swaps."""
        if n_threads is not None:
            self.engine.n_threads = int(n_threads)
        self.engine.set_tempered(W, vbias, hbias)
        self.engine.sweep(1, beta=self.beta, force_refresh=True)
        if self.K1 > 1:
            self.engine.swap(self.temps, self.order, self.beta, self.swap_streams, self.accepted)

    def top(self, ladders=None):
        """The T = 1 state of each ladder (M x n_visible), or of the given ladders."""
        return self.engine.visible(self.order[:, -1] if ladders is None
                                   else self.order[ladders, -1])

    def top_inputs(self, ladders):
        """W^T v of the T = 1 states of the given ladders (the engine's kept hidden
        inputs, current after the swaps of ``step``), or None without swaps (K = 0)."""
        if self.K1 < 2:
            return None
        return self.engine.hidden_inputs_b(self.order[ladders, -1])

    def adapt(self, min_trials):
        """Retune the ladder (``retune``) once the window (``window[0]``: accepted swaps
        per pair, ``window[1]``: attempts, which the caller adds) holds ``min_trials``
        attempts per pair; returns whether it did."""
        if not self.adaptive or self.K1 < 3 or self.window[1, 0] < min_trials:
            return False
        rates = self.window[0, : self.K1 - 1] / self.window[1, 0]
        self.temps = retune(self.temps, rates)
        self.beta[self.order.ravel()] = np.tile(self.temps, self.M)
        self.window[:] = 0
        return True

    def arrays(self):
        """The state to checkpoint (``accepted`` is not part of it: take it first)."""
        return {"chains": self.engine.visible(), "streams": self.engine.streams,
                "swap_streams": self.swap_streams.copy(), "order": self.order.copy(),
                "window": self.window.copy(), "temperatures": self.temps.copy()}
