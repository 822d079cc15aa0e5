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
    assert "phdlib.data.loading" in g["phdlib.data"] and "phdlib.codes" in g["phdlib.export"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    found = circles(import_graph())
    assert not found, "import circles (module-level and in-function imports): " + "; ".join(
        " <-> ".join(c) for c in found)


@pytest.mark.parametrize("module", ["phdlib.names"])
def test_light_modules_import_nothing_of_phdlib(module):
    assert not import_graph()[module]
