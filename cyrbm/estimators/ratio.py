"""Ratio AIS between two models of one unit type with their own runs: two Gaussian RBMs or
two SRBMs on the same visible units (SM08 Sec. 3.2, Eq. 13-17).

The intermediate distributions keep both hidden layers explicit::

    p_k(v, hA, hB) ~ exp(-(1 - beta_k) E_A(v, hA) - beta_k E_B(v, hB)),

so p_0 is model A with B's hidden units free and p_K model B with A's free: summing the
hidden layers out, Z_0 = 2^(n_hidden of B) Z_A and Z_K = 2^(n_hidden of A) Z_B, and the
reported log weights are corrected by (nB - nA) ln 2 to estimate ln(Z_B / Z_A).

* Gaussian visible units: hA | v ~ Bernoulli(sigma((1 - beta) (cA + WA^T (v / sA)))),
  hB | v likewise at beta, and v_i | hA, hB ~ N(eta_i / lambda_i, 1 / lambda_i) with the
  precision lambda_i = (1 - beta) / sA_i^2 + beta / sB_i^2 and
  eta_i = (1 - beta) (bA_i / sA_i^2 + (WA hA)_i / sA_i) + beta (bB_i / sB_i^2 + (WB hB)_i / sB_i)
  (the exponent of the mixed energy in v_i is -lambda_i v_i^2 / 2 + eta_i v_i);
  ln p*_k(v) = -(1 - beta_k) sum (v - bA)^2 / (2 sA^2) - beta_k sum (v - bB)^2 / (2 sB^2)
  + sum_j softplus((1 - beta_k) xA_j) + sum_j softplus(beta_k xB_j).
* Lateral (SRBM) units: the hidden layers as above (inputs c + W^T v), and v | hA, hB one
  unit at a time, unit i of log-odds (1 - beta) (bA + WA hA + LA v)_i
  + beta (bB + WB hB + LB v)_i; ln p*_k(v) = (1 - beta_k) (bA.v + v^T LA v / 2)
  + beta_k (bB.v + v^T LB v / 2) + the two softplus sums.

Starting states.  With ``start="exact"`` (the default ``"auto"`` when the layer that A's
exact ln Z enumerates has at most EXACT_START_UNITS units: the hidden layer of a Gaussian
RBM, the visible layer of an SRBM) the runs start from exact independent draws of p_A:
for a Gaussian RBM h from its marginal over the 2^M hidden states, p(h) ~ exp(c.h +
sum_i (b_i u_i / s_i + u_i^2 / 2)), u = W h, by inverse CDF, then v | h ~ N(b + s u, s^2);
for an SRBM v from p(v) over the 2^D visible states by inverse CDF; ln Z_A is then exact
(``log_partition``).  Otherwise (``start="gibbs"``) they start from block-Gibbs chains on A
(the ratio kernel at beta = 0 is A's own Gibbs sweep), as the binary ratio does
(:meth:`cyrbm.Annealer.log_ratio`): ``burn_in`` sweeps from ``init`` rows (else the data,
else the model's own start), ``chains`` chains each giving states ``steps_between`` sweeps
apart; these states are only approximately from p_A.

Run r draws from stream r of ``cyrbm._random.ratio_streams(seed, runs, 0)``, chain c from
stream c of key 1, and the exact draws from the annealer's generator of key 3, so any
slices of the runs (threads, Dask tasks) give the same bits.
"""
import math
import time

import numpy as np

from cyrbm._random import ratio_streams
from cyrbm._progress import schedule_pieces
from cyrbm._validation import check_memory, hint, worded
from cyrbm.distributed import default_chunk, map_slices
from cyrbm.errors import AnnealingError, DataError
from cyrbm.models.exact import EXACT_START_UNITS
from cyrbm.estimators.results import ais_result

__all__ = ["own_log_ratio", "exact_draws"]

_LN2 = math.log(2.0)
_BLOCK = 1 << 12


def exact_draws(units, log_terms, u):
    """Indices of the states drawn by inverse CDF from p(s) ~ exp(log_terms(s)) over the
    2^``units`` states s of a layer (bit i of the index is unit i), one per uniform
    ``u``; ``log_terms(bits)`` maps a block of 0/1 rows (float64) to their log terms.
    The terms are taken in blocks of 2^12 states, relative to their largest."""
    low = min(units, 12)
    bits = ((np.arange(1 << low)[:, None] >> np.arange(low)) & 1).astype(np.float64)
    rows = np.zeros((1 << low, units))
    rows[:, :low] = bits
    terms = np.empty(1 << units)
    for t in range(1 << (units - low)):
        rows[:, low:] = (t >> np.arange(units - low)) & 1
        terms[t << low:(t + 1) << low] = log_terms(rows)
    cdf = np.cumsum(np.exp(terms - terms.max()))
    return np.minimum(np.searchsorted(cdf, np.asarray(u) * cdf[-1], side="right"),
                      cdf.size - 1)


