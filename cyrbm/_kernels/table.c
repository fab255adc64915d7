/* One variant's entries of the one dispatch table (kernels.h): compiled once per
 * instruction set with its flags, like gibbs.c, anneal.c and chib.c, whose functions
 * (name_<isa>) cyrbm_fill_<isa> puts in the table; dispatch.c calls the fill of the
 * variant it chooses.  A file of its own, so that the kernels' files compile as before. */
#define CYRBM_KERNEL_LIBRARY 1
#include "simd.h"
#include "kernels.h"

#define DECLARE_VARIANT(RET, NAME, PARAMS, ARGS) RET CYRBM_K(cyrbm_##NAME) PARAMS;
CYRBM_VARIANT_KERNELS(DECLARE_VARIANT)

#define FILL_VARIANT(RET, NAME, PARAMS, ARGS) table->NAME = CYRBM_K(cyrbm_##NAME);
void CYRBM_K(cyrbm_fill)(cyrbm_kernel_table *table);
void CYRBM_K(cyrbm_fill)(cyrbm_kernel_table *table) { CYRBM_VARIANT_KERNELS(FILL_VARIANT) }
