"""What a book build cost: each chapter's execution, read from the executed notebooks.

papermill writes into every notebook it executes when it started, when it
ended and what each cell took (``metadata.papermill``). :func:`from_executed`
turns the executed chapters of a checkout (``_build/exec``, what
:func:`phdlib.book.build` keeps) into one record: a row per chapter (its
title, parameters, start, end, seconds, code cells and the longest of them)
with the provenance of the checkout and machine, and whether each chapter's
execution is current (its cache key matches today's source, library and
parameters). :func:`build_recorded` runs a build and writes that record with
what the build itself measured (its wall time, the runs the results store
held before and after, the peak memory of the build and its kernels and their
workers together); ``phd book build --record FILE`` calls it, and ``phd book
record --out FILE`` writes the record of the last build alone. The chapter
"Cost at scale" reads one (:func:`load`, which checks every field it uses).

Units: seconds, MB (2**20 bytes); times are ISO 8601 in UTC.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import platform
import socket
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pandas as pd

from .. import __version__, results
from ..experiments.usage import TreeMemory
from ..io import write_json
from .driver import build, library_hash
from .params import declared_parameters
from .project import chapters, is_notebook, project_root

FORMAT = "phd-book-build"
#: Columns every row of a record has (:func:`load` checks them).
ROW_KEYS = ("chapter", "title", "started", "finished", "seconds", "parameters", "cells",
            "longest_cell", "longest_cell_seconds", "current", "failed")


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


def _title(nb: dict) -> str:
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            for line in "".join(cell.get("source", "")).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def _defaults(nb: dict) -> dict:
    """The defaults of the chapter's ``parameters`` cell, as values where they are
    literals (the source text otherwise)."""
    import nbformat

    out = {}
    for name, text in declared_parameters(nbformat.reads(json.dumps(nb), as_version=4)).items():
        try:
            out[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            out[name] = text
    return out


def chapter_row(src: Path, executed: Path, lib_hash: str | None = None) -> dict:
    """One chapter's row, from its executed notebook ``executed`` (``ValueError`` naming
    the file when papermill's timing is not in it). ``parameters``: the defaults of
    its ``parameters`` cell with the values the build passed over them. ``current``: the cache key beside
    it matches the chapter's source today and, given ``lib_hash``, the library's."""
    try:
        nb = json.loads(executed.read_text(encoding="utf-8"))
        pm = nb["metadata"]["papermill"]
        started, finished = pm["start_time"], pm["end_time"]
        seconds = float(pm["duration"])
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{executed}: not a readable executed notebook ({exc})") from None
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{executed}: no papermill timing (metadata.papermill start_time, "
                         f"end_time, duration): not executed by phd book build") from None
    code = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    durations = [float((c.get("metadata", {}).get("papermill") or {}).get("duration") or 0.0)
                 for c in code]
    longest = max(range(len(durations)), key=durations.__getitem__) if durations else None
    key_file = executed.with_suffix(".key.json")
    try:
        key = json.loads(key_file.read_text())
        current = (key.get("source") == hashlib.sha256(src.read_bytes()).hexdigest()
                   and (lib_hash is None or key.get("phdlib") == lib_hash))
    except (OSError, json.JSONDecodeError, AttributeError):
        current = False
    return {"chapter": src.stem, "title": _title(nb), "started": started, "finished": finished,
            "seconds": seconds, "parameters": {**_defaults(nb), **(pm.get("parameters") or {})},
            "cells": len(code),
            "longest_cell": None if longest is None else longest + 1,
            "longest_cell_seconds": None if longest is None else durations[longest],
            "current": bool(current), "failed": bool(pm.get("exception"))}


def from_executed(root: Path | str | None = None, command: str = "",
                  measured: dict | None = None) -> dict:
    """The record of the chapters last executed in the checkout at ``root``.

    Rows follow the book's order; a chapter never executed is named in
    ``build["missing"]``, not given a row. ``build`` also holds the span from
    the first chapter's start to the last one's end (``span_seconds``), the
    sum of the chapters' seconds and, given ``measured``, what the build
    measured itself (:func:`build_recorded`).
    """
    root = project_root(root)
    exec_dir = root / "_build" / "exec"
    lib_hash = library_hash(root)
    rows, missing = [], []
    for src in chapters(root):
        if not is_notebook(src.read_text()):
            continue
        executed = exec_dir / src.relative_to(root).with_suffix(".ipynb")
        if executed.is_file():
            rows.append(chapter_row(src, executed, lib_hash))
        else:
            missing.append(src.stem)
    if rows:
        first = min(datetime.fromisoformat(r["started"]) for r in rows)
        last = max(datetime.fromisoformat(r["finished"]) for r in rows)
        span = (last - first).total_seconds()
    else:
        first = last = None
        span = 0.0
    prov = {"commit": _commit(root), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": socket.gethostname(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "phdlib": __version__, "command": command}
    info = {"first_started": first and first.isoformat(), "last_finished": last and last.isoformat(),
            "span_seconds": span, "chapter_seconds": sum(r["seconds"] for r in rows),
            "missing": missing, "measured": measured}
    return {"format": FORMAT, "version": 1, "provenance": prov, "build": info, "rows": rows}


def build_recorded(path: Path | str, command: str = "", interval: float = 1.0,
                   **kwargs) -> list:
    """:func:`phdlib.book.build` (``kwargs`` passed on), then the record of the
    chapters (:func:`from_executed`) written atomically to ``path``, with what
    this build measured: ``wall_seconds``, the chapters it executed and those it
    reused from the cache, the runs the results store held before and after
    (:func:`phdlib.results.count`) and the peak memory of this process and its
    descendants together, sampled every ``interval`` seconds
    (:class:`~phdlib.experiments.usage.TreeMemory`). A build that stops at a
    failing chapter still writes its record (``measured["failed"]``: the
    error), then raises as it would have."""
    runs_before = results.count()
    t0, failed, res = time.perf_counter(), None, []
    with TreeMemory(interval) as mem:
        try:
            res = build(**kwargs)
        except BaseException as exc:  # a chapter, the site, an interrupt: recorded, then raised
            failed = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            measured = {"wall_seconds": time.perf_counter() - t0,
                        "executed": [r.name for r in res if r.executed],
                        "cached": [r.name for r in res if not r.executed],
                        "store_runs_before": runs_before, "store_runs_after": results.count(),
                        "peak_total_rss_mb": mem.peak_total_mb,
                        "peak_process_rss_mb": mem.peak_process_mb,
                        "memory_samples": mem.samples, "sample_interval_s": interval,
                        "failed": failed}
            if res or failed:
                write_json(path, from_executed(kwargs.get("root"), command, measured))
    return res


def write(path: Path | str, root: Path | str | None = None, command: str = "") -> Path:
    """Write :func:`from_executed` of ``root`` to ``path`` atomically; ``ValueError``
    when no chapter has been executed there."""
    rec = from_executed(root, command)
    if not rec["rows"]:
        raise ValueError(f"{project_root(root) / '_build' / 'exec'}: no executed chapter to "
                         f"record (run phd book build first)")
    return write_json(path, rec)


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
    for field, kind in (("provenance", dict), ("build", dict), ("rows", list)):
        if not isinstance(obj.get(field), kind):
            raise ValueError(f"{path}: field {field!r} must be a {kind.__name__}")
    if not obj["rows"]:
        raise ValueError(f"{path}: field 'rows' is empty (no chapter recorded)")
    for i, r in enumerate(obj["rows"]):
        missing = [k for k in ROW_KEYS if not isinstance(r, dict) or k not in r]
        if missing:
            raise ValueError(f"{path}: row {i} lacks {missing}")
        if not isinstance(r["seconds"], (int, float)) or not r["seconds"] >= 0:
            raise ValueError(f"{path}: row {i} ({r['chapter']}): seconds must be a number "
                             f">= 0, got {r['seconds']!r}")
    for field in ("span_seconds", "chapter_seconds"):
        v = obj["build"].get(field)
        if not isinstance(v, (int, float)) or not v >= 0:
            raise ValueError(f"{path}: build.{field} must be a number >= 0, got {v!r}")
    return {"provenance": obj["provenance"], "build": obj["build"],
            "rows": pd.DataFrame(obj["rows"])}