def state_bits(index, units):
    """The 0/1 rows (float64) of the state indices ``index`` of a layer of ``units``."""
    return ((np.asarray(index)[:, None] >> np.arange(units)) & 1).astype(np.float64)


def check_start(start):
    """``start`` of a ratio: "auto", "exact" or "gibbs"; one sentence otherwise."""
    if start not in ("auto", "exact", "gibbs"):
        raise worded(AnnealingError(f"start must be 'auto', 'exact' or 'gibbs', not "
                                    f"{start!r}."), parameters=("start",))


def chain_settings(runs, exact, burn_in, chains, steps_between, why=""):
    """The Gibbs chains' settings of a ratio of ``runs`` runs, checked: refused when the
    runs start from exact draws (``why`` says how that was decided), else the defaults
    (RATIO_BURN_IN, one chain a run, RATIO_STEPS_BETWEEN) for those not given.  Returns
    (burn_in, chains, steps_between)."""
    from cyrbm.defaults import RATIO_BURN_IN, RATIO_STEPS_BETWEEN
    given = [k for k, v in (("chains", chains), ("burn_in", burn_in),
                            ("steps_between", steps_between)) if v is not None]
    if exact and given:
        raise worded(AnnealingError(
            f"{' and '.join(given)} set{'s' if len(given) == 1 else ''} the Gibbs chains "
            f"that start the runs, but these runs start from exact draws of model "
            f"A{why}, so {'it' if len(given) == 1 else 'they'} would be ignored; "
            f"{hint('start_gibbs')} to start from Gibbs chains."),
            parameters=given, hints=("start_gibbs",))
    burn_in = RATIO_BURN_IN if burn_in is None else int(burn_in)
    steps_between = RATIO_STEPS_BETWEEN if steps_between is None else int(steps_between)
    if burn_in < 0:
        raise AnnealingError(f"burn-in must be a non-negative number of sweeps, not {burn_in}.")
    if steps_between < 1:
        raise AnnealingError(f"steps between samples must be at least 1, not {steps_between}.")
    if chains is not None and (isinstance(chains, bool) or
                               not isinstance(chains, (int, np.integer))):
        raise worded(AnnealingError(f"chains must be a whole number, not {chains!r}."),
                     parameters=("chains",))
    chains = runs if chains is None else int(chains)
    if not 1 <= chains <= runs:
        raise worded(AnnealingError(f"chains must be between 1 and the number of runs "
                                    f"({runs}), not {chains}."), parameters=("chains",))
    return burn_in, chains, steps_between


def ratio_rows(A, data, init):
    """(the checked ``data`` rows or None, the chains' starting rows: ``init`` checked,
    else the data when they have rows, else None) of a ratio from model A."""
    v_data = None if data is None else A._visible_data(data, "data")
    if init is not None:
        init = A._visible_data(init, "init")
        if init.shape[0] == 0:
            raise DataError("init has no rows.")
    elif v_data is not None and v_data.shape[0] > 0:
        init = v_data
    return v_data, init


