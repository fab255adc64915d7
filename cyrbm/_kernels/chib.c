/* Single-site Gibbs on the first hidden layer of a two-layer DBN (Murray & Salakhutdinov
 * 2009): the Chib-style estimator of P(v) (Figure 1, Eq. 9-15) and per-vector AIS over
 * h1, for one instruction set (see kernels.h, simd.h).
 *
 * Model.  RBM1 (v, h1) with W1 (D x H1), visible biases b1 and hidden biases c1 (used only
 * by the factorial Q(h1 | v) = sigma(W1^T v + c1)); the top RBM (h1, h2) with W2 (H1 x
 * H2), biases b2 (on h1) and c2 (on h2).  With h2 summed out,
 *   ln P*(v, h1) = sum_i [v_i y_i - softplus(y_i)] + b2.h1 + sum_k softplus(z_k),
 *   y = W1 h1 + b1,  z = W2^T h1 + c2,   P(v) = sum_h1 P*(v, h1) / Z.
 *
 * Incremental inputs.  A chain keeps y and z and their logistic pairs, unnormalised:
 * p : q = sigma(.) : sigma(-.) with p + q in [1, 2), and each layer's normaliser
 * N = prod_i (p_i + q_i) (fresh pairs have p + q = 1 to the last bit: the smaller of
 * sigma(.) and sigma(-.) computed, the larger 1 minus it, so both keep their relative
 * precision).  The log-odds of unit j needs sum_i [softplus(y_i +- w_i) - softplus(y_i)],
 * which is the log of prod_i (q_i + p_i e^w_i) / N (turning on) or of prod_i (p_i + q_i
 * e^w_i) / N minus sum_i w_i (turning off), with e^W tabulated once: a multiply-add per
 * element, O(D + H2), and per site either one log (of the products' ratio) or, for a
 * sweep's draw at beta = 1 and a term of ln T, none: the odds e^d are that ratio times a
 * power of two and e^c_j, kept per item (chib_odds), and ln T's term is one log1p of
 * them.  A flip moves the pairs by the same table rows: p <- p e^w (turning on; turning
 * off, q <- q e^w), then both by the power of two that brings p + q into [1, 2), exactly;
 * the new normaliser is the product the site has just computed times that power: one
 * multiply per element, no division, no exp.  Every refresh_every sweeps y and z are
 * recomputed from h1 exactly and the pairs from them.
 *
 * Determinism.  Products run in 512-byte logical lanes (element i in lane i % NL, 8
 * independent chains in every variant), each rescaled by its exponent bits at fixed
 * points, the lanes' mantissas multiplied in a fixed float64 tree; the other loops
 * are element by element; each item (a test vector and repeat) draws only from its own
 * cyrbm_rng stream, in an order fixed by the algorithm.  So every variant and any number
 * of threads give the same bits.
 *
 * Items side by side.  A call of the estimator or of per-vector AIS runs up to
 * CYRBM_CHIB_SLOTS items at once: a pass of single-site updates visits CHIB_SITE_BLOCK
 * sites of one item, then the same sites of the next item making a pass in that
 * direction, so the rows of e^W (5.6 MB for a 784-500-2000 DBN, more than a core's L2)
 * are read from memory once for several items while each item's own pairs stay in L1.
 * Each item still makes its own operations in its own order, so which items share the
 * passes changes no bit.
 *
 * Layout.  Rows of W1^T, e^(W1^T) and b1 are padded to ld1 elements (W1 and b1 pads 0,
 * e^0 = 1: the pads' factors are exactly 1), those of W2, e^W2 and c2 to ld2; ld1 and ld2
 * are multiples of 32 elements (128 bytes of float32). */
#include <math.h>
#define CYRBM_KERNEL_LIBRARY 1
#include "simd.h"
#include "kernels.h"

#define LN2 0.69314718055994530942

#define CYRBM_FT 32
#include "float_t.h"
#include "chib_t.h"
#undef CYRBM_FT
#define CYRBM_FT 64
#include "float_t.h"
#include "chib_t.h"
