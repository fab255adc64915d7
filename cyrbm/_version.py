"""cyrbm's version (the one in pyproject.toml), below every module that records it, and
the identity of the compiled kernels (:func:`build_key`), which keys the estimators'
checkpoints: other kernels give other numbers, so their checkpoints are refused."""
import hashlib
import os

__version__ = "0.1.0"

#: the sources whose compiled code makes the numbers: the C kernels and the Cython
#: engine (relative to the package's folder)
_BUILD_SOURCES = (("_kernels", (".c", ".h")), (".", (".pyx", ".pxd")))
#: build switches that change the compiled code's arithmetic (setup.py's environment)
_BUILD_SWITCHES = ("CYRBM_NATIVE",)


def source_key(package_dir, environ=None):
    """A hash of the kernel and engine sources under ``package_dir`` (the folder
    ``cyrbm``) and of the build switches in ``environ`` that change their arithmetic;
    None when no kernel source is there.  setup.py takes it at build time and writes it
    into the build (cyrbm/_build.py)."""
    digest, found = hashlib.sha256(), False
    for folder, endings in _BUILD_SOURCES:
        where = os.path.join(package_dir, folder)
        try:
            names = sorted(n for n in os.listdir(where) if n.endswith(endings))
        except OSError:
            continue
        for name in names:
            with open(os.path.join(where, name), "rb") as f:
                data = f.read()
            digest.update(f"{folder}/{name}:{len(data)}:".encode() + data)
            found = found or folder == "_kernels"
    if not found:
        return None
    environ = os.environ if environ is None else environ
    for switch in _BUILD_SWITCHES:
        digest.update(f"{switch}={environ.get(switch, '')};".encode())
    return digest.hexdigest()[:16]


def build_key():
    """The identity of this build's kernels: the key setup.py compiled into it
    (cyrbm/_build.py), or, in a source tree built in place, the key of the sources
    beside this file; "unknown" when neither is there."""
    try:
        from cyrbm._build import BUILD_KEY
        return BUILD_KEY
    except ImportError:
        return source_key(os.path.dirname(os.path.abspath(__file__))) or "unknown"
