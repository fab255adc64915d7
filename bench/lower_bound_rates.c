/* Machine rates for bench/lower_bound.py: the operations AIS and the Chib-style
 * estimator must do, each timed alone at its best (data in L1 unless said), on
 * `nthreads` OpenMP threads at once (each thread its own buffers; a shared table where
 * the engine shares one).  Every function returns wall seconds; the caller divides its
 * operation count by them.  exp is vmath.h's own polynomial (the kernels' exp), in
 * 64-byte vectors (GCC vector extensions: AVX-512 where -march=native has it).
 * Built by lower_bound.py with  cc -O3 -march=native -fopenmp -shared -fPIC
 * -I cyrbm/_kernels. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

/* 64-byte native vectors, then vmath.h's vector exp (vexp_f, vexp_d) as a kernel
 * variant instantiates it (simd.h's names) */
typedef double vd __attribute__((vector_size(64), aligned(64)));
typedef uint64_t vq __attribute__((vector_size(64), aligned(64)));
typedef float vf __attribute__((vector_size(64), aligned(64)));
typedef uint32_t vu __attribute__((vector_size(64), aligned(64)));
#define CYRBM_SIMD_H 1
#define CYRBM_VBYTES 64
#include "vmath.h"

static volatile double lb_sink;

/* n (a multiple of the lanes) exp(-|x|) per rep from an L1 array of type V (lanes of
 * T, sign bit SIGN, bits U) */
#define LB_EXP(NAME, V, T, U, VEXP, SIGN)                                                 \
    double NAME(int n, long reps, int nthreads) {                                         \
        const int nl = (int)(sizeof(V) / sizeof(T));                                      \
        double t0 = omp_get_wtime();                                                      \
        _Pragma("omp parallel num_threads(nthreads)") {                                   \
            V *x = aligned_alloc(64, (size_t)n * sizeof(T));                              \
            V acc = (V){0};                                                               \
            long r;                                                                       \
            int i, l;                                                                     \
            for (i = 0; i < n / nl; i++)                                                  \
                for (l = 0; l < nl; l++) x[i][l] = (T)((i * nl + l) % 97) * (T)0.1 - (T)4.8; \
            for (r = 0; r < reps; r++)                                                    \
                for (i = 0; i < n / nl; i++) acc += VEXP((V)((U)x[i] | SIGN));             \
            lb_sink += (double)acc[0] + (double)acc[nl - 1];                              \
            free(x);                                                                      \
        }                                                                                 \
        return omp_get_wtime() - t0;                                                      \
    }
LB_EXP(lb_exp_f32, vf, float, vu, vexp_f, 0x80000000u)
LB_EXP(lb_exp_f64, vd, double, vq, vexp_d, 0x8000000000000000ULL)

/* xoshiro256++ on 8 interleaved lanes (rng.h's AIS layout): `words` 64-bit outputs per
 * thread (a multiple of 8) */
double lb_xoshiro(long words, int nthreads) {
    double t0 = omp_get_wtime();
#pragma omp parallel num_threads(nthreads)
    {
        vq s0 = (vq){1, 2, 3, 4, 5, 6, 7, 8}, s1 = s0 * 3 + 11, s2 = s0 * 7 + 5,
           s3 = s0 * 13 + 1, acc = (vq){0};
        long k;
        for (k = 0; k < words / 8; k++) {
            const vq t = s1 << 17;
            const vq y = s0 + s3;
            acc ^= ((y << 23) | (y >> 41)) + s0;
            s2 ^= s0;
            s3 ^= s1;
            s1 ^= s2;
            s0 ^= s3;
            s2 ^= t;
            s3 = (s3 << 45) | (s3 >> 19);
        }
        lb_sink += (double)(acc[0] ^ acc[7]);
    }
    return omp_get_wtime() - t0;
}

/* out[0:ld] += sum_q table[idx[q], 0:ld], ld a multiple of 128, 8 vectors of columns in
 * registers at a time (the engine's row sums), `reps` times, each thread its own out */
