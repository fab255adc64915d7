"""The training-step kernels (cyrbm/_kernels/gibbs_t.h, cyrbm/_gibbs.pyx, _cd.pyx) against slow,
obvious NumPy references.

Where a kernel promises an order of operations the check is bit-for-bit; otherwise the
tolerance is stated.  Monte Carlo checks use fixed seeds and state their tolerance in
standard errors, so they cannot flake.
"""
import itertools

import numpy as np
import pytest
from scipy.special import expit

import cyrbm
from cyrbm import _cd, _gibbs, _kernel_tests, _random

DTYPES = [np.float32, np.float64]


# ----------------------------------------------------------------- references
def reference_rowsums(S, bias, states):
    """bias, then + S[u] for the active units u in increasing order, in S's precision."""
    out = np.empty((len(states), S.shape[1]), S.dtype)
    for r, row in enumerate(states):
        acc = bias.copy()
        for u in np.flatnonzero(row):
            acc = acc + S[u]
        out[r] = acc
    return out


def reference_subset_sums(S, bias, states):
    """bias + t_0 + t_1 + ..., t_g = 0 + S[u] + ... over the active units u of the group
    4g .. 4g+3 in increasing order (what the subset tables hold), in S's precision."""
    out = np.empty((len(states), S.shape[1]), S.dtype)
    for r, row in enumerate(states):
        acc = bias.copy()
        for g in range(0, S.shape[0], 4):
            t = np.zeros(S.shape[1], S.dtype)
            for u in range(g, min(g + 4, S.shape[0])):
                if row[u]:
                    t = t + S[u]
            acc = acc + t
        out[r] = acc
    return out


def random_problem(n_rows, n_src, n_cols, density, dtype, seed):
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((n_src, n_cols)).astype(dtype)
    bias = rng.standard_normal(n_cols).astype(dtype)
    states = (rng.random((n_rows, n_src)) < density).astype(np.uint8)
    return S, bias, states


