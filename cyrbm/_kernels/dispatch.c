/* The one dispatch table: one variant of every kernel, chosen at run time for all
 * families at once (-DCYRBM_HAVE_<ISA> for each variant the build holds; setup.py passes
 * them).  Linked, with every variant and common.c, into the one extension that owns the
 * table (cyrbm._dispatch); the engine modules call through it (kernels.h). */
#define CYRBM_KERNEL_LIBRARY 1
#include <stdlib.h>
#include <string.h>
#include "kernels.h"

/* the variants' own symbols */
#define DECLARE_AVX512(RET, NAME, PARAMS, ARGS) RET cyrbm_##NAME##_avx512 PARAMS;
#define DECLARE_AVX2(RET, NAME, PARAMS, ARGS) RET cyrbm_##NAME##_avx2 PARAMS;
#define DECLARE_SSE2(RET, NAME, PARAMS, ARGS) RET cyrbm_##NAME##_sse2 PARAMS;
#define DECLARE_NEON(RET, NAME, PARAMS, ARGS) RET cyrbm_##NAME##_neon PARAMS;
#define DECLARE_GENERIC(RET, NAME, PARAMS, ARGS) RET cyrbm_##NAME##_generic PARAMS;
#ifdef CYRBM_HAVE_AVX512
CYRBM_VARIANT_KERNELS(DECLARE_AVX512)
#endif
#ifdef CYRBM_HAVE_AVX2
CYRBM_VARIANT_KERNELS(DECLARE_AVX2)
#endif
#ifdef CYRBM_HAVE_SSE2
CYRBM_VARIANT_KERNELS(DECLARE_SSE2)
#endif
#ifdef CYRBM_HAVE_NEON
CYRBM_VARIANT_KERNELS(DECLARE_NEON)
#endif
#ifdef CYRBM_HAVE_GENERIC
CYRBM_VARIANT_KERNELS(DECLARE_GENERIC)
#endif

static cyrbm_kernel_table table;

#define FILL_AVX512(RET, NAME, PARAMS, ARGS) table.NAME = cyrbm_##NAME##_avx512;
#define FILL_AVX2(RET, NAME, PARAMS, ARGS) table.NAME = cyrbm_##NAME##_avx2;
#define FILL_SSE2(RET, NAME, PARAMS, ARGS) table.NAME = cyrbm_##NAME##_sse2;
#define FILL_NEON(RET, NAME, PARAMS, ARGS) table.NAME = cyrbm_##NAME##_neon;
#define FILL_GENERIC(RET, NAME, PARAMS, ARGS) table.NAME = cyrbm_##NAME##_generic;
#define FILL_COMMON(RET, NAME, PARAMS, ARGS) table.NAME = cyrbm_##NAME;

const cyrbm_kernel_table *cyrbm_kernels(void) { return &table; }

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#define CYRBM_X86 1
#endif

static int runs(const char *isa) {
#if defined(CYRBM_X86) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (strcmp(isa, "avx512") == 0)
        return __builtin_cpu_supports("avx512f");
    if (strcmp(isa, "avx2") == 0)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (strcmp(isa, "sse2") == 0) return 1;
#elif defined(CYRBM_X86)
    if (strcmp(isa, "sse2") == 0) return 1;
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
    if (strcmp(isa, "neon") == 0) return 1;
#endif
    return strcmp(isa, "generic") == 0;
}

static int take(const char *isa, const char *want) {
    const char *got = NULL;
    if (want && *want && strcmp(want, isa) != 0) return 0;
    if (!runs(isa)) return 0;
#ifdef CYRBM_HAVE_AVX512
    if (strcmp(isa, "avx512") == 0) { CYRBM_VARIANT_KERNELS(FILL_AVX512) got = "avx512"; }
#endif
#ifdef CYRBM_HAVE_AVX2
    if (strcmp(isa, "avx2") == 0) { CYRBM_VARIANT_KERNELS(FILL_AVX2) got = "avx2"; }
#endif
#ifdef CYRBM_HAVE_SSE2
    if (strcmp(isa, "sse2") == 0) { CYRBM_VARIANT_KERNELS(FILL_SSE2) got = "sse2"; }
#endif
#ifdef CYRBM_HAVE_NEON
    if (strcmp(isa, "neon") == 0) { CYRBM_VARIANT_KERNELS(FILL_NEON) got = "neon"; }
#endif
#ifdef CYRBM_HAVE_GENERIC
    if (strcmp(isa, "generic") == 0) { CYRBM_VARIANT_KERNELS(FILL_GENERIC) got = "generic"; }
#endif
    if (got == NULL) return 0;
    table.isa = got;
    CYRBM_COMMON_KERNELS(FILL_COMMON)
    return 1;
}

int cyrbm_kernels_init(const char *force) {
    static const char *order[] = {"avx512", "avx2", "neon", "sse2", "generic"};
    size_t i;
    for (i = 0; i < sizeof order / sizeof order[0]; i++)
        if (take(order[i], force)) return 0;
    return -1;
}

#if defined(__GNUC__) || defined(__clang__)
/* fill the table when the extension that owns it is loaded, so that no kernel can be
 * called before a variant is chosen (cyrbm._dispatch chooses again at import) */
__attribute__((constructor)) static void choose_at_load(void) {
    if (cyrbm_kernels_init(getenv("CYRBM_FORCE_ISA")) != 0) cyrbm_kernels_init(NULL);
}
#endif

/* the variants this build holds, widest first */
const char *cyrbm_kernels_built(void) {
    return ""
#ifdef CYRBM_HAVE_AVX512
           "avx512,"
#endif
#ifdef CYRBM_HAVE_AVX2
           "avx2,"
#endif
#ifdef CYRBM_HAVE_NEON
           "neon,"
#endif
#ifdef CYRBM_HAVE_SSE2
           "sse2,"
#endif
#ifdef CYRBM_HAVE_GENERIC
           "generic,"
#endif
        ;
}
