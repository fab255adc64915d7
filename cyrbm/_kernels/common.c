/* Kernels with no vector code: compiled once, for every variant (see kernels.h). */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L            /* sigaction */
#endif
#include <signal.h>
#include <string.h>
#define CYRBM_KERNEL_LIBRARY 1
#include "kernels.h"

volatile int cyrbm_stop_requested = 0;

#if defined(_WIN32)
void cyrbm_stop_watch_begin(void) { cyrbm_stop_requested = 0; }
int cyrbm_stop_watch_end(void) { return 0; }
#else
static struct sigaction cyrbm_stop_old[2];
static int cyrbm_stop_installed[2];
static const int cyrbm_stop_signals[2] = {SIGINT, SIGTERM};

static void cyrbm_stop_handler(int sig) {
    int i = sig == SIGINT ? 0 : 1;
    cyrbm_stop_requested = 1;
    if (!(cyrbm_stop_old[i].sa_flags & SA_SIGINFO) && cyrbm_stop_old[i].sa_handler != SIG_DFL
            && cyrbm_stop_old[i].sa_handler != SIG_IGN)
        cyrbm_stop_old[i].sa_handler(sig);             /* Python's: trips its flag */
}

void cyrbm_stop_watch_begin(void) {
    int i;
    cyrbm_stop_requested = 0;
    for (i = 0; i < 2; i++) {
        struct sigaction old, act;
        cyrbm_stop_installed[i] = 0;
        if (sigaction(cyrbm_stop_signals[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO)
                || old.sa_handler == SIG_DFL || old.sa_handler == SIG_IGN)
            continue;
        memset(&act, 0, sizeof act);
        act.sa_handler = cyrbm_stop_handler;
        act.sa_flags = old.sa_flags;
        sigemptyset(&act.sa_mask);
        cyrbm_stop_old[i] = old;
        if (sigaction(cyrbm_stop_signals[i], &act, NULL) == 0) cyrbm_stop_installed[i] = 1;
    }
}

int cyrbm_stop_watch_end(void) {
    int i, was;
    for (i = 0; i < 2; i++)
        if (cyrbm_stop_installed[i]) {
            sigaction(cyrbm_stop_signals[i], &cyrbm_stop_old[i], NULL);
            cyrbm_stop_installed[i] = 0;
        }
    was = cyrbm_stop_requested;
    cyrbm_stop_requested = 0;
    return was;
}
#endif

void cyrbm_column_lists(const int32_t *restrict idx, ptrdiff_t ldi,
                        const int32_t *restrict cnt, ptrdiff_t n_rows, ptrdiff_t n_units,
                        int32_t *restrict col, int32_t *restrict ncol) {
    ptrdiff_t r, k;
    memset(ncol, 0, (size_t)n_units * sizeof(int32_t));
    for (r = 0; r < n_rows; r++) {
        const int32_t *ix = idx + r * ldi;
        for (k = 0; k < cnt[r]; k++) {
            const int32_t u = ix[k];
            col[u * n_rows + ncol[u]++] = (int32_t)r;
        }
    }
}

int32_t cyrbm_active_units(const uint8_t *restrict state, ptrdiff_t n, int32_t *restrict list) {
    int32_t c = 0;
    ptrdiff_t u;
    for (u = 0; u < n; u++) {     /* branch-free: write every unit, advance on a 1 */
        list[c] = (int32_t)u;
        c += state[u] != 0;
    }
    return c;
}

void cyrbm_state_codes(const uint8_t *restrict state, ptrdiff_t n, uint8_t *restrict codes) {
    ptrdiff_t g = 0;
    for (; 4 * g + 3 < n; g++)
        codes[g] = (uint8_t)(state[4 * g] | state[4 * g + 1] << 1 | state[4 * g + 2] << 2
                             | state[4 * g + 3] << 3);
    if (4 * g < n) {
        uint8_t c = 0;
        int k;
        for (k = 0; 4 * g + k < n; k++) c |= (uint8_t)(state[4 * g + k] << k);
        codes[g] = c;
    }
}

/* The hidden layer's half of step k >= 1 of a run at beta (common_t.h's Gaussian and
 * SRBM runs, x = c + W^T v of the current v): with `weights`, *logw += lw + sum_j
 * [softplus(beta x_j) - softplus(prev x_j)], lw the visible layer's part, summed first;
 * then h_j ~ Bernoulli(sigma(beta x_j)), one draw a unit in unit order. */
static void cyrbm_hidden_half(const double *restrict x, ptrdiff_t M, double beta, double prev,
                              int weights, double lw, double *logw, cyrbm_rng *rng,
                              uint8_t *restrict h) {
    ptrdiff_t j;
    if (weights) {
        for (j = 0; j < M; j++)
            lw += cyrbm_softplus(beta * x[j]) - cyrbm_softplus(prev * x[j]);
        *logw += lw;
    }
    for (j = 0; j < M; j++) h[j] = (uint8_t)cyrbm_rng_bernoulli(rng, cyrbm_sigmoid(beta * x[j]));
}

#define CYRBM_FT 32
#include "float_t.h"
#include "common_t.h"
#include "unit_srbm_t.h"
#include "unit_gibbs_t.h"
#undef CYRBM_FT
#define CYRBM_FT 64
#include "float_t.h"
#include "common_t.h"
#include "unit_srbm_t.h"
#include "unit_gibbs_t.h"

size_t cyrbm_chib_layout(const cyrbm_chib_model *M, ptrdiff_t S, size_t itemsize, char *base,
                         cyrbm_chib_work *W) {
    size_t total = 0;
    const size_t H1 = (size_t)M->H1, nf = (size_t)(3 * M->ld1 + 3 * M->ld2) * itemsize;
    int k;
    for (k = 0; k < 3; k++) {
        W->h[k] = (uint8_t *)cyrbm_take(base, &total, H1);
        W->f[k] = cyrbm_take(base, &total, nf);
    }
    W->hstar = (uint8_t *)cyrbm_take(base, &total, H1);
    W->vw = (double *)cyrbm_take(base, &total, H1 * sizeof(double));
    W->x = (double *)cyrbm_take(base, &total, H1 * sizeof(double));
    W->ec = (double *)cyrbm_take(base, &total, 2 * H1 * sizeof(double));
    W->logt = (double *)cyrbm_take(base, &total, (size_t)(S + 1) * sizeof(double));
    return total + 64;
}