# ------------------------------------------------------------- binary products
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(37, 83, 70), (100, 784, 500), (100, 500, 784), (5, 3, 9)])
@pytest.mark.parametrize("density", [0.1, 0.5])
def test_product_matches_numpy_bit_for_bit(dtype, shape, density):
    """Sparse states go through row sums, dense ones through subset tables; either way
    the result is the documented order of additions exactly, and close to S's product."""
    S, bias, states = random_problem(*shape, density, dtype, seed=sum(shape))
    got, dense = _kernel_tests.product(S, bias, states)
    n_rows, n_src = states.shape          # the documented rule for choosing the path
    assert dense == (states.sum() * 10 > 9 * (n_rows + 15) * ((n_src + 3) // 4))
    if n_rows >= 37:
        assert dense == (density == 0.5)  # both paths are exercised
    reference = reference_subset_sums if dense else reference_rowsums
    np.testing.assert_array_equal(got, reference(S, bias, states))
    exact = bias.astype(np.float64) + states.astype(np.float64) @ S.astype(np.float64)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(got, exact, rtol=0, atol=tol * np.sqrt(shape[1]) * 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("density", [0.1, 0.5])
def test_product_with_sigmoid_applies_the_same_sigmoid(dtype, density):
    """The products can apply sigma before storing: the same values as afterwards."""
    S, bias, states = random_problem(100, 83, 70, density, dtype, seed=2)
    plain, dense = _kernel_tests.product(S, bias, states)
    assert dense == (density == 0.5)
    got, _ = _kernel_tests.product(S, bias, states, expit=True)
    np.testing.assert_array_equal(got, _kernel_tests.expit(plain.ravel()).reshape(plain.shape))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("density", [0.1, 0.5])
def test_transposed_product_reads_w_through_the_block_transpose(dtype, density):
    S, bias, states = random_problem(41, 77, 101, density, dtype, seed=7)
    W = np.ascontiguousarray(S.T)                 # the product reads S = W.T
    plain, _ = _kernel_tests.product(S, bias, states)
    for threads in (1, 2, 3):
        got, _ = _kernel_tests.product(W, bias, states, transposed=True, n_threads=threads)
        np.testing.assert_array_equal(got, plain)


@pytest.mark.parametrize("density", [0.1, 0.5])
def test_product_does_not_depend_on_threads(density):
    S, bias, states = random_problem(100, 500, 784, density, np.float32, seed=3)
    one, _ = _kernel_tests.product(S, bias, states, n_threads=1)
    for threads in (2, 3, 7):
        np.testing.assert_array_equal(_kernel_tests.product(S, bias, states, n_threads=threads)[0], one)


def test_transposed_matches_numpy():
    rng = np.random.default_rng(0)
    for dtype, (r, c) in itertools.product(DTYPES, [(1, 1), (7, 13), (64, 9), (130, 77), (784, 500)]):
        W = rng.standard_normal((r, c)).astype(dtype)
        for threads in (1, 2):
            np.testing.assert_array_equal(_gibbs.transposed(W, threads), W.T)


# -------------------------------------------------------------------- sigmoid
@pytest.mark.parametrize("dtype,cap", [(np.float32, 87.0), (np.float64, 708.0)])
def test_expit_within_four_ulp(dtype, cap):
    # sigma = e / (1 + e) with the one exp of vmath.h (about 2 ulp): 3.4 ulp seen in float64
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-40, 40, 5000), rng.uniform(-cap, cap, 5000),
                        [0.0, -0.0, 1e-30, -1e-30, 17.0, -17.0, cap, -cap]]).astype(dtype)
    got = _kernel_tests.expit(x)
    exact = expit(x.astype(np.longdouble))
    ulp = np.spacing(exact.astype(dtype)).astype(np.longdouble)
    assert np.max(np.abs(got - exact) / ulp) <= 4
    # beyond the cap, e^-|x| is held at e^-cap: sigma is within that of the truth
    far = np.array([-cap - 1, -10 * cap, cap + 1, 10 * cap, np.inf, -np.inf], dtype=dtype)
    got = _kernel_tests.expit(far)
    assert np.all(got >= 0) and np.all(got <= 1)
    np.testing.assert_allclose(got, expit(far.astype(np.float64)), rtol=0, atol=2 * np.exp(-cap))
    assert np.isnan(_kernel_tests.expit(np.array([np.nan], dtype=dtype))[0])


# ------------------------------------------------------------ Bernoulli draws
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_rows,n_units", [(19, 37), (8, 8), (3, 5), (100, 500)])
def test_bernoulli_uses_each_chains_own_uniforms(dtype, n_rows, n_units):
    """Unit u of row r is on exactly when the u-th uniform of stream r is below p[r, u]
    (rows go eight at a time through vector lanes, the rest one by one)."""
    rng = np.random.default_rng(n_rows * n_units)
    P = rng.random((n_rows, n_units)).astype(dtype)
    P[0, :3] = [0.0, 1.0, 0.5][: min(3, n_units)]
    streams = _random.make_streams(11, "chains", n_rows)
    reference_streams = streams.copy()
    uniforms = _kernel_tests.uniform(reference_streams, n_units)
    for threads in (1, 2):
        s = streams.copy()
        states, lists = _kernel_tests.bernoulli(P, s, n_threads=threads)
        np.testing.assert_array_equal(states, (uniforms < P.astype(np.float64)).astype(np.uint8))
        for r in range(n_rows):
            np.testing.assert_array_equal(lists[r], np.flatnonzero(states[r]))
        np.testing.assert_array_equal(s, reference_streams)   # advanced by one draw per unit


def test_bernoulli_frequencies_within_five_standard_errors():
    n_chains = 4096
    p = np.array([0.0, 1e-3, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0] * 3)
    P = np.tile(p, (n_chains, 1)).astype(np.float32)
    states, _ = _kernel_tests.bernoulli(P, _random.make_streams(2, "chains", n_chains), n_threads=2)
    freq = states.mean(axis=0)
    se = np.sqrt(p * (1 - p) / n_chains)
    assert np.all(freq[p == 0] == 0) and np.all(freq[p == 1] == 1)
    inner = (p > 0) & (p < 1)
    assert np.all(np.abs(freq[inner] - p[inner]) <= 5 * se[inner] + 1e-12)


