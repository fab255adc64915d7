"""Build cyrbm's compiled kernels.

Environment switches (all optional):
  CYRBM_OPENMP=0      build without OpenMP even if the compiler supports it
  CYRBM_NATIVE=1      add -march=native (faster on the build machine, not portable)
  CYRBM_DEBUG=1       keep Cython's bounds and initialisation checks
"""
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _compiler_command():
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return cc.split()


def openmp_flags():
    """(compile flags, link flags) for OpenMP, or None when it cannot be used.

    Decided by compiling, linking and running a small OpenMP program, as the build of a
    package that must also work without OpenMP should.
    """
    if os.environ.get("CYRBM_OPENMP", "1").lower() in ("0", "no", "off", "false"):
        return None
    if sys.platform == "win32":
        return (["/openmp"], [])
    if sys.platform == "darwin":
        candidates = [(["-Xpreprocessor", "-fopenmp"], ["-lomp"]), (["-fopenmp"], ["-fopenmp"])]
    else:
        candidates = [(["-fopenmp"], ["-fopenmp"])]
    src = (
        "#include <omp.h>\n#include <stdio.h>\n"
        "int main(void) { int n = 0;\n#pragma omp parallel reduction(+:n)\n n += 1;\n"
        " printf(\"%d\\n\", n); return n < 1; }\n"
    )
    cc = _compiler_command()
    env_cflags = os.environ.get("CFLAGS", "").split()
    env_ldflags = os.environ.get("LDFLAGS", "").split()
    for cflags, lflags in candidates:
        with tempfile.TemporaryDirectory() as tmp:
            c_file = Path(tmp) / "omp_check.c"
            exe = Path(tmp) / "omp_check"
            c_file.write_text(src)
            try:
                subprocess.run(cc + env_cflags + cflags + [str(c_file), "-o", str(exe)]
                               + env_ldflags + lflags,
                               check=True, capture_output=True, timeout=120)
                subprocess.run([str(exe)], check=True, capture_output=True, timeout=60)
            except (OSError, subprocess.SubprocessError):
                continue
            return cflags, lflags
    return None


def extensions():
    omp = openmp_flags()
    if omp is None:
        print("cyrbm: building WITHOUT OpenMP: kernels will run single-threaded", flush=True)
        cflags, lflags = [], []
    else:
        print("cyrbm: building with OpenMP (" + " ".join(omp[0]) + ")", flush=True)
        cflags, lflags = omp
    if sys.platform != "win32":
        cflags = cflags + ["-O3", "-std=c99", "-Wno-unused-function"]
        if os.environ.get("CYRBM_NATIVE", "0") == "1":
            print("cyrbm: CYRBM_NATIVE=1, adding -march=native (not portable)", flush=True)
            cflags = cflags + ["-march=native", "-DCYRBM_NATIVE"]
    # cyrbm/include is a build-time copy of include/ (so wheels ship the headers)
    include_dirs = [str(HERE / "include"), numpy.get_include()]
    exts = []
    for pyx in sorted((HERE / "cyrbm").glob("*.pyx")):
        name = "cyrbm." + pyx.stem
        exts.append(Extension(
            name, [str(pyx.relative_to(HERE))],
            include_dirs=include_dirs,
            extra_compile_args=cflags,
            extra_link_args=lflags,
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
        ))
    debug = os.environ.get("CYRBM_DEBUG", "0") == "1"
    directives = {
        "language_level": 3,
        "boundscheck": debug,
        "wraparound": debug,
        "initializedcheck": debug,
        "cdivision": True,
        "embedsignature": True,
    }
    return cythonize(exts, compiler_directives=directives,
                     include_path=[str(HERE)], quiet=True)


class BuildPyWithHeaders(build_py):
    """Copy include/cyrbm/*.h into the package so installed wheels carry the headers."""

    def run(self):
        super().run()
        src = HERE / "include" / "cyrbm"
        dst = Path(self.build_lib) / "cyrbm" / "include" / "cyrbm"
        dst.mkdir(parents=True, exist_ok=True)
        for h in src.glob("*.h"):
            shutil.copy2(h, dst / h.name)


class BuildExtAlways(build_ext):
    """Always recompile: the OpenMP and native switches change the flags, not the sources,
    so an old object in build/ must not be reused."""

    def finalize_options(self):
        super().finalize_options()
        self.force = True


setup(ext_modules=extensions(),
      cmdclass={"build_py": BuildPyWithHeaders, "build_ext": BuildExtAlways})
