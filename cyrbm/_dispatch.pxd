# The one kernel dispatch table (cyrbm/_kernels/dispatch.c).  An engine module that calls
# kernels points its table at this one when imported:
#   from cyrbm._dispatch cimport kernel_table
#   cyrbm_kt = kernel_table()
from cyrbm._ckernels cimport cyrbm_kernel_table

cdef const cyrbm_kernel_table *kernel_table() noexcept nogil
