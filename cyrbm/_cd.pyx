# cython: language_level=3
"""One CD-k / PCD-k step of a binary RBM (SM08 Eq. 7; persistent chains: Hu & Yu Sec. 3)
on aligned, padded buffers: ``cd_update`` (statistics and update in one pass),
``cd_statistics`` and ``apply_update`` (its two halves), with their scratch memory
``Workspace``.  The products and draws are _gibbs.pyx's (``padded_product``,
``padded_sample``), the loops cyrbm/_kernels/gibbs_t.h.

Determinism as in _gibbs.pyx: one thread computes each output element, in a fixed order,
and each chain draws from its own stream alone, so the step gives the same bits for any
number of threads.
"""
import numpy as np

from cython.parallel cimport prange, parallel
from cyrbm._omp cimport cap_threads
from libc.stdint cimport uint8_t, int32_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy
from libc.math cimport isfinite
from cython cimport floating

from cyrbm._random cimport cyrbm_rng, check_streams
from cyrbm._ckernels cimport *
from cyrbm._gibbs cimport (aligned_buffer, active_lists, transpose, padded_product,
                           padded_sample, SOURCE_PADDED, SOURCE_TRANSPOSE)

# the kernels run through the one dispatch table (cyrbm._dispatch), which holds the switch
from cyrbm._dispatch cimport kernel_table
cyrbm_kt = kernel_table()


cdef enum:
    # visible units whose gradient rows cd_update computes and applies at a time (in L1)
    GRADIENT_ROWS = 16


cdef struct Scratch:
    # the buffers of a Workspace, as plain C for the nogil step functions
    Py_ssize_t batch, ldv, ldh
    char *Wp              # n_visible x ldh: W with padded rows
    char *vb              # ldv: visible biases, zero padded
    char *hb              # ldh: hidden biases, zero padded
    char *ph0             # batch x ldh: p(h | data)
    char *act_h           # batch x ldh: hidden activations / probabilities of the chains
    char *act_v           # batch x ldv: visible activations / probabilities
    char *hsum            # ldh: sum over the batch of p(h|data) - p(h|chains)
    int32_t *vidx         # batch x n_visible: active visible units of the data
    int32_t *vcnt
    int32_t *kidx         # batch x n_visible: active visible units of the chains
    int32_t *kcnt
    int32_t *hidx         # batch x n_hidden: active hidden units of the chains
    int32_t *hcnt
    uint8_t *hstate       # batch x n_hidden: hidden states of the chains
    uint8_t *codes        # batch x ceil(max(n_visible, n_hidden) / 4): subset codes
    int32_t *colpos       # n_visible x batch: data rows in which visible unit i is on
    int32_t *npos
    int32_t *colneg       # n_visible x batch: chains in which visible unit i is on
    int32_t *nneg
    char **panels         # per thread: a block of W.T (n_hidden x 4 vectors), or gradient rows


cdef struct cd_settings:
    # the scalars of a CD-k / PCD-k step (a dict with these keys at the Python boundary)
    int k                   # block-Gibbs sweeps of the chains
    bint persistent         # PCD (chains persist) rather than CD (chains start at the data)
    double learning_rate
    double momentum
    double weight_decay     # L2 on W
    double scale            # applied to the gradient sums (1 / batch size)
    int n_threads