def own_log_ratio(annealer, A, B, data=None, *, start="auto", burn_in=None, chains=None,
                  steps_between=None, init=None, log_Z_a=None, client=None, chunk=None,
                  _variant=0):
    """ln(Z_B / Z_A) of two models of one unit type with their own ratio kernel
    (``A._ratio_run``): what :meth:`cyrbm.Annealer.log_ratio` runs for two Gaussian RBMs
    or two SRBMs (see the module's text).  Returns an AISResult of kind "ratio".
    ``_variant`` is for the tests' power checks only (cyrbm._ratio)."""
    D, R = A.n_visible, annealer.runs
    check_memory(R * (8 * D + A.n_hidden + B.n_hidden + 64), f"{R} AIS runs")
    check_start(start)
    units = A._start_units()
    if start == "exact" and units > EXACT_START_UNITS:
        raise worded(AnnealingError(
            f"exact starting states enumerate 2^{units} states of model A and the limit is "
            f"{EXACT_START_UNITS} units; {hint('start_gibbs')} to start from Gibbs chains."),
            hints=("start_gibbs",))
    exact = start == "exact" or (start == "auto" and units <= EXACT_START_UNITS)
    burn_in, chains, steps_between = chain_settings(R, exact, burn_in, chains, steps_between)
    v_data, init = ratio_rows(A, data, init)
    t0 = time.perf_counter()
    if exact:
        rng = annealer._generator(3)
        starts = A._start_draws(rng.random(R), rng)
        if log_Z_a is None:
            log_Z_a = A.log_partition()
        info = {"start": "exact", "burn_in": None, "chains": None, "steps_between": None}
        plan, n = {"starts": starts}, R
    else:
        if init is not None:
            v0 = init[np.arange(chains) % init.shape[0]]
        else:
            v0 = A.sample(chains, 0, seed=np.random.SeedSequence(
                annealer.seed, spawn_key=(5, 48 + 2)))
        if log_Z_a is None and units <= EXACT_START_UNITS:
            log_Z_a = A.log_partition()
        info = {"start": "gibbs", "burn_in": burn_in, "chains": chains,
                "steps_between": steps_between}
        plan, n = dict(info, v0=v0), chains
    plan["variant"] = int(_variant)
    if client is None:
        parts = [_own_ratio_task(annealer, A, B, plan, 0, n, threads=annealer.threads,
                                 progress=annealer.progress)]
    else:
        parts = map_slices(client, _own_ratio_task, n, chunk or default_chunk(client, n),
                           shared=(annealer, A, B, plan), progress=annealer.progress,
                           desc="AIS ln(ZB/ZA)", unit="run" if exact else "chain")
    runs = np.concatenate([p[0] for p in parts])
    log_w = np.empty(R)
    log_w[runs] = np.concatenate([p[1] for p in parts])
    ends = np.concatenate([p[2] for p in parts])
    samples = np.empty((R, D), dtype=ends.dtype)
    samples[runs] = ends
    seconds = time.perf_counter() - t0
    mean_lp, n_data = None, 0
    if v_data is not None and v_data.shape[0] > 0:
        mean_lp = float(np.mean(B._log_unnormalized_rows(v_data)
                                - A._log_unnormalized_rows(v_data)))
        n_data = v_data.shape[0]
    dtype = np.float64 if np.float64 in (A.dtype, B.dtype) else np.float32
    return ais_result(annealer, "ratio", log_w + (B.n_hidden - A.n_hidden) * _LN2, log_Z_a,
                      seconds=seconds, dtype=dtype, samples=samples,
                      mean_log_unnormalized=mean_lp, n_data=n_data,
                      extra=dict(info, n_hidden_a=A.n_hidden, n_hidden_b=B.n_hidden,
                                 visible=A.visible))


def _own_ratio_task(annealer, A, B, plan, c0, c1, *, threads, progress=False):
    """The runs of :func:`own_log_ratio` that start from exact draws c0 .. c1, or from
    Gibbs chains c0 .. c1 (run r takes state r // chains of chain r % chains; a task of
    cyrbm.distributed).  Returns (the runs' indices, their log weights, end states)."""
    betas = annealer.betas
    if "starts" in plan:
        runs = np.arange(c0, c1)
        v = plan["starts"][c0:c1]
    else:
        C, R = plan["chains"], annealer.runs
        per_chain = -(-R // C)
        r = np.arange(R)
        runs = r[(r % C >= c0) & (r % C < c1)]
        streams = ratio_streams(annealer.seed, c1, 1)[c0:]
        marks = [plan["burn_in"] + m * plan["steps_between"] for m in range(per_chain)]
        zero = np.zeros(marks[-1] + 1)
        x, taken, done = plan["v0"][c0:c1], [], 0
        for mark in marks:                 # beta = 0: A's own Gibbs sweeps, no weights
            x = A._ratio_run(B, x, zero, done + 1, mark + 1, False, streams,
                             np.zeros(c1 - c0), threads, plan["variant"])
            done = mark
            taken.append(x.copy())
        v = np.stack(taken)[runs // C, runs % C - c0]
    streams = ratio_streams(annealer.seed, int(runs.max()) + 1 if runs.size else 0, 0)[runs]
    log_w = np.zeros(runs.size)
    state = [v]

    def run(k, k_next):
        state[0] = A._ratio_run(B, state[0], betas, max(k, 1), k_next, True, streams, log_w,
                                threads, plan["variant"])
    schedule_pieces(run, 1, betas.size, progress, annealer.chunk, "AIS ln(ZB/ZA)")
    return runs, log_w, state[0]
