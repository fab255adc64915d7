"""Build cyrbm's compiled kernels.

The C kernels (cyrbm/_kernels/gibbs.c, anneal.c, chib.c) and each variant's fill of the
dispatch table (table.c) are compiled once per instruction set into static libraries
(cyrbm_gibbs_<isa>, ...), linked with dispatch.c and common.c into one extension,
cyrbm._dispatch, whose one table the other extensions call through; dispatch.c picks the
variant at import time (the widest the CPU runs).

Environment switches (all optional):
  CYRBM_ISA=LIST      build only these variants (comma-separated: avx512, avx2, sse2,
                      neon, generic); default: every variant of the target architecture
  CYRBM_OPENMP=0      build without OpenMP even if the compiler supports it
  CYRBM_NATIVE=1      add -march=native (faster on the build machine, not portable)
  CYRBM_DEBUG=1       keep Cython's bounds and initialisation checks
  CYRBM_JOBS=N        compile with N parallel jobs (default: build_ext's -j N if given,
                      else one per CPU)

The kernel libraries and the extensions are each compiled N at a time (the Cython
translation, which runs before the options are read: CYRBM_JOBS or one per CPU); the
files built do not depend on N.
"""
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_clib import build_clib
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def build_jobs(requested=None):
    """Parallel compile jobs: ``requested`` (build_ext's -j N; True: one per CPU), else
    CYRBM_JOBS, else one per CPU."""
    if requested is True:
        return os.cpu_count() or 1
    value = requested or os.environ.get("CYRBM_JOBS", "").strip()
    if value:
        try:
            jobs = int(value)
        except ValueError:
            sys.exit(f"cyrbm: the job count must be a whole number, not {value!r}.")
        if jobs < 1:
            sys.exit(f"cyrbm: the job count must be at least 1, not {jobs}.")
        return jobs
    return os.cpu_count() or 1


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


KERNELS = HERE / "cyrbm" / "_kernels"
# per instruction set: the compiler flags of its variant (AVX-512 Foundation only: the
# kernels need nothing more; bench/README.md has the measurement)
ISA_FLAGS = {
    "avx512": ["-mavx512f", "-mavx2", "-mfma"],
    "avx2": ["-mavx2", "-mfma"],
    "sse2": [],
    "neon": [],
    "generic": [],
}


def isa_variants():
    """The instruction-set variants to build: CYRBM_ISA, or all of the target's."""
    machine = platform.machine().lower()
    if sys.platform == "win32":
        native = ["generic"]           # MSVC has no vector extensions
    elif machine in ("x86_64", "amd64"):
        native = ["avx512", "avx2", "sse2", "generic"]
    elif machine in ("aarch64", "arm64"):
        native = ["neon", "generic"]
    else:
        native = ["generic"]
    want = os.environ.get("CYRBM_ISA", "").strip()
    if not want:
        return native
    chosen = [w.strip().lower() for w in want.split(",") if w.strip()]
    bad = [w for w in chosen if w not in native]
    if bad:
        sys.exit(f"cyrbm: CYRBM_ISA names {', '.join(bad)}, which this target "
                 f"({machine}) cannot build; choose from {', '.join(native)}.")
    return chosen


def common_cflags():
    if sys.platform == "win32":
        return []
    flags = ["-O3", "-std=c99", "-ffp-contract=off"]
    if os.environ.get("CYRBM_NATIVE", "0") == "1":
        flags += ["-march=native", "-DCYRBM_NATIVE"]
    return flags


def kernel_libraries():
    """Static libraries: the one dispatch table, each kernel family once per variant, and
    the loops with no vector code, in link order (dispatch before variants before common);
    all linked into the one extension that owns the table (KERNEL_OWNER)."""
    variants = isa_variants()
    print("cyrbm: kernel variants: " + ", ".join(variants), flush=True)
    # kernels stay private to the extension that links them
    warn = [] if sys.platform == "win32" else ["-Wall", "-Wextra", "-fvisibility=hidden"]
    base = common_cflags() + warn
    incl = [str(HERE / "include"), str(KERNELS)]
    have = [(f"CYRBM_HAVE_{v.upper()}", "1") for v in variants]
    rel = lambda p: str(p.relative_to(HERE))  # noqa: E731
    libs = [("cyrbm_dispatch", {"sources": [rel(KERNELS / "dispatch.c")], "include_dirs": incl,
                                "macros": have, "cflags": base})]
    # table.c: each variant's fill of the table (it refers to the variant's kernels, so
    # its library comes before theirs)
    for family in ("table", "gibbs", "anneal", "chib"):
        for v in variants:
            libs.append((f"cyrbm_{family}_{v}", {
                "sources": [rel(KERNELS / f"{family}.c")], "include_dirs": incl,
                "macros": [(f"CYRBM_ISA_{v.upper()}", "1")],
                "cflags": base + ISA_FLAGS[v]}))
    libs.append(("cyrbm_common", {"sources": [rel(KERNELS / "common.c")],
                                  "include_dirs": incl, "cflags": base}))
    return libs


