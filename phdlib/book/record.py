"""What a book build cost: each chapter's execution, read from the executed notebooks.

papermill writes into every notebook it executes when it started, when it
ended and what each cell took (``metadata.papermill``). :func:`from_executed`
turns the chapters last executed in a checkout (``_build/exec``, what
:func:`phdlib.book.build` keeps; a chapter whose last execution failed is
read from the partial notebook the driver leaves beside it) into one record:
a row per chapter (its title, parameters, start, end, seconds, code cells
and the longest of them, whether it failed, and whether its execution is
current: its source and the library are today's) with the provenance of the
checkout and machine. A partial notebook whose execution never ended (the
build is still running it, or was stopped from outside, e.g. killed) is a
row marked ``unfinished``: its time up to the end of its last cell that
completed. :func:`build_recorded` runs a build and writes that
record with what the build itself measured (``build["measured"]``: its
start and wall time, whether it built the site, which chapters it executed
and which it reused from an earlier build, the runs the results store held
before and after, the peak memory of the build, its kernels and their
workers together, and the CPU time the machine was busy meanwhile with the part
of it other work used); ``phd book build --record FILE`` calls it. ``phd book
record --out FILE`` writes the record of the last executions alone
(``measured`` is None). The chapter "Cost at scale" reads one with
:func:`load`, which checks every field the report uses.

Units: seconds, MB (2**20 bytes); times are ISO 8601 with their UTC offset.
"""
from __future__ import annotations

import ast
import json
import math
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .. import results
from ..experiments.usage import TreeMemory
from ..io import write_json
from ..studies.scale import provenance
from .driver import ChapterError, build, library_hash, order, source_hash
from .heartbeat import alive_file, seen_running
from .selection import check_options
from .params import declared_parameters
from .project import chapters, is_notebook, project_root
from .site import SiteBuildError

FORMAT = "phd-book-build"
#: Fields every row of a record has, and the type each must be (:func:`load`).
ROW_KEYS = {"chapter": str, "title": str, "started": str, "finished": str, "seconds": float,
            "parameters": dict, "cells": int, "longest_cell": (int, type(None)),
            "longest_cell_seconds": float, "current": bool, "failed": bool}
#: Fields a row may have besides :data:`ROW_KEYS` (records written before them lack
#: them), with the value :func:`load` gives a row without one: ``unfinished``, an
#: execution that never ended, and ``seen_running``, when the build last saw it
#: running (``""``: never seen after its last completed cell) (:func:`chapter_row`).
ROW_OPTIONAL = {"unfinished": False, "seen_running": ""}
#: Fields of ``build["measured"]`` that are numbers (:func:`load`).
MEASURED_NUMBERS = ("wall_seconds", "peak_total_rss_mb", "peak_process_rss_mb",
                    "sample_interval_s")


def _commit(root: Path) -> str | None:
    """The commit checked out at ``root`` (``+dirty`` when tracked files differ), or None."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+dirty" if dirty else "")) or None


def _utc(text, where: Path, field: str) -> datetime:
    """An ISO 8601 time as an aware UTC datetime (a time without an offset is UTC, as
    older papermill wrote it); ``ValueError`` naming the file and field otherwise."""
    try:
        t = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {field} must be an ISO 8601 time, got {text!r}") from None
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def _heading(text: str) -> str | None:
    """The first ``# `` heading of Markdown ``text`` (None without one)."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return None


def _title(nb: dict) -> str:
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            title = _heading("".join(cell.get("source", "")))
            if title is not None:
                return title
    return ""


def _source_title(src: Path) -> str:
    """The title of a chapter's source (its first ``# `` heading; ``""`` without one)."""
    return _heading(src.read_text(encoding="utf-8")) or ""


