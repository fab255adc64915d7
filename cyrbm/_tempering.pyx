# cython: language_level=3
"""Parallel tempering (Cho, Raiko & Ilin 2010) on the Gibbs engine: the swaps of
neighbouring temperatures (``pt_swaps``, CRI10 Table I step 4b, Eq. 5) and the sampler
``pt_sample`` (its nogil driver ``pt_sweeps``, shared with the C API): tempered
block-Gibbs sweeps of the RBMs (t W, b, c) through ``engine_run`` (_anneal.pyx), then
swaps.  The loops are in cyrbm/_kernels/anneal_t.h (cyrbm_pt_swaps).
"""
from cython.parallel cimport prange
from cyrbm._omp cimport cap_threads, seconds_now, signal_raised, raise_set_error, time_to_check
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memcpy
from cython cimport floating

from cyrbm._random cimport cyrbm_rng
from cyrbm._ckernels cimport *
from cyrbm._anneal cimport (ais_buffers, ais_alloc, ais_free, ais_set_tempered, engine_run,
                            valid_ladder, GIBBS_REFRESH)


cdef void pt_swaps(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32,
                   Py_ssize_t ladders, Py_ssize_t K1, const double *temps, int32_t *order,
                   double *beta, cyrbm_rng *streams, int64_t *accepted,
                   int n_threads) noexcept nogil:
    """The swaps of neighbouring temperatures (CRI10 Table I step 4b, Eq. 5) of every
    ladder (see cyrbm_pt_swaps): one contiguous block of ladders per thread; a ladder
    draws only from its own stream, so the result does not depend on the threads."""
    cdef int nt = cap_threads(n_threads, ladders)
    cdef Py_ssize_t t, m0, m1
    if ladders <= 0 or K1 < 2:
        return
    for t in prange(nt, num_threads=nt, schedule='static'):
        m0 = t * ladders // nt
        m1 = (t + 1) * ladders // nt
        k_pt_swaps(float32, P, S, m0, m1, K1, temps, order, beta, streams, accepted)

cdef int pt_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                   Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, Py_ssize_t n,
                   const double *temps, Py_ssize_t n_temps, int steps, cyrbm_rng *streams,
                   cyrbm_rng *swap_streams, int64_t *accepted, int n_threads,
                   bint check_signals=False) noexcept nogil:
    """``steps`` rounds of parallel tempering (Cho, Raiko & Ilin 2010, Table I) on ``n``
    ladders of K1 = ``n_temps`` chains, on the Gibbs engine: each round one tempered
    block-Gibbs sweep of every chain at its temperature (the RBM (t W, b, c)), then the
    swaps of neighbours from the top down by Eq. 5 (pt_swaps).

    v (n K1 x n_visible, INOUT): row m K1 + k is ladder m's chain at temps[k] (on return
    too; the T = 1 samples are rows m K1 + K1 - 1).  Chain r's engine lanes are seeded
    from streams[r] (n K1 streams, advanced by 32 draws), ladder m's swap uniforms come
    from swap_streams[m] (n, advanced by one draw per pair and round).  accepted (n x
    (K1 - 1), INOUT, or NULL) counts accepted swaps per pair.  Returns 0, -1 when memory
    runs out, -2 for invalid sizes or temperatures (not 0 <= t_0 < ... < t_K = 1), -3 when
    a Python signal handler raised, if ``check_signals`` (see signal_raised; v and the
    streams are then as given,
    the swap streams and ``accepted`` advanced)."""
    cdef ais_buffers B
    cdef Py_ssize_t R = n * n_temps, r, s, ldV
    cdef double *beta = NULL
    cdef int32_t *order = NULL
    cdef int64_t *acc = accepted
    cdef double last
    cdef int status
    if n < 0 or steps < 0 or n_visible < 1 or n_hidden < 1 or not valid_ladder(temps, n_temps):
        return -2
    if n == 0 or steps == 0:
        return 0
    B.block = NULL
    status = ais_alloc(&B, floating is float, R, n_visible, 0, n_hidden)
    if status != 0:
        return status
    beta = <double *> malloc(R * sizeof(double))
    order = <int32_t *> malloc(R * sizeof(int32_t))
    if acc == NULL:
        acc = <int64_t *> calloc(n * n_temps, sizeof(int64_t))
    if beta == NULL or order == NULL or acc == NULL:
        free(beta)
        free(order)
        if accepted == NULL:
            free(acc)
        ais_free(&B)
        return -1
    ais_set_tempered(&B, W, vbias, hbias)
    ldV = B.pair.ldV
    for r in range(R):
        order[r] = <int32_t> r
        beta[r] = temps[r % n_temps]
        cyrbm_rng_seed_run(&streams[r], B.st.rng + r * CYRBM_AK_RNG_WORDS)
        memcpy(B.st.v + r * ldV, v + r * n_visible, n_visible)
    last = seconds_now()
    for s in range(steps):
        engine_run(&B, False, beta, s, s + 1, 0, 0, GIBBS_REFRESH, 1 if s == 0 else 0,
                   n_threads, False)
        pt_swaps(&B.pair, &B.st, floating is float, n, n_temps, temps, order, beta,
                 swap_streams, acc, n_threads)
        if check_signals and s + 1 < steps and time_to_check(&last) and signal_raised():
            status = -3             # v is left as given
            break
    if status == 0:
        for r in range(R):
            memcpy(v + r * n_visible, B.st.v + order[r] * ldV, n_visible)
    free(beta)
    free(order)
    if accepted == NULL:
        free(acc)
    ais_free(&B)
    return status


