/* The run-time choice of kernel variant, for one family of kernels (compiled once per
 * family: -DCYRBM_FAMILY_GIBBS or -DCYRBM_FAMILY_ANNEAL, and -DCYRBM_HAVE_<ISA> for each
 * variant the build holds; setup.py passes both).
 *
 * The entry points (cyrbm_rowsums_f32, ...) call through a table filled by
 * cyrbm_<family>_kernels_init: the widest variant the CPU runs, or the one named. */
#include <stdlib.h>
#include <string.h>
#include "kernels.h"

#if defined(CYRBM_FAMILY_GIBBS)
#define FAMILY CYRBM_GIBBS_KERNELS
#define INIT cyrbm_gibbs_kernels_init
#define ISA cyrbm_gibbs_kernels_isa
#define BUILT cyrbm_gibbs_kernels_built
#elif defined(CYRBM_FAMILY_ANNEAL)
#define FAMILY CYRBM_ANNEAL_KERNELS
#define INIT cyrbm_anneal_kernels_init
#define ISA cyrbm_anneal_kernels_isa
#define BUILT cyrbm_anneal_kernels_built
#elif defined(CYRBM_FAMILY_CHIB)
#define FAMILY CYRBM_CHIB_KERNELS
#define INIT cyrbm_chib_kernels_init
#define ISA cyrbm_chib_kernels_isa
#define BUILT cyrbm_chib_kernels_built
#else
#error "dispatch.c: define CYRBM_FAMILY_GIBBS, CYRBM_FAMILY_ANNEAL or CYRBM_FAMILY_CHIB"
#endif

/* the variants' own symbols */
#define DECLARE_AVX512(RET, NAME, PARAMS, ARGS) RET cyrbm_##NAME##_avx512 PARAMS;
#define DECLARE_AVX2(RET, NAME, PARAMS, ARGS) RET cyrbm_##NAME##_avx2 PARAMS;
#define DECLARE_SSE2(RET, NAME, PARAMS, ARGS) RET cyrbm_##NAME##_sse2 PARAMS;
#define DECLARE_NEON(RET, NAME, PARAMS, ARGS) RET cyrbm_##NAME##_neon PARAMS;
#define DECLARE_GENERIC(RET, NAME, PARAMS, ARGS) RET cyrbm_##NAME##_generic PARAMS;
#ifdef CYRBM_HAVE_AVX512
FAMILY(DECLARE_AVX512)
#endif
#ifdef CYRBM_HAVE_AVX2
FAMILY(DECLARE_AVX2)
#endif
#ifdef CYRBM_HAVE_SSE2
FAMILY(DECLARE_SSE2)
#endif
#ifdef CYRBM_HAVE_NEON
FAMILY(DECLARE_NEON)
#endif
#ifdef CYRBM_HAVE_GENERIC
FAMILY(DECLARE_GENERIC)
#endif

/* the table */
#define MEMBER(RET, NAME, PARAMS, ARGS) RET(*NAME) PARAMS;
static struct {
    FAMILY(MEMBER)
    const char *name;
} table;

#define FILL_AVX512(RET, NAME, PARAMS, ARGS) table.NAME = cyrbm_##NAME##_avx512;
#define FILL_AVX2(RET, NAME, PARAMS, ARGS) table.NAME = cyrbm_##NAME##_avx2;
#define FILL_SSE2(RET, NAME, PARAMS, ARGS) table.NAME = cyrbm_##NAME##_sse2;
#define FILL_NEON(RET, NAME, PARAMS, ARGS) table.NAME = cyrbm_##NAME##_neon;
#define FILL_GENERIC(RET, NAME, PARAMS, ARGS) table.NAME = cyrbm_##NAME##_generic;

/* the entry points */
#define RETURN_void
#define RETURN_int return
#define RETURN_double return
#define ENTRY(RET, NAME, PARAMS, ARGS) \
    RET cyrbm_##NAME PARAMS { RETURN_##RET table.NAME ARGS; }
FAMILY(ENTRY)

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
    if (want && *want && strcmp(want, isa) != 0) return 0;
    if (!runs(isa)) return 0;
#ifdef CYRBM_HAVE_AVX512
    if (strcmp(isa, "avx512") == 0) { FAMILY(FILL_AVX512) table.name = "avx512"; return 1; }
#endif
#ifdef CYRBM_HAVE_AVX2
    if (strcmp(isa, "avx2") == 0) { FAMILY(FILL_AVX2) table.name = "avx2"; return 1; }
#endif
#ifdef CYRBM_HAVE_SSE2
    if (strcmp(isa, "sse2") == 0) { FAMILY(FILL_SSE2) table.name = "sse2"; return 1; }
#endif
#ifdef CYRBM_HAVE_NEON
    if (strcmp(isa, "neon") == 0) { FAMILY(FILL_NEON) table.name = "neon"; return 1; }
#endif
#ifdef CYRBM_HAVE_GENERIC
    if (strcmp(isa, "generic") == 0) { FAMILY(FILL_GENERIC) table.name = "generic"; return 1; }
#endif
    return 0;
}

int INIT(const char *force) {
    static const char *order[] = {"avx512", "avx2", "neon", "sse2", "generic"};
    size_t i;
    for (i = 0; i < sizeof order / sizeof order[0]; i++)
        if (take(order[i], force)) return 0;
    return -1;
}

const char *ISA(void) { return table.name ? table.name : ""; }

#if defined(__GNUC__) || defined(__clang__)
/* every extension that links these kernels has its own table: fill it when the extension
 * is loaded, so no entry point can be called before a variant is chosen (the Python
 * modules choose again at import, honouring CYRBM_FORCE_ISA) */
__attribute__((constructor)) static void choose_at_load(void) {
    if (INIT(getenv("CYRBM_FORCE_ISA")) != 0) INIT(NULL);
}
#endif

/* the variants this build holds, widest first */
const char *BUILT(void) {
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
