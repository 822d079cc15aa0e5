"""The import graph of ``phdlib``: no circles, counting imports at module level and
inside functions alike (an import moved into a function to dodge a circle is still an
arrow back up)."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import phdlib

ROOT = Path(phdlib.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = ("phdlib",) + p.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _targets(mods: dict, module: str, node) -> list[str]:
    """The phdlib modules one import statement reaches (``from . import x`` reaches the
    submodule ``x`` when there is one, else the package)."""
    package = module if mods[module].name == "__init__.py" else module.rsplit(".", 1)[0]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in mods]
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[:len(parts) - node.level + 1])
        full = f"{base}.{node.module}" if node.module else base
    else:
        full = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{full}.{alias.name}"
        out.append(sub if sub in mods else full)
    return [t for t in out if t in mods]


def import_graph() -> dict[str, set[str]]:
    """module -> the phdlib modules it imports anywhere in its source."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[m].update(t for t in _targets(mods, m, node) if t != m)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read_from_the_sources():
    g = import_graph()
    assert "phdlib.data.loading" in g["phdlib.data"] and "phdlib.codes.packed" in g["phdlib.serving.codes_file"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    found = circles(import_graph())
    assert not found, "import circles (module-level and in-function imports): " + "; ".join(
        " <-> ".join(c) for c in found)


@pytest.mark.parametrize("module", ["phdlib.names"])
def test_light_modules_import_nothing_of_phdlib(module):
    assert not import_graph()[module]


#: The packages of phdlib from the ground up. A module may import only from its own
#: package or from a package on a lower layer (at module level and inside functions
#: alike); the foundation's modules import nothing of phdlib but one another's
#: ``__version__``. CONTRIBUTING.md's module map draws the same order.
LAYERS = [
    ("foundation", ["phdlib", "phdlib.names", "phdlib.io", "phdlib.paper", "phdlib.kernels"]),
    ("codes", ["phdlib.codes"]),
    ("data", ["phdlib.data"]),
    ("evaluation", ["phdlib.evaluation"]),
    ("methods", ["phdlib.methods"]),
    ("results", ["phdlib.results"]),
    ("serving", ["phdlib.serving"]),
    ("bench", ["phdlib.bench"]),
    ("experiments", ["phdlib.experiments"]),
    ("studies", ["phdlib.studies"]),
    ("report", ["phdlib.report"]),
    ("book", ["phdlib.book"]),
    ("cli", ["phdlib.cli"]),
]


def _unit(module: str) -> str:
    """The package (or foundation module) a module belongs to."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _layer(unit: str) -> int:
    for i, (_, units) in enumerate(LAYERS):
        if unit in units:
            return i
    raise KeyError(unit)


def test_every_module_has_a_declared_layer():
    missing = sorted({_unit(m) for m in import_graph()} - {u for _, us in LAYERS for u in us})
    assert not missing, f"modules on no declared layer (add them to LAYERS): {missing}"


def test_imports_go_only_down():
    up = []
    for m, targets in sorted(import_graph().items()):
        for t in sorted(targets):
            a, b = _unit(m), _unit(t)
            if a == b:
                continue
            # the foundation: the root package holds only __version__, which all may read
            if b == "phdlib":
                continue
            if _layer(b) >= _layer(a):
                up.append(f"{m} ({LAYERS[_layer(a)][0]}) -> {t} ({LAYERS[_layer(b)][0]})")
    assert not up, "imports sideways or up the declared layers:\n" + "\n".join(up)


def test_the_root_package_imports_nothing_of_phdlib():
    assert not import_graph()["phdlib"]


def test_the_layer_check_can_fail():
    assert _layer(_unit("phdlib.methods.vh")) > _layer(_unit("phdlib.evaluation.fitted"))
    assert _layer(_unit("phdlib.cli.main")) == len(LAYERS) - 1


#: Names that say what a module is not: a grab bag (``_common``, ``utils``,
#: ``*_helpers``, ``misc``) or a size split (``blocks``, ``part2``, ``core2``).
VAGUE = ("_common", "common", "utils", "util", "misc", "blocks", "stuff", "extra", "more")


def test_no_module_is_named_for_what_it_is_not():
    vague = [m for m in import_graph() if m.rsplit(".", 1)[-1] in VAGUE
             or m.endswith("_helpers") or m.rsplit(".", 1)[-1].startswith("part")]
    assert not vague, f"modules named for no concept: {vague}"


#: Modules of phdlib that may be imported inside a function: they pull in PyTorch,
#: which a caller that never trains VH should not pay for.
LAZY = {"phdlib.methods.vh_model", "phdlib.methods.vh_step"}


def _function_imports() -> list[str]:
    mods = _modules()
    out = []
    for m, path in mods.items():
        if m.startswith("phdlib.cli"):  # commands import the library only when run
            continue
        tree = ast.parse(path.read_text(), str(path))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    hidden = set(_targets(mods, m, node)) - LAZY
                    if hidden:
                        out.append(f"{m}.{fn.name} (line {node.lineno}) imports {sorted(hidden)}")
    return out


def test_no_import_of_phdlib_hides_in_a_function():
    found = _function_imports()
    assert not found, "move these imports to the module's top:\n" + "\n".join(found)
