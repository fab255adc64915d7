/* Numerically stable logistic helpers (no lookup tables: they would bias likelihoods). */
#ifndef CYRBM_MATHUTIL_H
#define CYRBM_MATHUTIL_H

#include <math.h>

/* softplus(x) = log(1 + exp(x)), exact to rounding for every finite x. */
static inline double cyrbm_softplus(double x) {
    return x > 0.0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static inline float cyrbm_softplusf(float x) {
    return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}

/* sigma(x) = 1 / (1 + exp(-x)) without overflow. */
static inline double cyrbm_sigmoid(double x) {
    if (x >= 0.0) {
        return 1.0 / (1.0 + exp(-x));
    } else {
        const double e = exp(x);
        return e / (1.0 + e);
    }
}

static inline float cyrbm_sigmoidf(float x) {
    if (x >= 0.0f) {
        return 1.0f / (1.0f + expf(-x));
    } else {
        const float e = expf(x);
        return e / (1.0f + e);
    }
}

#endif
