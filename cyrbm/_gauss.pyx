# cython: language_level=3
"""The Gaussian visible layer on the engine (Gaussian-Bernoulli RBM, MS09 Sec. 5.2):
``gauss_run`` (AIS from independent Gaussians, Gibbs sampling and training's negative
phase; its nogil driver ``gauss_engine`` on ``engine_run``, shared with the C API),
``gauss_cd_products`` (the CD step's statistics) and the exact ln Z over the hidden states
(``gauss_log_partition``, driver ``gauss_exact_log_partition``).  The loops are in
cyrbm/_kernels/gauss_t.h.
"""
from cython.parallel cimport prange, parallel
from cyrbm._omp cimport cap_threads, raise_set_error
from libc.stdint cimport uint8_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from libc.math cimport log, exp
from cython cimport floating

from cyrbm._random cimport cyrbm_rng, check_streams
from cyrbm._ckernels cimport *
from cyrbm._anneal cimport ais_buffers, gauss_buffers, engine_run
from cyrbm._gibbs cimport transpose


cdef int gauss_engine(const floating *W, const floating *vbias, const floating *hbias,
                      const floating *sigma, const double *mu, const double *sd,
                      Py_ssize_t R, Py_ssize_t D, Py_ssize_t M, floating *v, uint8_t *h,
                      const double *betas, Py_ssize_t k0, Py_ssize_t k1, bint weights,
                      cyrbm_rng *streams, double *logw, floating *p, int n_threads,
                      bint check_signals) noexcept nogil:
    """The Gaussian visible layer's one driver (gauss_run, the C API's gauss_* entries):
    steps k0 <= k < k1 of the R runs ``v`` (R x D, INOUT) between N(mu, sd^2) and the
    Gaussian RBM (W, vbias, hbias, sigma) through engine_run, with the threads'
    scratch blocks; ``p`` (R x M, OUT) NULL, or the model's p(h | v) at step k0 (the
    CD step's data term, from the product the step makes anyway).  0, -1 when memory
    runs out, -3 on a signal (``check_signals``; the runs are left part-way)."""
    cdef ais_buffers B
    cdef gauss_buffers G
    cdef int nt = n_threads if n_threads > 0 else 1
    cdef int status
    if R == 0 or k0 == k1 or D == 0:
        return 0
    memset(&B, 0, sizeof(ais_buffers))
    B.runs, B.float32, B.gauss = R, floating is float, &G
    G.pair.D, G.pair.M = D, M
    G.pair.W, G.pair.b, G.pair.c, G.pair.s = W, vbias, hbias, sigma
    G.pair.mu, G.pair.sd = mu, sd
    G.v, G.h = v, h
    G.streams, G.logw, G.weights = streams, logw, weights
    G.p, G.p_step = p, k0
    G.work_bytes = (cyrbm_gauss_work_bytes(D, M) + 63) // 64 * 64
    G.work = <char *> malloc(nt * G.work_bytes)
    if G.work == NULL:
        return -1
    # u = W h through W's rows for whole blocks; a thread's last, partial block (the runs
    # split evenly, _gauss_steps) takes it through W^T's rows, its runs side by side,
    # which pays for the transpose over several steps (the same bits either way)
    cdef floating *Wt = NULL
    if k1 - k0 >= 16 and R % (CYRBM_GAUSS_LANES * nt) != 0:
        Wt = <floating *> malloc(<size_t> (D * M) * sizeof(floating))
        if Wt == NULL:
            free(G.work)
            return -1
        transpose(W, D, M, Wt, nt)
    G.pair.Wt = Wt
    status = engine_run(&B, True, betas, k0, k1, 0, weights, 0, 0, nt, check_signals)
    free(Wt)
    free(G.work)
    return status



