"""Chapters read like a paper and use the public API only."""
from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("*.md"))
#: characters of code that fit a code cell of the site at a 1280-pixel window
#: (measured in Chromium: 654 px at 8.43 px a character)
WIDTH = 76


def _code_cells(path: Path):
    nb = jupytext.reads(path.read_text(), fmt="md:myst")
    return [c for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_code_fits_the_page(path):
    long = [(i, line) for c in _code_cells(path)
            for i, line in enumerate(c.source.split("\n")) if len(line) > WIDTH]
    assert not long, f"{path.name}: code lines over {WIDTH} characters scroll sideways: {long[:3]}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_public_api_and_folded_setup(path):
    cells = _code_cells(path)
    if not cells:
        return
    private = [m.group(0) for c in cells
               for m in re.finditer(r"\b(?:phdlib\.)?[a-z_]+\._[a-z]\w*\(", c.source)
               if not m.group(0).startswith(("self._", "np._", "pd._"))]
    assert not private, f"{path.name} calls private functions: {private}"
    params = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, f"{path.name}: one parameters cell expected, found {len(params)}"
    assert {"hide-input", "remove-cell"} & set(params[0].metadata["tags"]), \
        f"{path.name}: fold or remove the parameters cell"


def test_a_shared_parameter_name_means_one_thing():
    """`phd book build --param NAME=VALUE` gives VALUE to every chapter that
    declares NAME, so two chapters may not use one name for values of
    different kinds (e.g. a count of model seeds and a list of split seeds)."""
    import ast

    from phdlib.book import driver as book

    kinds: dict[str, dict[str, str]] = {}
    for path in CHAPTERS:
        nb = jupytext.reads(path.read_text(), fmt="md:myst")
        for name, src in book.declared_parameters(nb).items():
            try:
                value = ast.literal_eval(src)
            except ValueError:  # not a literal: compared by its source
                value = src
            kind = book.kind(value)  # as `phd book build` checks a --param value
            kinds.setdefault(name, {})[path.stem] = kind
    mixed = {n: k for n, k in kinds.items() if len(set(k.values())) > 1}
    assert not mixed, f"one parameter name, values of different kinds: {mixed}"
