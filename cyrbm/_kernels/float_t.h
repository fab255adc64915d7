/* cyrbm's one float-type mechanism in C: a kernel template (x_t.h) is included once per
 * parameter type, after this header has defined, for CYRBM_FT = 32 or 64,
 *   T        the float type            VT, VM   its native vector and lane-mask types
 *   VL       lanes per native vector   VLOAD, VSTORE, VSIG   load, store, logistic
 *   FN(x)    x_f32 / x_f64 for this instruction set (x_f32_avx2, ...)
 * The Cython side reaches the two instances through fused types (cython.floating). */
#undef T
#undef VT
#undef VM
#undef VL
#undef VLOAD
#undef VSTORE
#undef VSIG
#undef VEXP
#undef FN
#undef SCALAR_BERNOULLI
#undef IS_F32
#if CYRBM_FT == 32
#define T float
#define VT vf
#define VL VLF
#define VLOAD ld_f
#define VSTORE st_f
#define VSIG vsigmoid_f
#define VEXP vexp_f
#define FN(x) CYRBM_K(x##_f32)
#define SCALAR_BERNOULLI cyrbm_bernoulli_f32
#define IS_F32 1
#if CYRBM_VBYTES > 0
#define VM vi32
#endif
#elif CYRBM_FT == 64
#define T double
#define VT vd
#define VL VLD
#define VLOAD ld_d
#define VSTORE st_d
#define VSIG vsigmoid_d
#define VEXP vexp_d
#define FN(x) CYRBM_K(x##_f64)
#define SCALAR_BERNOULLI cyrbm_bernoulli_f64
#define IS_F32 0
#if CYRBM_VBYTES > 0
typedef int64_t vi64 __attribute__((vector_size(CYRBM_VBYTES)));
#define VM vi64
#endif
#else
#error "float_t.h: define CYRBM_FT as 32 or 64"
#endif
