"""The ``cyrbm evaluate --plot`` and ``cyrbm train --track-logz --plot`` figures (need
the optional extra ``plot``: matplotlib).

evaluate: three panels: ln Z-hat against the number of AIS runs with ln(Z-hat +- 3
sigma-hat) bars (as SM08's Figure 3), a histogram of the runs' log weights, and the
AIS/RAISE gap of the mean test log-probability against the number of betas K.
train: the learning curve, the tracked ln Z and (with test data) the mean test
log-likelihood of every rung of the ladder against the updates, +- 3 se.
"""
import io
import math

import numpy as np

from cyrbm.errors import CyrbmError

__all__ = ["write_evaluation_plot", "running_estimates", "write_learning_curve"]


def running_estimates(log_weights, log_z_base, points=25):
    """(n, ln Z-hat, lower, upper) over the first n runs, n from 2 to all at about
    ``points`` values; lower is -inf where Z-hat - 3 sigma-hat <= 0."""
    lw = np.asarray(log_weights, dtype=np.float64)
    ns = np.unique(np.linspace(2, lw.size, min(points, lw.size - 1)).astype(int))
    rows = []
    for n in ns:
        x = lw[:n]
        top = float(np.max(x))
        w = np.exp(x - top)
        m = float(np.mean(w))
        sd = float(np.std(w, ddof=1) / math.sqrt(n))
        lo = m - 3.0 * sd
        rows.append((int(n), log_z_base + top + math.log(m),
                     log_z_base + top + math.log(lo) if lo > 0 else -math.inf,
                     log_z_base + top + math.log(m + 3.0 * sd)))
    return rows


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CyrbmError("--plot needs matplotlib: install cyrbm with the 'plot' extra "
                         "(pip install 'cyrbm[plot]').") from None
    return plt


def _save(fig, plt, path):
    from cyrbm._io import atomic_write
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    atomic_write(path, lambda f: f.write(buf.getvalue()))


def write_learning_curve(path, history):
    """Draw the learning curve of a tracked training run (the rungs in the Trainer's
    history records, ``tracked``) and write it to ``path`` (PNG, atomically): ln Z and,
    when recorded, the mean test log-likelihood against the updates, bars +- 3 se."""
    plt = _pyplot()
    rungs = [r for record in history for r in record.get("tracked", [])]
    with_ll = any("log_likelihood" in r for r in rungs)
    fig, axes = plt.subplots(1, 2 if with_ll else 1, figsize=(10 if with_ll else 5, 3.8),
                             squeeze=False)
    t = [r["update"] for r in rungs]
    bars = [3.0 * r["log_Z_se"] for r in rungs]
    ax = axes[0, 0]
    ax.errorbar(t, [r["log_Z"] for r in rungs], yerr=bars, fmt="o-", ms=3, capsize=2)
    ax.set_xlabel("updates")
    ax.set_ylabel("tracked ln Z, +- 3 se")
    if with_ll:
        ax = axes[0, 1]
        ax.errorbar(t, [r.get("log_likelihood") for r in rungs], yerr=bars, fmt="s-", ms=3,
                    capsize=2, color="tab:green")
        ax.set_xlabel("updates")
        ax.set_ylabel("mean test ln p(v), +- 3 se")
    _save(fig, plt, path)


def write_evaluation_plot(path, result, gap_by_k):
    """Draw the figure for an EvaluationResult and write it to ``path`` (PNG, atomically);
    ``gap_by_k`` is :func:`cyrbm.estimators.evaluation.gap_curve`'s list of (K, gap, se)."""
    plt = _pyplot()
    ais = result.ais
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    rows = running_estimates(ais.log_weights, ais.log_Z_base)
    n = np.array([r[0] for r in rows])
    est = np.array([r[1] for r in rows])
    lo = np.array([r[2] for r in rows])
    hi = np.array([r[3] for r in rows])
    floor = float(np.min(est[np.isfinite(est)])) - 3.0 * float(np.max(hi - est))
    lo_drawn = np.where(np.isfinite(lo), lo, floor)
    ax = axes[0]
    ax.errorbar(n, est, yerr=[est - lo_drawn, hi - est], fmt="o-", ms=3, capsize=2)
    ax.set_xlabel("AIS runs")
    ax.set_ylabel("ln Z-hat, bars ln(Z-hat +- 3 sigma-hat)")
    ax.set_title(f"ln Z-hat = {ais.log_Z:.3f} ({ais.betas} betas)")
    ax = axes[1]
    ax.hist(ais.log_weights, bins=min(30, max(5, ais.runs // 3)), color="tab:orange")
    ax.set_xlabel("ln w (log importance weight)")
    ax.set_ylabel("runs")
    ax.set_title(f"ESS {ais.ess:.1f} of {ais.runs}, largest share "
                 f"{100 * ais.max_weight_share:.0f}%")
    ax = axes[2]
    ks = [row[0] for row in gap_by_k]
    gaps = [row[1] for row in gap_by_k]
    ses = [3.0 * row[2] for row in gap_by_k]
    ax.errorbar(ks, gaps, yerr=ses, fmt="s-", color="tab:green", capsize=3)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_xlabel("betas K")
    ax.set_ylabel("AIS - RAISE mean test ln p, +- 3 se")
    ax.set_title(f"gap {result.gap:.3f} nats at K = {ais.betas}")
    _save(fig, plt, path)
