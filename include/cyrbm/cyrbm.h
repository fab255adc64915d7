/* cyrbm's C API: its nogil kernels, callable from C extension code.
 *
 * Usage, in an extension module that includes this header (compile with
 * -I$(python -c "import cyrbm; print(cyrbm.get_include())")):
 *
 *     static const cyrbm_capi *cyrbm;
 *     PyMODINIT_FUNC PyInit_mymod(void) {
 *         cyrbm = cyrbm_capi_import();          // imports cyrbm.capi; NULL + exception on failure
 *         if (cyrbm == NULL) return NULL;
 *         ...
 *     }
 *     ... cyrbm->log_unnormalized_f64(W, vbias, hbias, n_visible, n_hidden, v, n, out, 1);
 *
 * Conventions: W is n_visible x n_hidden in C order; states are uint8 0/1 matrices in C
 * order, one row per chain or sample; every chain owns a cyrbm_rng stream (rng.h), which
 * Python code creates with cyrbm.capi.make_streams(seed, n).  Functions are thread-safe,
 * do not need the GIL, and return 0 on success, -1 when scratch memory cannot be
 * allocated, -2 for invalid sizes.  The table only grows: a new entry bumps
 * CYRBM_CAPI_VERSION and existing entries never change.
 */
#ifndef CYRBM_H
#define CYRBM_H

#include <Python.h>
#include <stdint.h>
#include "cyrbm/rng.h"

#define CYRBM_CAPI_VERSION 1

typedef struct cyrbm_capi {
    int version;
    /* steps block-Gibbs sweeps h ~ p(h|v), v ~ p(v|h) (SM08 Eq. 5-6) on n chains:
     * v (n x n_visible) in place, h (n x n_hidden) gets the last hidden states. */
    int (*gibbs_sweeps_f64)(const double *W, const double *vbias, const double *hbias,
                            Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v,
                            uint8_t *h, Py_ssize_t n, int steps, cyrbm_rng *streams,
                            int n_threads);
    int (*gibbs_sweeps_f32)(const float *W, const float *vbias, const float *hbias,
                            Py_ssize_t n_visible, Py_ssize_t n_hidden, uint8_t *v,
                            uint8_t *h, Py_ssize_t n, int steps, cyrbm_rng *streams,
                            int n_threads);
    /* out[r] = ln p*(v_r) (SM08 Eq. 2 with h summed out), float64 */
    int (*log_unnormalized_f64)(const double *W, const double *vbias, const double *hbias,
                                Py_ssize_t n_visible, Py_ssize_t n_hidden, const uint8_t *v,
                                Py_ssize_t n, double *out, int n_threads);
    int (*log_unnormalized_f32)(const float *W, const float *vbias, const float *hbias,
                                Py_ssize_t n_visible, Py_ssize_t n_hidden, const uint8_t *v,
                                Py_ssize_t n, double *out, int n_threads);
} cyrbm_capi;

/* Import the function table from the Python module cyrbm.capi (needs the GIL). */
static const cyrbm_capi *cyrbm_capi_import(void) {
    const cyrbm_capi *api = (const cyrbm_capi *) PyCapsule_Import("cyrbm.capi._C_API", 0);
    if (api != NULL && api->version < CYRBM_CAPI_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "the installed cyrbm has C API version %d, this extension needs %d",
                     api->version, CYRBM_CAPI_VERSION);
        return NULL;
    }
    return api;
}

#endif
