# Parallel tempering (Cho, Raiko & Ilin 2010) on the Gibbs engine (cyrbm/_tempering.pyx):
# the swaps and the sampler's driver.  A published signature here is an ABI.
from libc.stdint cimport uint8_t, int32_t, int64_t, uint64_t
from cython cimport floating
from cyrbm._random cimport cyrbm_rng

from cyrbm._ckernels cimport *


cdef void pt_swaps(const cyrbm_ais_pair *P, cyrbm_ais_state *S, bint float32,
                   Py_ssize_t ladders, Py_ssize_t K1, const double *temps, int32_t *order,
                   double *beta, cyrbm_rng *streams, int64_t *accepted,
                   int n_threads, double *terms=*) noexcept nogil

# the PT tracker's sums from the kept inputs (see cyrbm_tempered_sums)
cdef void tempered_sums(const cyrbm_ais_pair *P, const cyrbm_ais_state *S, bint float32,
                        Py_ssize_t n, const int32_t *runs, const double *beta,
                        const double *dbias, double *out, int n_threads) noexcept nogil

cdef int pt_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                   Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v, Py_ssize_t n,
                   const double *temps, Py_ssize_t n_temps, int steps, cyrbm_rng *streams,
                   cyrbm_rng *swap_streams, int64_t *accepted, int n_threads,
                   bint check_signals=*) noexcept nogil

# The same for a Gaussian RBM's tempered family (beta scaling W and c; v of the float
# type) and an SRBM's (beta scaling W, c and L; v 0/1): states swap, chains keep their
# temperature and stream; 0, -1, -2, -3 as pt_sweeps (-3: the rounds done are kept).
cdef int gauss_pt_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                         const floating *sigma, Py_ssize_t n_visible, Py_ssize_t n_hidden,
                         floating *v, Py_ssize_t n, const double *temps, Py_ssize_t n_temps,
                         int steps, cyrbm_rng *streams, cyrbm_rng *swap_streams,
                         int64_t *accepted, int n_threads, bint check_signals=*,
                         int variant=*) noexcept nogil
cdef int srbm_pt_sweeps(const floating *W, const floating *vbias, const floating *hbias,
                        const floating *L, Py_ssize_t n_visible, Py_ssize_t n_hidden,
                        uint8_t *v, Py_ssize_t n, const double *temps, Py_ssize_t n_temps,
                        int steps, cyrbm_rng *streams, cyrbm_rng *swap_streams,
                        int64_t *accepted, int n_threads, bint check_signals=*,
                        int variant=*) noexcept nogil

# sum a[0 .. n-1] in NumPy's pairwise order (np.sum of a contiguous row, to the bit)
cdef double pairwise_sum(const double *a, Py_ssize_t n) noexcept nogil