double lb_row_add(const float *table, int ld, const int32_t *idx, int nidx, long reps,
                  int nthreads) {
    double t0 = omp_get_wtime();
#pragma omp parallel num_threads(nthreads)
    {
        vf *out = aligned_alloc(64, (size_t)ld * 4);
        long r;
        int c, q, k;
        memset(out, 0, (size_t)ld * 4);
        for (r = 0; r < reps; r++)
            for (c = 0; c < ld; c += 128) {
                vf a[8];
                for (k = 0; k < 8; k++) a[k] = (vf){0};
                for (q = 0; q < nidx; q++) {
                    const vf *w = (const vf *)(table + (ptrdiff_t)idx[q] * ld + c);
                    for (k = 0; k < 8; k++) a[k] += w[k];
                }
                for (k = 0; k < 8; k++) out[c / 16 + k] += a[k];
            }
        for (c = 0; c < ld / 16; c++)  /* every column: none of the sums is dead */
            lb_sink += out[c][0] + out[c][15];
        free(out);
    }
    return omp_get_wtime() - t0;
}

/* read n floats (a multiple of 128) of a shared table `reps` times per thread: the
 * bandwidth from wherever a table of that size lives (L1, L2, L3) */
double lb_stream(const float *table, long n, long reps, int nthreads) {
    double t0 = omp_get_wtime();
#pragma omp parallel num_threads(nthreads)
    {
        vf a[8];
        long r, i;
        int k;
        for (k = 0; k < 8; k++) a[k] = (vf){0};
        for (r = 0; r < reps; r++)
            for (i = 0; i < n; i += 128)
                for (k = 0; k < 8; k++) a[k] += *(const vf *)(table + i + 16 * k);
        for (k = 0; k < 8; k++)     /* every accumulator: none of the loads is dead */
            lb_sink += a[k][0];
    }
    return omp_get_wtime() - t0;
}

/* the Chib-style estimator's inner product: P *= A + B * e over n floats (a multiple of
 * 128), `reps` times per thread.  mode 0: from L1, in 8 independent product chains (the
 * machine's rate); 1: the same in the kernel's former 2 chains (128-byte logical lanes: a
 * chain of latencies); 2: 8 chains with e from a block of 16 rows in turn (L2), as the
 * kernel's passes read the table rows of CHIB_SITE_BLOCK sites for each item in flight;
 * 3: as 2, two sites of one item per pass (A and B loaded once for two rows of e, the
 * second site's factor B + A e: what computing the next site's product ahead, while the
 * state is the same, would save), reps counting sites */
#define LB_LOGPROD(NC, ROWS)                                                              \
    for (r = 0; r < reps; r++) {                                                          \
        const vf *e = E + (r % (ROWS)) * (n / 16);                                        \
        for (i = 0; i < n / 16; i += NC)                                                  \
            for (k = 0; k < NC; k++) p[k] *= A[i + k] + B[i + k] * e[i + k];              \
    }
double lb_logprod(int n, long reps, int nthreads, int mode) {
    double t0 = omp_get_wtime();
#pragma omp parallel num_threads(nthreads)
    {
        const int rows = mode >= 2 ? 16 : 1;
        vf *A = aligned_alloc(64, (size_t)n * 4), *B = aligned_alloc(64, (size_t)n * 4),
           *E = aligned_alloc(64, (size_t)n * 4 * rows);
        vf p[8];
        long r;
        int i, k;
        for (k = 0; k < 8; k++) p[k] = (vf){0} + 1.0f;
        for (i = 0; i < n / 16; i++) {
            A[i] = (vf){0} + 0.5f;
            B[i] = (vf){0} + 0.5f;
        }
        for (i = 0; i < n / 16 * rows; i++) E[i] = (vf){0} + 1.0f;
        if (mode == 1) {
            LB_LOGPROD(2, 1)
        } else if (mode == 2) {
            LB_LOGPROD(8, 16)
        } else if (mode == 3) {
            vf p2[8];
            for (k = 0; k < 8; k++) p2[k] = (vf){0} + 1.0f;
            for (r = 0; r < reps; r += 2) {
                const vf *e = E + (r % 16) * (n / 16), *e2 = E + ((r + 1) % 16) * (n / 16);
                for (i = 0; i < n / 16; i += 8)
                    for (k = 0; k < 8; k++) {
                        const vf a = A[i + k], b = B[i + k];
                        p[k] *= a + b * e[i + k];
                        p2[k] *= b + a * e2[i + k];
                    }
            }
            for (k = 0; k < 8; k++) lb_sink += p2[k][0];
        } else {
            LB_LOGPROD(8, 1)
        }
        for (k = 0; k < 8; k++)     /* every chain: none is dead code */
            lb_sink += p[k][0];
        free(A);
        free(B);
        free(E);
    }
    return omp_get_wtime() - t0;
}
