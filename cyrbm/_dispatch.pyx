# cython: language_level=3
"""The one kernel dispatch table: which instruction-set variant of the C kernels runs.

The kernel library (every variant of every family, cyrbm/_kernels) is linked into this
extension alone; it owns the one table (cyrbm/_kernels/dispatch.c), and the other engine
modules call every kernel through it (kernels.h).  Choosing a variant here switches every
family at once; every variant gives the same bits.
"""
import os

from cyrbm._ckernels cimport cyrbm_kernel_table

cdef extern from "kernels.h" nogil:
    int cyrbm_kernels_init(const char *force)
    const cyrbm_kernel_table *cyrbm_kernels()
    const char *cyrbm_kernels_built()


cdef const cyrbm_kernel_table *kernel_table() noexcept nogil:
    """The one table (for the engine modules' cyrbm_kt)."""
    return cyrbm_kernels()


def use_kernels(name=None):
    """Choose the kernel variant of every family (None or "": the widest this CPU runs;
    else avx512, avx2, sse2, neon or generic); returns the one in use.  Every variant
    gives the same bits; CYRBM_FORCE_ISA sets the choice made at import."""
    b = (name or "").encode()
    if cyrbm_kernels_init(b) != 0:
        raise ValueError(f"kernel variant {name!r} is not in this build or this CPU cannot "
                         f"run it (this build holds: {kernels_built()}).")
    return kernels_in_use()


def kernels_in_use():
    """The kernel variant in use."""
    return cyrbm_kernels().isa.decode()


def kernels_built():
    """The kernel variants this build holds, widest first."""
    return cyrbm_kernels_built().decode().strip(",")


def kernels_runnable():
    """The variants this build holds that this CPU runs, widest first (the one in use
    stays in use)."""
    current = kernels_in_use()
    out = []
    for isa in kernels_built().split(","):
        if cyrbm_kernels_init(isa.encode()) == 0:
            out.append(isa)
    use_kernels(current)
    return out


use_kernels(os.environ.get("CYRBM_FORCE_ISA") or None)