def gauss_run(const floating[:, ::1] W, const floating[::1] vbias, const floating[::1] hbias,
              const floating[::1] sigma, const double[::1] mu, const double[::1] sd,
              floating[:, ::1] v, uint8_t[:, ::1] h, const double[::1] betas,
              Py_ssize_t k0, Py_ssize_t k1, bint weights, uint64_t[:, ::1] streams,
              double[::1] logw, int n_threads=1, p_first=None):
    """Steps k0 <= k < k1 of R runs between independent Gaussians N(mu, sd^2) and the
    Gaussian-visible RBM (W, vbias, hbias, sigma) (cyrbm_gauss_block, gauss_t.h): the
    Gaussian visible layer of the engine, taken through its one loop (engine_run: pieces
    of steps times blocks of runs, Ctrl-C answered between pieces), for AIS
    (``weights``: ln w in ``logw``, INOUT), Gibbs sampling and training's negative phase
    (every beta 1).  Step 0 draws v exactly from the base.

    ``v`` (R x n_visible, INOUT) real-valued states, ``h`` (R x n_hidden, OUT) the last
    hidden states; run r draws from streams[r] alone (INOUT, (R, 4) uint64), so the
    result depends neither on ``n_threads`` nor on the kernel variant.  ``p_first``
    (R x n_hidden, the model's dtype, OUT), if given, receives p(h | v) at step k0: with
    the runs started at a batch, the CD step's data term (gauss_cd_products' own bits)."""
    cdef Py_ssize_t R = v.shape[0], D = W.shape[0], M = W.shape[1]
    cdef floating[:, ::1] p_view
    cdef floating *p_ptr = NULL
    if p_first is not None:
        p_view = p_first
        if p_view.shape[0] != R or p_view.shape[1] != M:
            raise ValueError("gauss_run: p_first must have one row of n_hidden a run.")
        if R > 0 and M > 0:
            p_ptr = &p_view[0, 0]
    if (v.shape[1] != D or h.shape[0] != R or h.shape[1] != M or vbias.shape[0] != D
            or sigma.shape[0] != D or hbias.shape[0] != M or mu.shape[0] != D
            or sd.shape[0] != D or logw.shape[0] != R):
        raise ValueError("gauss_run: the shapes of the model, base, runs and weights do not match.")
    check_streams(streams, R, "gauss_run: streams")
    if not (0 <= k0 <= k1 <= betas.shape[0]):
        raise ValueError("gauss_run: the steps are not within the schedule.")
    if R == 0 or k0 == k1 or D == 0:
        return
    cdef int status
    with nogil:
        status = gauss_engine(&W[0, 0] if M > 0 else NULL, &vbias[0],
                              &hbias[0] if M > 0 else NULL, &sigma[0], &mu[0], &sd[0], R, D,
                              M, &v[0, 0], &h[0, 0] if M > 0 else NULL, &betas[0], k0, k1,
                              weights, <cyrbm_rng *> &streams[0, 0], &logw[0], p_ptr,
                              n_threads, True)
    if status == -1:
        raise MemoryError("out of memory in gauss_run")
    if status == -3:
        raise_set_error()       # the runs are left part-way


