"""cyrbm: fast, measurable Restricted Boltzmann Machines.

Train binary RBMs (CD-k, PCD) with compiled, OpenMP-parallel kernels, and measure them:
partition functions (exactly, or by annealed importance sampling with ``Annealer``),
test log-probabilities with honest error bars, and exact pseudo-likelihoods.  Papers: Salakhutdinov & Murray (2008), Murray & Salakhutdinov (2009),
Cho, Raiko & Ilin (2010), Hu & Yu.
"""
import os as _os


def _quiet_openmp_waits(environ=_os.environ):
    """Keep waiting OpenMP threads from spinning on a busy machine.

    By default GNU OpenMP spins up to 300,000 times (LLVM's 200 ms) before a thread
    waiting at a barrier sleeps: on a machine whose cores other programs are using, a
    kernel made of many short parallel regions then burns the cores those programs need
    and waits for its own descheduled threads (issue 10: 7.1 s against 0.6 s on one
    thread).  A short spin keeps the wake-up fast on an idle machine, then the thread
    sleeps.  Set before the OpenMP runtime starts (it reads them once); a value the user
    set wins.
    """
    if "OMP_WAIT_POLICY" not in environ:
        environ.setdefault("GOMP_SPINCOUNT", "10000")
        environ.setdefault("KMP_BLOCKTIME", "1")


_quiet_openmp_waits()


def _check_compiled(here=_os.path.dirname(_os.path.abspath(__file__))):
    """Refuse, in one sentence, a cyrbm whose compiled modules are missing.

    Every ``.pyx`` beside this file must have its extension module (built for this
    Python); without them, as in an unbuilt source tree imported from the repository
    root, the first use would fail later and obscurely (``No module named
    'cyrbm._random'``).
    """
    from importlib.machinery import EXTENSION_SUFFIXES
    try:
        names = _os.listdir(here)
    except OSError:             # not a plain directory (e.g. a zip): nothing to check
        return
    built = {n[: -len(s)] for n in names for s in EXTENSION_SUFFIXES if n.endswith(s)}
    missing = sorted(n[:-4] for n in names if n.endswith(".pyx") and n[:-4] not in built)
    if missing:
        raise ImportError(
            f"cyrbm at {here} is a source tree whose compiled modules ({', '.join(missing)}) "
            f"are not built for this Python: install it (pip install .) and run from another "
            f"directory, or build it in place (python setup.py build_ext --inplace).")


_check_compiled()

from cyrbm._version import __version__  # noqa: E402
from cyrbm.errors import (CyrbmError, DataError, ModelFileError, ModelMismatchError,  # noqa: E402
                          ModelTypeError, OutputError, TrainingDiverged)

# The rest is imported when first used (PEP 562), so that `import cyrbm` and the
# `cyrbm` command start fast and only load NumPy, SciPy and the kernels they need.
_LAZY = {
    "RBM": "cyrbm.models.rbm", "Trainer": "cyrbm.training.trainer", "Annealer": "cyrbm.estimators.annealing",
    "AISResult": "cyrbm.estimators.annealing", "exact_log_partition": "cyrbm.models.exact",
    "load_data": "cyrbm.data.datasets", "check_binary": "cyrbm._validation",
    "train_test_split": "cyrbm.data.datasets",
    "DBN": "cyrbm.models.dbn", "BoundEstimator": "cyrbm.estimators.bounds", "BoundResult": "cyrbm.estimators.bounds",
    "train_dbn": "cyrbm.training.greedy", "BernoulliMixture": "cyrbm.models.mixture",
    "GaussianRBM": "cyrbm.models.gaussian", "SRBM": "cyrbm.models.srbm",
    "load_model": "cyrbm.models.kinds",
}

__all__ = [
    "RBM", "Trainer", "Annealer", "AISResult", "exact_log_partition", "load_data", "check_binary", "train_test_split", "show_config",
    "config", "get_include", "CyrbmError", "DataError", "ModelFileError",
    "ModelMismatchError", "ModelTypeError", "OutputError", "TrainingDiverged", "__version__",
    "DBN", "BoundEstimator", "BoundResult", "train_dbn", "BernoulliMixture", "GaussianRBM",
    "SRBM", "load_model",
]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cyrbm' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


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
    from cyrbm import _omp, _dispatch
    return {
        "version": __version__,
        "openmp": _omp.openmp_enabled(),
        "threads": _omp.max_threads(),
        "blas": _blas_info(),
        "kernels": _dispatch.kernels_in_use(),
        "kernels_built": _dispatch.kernels_built(),
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
