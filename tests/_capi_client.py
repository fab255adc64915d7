"""A downstream C extension of cyrbm's C API, for the tests that check an entry against
the Python API: the source around a test's functions, built against cyrbm/cyrbm.h with
setuptools and imported (the build sees the cyrbm these tests import)."""
import contextlib
import importlib
import os
import subprocess
import sys

import cyrbm

HEAD = r'''
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "cyrbm/cyrbm.h"

static const cyrbm_capi *api;
'''

SETUP = '''
import numpy, cyrbm
from setuptools import Extension, setup
setup(name="{name}", ext_modules=[Extension("{name}", ["{name}.c"],
      include_dirs=[cyrbm.get_include(), numpy.get_include()])])
'''


def c_source(name, body, functions):
    """The C source of module ``name``: the header, ``api`` (the table, imported by the
    module's init), ``body`` and the METH_VARARGS ``functions`` it defines."""
    table = "".join(f'{{"{f}", {f}, METH_VARARGS, NULL}}, ' for f in functions)
    return (HEAD + body + f'''
static PyMethodDef methods[] = {{{table}{{NULL, NULL, 0, NULL}}}};
static struct PyModuleDef moduledef = {{PyModuleDef_HEAD_INIT, "{name}", NULL, -1, methods}};

PyMODINIT_FUNC PyInit_{name}(void) {{
    api = cyrbm_capi_import();
    if (api == NULL) return NULL;
    return PyModule_Create(&moduledef);
}}
''')


@contextlib.contextmanager
def built(tmp_path_factory, dirname, files):
    """``files`` ({file name: text}, a setup.py among them) written to a fresh directory
    ``dirname`` and built in place against this cyrbm; the directory, on sys.path while
    the context lasts."""
    d = tmp_path_factory.mktemp(dirname)
    for name, text in files.items():
        (d / name).write_text(text)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(cyrbm.__file__)))
    result = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=d,
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    sys.path.insert(0, str(d))
    try:
        yield d
    finally:
        sys.path.remove(str(d))


def build_client(tmp_path_factory, name, source):
    """Generator for a module-scoped fixture: module ``name`` built from the C
    ``source``, yielded imported."""
    with built(tmp_path_factory, name, {f"{name}.c": source,
                                        "setup.py": SETUP.format(name=name)}):
        yield importlib.import_module(name)
