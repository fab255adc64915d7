/* The lateral (semi-restricted) visible unit type (Osindero & Hinton 2008; MS09 Sec. 5.2)
 * of the one Gibbs driver (unit_gibbs_t.h): its operations, for one parameter type T
 * (included after common_t.h from common.c: no vector code, compiled once).  Model and
 * base: kernels.h, cyrbm_srbm_pair; the step and its log weight: common_t.h,
 * cyrbm_srbm_steps.
 *
 * One run at a time (UNIT_LANES 1), in place in the caller's rows: f(v) = v (0 / 1, so
 * x = c + W^T v sums the rows of the active units), h | v at once (common.c's hidden
 * half), v | h one unit at a time, each unit's log-odds (1 - beta) bA_i + beta (b_i +
 * (W h)_i + y_i) with the lateral field y = L v kept by the flips and recomputed every
 * CYRBM_SRBM_REFRESH steps.  Sums in float64, in unit order; draws from the run's own
 * chain stream.  Scratch: M + D doubles (x, then u = W h). */

#define UNIT_LANES 1
#define UNIT_PAIR cyrbm_srbm_pair
#define UF(x) TN(x##_srbm)

typedef struct {
    const T *W, *b, *c, *L;
    const double *bA;
    ptrdiff_t D, M;
    double *x, *u;                  /* scratch: x = c + W^T v, u = W h */
    uint8_t *v, *h;                 /* the run's states */
    double *y;                      /* its lateral field L v */
    cyrbm_rng *rng;                 /* its stream */
    double *logw;                   /* its log weight */
} UF(unit);

static inline void UF(unit_begin)(UF(unit) *C, const cyrbm_srbm_pair *P, void *work) {
    C->W = (const T *)P->W;
    C->b = (const T *)P->b;
    C->c = (const T *)P->c;
    C->L = (const T *)P->L;
    C->bA = P->bA;
    C->D = P->D;
    C->M = P->M;
    C->x = (double *)work;
    C->u = C->x + P->M;
}

static inline void UF(unit_load)(UF(unit) *C, const cyrbm_gibbs_runs *S, ptrdiff_t b0, int n) {
    (void)n;
    C->v = (uint8_t *)S->v + b0 * C->D;
    C->h = S->h + b0 * C->M;
    C->y = S->y + b0 * C->D;
    C->rng = S->streams + b0;
    C->logw = S->logw ? S->logw + b0 : NULL;
}

/* (the run's rows are its own: nothing to write back) */
static inline void UF(unit_store)(UF(unit) *C, const cyrbm_gibbs_runs *S, ptrdiff_t b0, int n,
                                  int drew_h) {
    (void)C;
    (void)S;
    (void)b0;
    (void)n;
    (void)drew_h;
}

/* v_i ~ Bernoulli(sigma(bA_i)), then y = L v */
static inline void UF(unit_base_draw)(UF(unit) *C) {
    uint8_t *restrict v = C->v;
    ptrdiff_t i;
    for (i = 0; i < C->D; i++) v[i] = (uint8_t)cyrbm_rng_bernoulli(C->rng, cyrbm_sigmoid(C->bA[i]));
    TN(cyrbm_srbm_field)(C->L, v, C->D, C->y);
}

/* y = L v afresh when `fresh` or at every CYRBM_SRBM_REFRESH-th step; x = c + W^T v */
static inline void UF(unit_hidden_inputs)(UF(unit) *C, ptrdiff_t k, int fresh) {
    const ptrdiff_t D = C->D, M = C->M;
    const uint8_t *restrict v = C->v;
    double *restrict x = C->x;
    ptrdiff_t i, j;
    if (fresh || k % CYRBM_SRBM_REFRESH == 0) TN(cyrbm_srbm_field)(C->L, v, D, C->y);
    for (j = 0; j < M; j++) x[j] = (double)C->c[j];
    for (i = 0; i < D; i++)
        if (v[i]) {
            const T *row = C->W + i * M;
            for (j = 0; j < M; j++) x[j] += (double)row[j];
        }
}

/* p(h | v) = sigma(x), rounded to T */
static inline void UF(unit_hidden_probs)(UF(unit) *C, const cyrbm_gibbs_runs *S, ptrdiff_t b0,
                                         int n) {
    T *p = (T *)S->p + b0 * C->M;
    ptrdiff_t j;
    (void)n;
    for (j = 0; j < C->M; j++) p[j] = (T)cyrbm_sigmoid(C->x[j]);
}

/* with `weights`, the visible layer's part (beta - prev) (b.v + v^T L v / 2 - bA.v),
 * then common.c's hidden half (its softplus terms, the draws of h) */
static inline void UF(unit_hidden_draws)(UF(unit) *C, double beta, double prev, int weights) {
    const uint8_t *restrict v = C->v;
    const double *restrict y = C->y;
    double lw = 0.0;
    ptrdiff_t i;
    if (weights) {
        double q = 0.0;
        for (i = 0; i < C->D; i++)
            if (v[i]) q += (double)C->b[i] + 0.5 * y[i] - C->bA[i];
        lw = (beta - prev) * q;
    }
    cyrbm_hidden_half(C->x, C->M, beta, prev, weights, lw, C->logw, C->rng, C->h);
}

/* u = W h, each row summed over the active hidden units */
static inline void UF(unit_visible_inputs)(UF(unit) *C) {
    const ptrdiff_t D = C->D, M = C->M;
    const uint8_t *restrict h = C->h;
    double *restrict u = C->u;
    ptrdiff_t i, j;
    for (i = 0; i < D; i++) {
        const T *row = C->W + i * M;
        double s = 0.0;
        for (j = 0; j < M; j++)
            if (h[j]) s += (double)row[j];
        u[i] = s;
    }
}

/* v_i, i = 0 .. D - 1 in turn, ~ Bernoulli(sigma((1 - beta) bA_i + beta (b_i + u_i +
 * y_i))); a flip moves every other unit's field by its row of L */
static inline void UF(unit_visible_draw)(UF(unit) *C, double beta) {
    const ptrdiff_t D = C->D;
    uint8_t *restrict v = C->v;
    double *restrict y = C->y;
    const double *restrict u = C->u;
    ptrdiff_t i, l;
    for (i = 0; i < D; i++) {
        const double a = (1.0 - beta) * C->bA[i] + beta * ((double)C->b[i] + u[i] + y[i]);
        const uint8_t on = (uint8_t)cyrbm_rng_bernoulli(C->rng, cyrbm_sigmoid(a));
        if (on != v[i]) {                  /* a flip moves every other unit's field */
            const T *row = C->L + i * D;
            v[i] = on;
            if (on)
                for (l = 0; l < D; l++) y[l] += (double)row[l];
            else
                for (l = 0; l < D; l++) y[l] -= (double)row[l];
        }
    }
}
