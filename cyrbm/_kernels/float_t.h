/* cyrbm's one float-type mechanism in C: a kernel template (x_t.h) is included once per
 * parameter type, after this header has defined, for CYRBM_FT = 32 or 64,
 *   T        the float type            TN(x)    x_f32 / x_f64 (the type's own name)
 * and, inside a kernel variant (simd.h),
 *   FN(x)    x_f32 / x_f64 for this instruction set (x_f32_avx2, ...)
 *   VT, VM   its native vector and lane-mask types       VL  lanes per native vector
 *   VLOAD, VSTORE, VSIG, VEXP   load, store, logistic, e^x (x <= 0)
 *   VLOADD   VLD elements of T widened to a float64 vector (vd); VSTORED its inverse
 *            (a vd rounded to T and stored)
 *   VPART_D  (v, o): lanes o .. o + VLD - 1 of a VT as a vd, in registers (defined only
 *            in the AVX-512 variant, simd.h's part_f_as_d)
 *   UT, VUT  the unsigned integer of T's width and its native vectors (vu / vq)
 *   AS_UT, AS_T   bit casts between VT and VUT lanes;  MASK_T, SEL_T, BC_T: mask from a
 *            comparison, select, broadcast (simd.h's MASKU/MASKQ, SELF/SELD, BCF/BCD)
 *   MASK_BITS_T   a mask's lanes as bits (mask_bits_f / mask_bits_d)
 *   DRAW_T   the Bernoulli draw from log-odds (simd.h: CYRBM_DRAW_F / CYRBM_DRAW_D)
 *   SIGN_BIT, EXP_SHIFT, EXP_BITS, EXP_BIAS, MANT_KEEP, ONE_BITS: T's IEEE 754 layout.
 * Each kernel is listed once for the dispatch table with FT / FS for its type and suffix
 * (kernels.h, CYRBM_EACH_TYPE); the Cython side reaches the two instances through fused
 * types (cython.floating). */
#undef T
#undef TN
#undef FN
#undef VT
#undef VM
#undef VL
#undef VLOAD
#undef VSTORE
#undef VSIG
#undef VEXP
#undef VLOADD
#undef VSTORED
#undef VPART_D
#undef UT
#undef VUT
#undef HSUM_UT
#undef AS_UT
#undef AS_T
#undef MASK_T
#undef SEL_T
#undef BC_T
#undef MASK_BITS_T
#undef DRAW_T
#undef SIGN_BIT
#undef EXP_SHIFT
#undef EXP_BITS
#undef EXP_BIAS
#undef MANT_KEEP
#undef ONE_BITS
#if CYRBM_FT == 32
#define T float
#define TN(x) x##_f32
#define UT uint32_t
#define SIGN_BIT 0x80000000u
#define EXP_SHIFT 23
#define EXP_BITS 0xffu
#define EXP_BIAS 127
#define MANT_KEEP 0x807fffffu
#define ONE_BITS 0x3f800000u
#ifdef CYRBM_SIMD_H
#define FN(x) CYRBM_K(x##_f32)
#define VT vf
#define VL VLF
#define VLOAD ld_f
#define VSTORE st_f
#define VSIG vsigmoid_f
#define VEXP vexp_f
#define VLOADD ld_f_as_d
#define VSTORED st_d_as_f
#if defined(CYRBM_PART_F_AS_D)
#define VPART_D part_f_as_d
#endif
#define VUT vu
#define HSUM_UT hsum_u
#define AS_UT ASU
#define AS_T ASF
#define MASK_T MASKU
#define SEL_T SELF
#define BC_T BCF
#define MASK_BITS_T mask_bits_f
#define DRAW_T CYRBM_DRAW_F
#if CYRBM_VBYTES > 0
#define VM vi32
#endif
#endif
#elif CYRBM_FT == 64
#define T double
#define TN(x) x##_f64
#define UT uint64_t
#define SIGN_BIT 0x8000000000000000ULL
#define EXP_SHIFT 52
#define EXP_BITS 0x7ffULL
#define EXP_BIAS 1023
#define MANT_KEEP 0x800fffffffffffffULL
#define ONE_BITS 0x3ff0000000000000ULL
#ifdef CYRBM_SIMD_H
#define FN(x) CYRBM_K(x##_f64)
#define VT vd
#define VL VLD
#define VLOAD ld_d
#define VSTORE st_d
#define VSIG vsigmoid_d
#define VEXP vexp_d
#define VLOADD ld_d
#define VSTORED st_d
#if defined(CYRBM_PART_F_AS_D)
#define VPART_D(v, o) (v)       /* VL = VLD: the whole vector (o = 0) */
#endif
#define VUT vq
#define HSUM_UT hsum_q
#define AS_UT ASQ
#define AS_T ASD
#define MASK_T MASKQ
#define SEL_T SELD
#define BC_T BCD
#define MASK_BITS_T mask_bits_d
#define DRAW_T CYRBM_DRAW_D
#if CYRBM_VBYTES > 0
#ifndef CYRBM_VI64_DEFINED
#define CYRBM_VI64_DEFINED
typedef int64_t vi64 __attribute__((vector_size(CYRBM_VBYTES)));
#endif
#define VM vi64
#endif
#endif
#else
#error "float_t.h: define CYRBM_FT as 32 or 64"
#endif