def gauss_cd_products(const floating[:, ::1] W, const floating[::1] hbias,
                      const floating[::1] sigma, const floating[:, ::1] data,
                      const floating[:, ::1] chains, floating[:, ::1] p0,
                      floating[:, ::1] pk, floating[:, ::1] dW, floating[::1] db,
                      floating[::1] dc, int n_threads=1, bint have_p0=False):
    """The statistics of a CD / PCD step of a Gaussian RBM on the engine's kernels
    (gauss_t.h), so that no number depends on BLAS, threads or the kernel variant:
    ``p0`` = p(h | data) (OUT, B x M; IN with ``have_p0``, as gauss_run's ``p_first``
    gives it) and ``pk`` = p(h | chains) (OUT; cyrbm_gauss_hidden, the transitions' own
    product x = c + W^T (v / s)); the weight gradient
    ``dW`` = sum_n (v_n / s) p0_n^T - sum_n (v~_n / s) pk_n^T (OUT, D x M;
    cyrbm_gauss_gradient, sums over n in order); ``db`` = sum_n (v_n - v~_n) / s^2 and
    ``dc`` = sum_n p0_n - sum_n pk_n (OUT; sums over n in order in float64)."""
    cdef Py_ssize_t B = data.shape[0], D = W.shape[0], M = W.shape[1]
    if (chains.shape[0] != B or data.shape[1] != D or chains.shape[1] != D
            or hbias.shape[0] != M or sigma.shape[0] != D or p0.shape[0] != B
            or pk.shape[0] != B or p0.shape[1] != M or pk.shape[1] != M
            or dW.shape[0] != D or dW.shape[1] != M or db.shape[0] != D
            or dc.shape[0] != M):
        raise ValueError("gauss_cd_products: the shapes of the model, rows and outputs do "
                         "not match.")
    if D == 0 or M == 0 or B == 0:
        dW[:, :] = 0
        db[:] = 0
        dc[:] = 0
        return
    cdef cyrbm_gauss_pair P
    memset(&P, 0, sizeof(cyrbm_gauss_pair))
    P.D, P.M, P.W, P.c, P.s = D, M, &W[0, 0], &hbias[0], &sigma[0]
    cdef Py_ssize_t L = CYRBM_GAUSS_LANES, nb = (B + L - 1) // L, t, r0, r1, n, i, j
    cdef int nt = cap_threads(n_threads, nb)
    cdef int ng = cap_threads(n_threads, D // 16)
    cdef size_t bytes = (cyrbm_gauss_work_bytes(D, M) + 63) // 64 * 64
    cdef size_t g_bytes = (cyrbm_gauss_gradient_work_bytes(B) + 63) // 64 * 64
    cdef size_t scaled = (<size_t> (B * D) * sizeof(floating) + 63) // 64 * 64
    cdef char *work = <char *> malloc(max(nt * bytes, ng * g_bytes) + 2 * scaled
                                      + <size_t> (D + 2 * M) * sizeof(double))
    if work == NULL:
        raise MemoryError("out of memory in gauss_cd_products")
    cdef floating *a = <floating *> (work + max(nt * bytes, ng * g_bytes))
    cdef floating *b = <floating *> (<char *> a + scaled)
    cdef double *sums = <double *> (<char *> b + scaled)
    cdef double si
    with nogil:
        for t in prange(nt, num_threads=nt, schedule='static'):
            r0 = (t * nb // nt) * L
            r1 = min(B, ((t + 1) * nb // nt) * L)
            if not have_p0:
                k_gauss_hidden(&P, &data[0, 0], r0, r1, &p0[0, 0], work + t * bytes)
            k_gauss_hidden(&P, &chains[0, 0], r0, r1, &pk[0, 0], work + t * bytes)
        # the scaled states v / s (as the transitions' product has them), and the
        # bias statistics, each sum over n in order
        memset(sums, 0, <size_t> (D + 2 * M) * sizeof(double))
        for n in range(B):
            for i in range(D):
                a[n * D + i] = data[n, i] / sigma[i]
                b[n * D + i] = chains[n, i] / sigma[i]
                sums[i] += <double> data[n, i] - <double> chains[n, i]
            for j in range(M):
                sums[D + j] += <double> p0[n, j]
                sums[D + M + j] += <double> pk[n, j]
        for i in range(D):
            si = sigma[i]
            db[i] = <floating> (sums[i] / (si * si))
        for j in range(M):
            dc[j] = <floating> (sums[D + j] - sums[D + M + j])
        for t in prange(ng, num_threads=ng, schedule='static'):
            r0 = t * D // ng
            r1 = (t + 1) * D // ng
            k_gauss_gradient(a, &p0[0, 0], b, &pk[0, 0], B, D, M, r0, r1,
                             &dW[0, 0] + r0 * M, work + t * g_bytes)
    free(work)

cdef int gauss_exact_log_partition(const floating *W, const floating *vbias,
                                   const floating *hbias, const floating *sigma,
                                   Py_ssize_t D, Py_ssize_t M, double *log_Z,
                                   int n_threads) noexcept nogil:
    """Exact ln Z of a Gaussian RBM (MS09 Sec. 5.2's energy), v integrated out for each
    of the 2^M hidden states:

        ln Z = sum_i ln(sqrt(2 pi) sigma_i)
               + ln sum_h exp(c.h + sum_i (b_i u_i / sigma_i + u_i^2 / 2)),  u = W h,

    in float64: blocks of 2^min(M, 12) states, u computed exactly at each block's start
    and then moved by one column of W per state (Gray-code order); each block's
    log-sum-exp, then the blocks' in a fixed order, so the result does not depend on
    ``n_threads``.  0, -1 when memory runs out, -2 for M > 40 or D < 1."""
    cdef Py_ssize_t low = min(M, 12), nb, t, s, i, j, k, g
    cdef double *Wt
    cdef double *bs
    cdef double *c
    cdef double *terms
    cdef double *u
    cdef double *e
    cdef double ch, x, mx, acc, sign
    cdef int bad = 0
    if D < 1 or M < 0 or M > 40:
        return -2
    nb = (<Py_ssize_t> 1) << (M - low)
    Wt = <double *> malloc((M * D + D + M + 1) * sizeof(double))
    terms = <double *> malloc(nb * sizeof(double))
    if Wt == NULL or terms == NULL:
        free(Wt)
        free(terms)
        return -1
    bs, c = Wt + M * D, Wt + M * D + D
    for i in range(D):
        bs[i] = <double> vbias[i] / <double> sigma[i]
        for j in range(M):
            Wt[j * D + i] = W[i * M + j]           # column j of W, contiguous
    for j in range(M):
        c[j] = hbias[j]
    with parallel(num_threads=cap_threads(n_threads, (nb << low) * D // 20000)):
        u = <double *> malloc((D + ((<Py_ssize_t> 1) << low)) * sizeof(double))
        for t in prange(nb, schedule='static'):
            if u == NULL:
                bad += 1
                continue
            e = u + D
            ch = 0.0
            for i in range(D):
                u[i] = 0.0
            for k in range(M - low):               # the block's high bits, exactly
                if (t >> k) & 1:
                    ch = ch + c[low + k]
                    for i in range(D):
                        u[i] = u[i] + Wt[(low + k) * D + i]
            for s in range((<Py_ssize_t> 1) << low):
                if s > 0:                          # Gray code: one low bit flips
                    j = 0
                    while not ((s >> j) & 1):
                        j = j + 1
                    g = s ^ (s >> 1)
                    sign = 1.0 if (g >> j) & 1 else -1.0
                    ch = ch + sign * c[j]
                    for i in range(D):
                        u[i] = u[i] + sign * Wt[j * D + i]
                x = ch
                for i in range(D):
                    x = x + u[i] * (bs[i] + 0.5 * u[i])
                e[s] = x
            mx = e[0]
            for s in range(1, (<Py_ssize_t> 1) << low):
                if e[s] > mx:
                    mx = e[s]
            acc = 0.0
            for s in range((<Py_ssize_t> 1) << low):
                acc = acc + exp(e[s] - mx)
            terms[t] = mx + log(acc)
        free(u)
    if bad:
        free(Wt)
        free(terms)
        return -1
    mx = terms[0]
    for t in range(1, nb):
        if terms[t] > mx:
            mx = terms[t]
    acc = 0.0
    for t in range(nb):
        acc = acc + exp(terms[t] - mx)
    x = mx + log(acc) + D * 0.9189385332046727        # ln sqrt(2 pi) per unit
    for i in range(D):
        x = x + log(<double> sigma[i])
    log_Z[0] = x
    free(Wt)
    free(terms)
    return 0


def gauss_log_partition(const floating[:, ::1] W, const floating[::1] vbias,
                        const floating[::1] hbias, const floating[::1] sigma,
                        int n_threads=1):
    """Exact ln Z of the Gaussian RBM (W, vbias, hbias, sigma) over its 2^M hidden
    states (gauss_exact_log_partition; GaussianRBM.log_partition, the C API's
    gauss_exact_log_partition): float64, the same bits for any ``n_threads``."""
    cdef Py_ssize_t D = W.shape[0], M = W.shape[1]
    cdef double out = 0.0
    cdef int status
    if vbias.shape[0] != D or sigma.shape[0] != D or hbias.shape[0] != M or D < 1:
        raise ValueError("gauss_log_partition: the shapes of W, vbias, hbias and sigma do "
                         "not match.")
    if M > 40:
        raise ValueError(f"gauss_log_partition: 2^{M} hidden states are too many.")
    with nogil:
        status = gauss_exact_log_partition(&W[0, 0] if M > 0 else &vbias[0], &vbias[0],
                                           &hbias[0] if M > 0 else &vbias[0], &sigma[0], D,
                                           M, &out, n_threads)
    if status == -1:
        raise MemoryError("out of memory in gauss_log_partition")
    return out


# the kernels run through the one dispatch table (cyrbm._dispatch), which holds the switch
from cyrbm._dispatch cimport kernel_table
cyrbm_kt = kernel_table()