def _defaults(nb: dict) -> dict:
    """The defaults of the chapter's ``parameters`` cell, as values where they are
    literals (the source text otherwise; none where the cell is not valid Python)."""
    import nbformat

    try:
        declared = declared_parameters(nbformat.reads(json.dumps(nb), as_version=4))
    except SyntaxError:
        return {}
    out = {}
    for name, text in declared.items():
        try:
            out[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            out[name] = text
    return out


def chapter_row(src: Path, executed: Path, lib_hash: str | None = None,
                failed: bool = False, alive: Path | None = None) -> dict:
    """One chapter's row, from the notebook papermill wrote (``ValueError`` naming the
    file when its timing is not in it). A ``failed`` (partial) notebook whose execution
    has a start and no end is ``unfinished``: still running, or stopped from outside;
    its ``seconds`` and ``finished`` go up to the end of its last completed cell, or
    to when the build last saw it running where that is later (``seen_running``:
    read from its heartbeat's file ``alive``, :func:`~phdlib.book.heartbeat.seen_running`; a cell can run
    for hours, so the last one completed may be long before a kill). ``parameters``: the defaults of the chapter's
    ``parameters`` cell with the values the build passed over them. ``cells``: its
    code cells, without the one papermill injects. ``current``: the cache key beside
    ``executed`` matches the chapter's source today and, given ``lib_hash``, the
    library's (the key's parameters and data folder are not compared: the row says
    which parameters ran). ``failed``: the notebook is of an execution that failed."""
    try:
        nb = json.loads(executed.read_text(encoding="utf-8"))
        pm = nb["metadata"]["papermill"]
        unfinished = failed and pm.get("start_time") and pm.get("end_time") is None \
            and pm.get("duration") is None
        seconds = 0.0 if unfinished else float(pm["duration"])
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{executed}: not a readable executed notebook ({exc})") from None
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ValueError(f"{executed}: no papermill timing (metadata.papermill start_time, "
                         f"end_time, duration): not executed by phd book build") from None
    started = _utc(pm.get("start_time"), executed, "metadata.papermill.start_time")
    seen = None   # when the build last saw an unfinished execution running
    code = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"
            and "injected-parameters" not in c.get("metadata", {}).get("tags", [])]
    if unfinished:   # up to the end of the last cell that completed
        ends = [_utc(c["metadata"]["papermill"]["end_time"], executed,
                     f"cell {i + 1}: metadata.papermill.end_time")
                for i, c in enumerate(nb.get("cells", []))
                if (c.get("metadata", {}).get("papermill") or {}).get("end_time")]
        last = max([started, *ends])
        seen = seen_running(alive, started)
        seen = seen if seen and seen > last else None   # after the last completed cell
        finished = seen or last
        seconds = (finished - started).total_seconds()
    else:
        finished = _utc(pm.get("end_time"), executed, "metadata.papermill.end_time")
    durations = [float((c.get("metadata", {}).get("papermill") or {}).get("duration") or 0.0)
                 for c in code]
    longest = max(range(len(durations)), key=durations.__getitem__) if durations else None
    try:
        key = json.loads(executed.with_suffix(".key.json").read_text())
        current = (not failed and key.get("source") == source_hash(src.read_text())
                   and (lib_hash is None or key.get("phdlib") == lib_hash))
    except (OSError, ValueError, AttributeError):  # no key, or not one
        current = False
    return {"chapter": src.stem, "title": _title(nb), "started": started.isoformat(),
            "finished": finished.isoformat(), "seconds": seconds,
            "parameters": {**_defaults(nb), **(pm.get("parameters") or {})},
            "cells": len(code), "longest_cell": None if longest is None else longest + 1,
            "longest_cell_seconds": 0.0 if longest is None else durations[longest],
            "current": bool(current), "failed": bool(failed or pm.get("exception")),
            "unfinished": bool(unfinished),
            "seen_running": seen.isoformat() if unfinished and seen else ""}