cdef class Workspace:
    """Scratch memory of ``cd_statistics`` / ``cd_update`` for one problem size, reused
    across mini-batches.

    ``Workspace(batch_size, n_visible, n_hidden, dtype)``.  Holding one across calls
    avoids allocating (and the kernel zeroing) a few MB per mini-batch.  Nothing in it
    carries over from one call to the next.  Rows are padded to an odd number of whole
    64-byte lines (``cyrbm_padded_ld``) so the products read aligned weight rows that do
    not pile up in a few cache sets.
    """
    cdef readonly Py_ssize_t batch_size, n_visible, n_hidden
    cdef readonly object dtype
    cdef Scratch s
    cdef Py_ssize_t panel_bytes, n_panels
    cdef list _keep, _panels

    def __cinit__(self, Py_ssize_t batch_size, Py_ssize_t n_visible, Py_ssize_t n_hidden,
                  dtype=np.float32):
        dt = np.dtype(dtype)
        if dt != np.float32 and dt != np.float64:
            raise ValueError(f"dtype must be float32 or float64, not {dt}.")
        if batch_size < 1 or n_visible < 1 or n_hidden < 1:
            raise ValueError("a workspace needs a positive batch size and layer sizes.")
        self.batch_size, self.n_visible, self.n_hidden = batch_size, n_visible, n_hidden
        self.dtype = dt
        cdef Py_ssize_t B = batch_size, D = n_visible, M = n_hidden, f = dt.itemsize
        cdef Py_ssize_t i4 = sizeof(int32_t)
        cdef Scratch *s = &self.s
        s.batch = B
        s.ldv = cyrbm_padded_ld(D, f)
        s.ldh = cyrbm_padded_ld(M, f)
        self._keep = []
        k = self._keep
        s.Wp = aligned_buffer(k, D * s.ldh * f)
        s.vb = aligned_buffer(k, s.ldv * f)
        s.hb = aligned_buffer(k, s.ldh * f)
        s.ph0 = aligned_buffer(k, B * s.ldh * f)
        s.act_h = aligned_buffer(k, B * s.ldh * f)
        s.act_v = aligned_buffer(k, B * s.ldv * f)
        s.hsum = aligned_buffer(k, s.ldh * f)
        s.vidx = <int32_t *> aligned_buffer(k, B * D * i4)
        s.vcnt = <int32_t *> aligned_buffer(k, B * i4)
        s.kidx = <int32_t *> aligned_buffer(k, B * D * i4)
        s.kcnt = <int32_t *> aligned_buffer(k, B * i4)
        s.hidx = <int32_t *> aligned_buffer(k, B * M * i4)
        s.hcnt = <int32_t *> aligned_buffer(k, B * i4)
        s.hstate = <uint8_t *> aligned_buffer(k, B * M)
        s.codes = <uint8_t *> aligned_buffer(k, B * ((max(D, M) + 3) // 4))
        s.colpos = <int32_t *> aligned_buffer(k, D * B * i4)
        s.npos = <int32_t *> aligned_buffer(k, D * i4)
        s.colneg = <int32_t *> aligned_buffer(k, D * B * i4)
        s.nneg = <int32_t *> aligned_buffer(k, D * i4)
        # a panel holds a block of W.T (n_hidden x 256 bytes) or GRADIENT_ROWS rows of dW
        self.panel_bytes = max(M * 4 * 64, GRADIENT_ROWS * s.ldh * f)
        self._panels = []
        s.panels = NULL
        self.n_panels = 0

    def __dealloc__(self):
        free(self.s.panels)

    cdef int ensure_panels(self, Py_ssize_t n) except -1:
        """At least n per-thread panels."""
        if n <= self.n_panels:
            return 0
        cdef char **p = <char **> realloc(self.s.panels, n * sizeof(char *))
        if p == NULL:
            raise MemoryError()
        self.s.panels = p
        while self.n_panels < n:
            self.s.panels[self.n_panels] = aligned_buffer(self._panels, self.panel_bytes)
            self.n_panels += 1
        return 0

    def __repr__(self):
        return (f"Workspace(batch_size={self.batch_size}, n_visible={self.n_visible}, "
                f"n_hidden={self.n_hidden}, dtype={self.dtype.name})")

    def matches(self, Py_ssize_t batch_size, Py_ssize_t n_visible, Py_ssize_t n_hidden,
                dtype):
        """True when this workspace fits a problem of these sizes and dtype."""
        return (batch_size == self.batch_size and n_visible == self.n_visible
                and n_hidden == self.n_hidden and np.dtype(dtype) == self.dtype)


cdef void given_probs(floating *out, Py_ssize_t ldo, const floating *x, const floating *hb,
                      Py_ssize_t M) noexcept nogil:
    """out[0:ldo] = sigma(x + hb) on a padded row (pads: sigma(0), as the products)."""
    cdef Py_ssize_t j
    for j in range(M):
        out[j] = x[j] + hb[j]
    for j in range(M, ldo):
        out[j] = 0
    k_expit(out, ldo)


cdef void cd_phase(Scratch *s, const floating *W, Py_ssize_t D, Py_ssize_t M,
                   const floating *vbias, const floating *hbias, const uint8_t *v_data,
                   uint8_t *v_chain, bint persistent, int k, cyrbm_rng *st,
                   int n_threads, const floating *xin=NULL) noexcept nogil:
    """Everything of a CD-k / PCD-k step but the weight gradient itself: p(h | data) in
    ph0, k block-Gibbs sweeps of the chains (v_chain, stream n for chain n), p(h | chains)
    in act_h, the column lists of data and chains (colpos, colneg) and hsum.  ``xin``
    (k = 0 only, or NULL): the chains' W^T v (batch x n_hidden) as their sampler kept
    it, so p(h | chains) = sigma(xin + hbias) without a product."""
    cdef Py_ssize_t B = s.batch, ldv = s.ldv, ldh = s.ldh, i
    cdef floating *Wp = <floating *> s.Wp
    cdef floating *vb = <floating *> s.vb
    cdef floating *hb = <floating *> s.hb
    cdef floating *ph0 = <floating *> s.ph0
    cdef floating *act_h = <floating *> s.act_h
    cdef floating *act_v = <floating *> s.act_v
    cdef floating *hsum = <floating *> s.hsum
    cdef floating *ph = ph0      # p(h | current chain state)
    cdef int t
    # W with aligned rows, for the hidden-side products
    for i in prange(D, num_threads=cap_threads(n_threads, D // 64), schedule='static'):
        memcpy(Wp + i * ldh, W + i * M, M * sizeof(floating))
    memcpy(vb, vbias, D * sizeof(floating))
    memcpy(hb, hbias, M * sizeof(floating))
    # positive phase: p(h | data)
    active_lists(v_data, B, D, s.vidx, s.vcnt, n_threads)
    padded_product(ph0, ldh, hb, Wp, ldh, W, M, SOURCE_PADDED, D, M, v_data, s.vidx,
                   s.vcnt, s.codes, s.panels, B, True, n_threads)
    if persistent:
        active_lists(v_chain, B, D, s.kidx, s.kcnt, n_threads)
        if xin != NULL and k == 0:
            for i in prange(B, num_threads=cap_threads(n_threads, B // 16), schedule='static'):
                given_probs(act_h + i * ldh, ldh, xin + i * M, hb, M)
        else:
            padded_product(act_h, ldh, hb, Wp, ldh, W, M, SOURCE_PADDED, D, M, v_chain,
                           s.kidx, s.kcnt, s.codes, s.panels, B, True, n_threads)
        ph = act_h
    # k block-Gibbs sweeps
    for t in range(k):
        padded_sample(ph, ldh, M, B, st, s.hstate, s.hidx, s.hcnt, n_threads)
        padded_product(act_v, ldv, vb, Wp, ldh, W, M, SOURCE_TRANSPOSE, M, D, s.hstate,
                       s.hidx, s.hcnt, s.codes, s.panels, B, True, n_threads)
        padded_sample(act_v, ldv, D, B, st, v_chain, s.kidx, s.kcnt, n_threads)
        padded_product(act_h, ldh, hb, Wp, ldh, W, M, SOURCE_PADDED, D, M, v_chain, s.kidx,
                       s.kcnt, s.codes, s.panels, B, True, n_threads)
        ph = act_h
    # which batch rows have visible unit i on, data and chains
    cyrbm_column_lists(s.vidx, D, s.vcnt, B, D, s.colpos, s.npos)
    cyrbm_column_lists(s.kidx, D, s.kcnt, B, D, s.colneg, s.nneg)
    k_colsum_diff(hsum, ph0, act_h, ldh, B, M)


cdef void gradient_rows(const Scratch *s, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t v0,
                        Py_ssize_t v1, Py_ssize_t M, floating *out,
                        Py_ssize_t ldo) noexcept nogil:
    """out[i - r0, cols] = dW[i, cols] for visible units r0 <= i < r1 and the column
    vectors v0 <= v < v1 (cols = v*VL ...), four vectors at a time: the sum of p(h | data)
    over the data rows with v_i = 1, minus that of p(h | chains) over the chains with
    v_i = 1, in list order (cyrbm_rowdiffs).  The same values however it is called."""
    cdef Py_ssize_t VL = 64 // sizeof(floating), v = v0, g, B = s.batch
    cdef floating *ph0 = <floating *> s.ph0
    cdef floating *act_h = <floating *> s.act_h
    while v < v1:
        g = min(4, v1 - v)
        k_rowdiffs(out + v * VL, ldo, min(g * VL, M - v * VL), ph0 + v * VL,
                   act_h + v * VL, s.ldh, s.colpos + r0 * B, s.npos + r0,
                   s.colneg + r0 * B, s.nneg + r0, B, r1 - r0)
        v = v + g


cdef Workspace _checked_workspace(Workspace workspace, Py_ssize_t B, Py_ssize_t D,
                                  Py_ssize_t M, dt, int n_threads):
    if workspace is None:
        workspace = Workspace(B, D, M, dt)
    elif not workspace.matches(B, D, M, dt):
        raise ValueError(f"{workspace!r} does not fit batch {B}, {D} visible, {M} hidden, "
                         f"{np.dtype(dt).name}")
    workspace.ensure_panels(max(1, min(n_threads, (max(D, M) + 7) // 8)))
    return workspace


def _check_step(Py_ssize_t B, Py_ssize_t D, Py_ssize_t M, Py_ssize_t nvb, Py_ssize_t nhb,
                v_chain_shape, Py_ssize_t v_data_cols, int k, streams, bint persistent=False):
    check_streams(streams, B, "streams", at_least=True)
    if k < 0 or (k == 0 and not persistent):
        raise ValueError("k must be at least 1 (0 only for persistent chains)")
    if v_chain_shape[0] != B or v_chain_shape[1] != D or v_data_cols != D:
        raise ValueError("v_data and v_chain must both be batch x n_visible")
    if nvb != D or nhb != M:
        raise ValueError("bias shapes do not match W")


def _cd_statistics(const floating[:, ::1] W,        # IN  n_visible x n_hidden
                   const floating[::1] vbias,         # IN
                   const floating[::1] hbias,         # IN
                   const uint8_t[:, ::1] v_data,      # IN  batch x n_visible
                   uint8_t[:, ::1] v_chain,           # INOUT chains
                   uint64_t[:, ::1] streams,          # INOUT one per chain
                   floating[:, ::1] dW,               # OUT
                   floating[::1] dvbias,              # OUT
                   floating[::1] dhbias,              # OUT
                   dict settings, Workspace workspace):
    """Sums over a mini-batch of the CD-k / PCD-k gradient (SM08 Eq. 7; Hu & Yu Sec. 3).

    dW = sum_n v_n p(h | v_n)^T - sum_n v~_n p(h | v~_n)^T, likewise for the biases, where
    v~ is the visible state after k block-Gibbs sweeps: started at the data (CD-k,
    ``persistent`` false) or at the persistent chains ``v_chain`` (PCD-k, also called SML;
    ``v_chain`` is advanced in place).  With ``persistent`` and k = 0, v~ is ``v_chain``
    as given: the negative phase of samples drawn by another transition (the T = 1 chains
    of parallel tempering, mode-hopping chains).  For CD the final states are written to
    ``v_chain`` too, so callers can inspect them.  Chain n uses stream n.
    The sums are not divided by the batch size.

    ``workspace``: a ``Workspace(batch, n_visible, n_hidden, dtype)`` to reuse across
    calls (one is made for the call when None).  ``cd_update`` does this and
    ``apply_update`` in one pass.
    """
    cdef cd_settings cfg = _settings(settings)
    cdef Py_ssize_t B = v_data.shape[0], D = W.shape[0], M = W.shape[1], i
    cdef int n_threads = cfg.n_threads
    _check_step(B, D, M, vbias.shape[0], hbias.shape[0], v_chain.shape, v_data.shape[1],
                cfg.k, streams, cfg.persistent)
    if dW.shape[0] != D or dW.shape[1] != M or dvbias.shape[0] != D or dhbias.shape[0] != M:
        raise ValueError("gradient shapes do not match W")
    if B == 0:
        dW[:, :] = 0
        dvbias[:] = 0
        dhbias[:] = 0
        return
    cdef Workspace ws = _checked_workspace(workspace, B, D, M,
                                           np.float32 if floating is float else np.float64,
                                           n_threads)
    cdef Scratch *s = &ws.s
    cdef Py_ssize_t VL = 64 // sizeof(floating), nv = (M + VL - 1) // VL
    cdef int nt = cap_threads(n_threads, nv), t
    with nogil:
        cd_phase(s, &W[0, 0], D, M, &vbias[0], &hbias[0], &v_data[0, 0], &v_chain[0, 0],
                 cfg.persistent, cfg.k, <cyrbm_rng *> &streams[0, 0], n_threads)
        # each thread: all visible units, a contiguous range of column vectors
        for t in prange(nt, num_threads=nt, schedule='static'):
            gradient_rows(s, 0, D, t * nv // nt, (t + 1) * nv // nt, M, &dW[0, 0], M)
        for i in range(D):
            dvbias[i] = <floating> (s.npos[i] - s.nneg[i])
        memcpy(&dhbias[0], s.hsum, M * sizeof(floating))


cdef int update_biases(floating *vbias, floating *vel_vbias, const floating *dvbias,
                       Py_ssize_t D, floating *hbias, floating *vel_hbias,
                       const floating *dhbias, Py_ssize_t M, floating lr, floating mom,
                       floating sc) noexcept nogil:
    """The momentum step of the biases (no weight decay); the number of non-finite ones."""
    cdef Py_ssize_t i
    cdef int bad = 0
    for i in range(D):
        vel_vbias[i] = mom * vel_vbias[i] + lr * sc * dvbias[i]
        vbias[i] = vbias[i] + vel_vbias[i]
        if not isfinite(vbias[i]):
            bad = bad + 1
    for i in range(M):
        vel_hbias[i] = mom * vel_hbias[i] + lr * sc * dhbias[i]
        hbias[i] = hbias[i] + vel_hbias[i]
        if not isfinite(hbias[i]):
            bad = bad + 1
    return bad


cdef inline int momentum_row(floating *W, floating *vel, const floating *d, Py_ssize_t M,
                             floating lr, floating mom, floating wd,
                             floating sc) noexcept nogil:
    return k_momentum(W, vel, d, M, lr, mom, wd, sc, NULL)


def _cd_update(floating[:, ::1] W,                   # INOUT parameters
               floating[::1] vbias,                    # INOUT
               floating[::1] hbias,                    # INOUT
               floating[:, ::1] vel_W,                 # INOUT velocities
               floating[::1] vel_vbias,                # INOUT
               floating[::1] vel_hbias,                # INOUT
               const uint8_t[:, ::1] v_data,           # IN  batch x n_visible
               uint8_t[:, ::1] v_chain,                # INOUT chains
               uint64_t[:, ::1] streams,               # INOUT one per chain
               dict settings, Workspace workspace,
               chain_inputs):                          # IN  batch x n_hidden or None
    """One CD-k / PCD-k training step: ``cd_statistics`` then ``apply_update`` (same
    arguments), bit-identical to them, but without storing the weight gradient.
    ``chain_inputs`` (k = 0 only): the chains' W^T v as kept by their sampler (see
    cd_phase), or None.

    Each thread computes the gradient rows of GRADIENT_ROWS visible units into a buffer
    that stays in L1 and applies the momentum step to those rows of W and vel at once;
    writing and re-reading a 1.5 MB dW (784 x 500 float32) cost about 0.4 ms per
    mini-batch, as much as the gradient itself.  Returns False if any parameter became
    non-finite.
    """
    cdef cd_settings cfg = _settings(settings)
    cdef Py_ssize_t B = v_data.shape[0], D = W.shape[0], M = W.shape[1], i, b, r1
    cdef int n_threads = cfg.n_threads
    _check_step(B, D, M, vbias.shape[0], hbias.shape[0], v_chain.shape, v_data.shape[1],
                cfg.k, streams, cfg.persistent)
    if (vel_W.shape[0] != D or vel_W.shape[1] != M or vel_vbias.shape[0] != D
            or vel_hbias.shape[0] != M):
        raise ValueError("velocity shapes do not match W")
    if B == 0:
        return True
    dt = np.float32 if floating is float else np.float64
    cdef Workspace ws = _checked_workspace(workspace, B, D, M, dt, n_threads)
    cdef Scratch *s = &ws.s
    cdef floating lr = <floating> cfg.learning_rate, mom = <floating> cfg.momentum
    cdef floating wd = <floating> cfg.weight_decay, sc = <floating> cfg.scale
    cdef Py_ssize_t VL = 64 // sizeof(floating), nv = (M + VL - 1) // VL
    cdef Py_ssize_t n_blocks = (D + GRADIENT_ROWS - 1) // GRADIENT_ROWS
    cdef int nt = cap_threads(n_threads, n_blocks // 2), t
    cdef int bad = 0
    cdef floating *buf
    cdef floating *dvb = <floating *> ws.s.act_v      # batch x ldv >= n_visible, free now
    cdef const floating[:, ::1] xin
    cdef const floating *xp = NULL
    if chain_inputs is not None:
        if cfg.k != 0 or not cfg.persistent:
            raise ValueError("chain inputs are for the negative phase of given samples (k = 0).")
        xin = chain_inputs
        if xin.shape[0] != B or xin.shape[1] != M:
            raise ValueError("chain inputs must be batch x n_hidden.")
        xp = &xin[0, 0]
    with nogil:
        cd_phase(s, &W[0, 0], D, M, &vbias[0], &hbias[0], &v_data[0, 0], &v_chain[0, 0],
                 cfg.persistent, cfg.k, <cyrbm_rng *> &streams[0, 0], n_threads, xp)
        # each thread: contiguous runs of GRADIENT_ROWS visible units, all columns
        for t in prange(nt, num_threads=nt, schedule='static'):
            buf = <floating *> s.panels[t]
            for b in range(t * n_blocks // nt, (t + 1) * n_blocks // nt):
                r1 = min((b + 1) * GRADIENT_ROWS, D)
                gradient_rows(s, b * GRADIENT_ROWS, r1, 0, nv, M, buf, s.ldh)
                for i in range(b * GRADIENT_ROWS, r1):
                    bad += 1 - momentum_row(&W[i, 0], &vel_W[i, 0],
                                            buf + (i - b * GRADIENT_ROWS) * s.ldh, M,
                                            lr, mom, wd, sc)
        for i in range(D):
            dvb[i] = <floating> (s.npos[i] - s.nneg[i])
        bad = bad + update_biases(&vbias[0], &vel_vbias[0], dvb, D, &hbias[0], &vel_hbias[0],
                                  <floating *> s.hsum, M, lr, mom, sc)
    return bad == 0


def _apply_update(floating[:, ::1] W,                # INOUT parameters
                  floating[::1] vbias,                 # INOUT
                  floating[::1] hbias,                 # INOUT
                  const floating[:, ::1] dW,           # IN  gradient sums
                  const floating[::1] dvbias,          # IN
                  const floating[::1] dhbias,          # IN
                  floating[:, ::1] vel_W,              # INOUT velocities
                  floating[::1] vel_vbias,             # INOUT
                  floating[::1] vel_hbias,             # INOUT
                  dict settings,
                  floating[:, ::1] WT):                # OUT W.T unless None
    """One momentum step: vel = momentum*vel + lr*(scale*grad - weight_decay*W); W += vel.

    Weight decay (L2) applies to W only.  WT, unless None, is refreshed to W.T
    (``cd_statistics`` does not need it).  Returns False if any parameter became
    non-finite (the caller then restores its last good state).
    """
    cdef cd_settings cfg = _settings(settings)
    cdef Py_ssize_t D = W.shape[0], M = W.shape[1], i
    if (dW.shape[0] != D or dW.shape[1] != M or vel_W.shape[0] != D or vel_W.shape[1] != M
            or vbias.shape[0] != D or dvbias.shape[0] != D or vel_vbias.shape[0] != D
            or hbias.shape[0] != M or dhbias.shape[0] != M or vel_hbias.shape[0] != M):
        raise ValueError("parameter, gradient and velocity shapes do not match")
    cdef bint refresh = WT is not None
    if refresh and (WT.shape[0] != M or WT.shape[1] != D):
        raise ValueError("WT must be n_hidden x n_visible")
    cdef floating lr = <floating> cfg.learning_rate, mom = <floating> cfg.momentum
    cdef floating wd = <floating> cfg.weight_decay, sc = <floating> cfg.scale
    cdef int n_threads = cfg.n_threads
    cdef int bad = 0
    if D == 0 or M == 0:
        return True
    with nogil:
        for i in prange(D, num_threads=cap_threads(n_threads, D // 16), schedule='static'):
            bad += 1 - momentum_row(&W[i, 0], &vel_W[i, 0], &dW[i, 0], M, lr, mom, wd, sc)
        bad = bad + update_biases(&vbias[0], &vel_vbias[0], &dvbias[0], D, &hbias[0],
                                  &vel_hbias[0], &dhbias[0], M, lr, mom, sc)
        if refresh:
            transpose(&W[0, 0], D, M, &WT[0, 0], n_threads)
    return bad == 0


_SETTINGS = ("k", "persistent", "learning_rate", "momentum", "weight_decay", "scale",
             "n_threads")


cdef cd_settings _settings(dict settings) except *:
    missing = [key for key in _SETTINGS if key not in settings]
    if missing:
        raise ValueError(f"CD settings lack {', '.join(missing)}.")
    cdef cd_settings cfg
    cfg.k = settings["k"]
    cfg.persistent = settings["persistent"]
    cfg.learning_rate = settings["learning_rate"]
    cfg.momentum = settings["momentum"]
    cfg.weight_decay = settings["weight_decay"]
    cfg.scale = settings["scale"]
    cfg.n_threads = settings["n_threads"]
    return cfg


def cd_statistics(params, v_data, v_chain, streams, grads, dict settings, Workspace workspace=None):
    """Sums over a mini-batch of the CD-k / PCD-k gradient (SM08 Eq. 7; Hu & Yu Sec. 3).

    ``params`` = (W, vbias, hbias) (IN); ``grads`` = (dW, dvbias, dhbias) (OUT, same
    dtype); ``v_data`` (IN) and ``v_chain`` (INOUT) batch x n_visible uint8; ``streams``
    (INOUT) one per chain; ``settings``: a dict of k, persistent, learning_rate, momentum,
    weight_decay, scale, n_threads (only k, persistent and n_threads are used here).
    See _cd_statistics for the arithmetic."""
    return _cd_statistics(*params, v_data, v_chain, streams, *grads, settings, workspace)


def cd_update(params, velocity, v_data, v_chain, streams, dict settings,
              Workspace workspace=None, chain_inputs=None):
    """One CD-k / PCD-k training step: ``cd_statistics`` then ``apply_update``,
    bit-identical to them, without storing the weight gradient.

    ``params`` = (W, vbias, hbias) and ``velocity`` = (vel_W, vel_vbias, vel_hbias) are
    updated in place (INOUT); ``v_data`` (IN), ``v_chain`` (INOUT), ``streams`` (INOUT) as
    for cd_statistics; ``settings`` as for cd_statistics, all keys used.
    ``chain_inputs`` (IN, with k = 0 and persistent chains only): W^T v of the given
    chains (batch x n_hidden, W's dtype), kept by the sampler that drew them (parallel
    tempering's engine), so the negative phase takes sigma(chain_inputs + hbias) instead
    of a product.  Returns False if any parameter became non-finite."""
    return _cd_update(*params, *velocity, v_data, v_chain, streams, settings, workspace,
                      chain_inputs)


def apply_update(params, grads, velocity, dict settings, WT=None):
    """One momentum step: vel = momentum*vel + lr*(scale*grad - weight_decay*W); W += vel.

    ``params`` (INOUT), ``grads`` (IN), ``velocity`` (INOUT) as for cd_update; weight
    decay (L2) applies to W only; ``WT``, unless None, is refreshed to W.T (OUT).  Returns
    False if any parameter became non-finite (the caller then restores its last good
    state)."""
    return _apply_update(*params, *grads, *velocity, settings, WT)
