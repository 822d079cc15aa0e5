"""The real datasets a build's chapters read besides its own, settled before any chapter runs.

Some chapters read a second dataset whatever the build's ``dataset`` is: "Does
the gain travel?" (parameter ``second``) and "Cost at scale"
(``sweep_datasets``), ML-100K by default. A *companion* is such a parameter
(any but ``dataset``) whose value, the build's or the chapter's default, names
a real registered dataset, or is a list of dataset names with a real one among
them. :func:`companions` finds them; :func:`settle` decides what happens to
one that is not on this machine:

- in a book on generated data (``dataset`` synthetic) it is left out: the
  parameter becomes ``""`` (a text) or the list without it, and a line says
  so, so that ``make book DATASET=synthetic`` builds the whole book offline;
- in a book on real data it is a ``ValueError`` naming the chapter, the
  parameter and the dataset, with the ways to provide it or leave it out,
  before anything runs (not hours into the build, at the chapter).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import data
from .params import _default

__all__ = ["Companion", "companions", "settle"]


@dataclass(frozen=True)
class Companion:
    """One chapter parameter that names a real dataset besides the build's own."""
    chapter: str   # the chapter's file stem
    name: str      # the parameter
    value: object  # its value in this build: a text, or a list of texts
    real: tuple    # the real datasets among the value's names, in order


def _names(value) -> list[str] | None:
    """The dataset names ``value`` holds (a text, or a list of texts), or None."""
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str) for v in items):
        return None
    known = set(data.names())
    names = [v for v in items if v in known]
    return names or None


def companions(parameters: dict, declared: dict[str, dict]) -> list[Companion]:
    """Every chapter parameter but ``dataset`` whose value in this build (``parameters``,
    else the chapter's default) names a real dataset. ``declared``: chapter name ->
    :func:`phdlib.book.params.declared_parameters`."""
    out = []
    for chapter, params in declared.items():
        for name, src in params.items():
            if name == "dataset":
                continue
            value = parameters.get(name, _default(src))
            names = _names(value)
            real = tuple(n for n in names or () if not data.is_synthetic(n))
            if real:
                out.append(Companion(chapter, name, value, real))
    return out


def _without(value, missing: set):
    """``value`` with the datasets of ``missing`` left out: ``""`` for a text."""
    if isinstance(value, list):
        return [v for v in value if v not in missing]
    return "" if value in missing else value


def settle(parameters: dict, declared: dict[str, dict], data_dir=None,
           available=None) -> tuple[dict, list[str]]:
    """``parameters`` with every companion (:func:`companions`) that is not available
    left out where the build's ``dataset`` is synthetic, and the lines that say what
    was left out. ``ValueError`` for a missing companion of a build on real data.
    available(name, data_dir) -> bool: whether a dataset is on this machine
    (default :func:`phdlib.data.available`: ``data_dir``, ``PHD_DATA_DIR``, the cache)."""
    available = available or data.available
    dataset = parameters.get("dataset")
    synthetic = isinstance(dataset, str) and dataset in data.names() and data.is_synthetic(dataset)
    out, lines, changed = dict(parameters), [], {}
    for c in companions(parameters, declared):
        missing = [n for n in c.real if not available(n, data_dir)]
        if not missing:
            continue
        first = missing[0]
        if not synthetic:
            rest = _without(c.value, set(missing))
            empty = "''" if isinstance(rest, str) else f"[{', '.join(rest)}]"
            raise ValueError(
                f"chapter {c.chapter!r} reads dataset {first!r} (parameter {c.name}="
                f"{c.value!r}), which is not on this machine: run `phd data fetch --dataset "
                f"{first}`, or put its files under a folder and set PHD_DATA_DIR=FOLDER, or "
                f"leave it out with --param \"{c.name}={empty}\"")
        new = _without(changed.get(c.name, c.value), set(missing))
        if changed.get(c.name) != new:
            changed[c.name] = new
            lines.append(f"[book] {', '.join(missing)} not on this machine: parameter "
                         f"{c.name}={new!r} in this book on generated data ({dataset}); "
                         f"chapter {c.chapter!r} runs without it")
    out.update(changed)
    return out, lines
