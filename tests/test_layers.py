"""The package's layers hold: CLI -> Python API -> engine (Cython) -> kernels (C).

Reads every module's imports from the source (``ast`` for Python, the import and cimport
lines of ``.pyx``/``.pxd``, including imports inside functions) and fails on an import of a
higher layer, on an import cycle between modules, and on the C API (``capi``) importing
the Python API.  Every module must be placed in a layer here, so a new one is placed on
purpose (docs/architecture.md describes the layers).
"""
import ast
import re
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "cyrbm"

# the layer of each module, lowest first; "base" holds what every layer may use
LAYERS = ["base", "engine", "api", "cli"]
BASE = {"errors", "_version", "_build"}
#: modules setup.py writes into the build, absent from the source tree
GENERATED = {"_build"}
ENGINE = {"_gibbs", "_cd", "_anneal", "_engine", "_tempering", "_gauss", "_srbm", "_exact",
          "_chib", "_chib_scalar", "_dbn", "_random", "_omp", "_kernel_tests", "capi",
          "_ckernels", "_dispatch", "_ratio"}
# The API layer, in its order: a module may import its own rank or a lower one.  Every
# module of the package is placed here or above, on purpose: a new one fails
# test_every_module_is_placed until it is given its place.
API_ORDER = [
    # what every concern uses: checks, files, threads, progress, the cluster's map
    {"defaults", "_validation", "_io", "_threads", "_progress", "distributed"},
    # results and schedules of the estimators, below the models that report them
    {"estimators.results", "estimators.schedules"},
    # data: loaders, binarization, image patches and their whitening
    {"data", "data.patches", "data.datasets", "images", "_plot"},
    # the unit types and what is built of them
    {"models", "models.exact", "models.tempering"},
    # the drivers of ratio AIS on the engine, which each unit type's AIS calls
    {"estimators.ratio"},
    {"models.rbm"},
    {"models.gaussian", "models.srbm", "models.mixture"},
    {"models.kinds"},
    {"models.dbn"},
    # measuring them
    {"estimators", "estimators.annealing", "estimators.evaluation",
     "estimators.gaussian_dbn"},
    {"estimators.chib"},
    {"estimators.bounds"},
    # training them
    {"training", "training.modehop", "training.tracking", "training.resume",
     "training.pt_tracking"},
    {"training.samplers"},
    {"training.checkpoints"},
    {"training.trainer"},
    {"training.greedy"},
    # the integrations, and the package's public names
    {"sklearn", "sweep"},
    {""},
]
CLI_PREFIXES = ("cli", "_cli")


def layer_of(module):
    """The layer of ``cyrbm.<module>`` (module: the dotted name below the package)."""
    top = module.split(".")[0]
    if top in BASE:
        return "base"
    if top in ENGINE:
        return "engine"
    if top.startswith(CLI_PREFIXES):
        return "cli"
    return "api"


def api_rank(module):
    """The rank of an API module in API_ORDER, or None when it has no place."""
    for rank, group in enumerate(API_ORDER):
        if module in group:
            return rank
    return None


def _module_name(path):
    rel = path.relative_to(SOURCE).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


_CYTHON_IMPORT = re.compile(
    r"^\s*(?:from\s+(cyrbm(?:\.[\w.]+)?)\s+c?import\s+(.+)|c?import\s+(cyrbm(?:\.[\w.]+)?))")


