"""The NumPy reference of cyrbm's base-rate AIS (SM08 Eq. 13-18), without cyrbm.

bench/ais_speed.py times it in its own process; bench/torch_ais.py runs it as a whole
process of its own (so it imports only NumPy and SciPy, as a user's NumPy program would).
The algorithm is cyrbm's ``Annealer.log_partition``: runs start from exact draws of the
base-rate model, step k adds ln p*_k(v) - ln p*_{k-1}(v) to the log weights (float64) and,
before the last beta, takes one block-Gibbs sweep at beta_k (h given v, then v given h);
the matrix products and draws are float32.
"""
import math

import numpy as np


def paper_betas():
    """SM08 Sec. 5.1's 14,500 betas, built as cyrbm's ``make_schedule("paper")`` builds
    them: 500 uniform in [0, 0.5), 4,000 in [0.5, 0.9), 10,000 in [0.9, 1]."""
    return np.concatenate([np.linspace(0.0, 0.5, 500, endpoint=False),
                           np.linspace(0.5, 0.9, 4000, endpoint=False),
                           np.linspace(0.9, 1.0, 10000)])


def base_rate_biases(data, pseudocount=1.0):
    """Visible biases of the base-rate model fitted to 0/1 rows as cyrbm fits them:
    b_i = ln((n_i + c) / (N - n_i + c)), n_i the rows with unit i on."""
    on = data.sum(axis=0, dtype=np.float64)
    return np.log(on + pseudocount) - np.log(data.shape[0] - on + pseudocount)


def base_rate_log_z(bA, n_hidden):
    """ln Z_A of the base-rate model with ``n_hidden`` zero-bias hidden units (SM08
    Eq. 18): M ln 2 + sum_i softplus(b_A,i)."""
    return n_hidden * math.log(2.0) + float(np.logaddexp(0.0, bA).sum())


def numpy_ais(model, bA, betas, runs, seed):
    """Base-rate AIS (SM08 Eq. 13-18) in float32 NumPy; returns the log weights."""
    from scipy.special import expit
    rng = np.random.default_rng(seed)
    W = model.W.astype(np.float32)
    WT = np.ascontiguousarray(W.T)
    b = model.vbias.astype(np.float32)
    a = model.hbias.astype(np.float32)
    bA32 = bA.astype(np.float32)
    D, M = W.shape
    v = (rng.random((runs, D), dtype=np.float32) < expit(bA32)).astype(np.float32)
    logw = np.zeros(runs)
    x = np.empty((runs, M), np.float32)
    y = np.empty((runs, D), np.float32)
    dbias = (bA32.astype(np.float64) - b.astype(np.float64))
    K = betas.size - 1
    for k in range(1, K + 1):
        bp, bc = float(betas[k - 1]), float(betas[k])
        np.matmul(v, W, out=x)
        x += a
        xd = x.astype(np.float64)
        logw += (bp - bc) * (v @ dbias) + (np.logaddexp(0.0, bc * xd)
                                           - np.logaddexp(0.0, bp * xd)).sum(axis=1)
        if k < K:
            h = (rng.random((runs, M), dtype=np.float32)
                 < expit(np.float32(bc) * x)).astype(np.float32)
            np.matmul(h, WT, out=y)
            y += b
            y *= np.float32(bc)
            y += np.float32(1.0 - bc) * bA32
            v = (rng.random((runs, D), dtype=np.float32) < expit(y)).astype(np.float32)
    return logw
