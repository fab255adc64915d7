/* The one dispatch table: one variant of every kernel, chosen at run time for all
 * families at once (-DCYRBM_HAVE_<ISA> for each variant the build holds; setup.py passes
 * them), filled by that variant's cyrbm_fill_<isa> (table.c).  Linked, with every variant and common.c, into the one extension that owns the
 * table (cyrbm._dispatch); the engine modules call through it (kernels.h). */
#define CYRBM_KERNEL_LIBRARY 1
#include <stdlib.h>
#include <string.h>
#include "kernels.h"

/* The variants this build holds (-DCYRBM_HAVE_<ISA>, from setup.py), widest first:
 * CYRBM_BUILT(V) is V(isa) for each. */
#ifdef CYRBM_HAVE_AVX512
#define CYRBM_BUILT_AVX512(V) V(avx512)
#else
#define CYRBM_BUILT_AVX512(V)
#endif
#ifdef CYRBM_HAVE_AVX2
#define CYRBM_BUILT_AVX2(V) V(avx2)
#else
#define CYRBM_BUILT_AVX2(V)
#endif
#ifdef CYRBM_HAVE_NEON
#define CYRBM_BUILT_NEON(V) V(neon)
#else
#define CYRBM_BUILT_NEON(V)
#endif
#ifdef CYRBM_HAVE_SSE2
#define CYRBM_BUILT_SSE2(V) V(sse2)
#else
#define CYRBM_BUILT_SSE2(V)
#endif
#ifdef CYRBM_HAVE_GENERIC
#define CYRBM_BUILT_GENERIC(V) V(generic)
#else
#define CYRBM_BUILT_GENERIC(V)
#endif
#define CYRBM_BUILT(V)                                                                    \
    CYRBM_BUILT_AVX512(V) CYRBM_BUILT_AVX2(V) CYRBM_BUILT_NEON(V) CYRBM_BUILT_SSE2(V)     \
    CYRBM_BUILT_GENERIC(V)

/* each variant's fill of the table (table.c, compiled once per variant) */
#define DECLARE_FILL(isa) void cyrbm_fill_##isa(cyrbm_kernel_table *table);
CYRBM_BUILT(DECLARE_FILL)

static cyrbm_kernel_table table;

#define FILL_COMMON(RET, NAME, PARAMS, ARGS) table.NAME = cyrbm_##NAME;
/* the unit-type table: each unit type's instances of the one Gibbs driver, as the table
 * now holds them (the variant's, or the compiled-once ones) */
#define FILL_UNIT(NAME_, UPPER, LANES, WORK)                                              \
    table.units[CYRBM_UNIT_##UPPER].name = #NAME_;                                        \
    table.units[CYRBM_UNIT_##UPPER].lanes = LANES;                                        \
    table.units[CYRBM_UNIT_##UPPER].work_bytes = WORK;                                    \
    table.units[CYRBM_UNIT_##UPPER].gibbs_f32 = table.gibbs_##NAME_##_f32;                \
    table.units[CYRBM_UNIT_##UPPER].gibbs_f64 = table.gibbs_##NAME_##_f64;

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
#define TAKE(v) if (strcmp(isa, #v) == 0) { cyrbm_fill_##v(&table); got = #v; }
    CYRBM_BUILT(TAKE)
#undef TAKE
    if (got == NULL) return 0;
    table.isa = got;
    CYRBM_COMMON_KERNELS(FILL_COMMON)
    CYRBM_UNIT_TYPES(FILL_UNIT)
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
#define NAME(v) #v ","
    return "" CYRBM_BUILT(NAME);
#undef NAME
}
