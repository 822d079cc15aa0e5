"""``phd --help`` and every ``phd COMMAND --help`` import nothing heavy.

Help must answer at once (issue 27: well under half a second), so building the
parsers must not import NumPy, pandas, Numba, PyTorch, faiss, SciPy or the
phdlib modules that pull them in: the command modules import those inside the
functions that run a command, and take the names they offer as choices from
:mod:`phdlib.names`. These tests check the import graph in fresh interpreters,
not the clock (a timing would be flaky on a loaded machine). The commands are
discovered from the parser, so a new subcommand (or sub-subcommand) is covered
without editing this file.

The names in :mod:`phdlib.names` are the registries themselves
(:data:`phdlib.methods.REGISTRY`, :data:`phdlib.experiments.PARTS`,
``PROFILES``); the last tests check that the choices the parsers offer are
still those of the library.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import phdlib
from phdlib import names
from phdlib.cli import build_parser

#: The folder that holds the phdlib under test (the subprocesses import the same one).
SOURCE = Path(phdlib.__file__).resolve().parents[1]

#: Packages (with their submodules) that no ``--help`` may import.
HEAVY = ("numpy", "pandas", "numba", "torch", "faiss", "scipy",
         "phdlib.experiments", "phdlib.methods", "phdlib.kernels")

#: Run in a fresh interpreter: ``phd ARGV --help``; print the exit code, the
#: help text and every module imported, as one JSON object.
SCRIPT = """
import contextlib, io, json, sys

import phdlib.cli

out = io.StringIO()
try:
    with contextlib.redirect_stdout(out):
        code = phdlib.cli.main(json.loads(sys.argv[1]) + ["--help"])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "help": out.getvalue(), "file": phdlib.cli.__file__,
                  "modules": sorted(sys.modules)}))
"""


def _subparsers(parser: argparse.ArgumentParser):
    return [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every command path of ``parser``: (), ("data",), ("data", "fetch"), ..."""
    yield path
    for action in _subparsers(parser):
        seen = set()
        for name, sub in action.choices.items():
            if id(sub) not in seen:  # an alias names a parser already walked
                seen.add(id(sub))
                yield from _commands(sub, path + (name,))


COMMANDS = list(_commands(build_parser()))


def _heavy(modules) -> list[str]:
    """The packages of :data:`HEAVY` among ``modules`` (a submodule counts for its package)."""
    return [h for h in HEAVY if any(m == h or m.startswith(h + ".") for m in modules)]


def test_commands_are_discovered():
    """The walk finds the nested commands (a broken walk would test nothing)."""
    assert () in COMMANDS and len(COMMANDS) > 5
    assert any(len(c) == 2 for c in COMMANDS)  # e.g. phd data fetch


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(("phd",) + c))
def test_help_imports_nothing_heavy(command):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(SOURCE)] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(list(command))],
                          cwd=SOURCE, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    shown = " ".join(("phd",) + command)
    assert Path(res["file"]).resolve().is_relative_to(SOURCE), res["file"]  # this checkout
    assert res["code"] == 0 and res["help"].startswith(f"usage: {shown}"), (res["code"],
                                                                            proc.stderr)
    heavy = _heavy(res["modules"])
    ours = [m for m in res["modules"] if m.startswith("phdlib")]
    assert not heavy, (f"`{shown} --help` imports {', '.join(heavy)}; the phdlib modules it "
                       f"imports: {', '.join(ours)}")


def test_names_module_imports_nothing():
    """phdlib.names stays light only while it imports nothing."""
    tree = ast.parse(Path(names.__file__).read_text(encoding="utf-8"))
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not imports, [ast.unparse(n) for n in imports]


def _option(path: tuple[str, ...], option: str) -> argparse.Action:
    parser = build_parser()
    for name in path:
        parser = _subparsers(parser)[0].choices[name]
    return next(a for a in parser._actions if option in a.option_strings)


def test_choices_are_the_registries():
    from phdlib import bench, experiments, methods
    from phdlib.bench import train

    assert methods.REGISTRY is names.METHODS
    assert experiments.PARTS is names.PARTS and experiments.PROFILES is names.PROFILES
    assert list(_option(("train",), "--method").choices) == sorted(methods.REGISTRY)
    assert list(_option(("reproduce",), "--part").choices) == list(experiments.PARTS)
    assert list(_option(("reproduce",), "--profile").choices) == list(experiments.PROFILES)
    assert list(_option(("book", "build"), "--profile").choices) == list(experiments.PROFILES)
    assert set(_option(("scale",), "--profile").choices) == set(experiments.PROFILES)
    assert set(_option(("bench",), "--profile").choices) == set(bench.PROFILES)
    assert set(_option(("bench",), "--shape").choices) == set(train.SHAPES)
