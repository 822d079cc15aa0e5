"""Which chapters a book build runs, checked before it runs any: ``--chapter`` names,
the parameters the chapters declare, the real datasets they read besides the build's own,
the cell timeout, and (for a site) that every chapter left out has been executed once."""
from __future__ import annotations

from pathlib import Path

from .companions import settle
from .params import check_parameters, declared_parameters
from .project import chapters, is_notebook


class ChapterNotBuilt(ValueError):
    """``--chapter`` left out a chapter that has never been executed, and a site was asked
    for (a user's choice to change, not a failure of the chapter)."""


def check_options(root: Path, parameters, only, cell_timeout) -> tuple[dict, list[str]]:
    """``ValueError`` for a ``cell_timeout`` not above 0, an unknown chapter in
    ``only``, a parameter :func:`check_parameters` refuses, or a real dataset that a
    chapter to run reads besides the build's own and that is not on this machine
    (:func:`phdlib.book.companions.settle`). Returns the parameters to build with
    (in a book on generated data, such a dataset left out) and the lines saying
    what was left out."""
    if cell_timeout is not None and not cell_timeout > 0:
        raise ValueError(f"cell_timeout: seconds above 0, or None for no limit; "
                         f"got {cell_timeout!r}")
    srcs = chapters(root)
    if only:
        unknown = set(only) - {s.stem for s in srcs}
        if unknown:
            raise ValueError(f"unknown chapter(s) {sorted(unknown)}; known: {[s.stem for s in srcs]}")
    parameters = dict(parameters or {})
    declared = _declared(srcs)
    check_parameters(parameters, declared)
    running = {k: v for k, v in declared.items() if only is None or k in only}
    return settle(parameters, running)


def _declared(srcs: list[Path]) -> dict[str, dict]:
    """Chapter name -> the parameters it declares (:func:`declared_parameters`); a
    parameters cell that is not valid Python is a ``ValueError`` naming the chapter."""
    import jupytext

    out = {}
    for src in srcs:
        text = src.read_text()
        try:
            out[src.stem] = (declared_parameters(jupytext.reads(text, fmt=src.suffix.lstrip(".")))
                             if is_notebook(text) else {})
        except SyntaxError as exc:
            raise ValueError(f"{src}: its parameters cell is not valid Python "
                             f"({exc.msg}, line {exc.lineno} of the cell)") from None
    return out


def check_selection(srcs: list[Path], root: Path, exec_dir: Path, only) -> None:
    """:class:`ChapterNotBuilt` naming every chapter that ``only`` leaves out and that
    has never been executed (a site cannot be built without it)."""
    if only is None:
        return
    never = [s.stem for s in srcs if s.stem not in only and is_notebook(s.read_text())
             and not (exec_dir / s.relative_to(root).with_suffix(".ipynb")).is_file()]
    if never:
        names = ", ".join(repr(n) for n in never)
        raise ChapterNotBuilt(
            f"the site needs every chapter, and --chapter leaves out {len(never)} "
            f"chapter{'s' if len(never) > 1 else ''} never executed: {names}; run without --chapter first, add --chapter for each, or "
            f"execute only the selected chapters with --no-site")