def pt_sample(const floating[:, ::1] W, const floating[::1] vbias,
              const floating[::1] hbias, uint8_t[:, ::1] v, const double[::1] temps,
              int steps, uint64_t[:, ::1] streams, uint64_t[:, ::1] swap_streams,
              int64_t[:, ::1] accepted, int n_threads=1):
    """``steps`` rounds of parallel tempering on len(v) / len(temps) ladders (pt_sweeps):
    v (INOUT, ladder-major, row m K1 + k at temps[k]), streams (INOUT, one per chain),
    swap_streams (INOUT, one per ladder), accepted (INOUT, ladders x (K1 - 1))."""
    cdef Py_ssize_t K1 = temps.shape[0], D = W.shape[0], M = W.shape[1]
    cdef Py_ssize_t R = v.shape[0], n = R // K1 if K1 > 0 else 0
    cdef int status
    if K1 < 1 or R != n * K1 or v.shape[1] != D or vbias.shape[0] != D or hbias.shape[0] != M:
        raise ValueError("chain, temperature, bias and weight shapes do not match.")
    if streams.shape[0] != R or streams.shape[1] != 4 or swap_streams.shape[0] != n \
            or swap_streams.shape[1] != 4:
        raise ValueError(f"streams must have shape ({R}, 4) and swap streams ({n}, 4).")
    if accepted.shape[0] != n or accepted.shape[1] != max(K1 - 1, 1):
        raise ValueError(f"accepted must have shape ({n}, {max(K1 - 1, 1)}).")
    if R == 0 or steps <= 0:
        return
    with nogil:
        status = pt_sweeps(&W[0, 0], &vbias[0], &hbias[0], D, M, &v[0, 0], n, &temps[0], K1,
                           steps, <cyrbm_rng *> &streams[0, 0],
                           <cyrbm_rng *> &swap_streams[0, 0], &accepted[0, 0], n_threads,
                           True)
    if status == -3:
        raise_set_error()
    if status == -1:
        raise MemoryError("no memory for the tempered chains.")
    if status != 0:
        raise ValueError("temperatures must rise strictly from t_0 >= 0 to exactly 1.")


# the kernels run through the one dispatch table (cyrbm._dispatch), which holds the switch
from cyrbm._dispatch cimport kernel_table
cyrbm_kt = kernel_table()