def _partial_row(src: Path, partial: Path, executed: Path, lib_hash: str | None,
                 wait: float = 1.0) -> dict:
    """The row of a chapter whose last execution left ``partial``. A build still running
    rewrites that notebook as its cells end, in place, and replaces the finished one
    with it at the chapter's end: a notebook read half written is read once more after
    ``wait`` seconds, and one gone by then is read where the build put it."""
    alive = alive_file(executed)
    try:
        return chapter_row(src, partial, lib_hash, failed=True, alive=alive)
    except ValueError:
        time.sleep(wait)
        if not partial.is_file() and executed.is_file():
            return chapter_row(src, executed, lib_hash)
        return chapter_row(src, partial, lib_hash, failed=True, alive=alive)


def from_executed(root: Path | str | None = None, command: str = "",
                  measured: dict | None = None) -> dict:
    """The record of the chapters last executed in the checkout at ``root``.

    Rows follow the book's order; a chapter never executed is named in
    ``build["missing"]``, not given a row (its title in ``build["titles"]``).
    ``build`` also holds the span from
    the first chapter's start to the last one's end (``span_seconds``), the
    sum of the chapters' seconds and ``measured`` as given (:func:`build_recorded`).
    """
    root = project_root(root)
    exec_dir = root / "_build" / "exec"
    lib_hash = library_hash(root)
    rows, missing, titles = [], [], {}
    for src in chapters(root):
        if not is_notebook(src.read_text()):
            continue
        executed = exec_dir / src.relative_to(root).with_suffix(".ipynb")
        partial = executed.with_suffix(".partial.ipynb")  # the last execution failed
        if partial.is_file():
            rows.append(_partial_row(src, partial, executed, lib_hash))
        elif executed.is_file():
            rows.append(chapter_row(src, executed, lib_hash))
        else:
            missing.append(src.stem)
            titles[src.stem] = _source_title(src)
    span = 0.0
    first = last = None
    if rows:
        first = min(datetime.fromisoformat(r["started"]) for r in rows)
        last = max(datetime.fromisoformat(r["finished"]) for r in rows)
        span = (last - first).total_seconds()
    # the measurements' shared provenance, with the commit of the checkout that was built
    prov = {**provenance(command), "commit": _commit(root)}
    info = {"first_started": first and first.isoformat(), "last_finished": last and last.isoformat(),
            "span_seconds": span, "chapter_seconds": sum(r["seconds"] for r in rows),
            "missing": missing, "titles": titles, "measured": measured}
    return {"format": FORMAT, "version": 1, "provenance": prov, "build": info, "rows": rows}


def _count() -> int | None:
    try:
        return results.count()
    except OSError:  # the store could not be listed this time
        return None


def _write_measured(path, root: Path, command: str, started: datetime, t0: float,
                    site: bool, before, mem: TreeMemory, failed: str | None,
                    upto: str | None = None) -> Path:
    """Write the record of the build started at ``started`` (``t0``: its
    ``perf_counter``) with what it measured. ``upto``: the build is still going and is
    done with this chapter; the record holds the chapters up to it (``measured["ended"]``
    false, ``measured["upto"]`` that chapter, the others in ``measured["not_reached"]``)."""
    measured = {"started": started.isoformat(), "wall_seconds": time.perf_counter() - t0,
                "site": site, "store_runs_before": before, "store_runs_after": _count(),
                "peak_total_rss_mb": mem.peak_total_mb,
                "peak_process_rss_mb": mem.peak_process_mb, "memory_samples": mem.samples,
                "sample_interval_s": mem.interval, "failed": failed, "ended": upto is None,
                "machine_cpu_seconds": mem.machine_cpu_seconds,
                "other_cpu_seconds": mem.other_cpu_seconds}
    rec = from_executed(root, command, measured)
    if upto is not None:   # what the build has not reached yet is not this build's
        pages = [src for src in order(chapters(root)) if is_notebook(src.read_text())]
        names = [src.stem for src in pages]
        later = set(names[names.index(upto) + 1:]) if upto in names else set()
        rec["rows"] = [r for r in rec["rows"] if r["chapter"] not in later]
        rec["build"]["titles"].update({src.stem: _source_title(src) for src in pages
                                       if src.stem in later})
        measured["site"] = False
        measured["upto"] = upto
        measured["not_reached"] = [c for c in names if c in later]
    if not rec["rows"]:  # e.g. --chapter of a page without code, on a fresh checkout
        raise ValueError(f"{path}: not written: no chapter of {root} has been executed "
                         f"(nothing to record)")
    # executed by this build: started after it did (the others were reused from the cache)
    ran = {r["chapter"] for r in rec["rows"] if datetime.fromisoformat(r["started"]) >= started}
    measured["executed"] = [r["chapter"] for r in rec["rows"] if r["chapter"] in ran]
    measured["cached"] = [r["chapter"] for r in rec["rows"] if r["chapter"] not in ran]
    return write_json(path, rec)