# ------------------------------------------------------------- CD statistics
def settings(**given):
    """The settings dict of _cd.cd_statistics / cd_update / apply_update."""
    out = dict(k=1, persistent=False, learning_rate=0.0, momentum=0.0, weight_decay=0.0,
               scale=1.0, n_threads=1)
    out.update(given)
    return out


def run_cd(W, vb, hb, v_data, v_chain, persistent, k, seed, threads=1, workspace=None):
    B = len(v_data)
    streams = _random.make_streams(seed, "chains", B)
    dW, dvb, dhb = np.empty_like(W), np.empty_like(vb), np.empty_like(hb)
    chains = v_chain.copy()
    _cd.cd_statistics((W, vb, hb), v_data, chains, streams, (dW, dvb, dhb),
                      settings(k=k, persistent=persistent, n_threads=threads),
                      workspace=workspace)
    return dW, dvb, dhb, chains, streams


def small_model(D, M, dtype, seed, scale=0.5, hbias=0.0):
    rng = np.random.default_rng(seed)
    return (scale * rng.standard_normal((D, M))).astype(dtype), \
        (0.3 * rng.standard_normal(D)).astype(dtype), \
        (hbias + 0.3 * rng.standard_normal(M)).astype(dtype)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("k", [1, 3])
def test_cd_statistics_match_numpy_on_the_sampled_states(dtype, tol, persistent, k):
    """Positive part from the data, negative part from the chains' final states (returned
    in v_chain): dW = v0' p(h|v0) - v1' p(h|v1), likewise for the biases."""
    D, M, B = 50, 37, 23
    W, vb, hb = small_model(D, M, dtype, seed=k)
    rng = np.random.default_rng(5)
    v0 = (rng.random((B, D)) < 0.3).astype(np.uint8)
    start = (rng.random((B, D)) < 0.3).astype(np.uint8)
    dW, dvb, dhb, v1, _ = run_cd(W, vb, hb, v0, start, persistent, k, seed=9)
    if persistent and k == 1:
        assert not np.array_equal(v1, start)
    W64, a = W.astype(np.float64), hb.astype(np.float64)
    ph0 = expit(v0 @ W64 + a)
    ph1 = expit(v1 @ W64 + a)
    np.testing.assert_allclose(dW, v0.T @ ph0 - v1.T @ ph1, rtol=0, atol=tol * B)
    np.testing.assert_array_equal(dvb, v0.sum(axis=0) - v1.sum(axis=0).astype(dtype))
    np.testing.assert_allclose(dhb, ph0.sum(axis=0) - ph1.sum(axis=0), rtol=0, atol=tol * B)


