"""The book driver: execute every chapter with papermill, then build the site.

Chapters are MyST Markdown notebooks (jupytext text files) listed in
``_toc.yml``. :func:`build`:

1. reads the chapter order from ``_toc.yml`` (:mod:`phdlib.book.project`);
2. converts each chapter to a notebook with jupytext and executes it with
   papermill (the root page last: it summarises what the chapters found, so it
   is executed after them and again whenever any of them was), passing only the parameters that the chapter's ``parameters``
   cell declares; a page without code (no ``kernelspec``) is copied as is;
3. writes the executed notebooks into a staging tree ``_build/stage`` (next to
   ``_config.yml``, ``_toc.yml``, the bibliography and the MathJax folder:
   :mod:`phdlib.book.site`) and prints each chapter's execution time;
4. runs ``jupyter-book build`` on the staging tree with execution off and
   warnings as errors (``-W -n --keep-going``); the site lands in
   ``_build/html``.

Execution is cached: a chapter is re-executed only when its source, the
parameters it declares, the ``phdlib`` sources or the data directory changed (the key is
stored beside the executed notebook in ``_build/exec``). A chapter that raises
stops the build with :class:`ChapterError`, whose message names the chapter
file, the code cell (its number and its line in the ``.md``) and the exception,
and points at the partially executed notebook.
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

# the chapters' parameters (book.params), the project's files (book.project) and the
# site build (book.site) are used here; phdlib.book exports their public names
from .params import check_parameters, declared_parameters, kind, used_parameters  # noqa: F401
from .project import chapters, is_notebook, project_root, toc_files  # noqa: F401
from .site import SYNTHETIC_BANNER, SiteBuildError  # noqa: F401
from .site import build_site, fold_injected, stage_static, stage_synthetic_banner
from .selection import ChapterNotBuilt, check_options, check_selection  # noqa: F401
from .heartbeat import HEARTBEAT_SECONDS, alive_file, beating
from .. import io as _io
from ..io import write_json



class ChapterError(RuntimeError):
    """A chapter raised while it was executed."""


@dataclass
class ChapterResult:
    name: str
    seconds: float
    cached: bool
    executed: bool
    parameters: dict = field(default_factory=dict)


def source_hash(text: str) -> str:
    """sha256 of a chapter's source text (the ``source`` part of its cache key)."""
    return hashlib.sha256(text.encode()).hexdigest()


def library_hash(root: Path) -> str:
    """sha256 over the ``phdlib`` sources under ``root`` (part of every chapter's cache key)."""
    return _io.sources_sha256(root / "phdlib")