def build_recorded(path: Path | str, command: str = "", interval: float = 1.0,
                   **kwargs) -> list:
    """:func:`phdlib.book.build` (``kwargs`` passed on), then its record
    (:func:`from_executed` with what this build measured) written atomically
    to ``path``; also after each chapter, while the build goes on
    (``measured["ended"]`` false), so that a build killed from outside leaves the
    record of what it had done.

    A bad option is refused before anything runs or is written. A build that
    stops at a failing chapter, at the site or at an interrupt still writes
    its record (``measured["failed"]``: the first line of the error), then
    raises as it would have; should the record itself fail to be written
    then, the error says so in a note and stays the build's. Memory is
    sampled every ``interval`` seconds
    (:class:`~phdlib.experiments.usage.TreeMemory`).
    """
    root = project_root(kwargs.pop("root", None))
    check_options(root, kwargs.get("parameters"), kwargs.get("only"), kwargs.get("cell_timeout"))
    site = kwargs.get("site", True)
    before = _count()
    started, t0 = datetime.now(timezone.utc), time.perf_counter()
    log = kwargs.get("log", print)

    def progress(name: str) -> None:
        try:
            _write_measured(path, root, command, started, t0, site, before, mem, None, name)
        except Exception as bad:  # noqa: BLE001 - the build goes on; its last record says so
            log(f"[book] the build record {path} could not be written after {name}: {bad}")

    with TreeMemory(interval) as mem:
        try:
            res = build(root=root, progress=progress, **kwargs)
        except (ChapterError, SiteBuildError, KeyboardInterrupt) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            try:
                _write_measured(path, root, command, started, t0, site, before, mem, first)
            except Exception as bad:  # noqa: BLE001 - the build's own error is the one to raise
                exc.add_note(f"(the build record {path} could not be written: {bad})")
            raise
    _write_measured(path, root, command, started, t0, site, before, mem, None)
    return res


def write(path: Path | str, root: Path | str | None = None, command: str = "") -> Path:
    """Write :func:`from_executed` of ``root`` to ``path`` atomically; ``ValueError``
    when no chapter has been executed there."""
    rec = from_executed(root, command)
    if not rec["rows"]:
        raise ValueError(f"{project_root(root) / '_build' / 'exec'}: no executed chapter to "
                         f"record (run phd book build first)")
    return write_json(path, rec)


def _number(v, at_least: float = 0.0) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and v >= at_least)


_KIND_WORDS = {str: "text", dict: "an object", bool: "true or false", int: "an integer"}


