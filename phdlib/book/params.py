"""The chapters' papermill parameters: what each declares, and checking what a build passes.

Every chapter has one ``parameters`` cell of ``NAME = default`` lines.
:func:`declared_parameters` reads them; :func:`check_parameters` checks the
parameters of a build (``phd book build --dataset/--profile/--param``)
against every chapter's declarations before anything runs, so a misspelt
name or a value of the wrong kind fails in a second, not in a chapter
hours into a build.
"""
from __future__ import annotations

import ast

from ..names import MAX_BITS, PROFILES
from .. import data


def declared_parameters(nb) -> dict:
    """Names -> default source text of the chapter's ``parameters`` cell."""
    params: dict = {}
    for cell in nb.cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            tree = ast.parse(cell.source)
            for node in tree.body:
                targets = node.targets if isinstance(node, ast.Assign) else (
                    [node.target] if isinstance(node, ast.AnnAssign) else [])
                for t in targets:
                    if isinstance(t, ast.Name):
                        params[t.id] = ast.get_source_segment(cell.source, node.value)
            break
    return params


def used_parameters(nb, parameters: dict) -> dict:
    """The subset of ``parameters`` that the chapter's ``parameters`` cell declares."""
    declared = declared_parameters(nb)
    return {k: v for k, v in parameters.items() if k in declared}


def kind(value) -> str:
    """What a default or a value is, as parameters compare them: ``"integer"``
    (an int), ``"number"`` (a float; it also takes an integer value),
    ``"bool"``, ``"str"``, ``"list"`` (or tuple), ``"dict"``, ``"none"`` or
    ``"other"``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "none"
    return {str: "str", list: "list", tuple: "list", dict: "dict"}.get(type(value), "other")


def _fits(value, default) -> bool:
    want, got = kind(default), kind(value)
    if want in ("none", "other"):  # a default of None (or not a literal) takes anything
        return True
    if want == "integer":
        return got == "integer"
    if want == "number":
        return got in ("integer", "number")
    return got == want


def _default(src: str):
    try:
        return ast.literal_eval(src)
    except (ValueError, SyntaxError):
        return None  # not a literal: any value


def check_parameters(parameters: dict, declared: dict[str, dict]) -> None:
    """``ValueError`` naming the first parameter that no chapter declares, or
    whose value is not of the kind of its default (an integer where the
    default is one, a number, a text, a list, a boolean; a default of None
    takes anything), a ``profile`` not in :data:`phdlib.experiments.PROFILES`,
    or a ``dataset`` that :func:`phdlib.data.names` does not know. ``declared``: chapter name -> :func:`declared_parameters`."""
    by_name: dict[str, list[tuple[str, str]]] = {}
    for chapter, params in declared.items():
        for name, src in params.items():
            by_name.setdefault(name, []).append((chapter, src))
    for name, value in parameters.items():
        if name not in by_name:
            raise ValueError(f"parameter {shown(name)}: no chapter declares it; known: "
                             f"{', '.join(sorted(by_name))}")
        for chapter, src in by_name[name]:
            default = _default(src)
            if not _fits(value, default):
                raise ValueError(
                    f"parameter {name}={shown(value)}: chapter {chapter!r} expects "
                    f"{_article(kind(default))} (its default is {src}), got "
                    f"{_article(kind(value))}")
            problem = _range_problem(name, value, default)
            if problem:
                raise ValueError(f"parameter {name}={shown(value)}: {problem} (chapter "
                                 f"{chapter!r}, default {src})")
    if "profile" in parameters:
        if parameters["profile"] not in PROFILES:
            raise ValueError(f"parameter profile={shown(parameters['profile'])}: expected one of "
                             f"{', '.join(PROFILES)}")
    if "dataset" in parameters:
        if parameters["dataset"] not in data.names():
            raise ValueError(f"parameter dataset={shown(parameters['dataset'])}: unknown dataset; "
                             f"expected one of {', '.join(data.names())}")


#: Integer parameters with an upper bound besides 2^63 - 1: code widths, and the
#: processes or threads a build may start.
_CEILINGS = {"bits": MAX_BITS, "widths": MAX_BITS, "sweep_bits": MAX_BITS, "jobs": 1024,
             "threads": 1024}


def _range_problem(name: str, value, default) -> str | None:
    """Why an integer parameter (or an integer in a list) is out of range, or None.
    A default of 1 or more makes it a count (at least 1), a default of 0 a seed or an
    index (at least 0); none may pass 2^63 - 1, nor the ceilings of :data:`_CEILINGS`."""
    ints = [v for v in (value if isinstance(value, list) else [value])
            if isinstance(v, int) and not isinstance(v, bool)]
    defaults = [d for d in (default if isinstance(default, list) else [default])
                if isinstance(d, int) and not isinstance(d, bool)]
    if not ints or not defaults:
        return None
    lo = 1 if min(defaults) >= 1 else 0
    hi = min(_CEILINGS.get(name, 2**63 - 1), 2**63 - 1)
    bad = next((v for v in ints if not lo <= v <= hi), None)
    if bad is None:
        return None
    return f"{shown(bad)} is outside {lo}..{hi:,}"


def shown(value, limit: int = 60) -> str:
    """``repr(value)`` for a message, a long one cut: ``'aaaa...' (100,000 characters)``."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit - 20]}...{text[-8:]} ({len(text):,} characters)"


def _article(k: str) -> str:
    return {"integer": "an integer", "number": "a number", "bool": "true or false",
            "str": "a text", "list": "a list", "dict": "a mapping", "none": "nothing",
            "other": "a value"}[k]