@pytest.mark.parametrize("hbias", [0.0, -2.5], ids=["dense-hidden", "sparse-hidden"])
def test_one_gibbs_sweep_has_the_exact_transition_distribution(hbias):
    """CD-1 from one visible vector, in 20000 chains: the chains' new states follow
    T(v1 | v0) = sum_h p(h | v0) p(v1 | h), computed by enumeration; every state's count
    is within five standard errors.  Hidden biases of 0 and -2.5 send the products
    through the subset tables and through the row sums respectively."""
    D, M, B = 4, 3, 20000
    W, vb, hb = small_model(D, M, np.float64, seed=4, scale=1.0, hbias=hbias)
    v0 = np.array([1, 0, 1, 1], dtype=np.uint8)
    dW, dvb, dhb, v1, _ = run_cd(W, vb, hb, np.tile(v0, (B, 1)), np.zeros((B, D), np.uint8),
                                 False, 1, seed=21, threads=2)
    H = np.array(list(itertools.product([0, 1], repeat=M)), dtype=np.float64)
    V = np.array(list(itertools.product([0, 1], repeat=D)), dtype=np.float64)
    ph = expit(v0 @ W + hb)
    p_h = np.prod(np.where(H == 1, ph, 1 - ph), axis=1)             # p(h | v0)
    pv = expit(H @ W.T + vb)                                        # p(v_i = 1 | h)
    p_v_given_h = np.prod(np.where(V[None] == 1, pv[:, None], 1 - pv[:, None]), axis=2)
    T = p_h @ p_v_given_h                                           # T(v | v0)
    codes = v1 @ (1 << np.arange(D - 1, -1, -1))
    counts = np.bincount(codes, minlength=2 ** D)
    se = np.sqrt(B * T * (1 - T))
    assert np.all(np.abs(counts - B * T) <= 5 * se + 1e-9)


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("k", [1, 2])
def test_cd_statistics_identical_for_any_number_of_threads(persistent, k):
    """At the benchmark's shape (both product paths, all thread splits)."""
    D, M, B = 784, 500, 100
    W, vb, hb = small_model(D, M, np.float32, seed=1, scale=0.05)
    rng = np.random.default_rng(2)
    v0 = (rng.random((B, D)) < 0.13).astype(np.uint8)
    start = (rng.random((B, D)) < 0.13).astype(np.uint8)
    first = run_cd(W, vb, hb, v0, start, persistent, k, seed=3, threads=1)
    for threads in (2, 3):
        for a, b in zip(first, run_cd(W, vb, hb, v0, start, persistent, k, seed=3, threads=threads)):
            np.testing.assert_array_equal(a, b)


def test_workspace_is_reusable_and_checked():
    D, M, B = 30, 20, 10
    W, vb, hb = small_model(D, M, np.float32, seed=8)
    rng = np.random.default_rng(8)
    v0 = (rng.random((B, D)) < 0.4).astype(np.uint8)
    ws = _cd.Workspace(B, D, M, np.float32)
    fresh = run_cd(W, vb, hb, v0, v0, True, 2, seed=1)
    for _ in range(2):                   # nothing carries over from one call to the next
        for a, b in zip(fresh, run_cd(W, vb, hb, v0, v0, True, 2, seed=1, workspace=ws)):
            np.testing.assert_array_equal(a, b)
    for bad in (_cd.Workspace(B + 1, D, M), _cd.Workspace(B, D, M + 1),
                _cd.Workspace(B, D, M, np.float64)):
        with pytest.raises(ValueError, match="does not fit"):
            run_cd(W, vb, hb, v0, v0, True, 1, seed=1, workspace=bad)


# --------------------------------------------------------------- the update
@pytest.mark.parametrize("dtype", DTYPES)
def test_apply_update_matches_numpy_bit_for_bit(dtype):
    rng = np.random.default_rng(3)
    D, M = 37, 501                       # rows of whole vectors and a scalar tail
    f = lambda *s: rng.standard_normal(s).astype(dtype)   # noqa: E731
    W, vb, hb, dW, dvb, dhb = f(D, M), f(D), f(M), f(D, M), f(D), f(M)
    vel_W, vel_vb, vel_hb = f(D, M), f(D), f(M)
    lr, mom, wd, sc = 0.05, 0.5, 2e-4, 1.0 / 100
    c = lambda x: dtype(x)                # noqa: E731  (the kernel works in the model's precision)
    ref_vel = c(mom) * vel_W + c(lr) * (c(sc) * dW - c(wd) * W)
    ref_W = W + ref_vel
    ref_vvb = c(mom) * vel_vb + c(lr) * c(sc) * dvb
    ref_vhb = c(mom) * vel_hb + c(lr) * c(sc) * dhb
    ref_vb, ref_hb = vb + ref_vvb, hb + ref_vhb
    WT = np.zeros((M, D), dtype)
    for threads in (1, 2):
        args = [a.copy() for a in (W, vb, hb, vel_W, vel_vb, vel_hb)]
        ok = _cd.apply_update(args[:3], (dW, dvb, dhb), args[3:],
                              settings(learning_rate=lr, momentum=mom, weight_decay=wd,
                                          scale=sc, n_threads=threads), WT)
        assert ok
        for got, want in zip(args, (ref_W, ref_vb, ref_hb, ref_vel, ref_vvb, ref_vhb)):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(WT, ref_W.T)
    # WT may be None (training does not keep one)
    assert _cd.apply_update((W.copy(), vb.copy(), hb.copy()), (dW, dvb, dhb),
                            (vel_W.copy(), vel_vb.copy(), vel_hb.copy()),
                            settings(learning_rate=lr, momentum=mom, weight_decay=wd,
                                        scale=sc))


