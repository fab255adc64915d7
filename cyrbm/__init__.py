"""cyrbm: fast, measurable Restricted Boltzmann Machines.

Train binary RBMs (CD-k, PCD) with compiled, OpenMP-parallel kernels, and measure them:
partition functions (exactly, or by annealed importance sampling with ``Annealer``),
test log-probabilities with honest error bars, and exact pseudo-likelihoods.  Papers: Salakhutdinov & Murray (2008), Murray & Salakhutdinov (2009),
Cho, Raiko & Ilin (2010), Hu & Yu.
"""
import os as _os

__version__ = "0.1.0"

from cyrbm.errors import (CyrbmError, DataError, ModelFileError, ModelMismatchError,  # noqa: E402
                          OutputError, TrainingDiverged)
from cyrbm.models import RBM  # noqa: E402
from cyrbm.training import Trainer  # noqa: E402
from cyrbm.annealing import Annealer, AISResult, exact_log_partition  # noqa: E402
from cyrbm.datasets import load_data, check_binary, train_test_split  # noqa: E402

__all__ = [
    "RBM", "Trainer", "Annealer", "AISResult", "exact_log_partition", "load_data", "check_binary", "train_test_split", "show_config",
    "config", "get_include", "CyrbmError", "DataError", "ModelFileError",
    "ModelMismatchError", "OutputError", "TrainingDiverged", "__version__",
]


def get_include():
    """Directory holding cyrbm's C headers (``cyrbm/*.h``), for extensions that embed it."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    packaged = _os.path.join(here, "include")
    if _os.path.isdir(packaged):
        return packaged
    return _os.path.join(_os.path.dirname(here), "include")   # a source checkout


def _blas_info():
    try:
        import scipy
        cfg = scipy.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        name = blas.get("name", "unknown")
        version = blas.get("version", "")
        return f"{name} {version}".strip() + " (via SciPy)"
    except Exception:   # pragma: no cover - depends on SciPy's build metadata
        return "unknown"


def config():
    """Build and runtime facts as a dict: version, OpenMP, threads, BLAS, the kernel
    variant in use (the widest instruction set the CPU runs, or CYRBM_FORCE_ISA) and the
    variants the build holds."""
    from cyrbm import _omp, _gibbs
    return {
        "version": __version__,
        "openmp": _omp.openmp_enabled(),
        "threads": _omp.max_threads(),
        "blas": _blas_info(),
        "kernels": _gibbs.kernels_in_use(),
        "kernels_built": _gibbs.kernels_built(),
        "include": get_include(),
    }


def show_config():
    """Print version, whether OpenMP is on, the default thread count and the BLAS."""
    c = config()
    print(f"cyrbm {c['version']}")
    print(f"  OpenMP:  {'on' if c['openmp'] else 'off (kernels run single-threaded)'}")
    print(f"  threads: {c['threads']}")
    print(f"  BLAS:    {c['blas']}")
    print(f"  kernels: {c['kernels']} (built: {c['kernels_built']})")