def _locate_cell(nb, text: str, cell_source: str) -> tuple[int | None, int | None]:
    """(1-based number among the chapter's code cells, 1-based line in the ``.md``) of a cell."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    want = cell_source.strip()
    for number, cell in enumerate(code, start=1):
        if cell.source.strip() == want:
            first = next((ln for ln in want.splitlines() if ln.strip()), "")
            line = None
            lines = text.splitlines()
            for i, ln in enumerate(lines):
                # the cell's first line, inside a {code-cell} block
                if ln.rstrip() == first.rstrip() and any(
                    lines[j].startswith("```{code-cell}") for j in range(max(0, i - 40), i)
                ):
                    line = i + 1
                    break
            return number, line
    return None, None


def _cell_error(exc, chapter: Path, nb=None, text: str = "", partial: Path | None = None) -> ChapterError:
    """A :class:`ChapterError` naming the chapter file, the cell and the exception."""
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    source = getattr(exc, "source", "") or ""
    number, line = _locate_cell(nb, text, source) if (nb is not None and source) else (None, None)
    if number is not None:
        where = f"code cell {number}" + (f" (line {line} of {chapter.name})" if line else "")
    else:
        idx = getattr(exc, "cell_index", None)
        where = f"notebook cell {idx}" if idx is not None else "a cell"
    first = next((ln for ln in source.strip().splitlines() if ln.strip()), "")
    msg = f"chapter {chapter.stem!r} ({chapter}) failed in {where}: {ename}: {evalue}"
    if first:
        msg += f"\n  cell starts with: {first}"
    if partial is not None and partial.is_file():
        msg += f"\n  executed notebook with the traceback: {partial}"
    return ChapterError(msg)


def execute_chapter(
    src: Path,
    out_nb: Path,
    parameters: dict,
    cwd: Path,
    timeout: float | None = None,
    kernel_name: str = "python3",
) -> dict:
    """Execute one chapter into ``out_nb``; returns the parameters it used.

    timeout: whole seconds one cell may run before the chapter fails (a
    fraction is rounded up; None: no limit; a cell that trains the runs of a large dataset at the paper's
    settings takes hours, and every run it finishes is stored, so an
    interrupted build resumes)."""
    import jupytext
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    text = src.read_text()
    nb = jupytext.reads(text, fmt=src.suffix.lstrip("."))
    used = used_parameters(nb, parameters)
    tmp_in = out_nb.with_suffix(".input.ipynb")
    tmp_out = out_nb.with_suffix(".partial.ipynb")
    out_nb.parent.mkdir(parents=True, exist_ok=True)
    tmp_out.unlink(missing_ok=True)
    jupytext.write(nb, tmp_in, fmt="ipynb")
    try:
        pm.execute_notebook(
            str(tmp_in),
            str(tmp_out),
            parameters=used,
            cwd=str(cwd),
            kernel_name=kernel_name,
            progress_bar=False,
            log_output=False,
            execution_timeout=None if timeout is None else math.ceil(timeout),
            report_mode=False,
        )
    except PapermillExecutionError as exc:
        raise _cell_error(exc, src, nb, text, tmp_out) from None
    except Exception as exc:  # dead kernel, cell timeout, missing kernel, ...
        raise ChapterError(
            f"chapter {src.stem!r} ({src}) could not be executed: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        tmp_in.unlink(missing_ok=True)
    fold_injected(tmp_out)
    os.replace(tmp_out, out_nb)
    return used


def build(*args, **kwargs) -> list[ChapterResult]:
    """Execute the chapters and build the site; see :func:`_build`.

    Builds of one checkout are serialised by a lock file (``_build/.lock``), so
    two builds started at once never write the same staging tree. Options are checked
    first (:func:`phdlib.book.selection.check_options`): a real dataset a chapter reads
    besides the build's own and that is missing stops a build on real data at once, and
    is left out, with a line saying so, of a build on generated data.
    """
    import fcntl
    import inspect

    opts = inspect.signature(_build).bind(*args, **kwargs)
    opts.apply_defaults()
    root = project_root(opts.arguments["root"])
    # a bad option fails at once: before waiting for another build's lock, before staging
    params, left_out = check_options(root, opts.arguments["parameters"],
                                     opts.arguments["only"], opts.arguments["cell_timeout"])
    for line in left_out:
        opts.arguments["log"](line)
    opts.arguments["parameters"] = params
    (root / "_build").mkdir(exist_ok=True)
    with open(root / "_build" / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build(*opts.args, **opts.kwargs)


def _executed_digest(exec_dir: Path, pages: list[Path]) -> str:
    """sha256 over the execution keys of ``pages`` (relative paths of the chapters a summary
    page summarises; a chapter no longer in the book, or never executed, counts as absent)."""
    h = hashlib.sha256()
    for page in sorted(pages):
        f = (exec_dir / page).with_suffix(".key.json")
        if not f.is_file():
            continue
        h.update(str(f.relative_to(exec_dir)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def _chapter(src: Path, root: Path, stage: Path, exec_dir: Path,
             parameters: dict, key: dict, only, force: bool, log,
             cell_timeout: float | None = None,
             heartbeat: float = HEARTBEAT_SECONDS) -> ChapterResult | None:
    """Execute (or reuse) one chapter and stage it; None for a page without code, or for a
    chapter neither selected nor ever executed (no site is built then: :func:`_build`).

    The execution cache key is the chapter's source, the parameters it
    declares and uses, the contents of the files they name (:func:`named_files`)
    and ``key`` (the ``phdlib`` sources' hash, the data folder).
    """
    rel = src.relative_to(root)
    text = src.read_text()
    if not is_notebook(text):
        dst = stage / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        (stage / rel.with_suffix(".ipynb")).unlink(missing_ok=True)
        return None
    import jupytext

    nb = jupytext.reads(text, fmt=src.suffix.lstrip("."))
    wanted = used_parameters(nb, parameters)
    executed_nb = exec_dir / rel.with_suffix(".ipynb")
    key_file = executed_nb.with_suffix(".key.json")
    # only the parameters this chapter declares: changing another one does not re-execute it
    key = {"source": source_hash(text), "parameters": wanted,
           **{k: key[k] for k in ("phdlib", "data_dir", "chapters") if k in key}}
    files = named_files(src, nb, wanted)
    if files:   # a recorded measurement the chapter reads changed: execute it again
        key["files"] = files
    cached = (not force and executed_nb.is_file() and key_file.is_file()
              and json.loads(key_file.read_text()) == key)
    skip = only is not None and src.stem not in only
    t0 = time.perf_counter()
    used = wanted
    if cached or (skip and executed_nb.is_file()):
        status = "cached" if cached else "kept (not selected)"
    elif skip:  # never executed, and no site needs it (_build refused a site build)
        log(f"[book] {rel}: not selected and never executed: left out (no site is built)")
        return None
    else:
        log(f"[book] executing {rel} ...")
        key_file.unlink(missing_ok=True)
        with beating(rel, log, heartbeat, alive=alive_file(executed_nb)):
            used = execute_chapter(src, executed_nb, parameters, cwd=src.parent,
                                   timeout=cell_timeout)
        write_json(key_file, key)
        status = "executed"
    dt = time.perf_counter() - t0
    log(f"[book] {rel}: {status} in {dt:.1f} s")
    dst = stage / rel.with_suffix(".ipynb")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(executed_nb, dst)
    (stage / rel).unlink(missing_ok=True)
    return ChapterResult(src.stem, dt, cached=status != "executed", executed=status == "executed",
                         parameters=used)


def named_files(src: Path, nb, values: dict) -> dict[str, str]:
    """The files the chapter ``src`` reads by name through its parameters: every default of
    its ``parameters`` cell, and every value in ``values`` over them, that is a path (or a
    list of paths) to a file, relative to the chapter's folder (where it executes) ->
    that file's sha256. A chapter whose recorded measurements (``book/recorded/``) change
    has another key, so the page is never served from an execution of the old ones."""
    named: dict = {}
    for name, text in declared_parameters(nb).items():
        try:
            named[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            continue
    named.update(values)
    out = {}
    for v in named.values():
        for item in (v if isinstance(v, (list, tuple)) else [v]):
            if not (isinstance(item, str) and item):
                continue
            try:
                if (src.parent / item).is_file():
                    out[item] = hashlib.sha256((src.parent / item).read_bytes()).hexdigest()
            except OSError:   # not a path this system can read (too long, ...): not a file
                continue
    return dict(sorted(out.items()))


def order(srcs: list[Path]) -> list[Path]:
    """The order a build takes the book's pages ``srcs`` (``_toc.yml``'s): the chapters,
    then the root page, which summarises them."""
    return [s for s in srcs if s != srcs[0]] + srcs[:1]


def _build(
    root: Path | None = None,
    parameters: dict | None = None,
    only: list[str] | None = None,
    force: bool = False,
    site: bool = True,
    log=print,
    cell_timeout: float | None = None,
    heartbeat: float = HEARTBEAT_SECONDS,
    progress=None,
) -> list[ChapterResult]:
    """Execute the chapters and build the site; see the module docstring.

    parameters: papermill parameters, e.g. ``{"dataset": "ml-100k",
    "profile": "quick"}``; each chapter receives those it declares.
    only: chapter names (file stems) to execute; the others are reused from
    the cache. With ``site`` every other chapter must have been executed once
    (else :class:`ChapterNotBuilt`, before anything runs); without it a chapter
    never executed is left out (not in the result). cell_timeout: seconds
    one cell may run (None: no limit, :func:`execute_chapter`; not above 0:
    ``ValueError``). heartbeat: seconds between the "still executing" lines of
    a long chapter (0: none). progress: called with each chapter's name (file stem)
    once the build is done with it (executed, reused or left out), in the order the
    build takes them (:func:`order`).
    """
    root = project_root(root)
    parameters = dict(parameters or {})
    build_dir = root / "_build"
    stage = build_dir / "stage"
    exec_dir = build_dir / "exec"
    stage.mkdir(parents=True, exist_ok=True)
    exec_dir.mkdir(parents=True, exist_ok=True)
    stage_static(root, stage)
    stage_synthetic_banner(stage, parameters.get("dataset"))

    lib_hash = library_hash(root)
    data_dir = os.environ.get("PHD_DATA_DIR", "")
    results: list[ChapterResult] = []
    srcs = chapters(root)
    if site:  # a site needs every chapter: refuse before executing any
        check_selection(srcs, root, exec_dir, only)
    ctx = {"root": root, "stage": stage, "exec_dir": exec_dir, "parameters": parameters,
           "key": {"phdlib": lib_hash, "data_dir": data_dir}, "only": only, "force": force,
           "log": log, "cell_timeout": cell_timeout, "heartbeat": heartbeat}
    # the root page summarises the book's findings: it runs after every chapter and again
    # whenever any executed chapter changed
    for src in order(srcs):
        if src == srcs[0]:
            ctx["key"] = {**ctx["key"], "chapters": _executed_digest(
                exec_dir, [s.relative_to(root) for s in srcs[1:]])}
        res = _chapter(src, **ctx)
        if res is not None:
            results.append(res)
        if progress is not None:
            progress(src.stem)
    results.sort(key=lambda r: [s.stem for s in srcs].index(r.name))
    total = sum(r.seconds for r in results)
    log(f"[book] chapters: {len(results)} notebooks, {total:.1f} s of execution")
    if site:
        build_site(root, log=log)
    return results