# the extension that links the kernel library and owns its one dispatch table
KERNEL_OWNER = "cyrbm._dispatch"


def _write_generated(path, source, body):
    """Write a generated Cython file (only when its text changes, so builds stay
    incremental); ``source`` names the file it is generated from."""
    text = "\n".join([f"# generated by setup.py from {source}: do not edit"] + body) + "\n"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _cython_params(c_params):
    return " ".join(re.sub(r"\bptrdiff_t\b", "Py_ssize_t", c_params).split())


def kernel_declarations():
    """Write cyrbm/_kernels_h.pxi, the Cython declarations of cyrbm/_kernels/kernels.h,
    which Cython cannot read itself: its structs (typedef struct {...} name), and both
    instances (cyrbm_<name>_f32, _f64) of every kernel its CYRBM_*_KERNELS(X, FT, FS)
    lists hold once for FT / FS.  For each such kernel, k_<name> calls the instance of
    its type: a fused-type (cython.floating) inline function when a parameter has the
    float type, else (the float buffers sit in a struct) one taking the type as its
    first argument, ``bint float32``.  _ckernels.pxd includes it."""
    text = re.sub(r"/\*.*?\*/", " ", (KERNELS / "kernels.h").read_text(encoding="utf-8"),
                  flags=re.S)
    lines = ["from cython cimport floating", "", 'cdef extern from "kernels.h" nogil:']
    for body, name in re.findall(r"typedef struct \{([^{}]*)\} (\w+);", text):
        lines.append(f"    ctypedef struct {name}:")
        for field in filter(str.strip, body.split(";")):
            # one declarator a line, as Cython wants them: "T *a, *b" -> "T *a", "T *b"
            first, *more = _cython_params(field).split(", ")
            base, first = re.match(r"(.*?)\s*(\**\w+(?:\[\d+\])?)$", first).groups()
            lines += [f"        {base} {d}" for d in [first] + more]
    fused = []
    for body in re.findall(r"#define CYRBM_\w+_KERNELS\(X, FT, FS\)((?:[^\n]*\\\n)*[^\n]*)", text):
        for ret, name, params, args in re.findall(
                r"X\((\w+), (\w+)_##FS, \(([^()]*)\),\s*\(([^()]*)\)\)",
                body.replace("\\\n", " ")):
            params = _cython_params(params)
            typed = lambda ft: re.sub(r"\bFT\b", ft, params)  # noqa: E731
            for ft, fs in (("float", "f32"), ("double", "f64")):
                lines.append(f"    {ret} cyrbm_{name}_{fs}({typed(ft)})")
            call = "" if ret == "void" else "return "
            if typed("") != params:
                head, test = typed("floating"), "floating is float"
            else:
                head, test = f"bint float32, {params}", "float32"
            fused += ["", "", f"cdef inline {ret} k_{name}({head}) noexcept nogil:",
                      f"    if {test}:", f"        {call}cyrbm_{name}_f32({args})",
                      "    else:", f"        {call}cyrbm_{name}_f64({args})"]
    if not fused:
        sys.exit("cyrbm: found no typed kernel lists in cyrbm/_kernels/kernels.h.")
    _write_generated(HERE / "cyrbm" / "_kernels_h.pxi", "cyrbm/_kernels/kernels.h",
                     lines + fused)


def capi_declarations():
    """Write the typed pairs of the C/Cython API from its entries, each declared once over
    ``floating`` in cyrbm/capi.pxd: cyrbm/_capi_typed.pxi (included by capi.pxd, installed:
    the typed names entry_f64 / entry_f32 of every version, inline aliases of
    entry[double] / entry[float]) and cyrbm/_capi_table.pxi (included by capi.pyx: the
    table's declarations from include/cyrbm/cyrbm.h, and _fill_table, which puts the
    two instances of every entry in it)."""
    text = (HERE / "cyrbm" / "capi.pxd").read_text(encoding="utf-8")
    entries = re.findall(r"^cdef int (\w+)\(([^()]*)\) noexcept nogil$", text, flags=re.M)
    if not entries:
        sys.exit("cyrbm: found no entries in cyrbm/capi.pxd.")
    aliases, types, members, fills = [], [], [], []
    for name, params in entries:
        params = " ".join(params.split())
        args = ", ".join(re.findall(r"(\w+)\s*(?:,|$)", params))
        for ft, fs in (("double", "f64"), ("float", "f32")):
            typed = re.sub(r"\bfloating\b", ft, params)
            aliases += [f"cdef inline int {name}_{fs}({typed}) noexcept nogil:",
                        f"    return {name}({args})"]
            types.append(f'    ctypedef void *{name}_{fs}_fn "cyrbm_{name}_{fs}_fn"')
            members.append(f"        {name}_{fs}_fn {name}_{fs}")
            fills.append(f"    table.{name}_{fs} = <{name}_{fs}_fn> {name}[{ft}]")
    _write_generated(HERE / "cyrbm" / "_capi_typed.pxi", "cyrbm/capi.pxd", aliases)
    _write_generated(HERE / "cyrbm" / "_capi_table.pxi", "cyrbm/capi.pxd",
                     ['cdef extern from "cyrbm/cyrbm.h":'] + types
                     + ["    ctypedef struct cyrbm_capi:", "        int version"] + members
                     + ["", "", "cdef void _fill_table(cyrbm_capi *table) noexcept:"] + fills)


