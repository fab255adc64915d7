/* The engine's own row sums for the hidden flips (cyrbm_ak_update in
 * cyrbm/_kernels/anneal_t.h, float32, this machine's widest kernel variant), timed alone
 * on the layout of the AIS bench: W^T of a 784 x 500 RBM in 64-byte column chunks (49
 * chunks of 500 rows, one 32 KB tile each), R runs whose lists of units that turned on
 * and off each hold a fraction p of the 500 hidden units (random, ascending).  Prints
 * microseconds per run and call (one step of one run) and the rate in floats added per
 * second, to set beside bench/lower_bound.py's "row adds from L1" rate: the part of the
 * gap to the bound that sits in the row sums themselves.  One thread.  With evict_kb > 0,
 * a buffer of that many KB is read and written before each call, so that W^T comes from
 * L3 as in the engine (which reads W between two updates), not from L2.
 *
 * Build and run (from the repository root):
 *   cc -O3 -std=gnu11 -ffp-contract=off -march=native -I include -I cyrbm/_kernels \
 *      -o /tmp/lower_bound_update bench/lower_bound_update.c -lm
 *   /tmp/lower_bound_update [R=100] [repeats=300] [evict_kb=0]
 */
#if defined(__AVX512F__)
#define CYRBM_ISA_AVX512 1
#elif defined(__AVX2__)
#define CYRBM_ISA_AVX2 1
#elif defined(__SSE2__)
#define CYRBM_ISA_SSE2 1
#else
#define CYRBM_ISA_GENERIC 1
#endif
#include "anneal.c"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define LBU_STR_(x) #x
#define LBU_STR(x) LBU_STR_(x)

/* the engine's list builder lives in common.c; nothing here calls it */
int32_t cyrbm_active_units(const uint8_t *s, ptrdiff_t n, int32_t *list) {
    (void)s; (void)n; (void)list;
    return 0;
}

static double lbu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t lbu_state = 88172645463325252ULL;
static uint64_t lbu_next(void) {
    lbu_state ^= lbu_state << 13;
    lbu_state ^= lbu_state >> 7;
    lbu_state ^= lbu_state << 17;
    return lbu_state;
}

int main(int argc, char **argv) {
    const ptrdiff_t n = 500, ld = 784, ldl = 528, tile = CYRBM_AK_TILE_BYTES / CYRBM_AK_CHUNK_BYTES;
    const ptrdiff_t R = argc > 1 ? atoi(argv[1]) : 100, bs = 8;
    const int reps = argc > 2 ? atoi(argv[2]) : 300;
    const ptrdiff_t nev = argc > 3 ? (ptrdiff_t)atoi(argv[3]) * 1024 / 4 : 0;
    /* flips per run and step in the paper schedule's regions (bench/README.md): hidden
     * 215.0, 127.7, 90.5 of 500, half turning on and half off */
    const double flips[3] = {215.0, 127.7, 90.5};
    const char *names[3] = {"[0, 0.5)", "[0.5, 0.9)", "[0.9, 1]"};
    float *Wt = aligned_alloc(64, sizeof(float) * (size_t)(n * ld));
    float *out = aligned_alloc(64, sizeof(float) * (size_t)(R * ld));
    int32_t *on = calloc((size_t)(R * ldl + 64), 4), *off = calloc((size_t)(R * ldl + 64), 4);
    int32_t *bd = calloc((size_t)(R * bs), 4);
    float *ev = calloc((size_t)nev + 16, 4);
    ptrdiff_t i, r, j;
    int reg, rep;
    printf("cyrbm_ak_update (%s), 784 x 500 W^T in 64-byte chunks, %td runs, best of %d%s\n",
           LBU_STR(CYRBM_ISA_NAME), R, reps, nev > 0 ? ", another buffer read and written before each" : "");
    for (i = 0; i < n * ld; i++) Wt[i] = (float)((int64_t)(lbu_next() % 2000001) - 1000000) * 1e-6f;
    for (i = 0; i < R * ld; i++) out[i] = 0.0f;
    for (reg = 0; reg < 3; reg++) {
        const double p = flips[reg] / (2.0 * (double)n);
        double best = 1e30, total = 0.0;
        for (r = 0; r < R; r++) {
            int32_t a = 0, b = 0;
            for (j = 0; j < n; j++) {
                const double u = (double)(lbu_next() >> 11) * 0x1p-53;
                if (u < p) on[r * ldl + a++] = (int32_t)j;
                else if (u < 2 * p) off[r * ldl + b++] = (int32_t)j;
            }
            total += a + b;
            cyrbm_ak_tile_bounds(on + r * ldl, a, off + r * ldl, b, n, tile, bd + r * bs);
            cyrbm_ak_row_offsets(on + r * ldl, a);
            cyrbm_ak_row_offsets(off + r * ldl, b);
        }
        for (rep = 0; rep < reps; rep++) {
            double t0;
            for (i = 0; i < nev; i += 16) ev[i] += 1.0f;    /* a line at a time, W^T out */
            t0 = lbu_now();
            CYRBM_K(cyrbm_ak_update_f32)(Wt, n, ld, tile, on, off, ldl, bd, bs, out, ld, NULL, R, 0);
            const double t = lbu_now() - t0;
            if (t < best) best = t;
        }
        printf("%-11s %6.1f flips/run: %6.3f us per run-step, %5.1f G floats added/s\n", names[reg],
               total / (double)R, 1e6 * best / (double)R, total * (double)ld / best * 1e-9);
    }
    printf("(checksum %g)\n", (double)out[0] + (double)out[R * ld - 1] + (nev > 0 ? (double)ev[0] : 0.0));
    return 0;
}