def _targets_of(path, module, root=SOURCE):
    """The cyrbm modules that ``path`` imports (dotted names below the package)."""
    found = set()
    if path.suffix == ".py":
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = module.rsplit(".", 1)[0] if "." in module else ""
        if path.name == "__init__.py":
            package = module
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
                found.update(n for n in names if n == "cyrbm" or n.startswith("cyrbm."))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".") if package else []
                    parts = parts[:len(parts) - (node.level - 1)]
                    base = ".".join(["cyrbm"] + parts + ([base] if base else []))
                if base == "cyrbm" or base.startswith("cyrbm."):
                    # ``from cyrbm.pkg import mod`` imports the module cyrbm.pkg.mod;
                    # ``from cyrbm.mod import name`` the module cyrbm.mod
                    below = base[len("cyrbm."):] if base != "cyrbm" else ""
                    for a in node.names:
                        sub = f"{below}.{a.name}" if below else a.name
                        found.add(f"cyrbm.{sub}" if _exists(sub, root) or not below
                                  else base)
    else:
        for line in path.read_text(encoding="utf-8").splitlines():
            m = _CYTHON_IMPORT.match(line)
            if not m:
                continue
            if m.group(1):
                if m.group(1) == "cyrbm":
                    names = re.split(r"[,\s()]+", m.group(2))
                    found.update(f"cyrbm.{n}" for n in names if n and n != "as")
                else:
                    found.add(m.group(1))
            else:
                found.add(m.group(3))
    out = set()
    for name in found:
        below = name[len("cyrbm."):] if name.startswith("cyrbm.") else ""
        if below and not _exists(below, root):
            below = below.rsplit(".", 1)[0] if "." in below else ""   # a name, not a module
        out.add(below)
    out.discard(module)
    return out


def _exists(dotted, root):
    if dotted in GENERATED:
        return True
    base = root.joinpath(*dotted.split("."))
    return (base.with_suffix(".py").exists() or base.with_suffix(".pyx").exists()
            or base.with_suffix(".pxd").exists() or (base / "__init__.py").exists())


def import_graph():
    graph = {}
    for path in sorted(SOURCE.rglob("*")):
        if path.suffix not in (".py", ".pyx", ".pxd"):
            continue
        module = _module_name(path)
        graph.setdefault(module, set()).update(_targets_of(path, module))
    return graph


pytestmark = pytest.mark.skipif(not SOURCE.is_dir(), reason="needs the source tree")


def test_no_module_imports_a_higher_layer():
    bad = []
    for module, targets in import_graph().items():
        for target in sorted(targets):
            if LAYERS.index(layer_of(target)) > LAYERS.index(layer_of(module)):
                bad.append(f"{module} ({layer_of(module)}) imports {target or 'cyrbm'} "
                           f"({layer_of(target)})")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_every_module_is_placed():
    unplaced = [m for m in import_graph() if layer_of(m) == "api" and api_rank(m) is None]
    assert not unplaced, ("modules with no place in test_layers.API_ORDER (give each one "
                          "on purpose): " + ", ".join(sorted(unplaced)))


def test_the_api_layer_imports_only_its_own_rank_or_lower():
    bad = []
    for module, targets in import_graph().items():
        if layer_of(module) != "api":
            continue
        for target in sorted(targets):
            if layer_of(target) == "api" and api_rank(target) > api_rank(module):
                bad.append(f"{module or 'cyrbm'} (rank {api_rank(module)}) imports "
                           f"{target or 'cyrbm'} (rank {api_rank(target)})")
    assert not bad, "upward imports inside the API layer:\n" + "\n".join(bad)


def test_the_c_api_does_not_import_the_python_api():
    targets = import_graph()["capi"]
    assert not [t for t in targets if layer_of(t) in ("api", "cli")], targets


def find_cycles(graph):
    """Every cycle met by a depth-first walk of ``graph`` (module -> imported modules)."""
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return cycles


def test_no_import_cycles():
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_checker_sees_upward_imports_and_cycles(tmp_path):
    """Power check: the parser finds an upward import and a cycle in modules made for it."""
    assert layer_of("cli") == "cli" and layer_of("_anneal") == "engine"
    assert layer_of("estimators.annealing") == "api" and layer_of("errors") == "base"
    assert api_rank("models.rbm") < api_rank("estimators.annealing") < api_rank("sklearn")
    assert api_rank("a_module_nobody_placed") is None
    assert "_random" in _targets_of(SOURCE / "_gibbs.pyx", "_gibbs")
    (tmp_path / "estimators").mkdir()
    for name in ("m.py", "cli.py", "estimators/__init__.py", "estimators/annealing.py"):
        (tmp_path / name).write_text("")
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from cyrbm.cli import main\n    import cyrbm.estimators.annealing\n")
    assert _targets_of(src, "m", tmp_path) == {"cli", "estimators.annealing"}
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a -> b -> c -> a"]
    assert find_cycles({"a": {"b"}, "b": set()}) == []