def extensions():
    kernel_declarations()
    capi_declarations()
    omp = openmp_flags()
    if omp is None:
        print("cyrbm: building WITHOUT OpenMP: kernels will run single-threaded", flush=True)
        cflags, lflags = [], []
    else:
        print("cyrbm: building with OpenMP (" + " ".join(omp[0]) + ")", flush=True)
        cflags, lflags = omp
    cflags = cflags + common_cflags()
    if os.environ.get("CYRBM_NATIVE", "0") == "1":
        print("cyrbm: CYRBM_NATIVE=1, adding -march=native (not portable)", flush=True)
    # cyrbm/include is a build-time copy of include/ (so wheels ship the headers)
    include_dirs = [str(HERE / "include"), str(KERNELS), numpy.get_include()]
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
    jobs = build_jobs()
    # Cython translates in worker processes, which Windows cannot fork
    return cythonize(exts, compiler_directives=directives, include_path=[str(HERE)],
                     quiet=True, nthreads=jobs if jobs > 1 and sys.platform != "win32" else 0)


class BuildPyWithHeaders(build_py):
    """Copy include/cyrbm/*.h into the package so installed wheels carry the headers,
    and write cyrbm/_build.py: the key of the kernel sources built (cyrbm._version.
    source_key), which keys the estimators' checkpoints to this build."""

    def run(self):
        super().run()
        import runpy
        key = runpy.run_path(str(HERE / "cyrbm" / "_version.py"))["source_key"](
            str(HERE / "cyrbm"))
        (Path(self.build_lib) / "cyrbm" / "_build.py").write_text(
            '"""Written by setup.py at build time: the key of the kernel sources built."""\n'
            f"BUILD_KEY = {key!r}\n", encoding="utf-8")
        src = HERE / "include" / "cyrbm"
        dst = Path(self.build_lib) / "cyrbm" / "include" / "cyrbm"
        dst.mkdir(parents=True, exist_ok=True)
        for h in src.glob("*.h"):
            shutil.copy2(h, dst / h.name)


class BuildKernelLibraries(build_clib):
    """build_clib with one object directory per library (the same kernel source is
    compiled once per instruction set, with different flags) and per-library cflags,
    built as many at a time as build_ext's job count.  The libraries are this command's
    own, not the distribution's (which setuptools would link into every extension)."""

    def finalize_options(self):
        super().finalize_options()
        self.libraries = kernel_libraries()

    def build_libraries(self, libraries):
        jobs = self.get_finalized_command("build_ext").parallel
        os.makedirs(self.build_clib, exist_ok=True)
        for name, _ in libraries:
            os.makedirs(os.path.join(self.build_temp, name), exist_ok=True)
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            # results in list order, so a failure is reported for the first failing library
            for future in [pool.submit(self._build_one, name, info) for name, info in libraries]:
                future.result()

    def _build_one(self, name, info):
        objects = self.compiler.compile(
            list(info["sources"]), output_dir=os.path.join(self.build_temp, name),
            macros=info.get("macros"), include_dirs=info.get("include_dirs"),
            extra_postargs=info.get("cflags"), debug=self.debug)
        self.compiler.create_static_lib(objects, name, output_dir=self.build_clib,
                                        debug=self.debug)


class BuildExtAlways(build_ext):
    """Always recompile (the OpenMP and native switches change the flags, not the sources,
    so an old object in build/ must not be reused), the extensions built in parallel."""

    def finalize_options(self):
        super().finalize_options()
        self.force = True
        self.parallel = build_jobs(self.parallel)

    def run(self):
        # the kernel libraries go into KERNEL_OWNER alone: one table for every module
        self.run_command("build_clib")
        clib = self.get_finalized_command("build_clib")
        for ext in self.extensions:
            if ext.name == KERNEL_OWNER:
                ext.libraries = [name for name, _ in clib.libraries] + list(ext.libraries)
                ext.library_dirs = [clib.build_clib] + list(ext.library_dirs)
        super().run()


setup(ext_modules=extensions(),
      cmdclass={"build_py": BuildPyWithHeaders, "build_clib": BuildKernelLibraries,
                "build_ext": BuildExtAlways})
