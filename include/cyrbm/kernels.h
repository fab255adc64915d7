/* Binary-aware products: the hot loops of cyrbm.
 *
 * When one factor of a matrix product is a 0/1 state, the product is a sum of the weight
 * rows selected by the active units: cyrbm_add_rows(out, W, ldw, rows, n_rows, n) adds
 * W[rows[r], 0:n] to out[0:n] for r = 0 .. n_rows-1, in that order (the result does not
 * depend on how work is split between threads).  Callers pass column blocks narrow
 * enough that `out` stays in L1 and the block of W in L2 while a whole batch reuses it.
 *
 * On x86-64 Linux with GCC the loops are compiled for AVX-512, AVX2 and the baseline, and
 * the loader picks the best for the running CPU (function multiversioning), so a portable
 * wheel still runs wide vector code.  Define CYRBM_NO_CLONES to turn this off. */
#ifndef CYRBM_KERNELS_H
#define CYRBM_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) \
    && !defined(CYRBM_NO_CLONES) && !defined(CYRBM_NATIVE)
#define CYRBM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CYRBM_CLONES
#endif

/* Columns are taken four vectors at a time into accumulators that stay in registers
 * across all the selected rows, so a weight row costs only its loads.  The last 16 to 79
 * columns go in one pass of five accumulators at offsets that may overlap: an element
 * covered twice is computed twice from the same start with the same additions in the same
 * order, so both copies are bit-identical and the result is as if each element had been
 * summed alone, in row order r = 0, 1, ...  GCC/Clang vector extensions lower to zmm,
 * ymm or xmm code for whichever clone runs. */
#if defined(__GNUC__) || defined(__clang__)
typedef float cyrbm_vf __attribute__((vector_size(64), aligned(4)));
typedef double cyrbm_vd __attribute__((vector_size(64), aligned(8)));
#define CYRBM_LD(VT, p) (*(const VT *)(p))
#define CYRBM_DEFINE_ROWSUM(NAME, T, VT, OP)                                               \
    CYRBM_CLONES static void NAME(T *restrict out, const T *restrict W, ptrdiff_t ldw,    \
                                  const int32_t *restrict rows, ptrdiff_t n_rows,         \
                                  ptrdiff_t n) {                                          \
        enum { VL = (int)(sizeof(VT) / sizeof(T)) };                                      \
        if (n < VL) {                                                                     \
            for (ptrdiff_t c = 0; c < n; c++) {                                           \
                T a = out[c];                                                             \
                for (ptrdiff_t r = 0; r < n_rows; r++)                                    \
                    a = a OP W[(ptrdiff_t)rows[r] * ldw + c];                             \
                out[c] = a;                                                               \
            }                                                                             \
            return;                                                                       \
        }                                                                                 \
        ptrdiff_t n_full = n / (4 * VL);                                                  \
        if (n_full > 0 && n - n_full * 4 * VL < VL && n - n_full * 4 * VL > 0) n_full--;  \
        ptrdiff_t c0 = 0;                                                                 \
        for (ptrdiff_t b = 0; b < n_full; b++, c0 += 4 * VL) {                            \
            VT a0 = CYRBM_LD(VT, out + c0), a1 = CYRBM_LD(VT, out + c0 + VL);             \
            VT a2 = CYRBM_LD(VT, out + c0 + 2 * VL), a3 = CYRBM_LD(VT, out + c0 + 3 * VL); \
            for (ptrdiff_t r = 0; r < n_rows; r++) {                                      \
                const T *w = W + (ptrdiff_t)rows[r] * ldw + c0;                           \
                a0 = a0 OP CYRBM_LD(VT, w);                                               \
                a1 = a1 OP CYRBM_LD(VT, w + VL);                                          \
                a2 = a2 OP CYRBM_LD(VT, w + 2 * VL);                                      \
                a3 = a3 OP CYRBM_LD(VT, w + 3 * VL);                                      \
            }                                                                             \
            *(VT *)(out + c0) = a0;                                                       \
            *(VT *)(out + c0 + VL) = a1;                                                  \
            *(VT *)(out + c0 + 2 * VL) = a2;                                              \
            *(VT *)(out + c0 + 3 * VL) = a3;                                              \
        }                                                                                 \
        if (c0 < n) { /* VL <= n - c0 < 5 * VL */                                         \
            ptrdiff_t o[5];                                                               \
            ptrdiff_t k = 0;                                                              \
            for (ptrdiff_t c = c0; c + VL <= n && k < 5; c += VL) o[k++] = c;             \
            if (k < 5 && o[k - 1] + VL < n) o[k++] = n - VL;                              \
            for (ptrdiff_t m = k; m < 5; m++) o[m] = o[0];                                \
            VT a0 = CYRBM_LD(VT, out + o[0]), a1 = CYRBM_LD(VT, out + o[1]);              \
            VT a2 = CYRBM_LD(VT, out + o[2]), a3 = CYRBM_LD(VT, out + o[3]);              \
            VT a4 = CYRBM_LD(VT, out + o[4]);                                             \
            for (ptrdiff_t r = 0; r < n_rows; r++) {                                      \
                const T *w = W + (ptrdiff_t)rows[r] * ldw;                                \
                a0 = a0 OP CYRBM_LD(VT, w + o[0]);                                        \
                a1 = a1 OP CYRBM_LD(VT, w + o[1]);                                        \
                a2 = a2 OP CYRBM_LD(VT, w + o[2]);                                        \
                a3 = a3 OP CYRBM_LD(VT, w + o[3]);                                        \
                a4 = a4 OP CYRBM_LD(VT, w + o[4]);                                        \
            }                                                                             \
            *(VT *)(out + o[4]) = a4;                                                     \
            *(VT *)(out + o[3]) = a3;                                                     \
            *(VT *)(out + o[2]) = a2;                                                     \
            *(VT *)(out + o[1]) = a1;                                                     \
            *(VT *)(out + o[0]) = a0;                                                     \
        }                                                                                 \
    }
#else
typedef float cyrbm_vf;
typedef double cyrbm_vd;
#define CYRBM_DEFINE_ROWSUM(NAME, T, VT, OP)                                               \
    static void NAME(T *out, const T *W, ptrdiff_t ldw, const int32_t *rows,              \
                     ptrdiff_t n_rows, ptrdiff_t n) {                                     \
        for (ptrdiff_t c = 0; c < n; c++) {                                               \
            T a = out[c];                                                                 \
            for (ptrdiff_t r = 0; r < n_rows; r++) a = a OP W[(ptrdiff_t)rows[r] * ldw + c]; \
            out[c] = a;                                                                   \
        }                                                                                 \
    }
#endif

/* out[0:n] += sum_r W[rows[r], 0:n] */
CYRBM_DEFINE_ROWSUM(cyrbm_add_rows_f32, float, cyrbm_vf, +)
CYRBM_DEFINE_ROWSUM(cyrbm_add_rows_f64, double, cyrbm_vd, +)
/* out[0:n] -= sum_r W[rows[r], 0:n] */
CYRBM_DEFINE_ROWSUM(cyrbm_sub_rows_f32, float, cyrbm_vf, -)
CYRBM_DEFINE_ROWSUM(cyrbm_sub_rows_f64, double, cyrbm_vd, -)

#endif