def _check_row(path: Path, i: int, r) -> None:
    missing = [k for k in ROW_KEYS if not isinstance(r, dict) or k not in r]
    if missing:
        raise ValueError(f"{path}: row {i} lacks {missing}")
    for k, kind in ROW_KEYS.items():
        v = r[k]
        ok = _number(v) if kind is float else (
            isinstance(v, kind) and not (kind is int and isinstance(v, bool)))
        if not ok:
            want = "a number >= 0" if kind is float else (
                "an integer or null" if k == "longest_cell" else _KIND_WORDS[kind])
            raise ValueError(f"{path}: row {i} ({r.get('chapter')}): {k} must be {want}, "
                             f"got {v!r}")
    for k in ("started", "finished"):
        _utc(r[k], path, f"row {i} ({r['chapter']}): {k}")
    for k, default in ROW_OPTIONAL.items():
        if not isinstance(r.get(k, default), type(default)):
            raise ValueError(f"{path}: row {i} ({r['chapter']}): {k} must be "
                             f"{_KIND_WORDS[type(default)]}, got {r[k]!r}")


def _check_measured(path: Path, m) -> None:
    if m is None:
        return
    if not isinstance(m, dict):
        raise ValueError(f"{path}: build.measured must be an object or null, got {m!r}")
    for k in MEASURED_NUMBERS:
        if not _number(m.get(k)):
            raise ValueError(f"{path}: build.measured.{k} must be a number >= 0, "
                             f"got {m.get(k)!r}")
    for k in ("machine_cpu_seconds", "other_cpu_seconds"):   # records before them lack them
        if k in m and not _number(m[k]):
            raise ValueError(f"{path}: build.measured.{k} must be a number >= 0, got {m[k]!r}")
    for k in ("store_runs_before", "store_runs_after"):
        v = m.get(k)
        if v is not None and not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
            raise ValueError(f"{path}: build.measured.{k} must be a count or null, got {v!r}")
    for k in ("executed", "cached", "not_reached"):
        v = m.get(k, [])
        if not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            raise ValueError(f"{path}: build.measured.{k} must be a list of chapter names")
    if m.get("failed") is not None and not isinstance(m["failed"], str):
        raise ValueError(f"{path}: build.measured.failed must be text or null")
    if not isinstance(m.get("ended", True), bool):   # records before the field: ended
        raise ValueError(f"{path}: build.measured.ended must be true or false, "
                         f"got {m['ended']!r}")


def load(path: Path | str) -> dict:
    """A record written by :func:`write` or :func:`build_recorded`:
    ``{"provenance": dict, "build": dict, "rows": DataFrame}``. ``ValueError``
    naming the file and the field when it is not one."""
    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable book build record ({exc})") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise ValueError(f"{path}: not a book build record (format {FORMAT!r}, written by "
                         f"phd book build --record or phd book record)")
    if obj.get("version") != 1:
        raise ValueError(f"{path}: version {obj.get('version')!r} of the record; this "
                         f"phdlib reads version 1")
    for field, kind in (("provenance", dict), ("build", dict), ("rows", list)):
        if not isinstance(obj.get(field), kind):
            raise ValueError(f"{path}: field {field!r} must be a {kind.__name__}")
    if not obj["rows"]:
        raise ValueError(f"{path}: field 'rows' is empty (no chapter recorded)")
    for i, r in enumerate(obj["rows"]):
        _check_row(path, i, r)
    b = obj["build"]
    for field in ("span_seconds", "chapter_seconds"):
        if not _number(b.get(field)):
            raise ValueError(f"{path}: build.{field} must be a number >= 0, got {b.get(field)!r}")
    if not (isinstance(b.get("missing"), list) and all(isinstance(x, str) for x in b["missing"])):
        raise ValueError(f"{path}: build.missing must be a list of chapter names")
    titles = b.get("titles", {})   # records before the field have none
    if not (isinstance(titles, dict) and all(isinstance(k, str) and isinstance(v, str)
                                             for k, v in titles.items())):
        raise ValueError(f"{path}: build.titles must map chapter names to titles")
    _check_measured(path, b.get("measured"))
    rows = pd.DataFrame(obj["rows"])
    for k, default in ROW_OPTIONAL.items():
        rows[k] = rows[k].fillna(default).astype(type(default)) if k in rows else default
    return {"provenance": obj["provenance"], "build": b, "rows": rows}