@pytest.mark.parametrize("where", [(0, 0), (5, 500), (36, 17)])
def test_apply_update_reports_non_finite_weights(where):
    D, M = 37, 501
    W = np.zeros((D, M), np.float32)
    dW = np.zeros_like(W)
    dW[where] = np.inf
    zD, zM = np.zeros(D, np.float32), np.zeros(M, np.float32)
    assert not _cd.apply_update((W, zD.copy(), zM.copy()), (dW, zD, zM),
                                (np.zeros_like(W), zD.copy(), zM.copy()),
                                settings(learning_rate=0.1, momentum=0.5, weight_decay=0.0,
                                            scale=1.0, n_threads=2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("shape", [(50, 37, 23), (784, 500, 100)])
def test_cd_update_is_cd_statistics_then_apply_update(dtype, persistent, shape):
    """The fused step (gradient rows applied as they are made) against the two calls,
    bit-for-bit, for 1 and 2 threads."""
    D, M, B = shape
    W, vb, hb = small_model(D, M, dtype, seed=6, scale=0.05)
    rng = np.random.default_rng(6)
    v0 = (rng.random((B, D)) < 0.2).astype(np.uint8)
    start = (rng.random((B, D)) < 0.2).astype(np.uint8)
    vel = [(0.01 * rng.standard_normal(x.shape)).astype(dtype) for x in (W, vb, hb)]
    hyper = dict(learning_rate=0.05, momentum=0.5, weight_decay=2e-4, scale=1.0 / B)
    dW, dvb, dhb, chains, streams = run_cd(W, vb, hb, v0, start, persistent, 1, seed=4)
    want = [W.copy(), vb.copy(), hb.copy()] + [v.copy() for v in vel]
    assert _cd.apply_update(want[:3], (dW, dvb, dhb), want[3:], settings(**hyper))
    for threads in (1, 2):
        got = [W.copy(), vb.copy(), hb.copy()] + [v.copy() for v in vel]
        c, st = start.copy(), _random.make_streams(4, "chains", B)
        assert _cd.cd_update(got[:3], got[3:], v0, c, st,
                             settings(persistent=persistent, n_threads=threads, **hyper),
                             workspace=_cd.Workspace(B, D, M, dtype))
        for a, b in zip(got + [c, st], want + [chains, streams]):
            np.testing.assert_array_equal(a, b)


def test_cd_update_reports_non_finite_weights():
    D, M, B = 20, 10, 5
    W, vb, hb = small_model(D, M, np.float32, seed=1)
    v0 = np.ones((B, D), np.uint8)
    vel = [np.zeros_like(x) for x in (W, vb, hb)]
    assert not _cd.cd_update((W, vb, hb), vel, v0, v0.copy(),
                             _random.make_streams(0, "chains", B),
                             settings(learning_rate=np.inf, momentum=0.0, weight_decay=0.0,
                                         scale=1.0, n_threads=2))


# ---------------------------------------------------------------- training
@pytest.mark.parametrize("method", ["cd", "pcd"])
def test_training_at_benchmark_shape_identical_with_one_and_two_threads(method):
    rng = np.random.default_rng(0)
    X = (rng.random((1000, 784)) < 0.13).astype(np.uint8)
    W = [cyrbm.Trainer(500, method=method, k=1, epochs=1, batch_size=100, monitor_size=0,
                       progress=False, seed=0, threads=t).fit(X).W for t in (1, 2)]
    np.testing.assert_array_equal(W[0], W[1])
