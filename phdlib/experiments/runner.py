"""Running a grid of cells through the results store, on one machine or a Dask cluster.

:func:`run_grid` trains only the cells (:class:`phdlib.experiments.cells.Cell`) that
the store does not hold yet, so an interrupted grid resumes where it
stopped (a run is stored atomically by :func:`phdlib.experiments.training.run`, complete
or absent), in parallel with joblib or on a Dask cluster
(:mod:`phdlib.experiments.cluster`), and writes a manifest (provenance) beside the runs
in ``<results>/_grids/`` (:func:`load_manifest` reads it back).
:func:`status` says which cells are stored. See :mod:`phdlib.experiments`
for the parallel backends.

This is the executor: what a cell is, its split, its status and its
tuning points come from :mod:`phdlib.experiments.cells`; the grids of the paper are
built in :mod:`phdlib.experiments`, which imports this module (never the
other way round).
"""
from __future__ import annotations

import json
import os
import platform
import socket
import time
import traceback
import uuid
from pathlib import Path
from typing import Iterable

import pandas as pd

from .. import __version__, methods, results
from . import training
from ..bench.machine import cpu_model, load_average
# re-exported: runner.status and runner.grid_cells, as before they moved to cells
from .cells import grid_cells, record, status  # noqa: F401
from .cluster import dependency_cells, execute as execute_on_cluster
from ..io import records, write_json
from ..results.provenance import git_commit  # noqa: F401  (re-exported: runner.git_commit)
from .usage import peak_rss_mb, usage_since, usage_start


def _root(root) -> Path:
    return Path(root) if root is not None else results.results_dir()


#: The ``format`` of a grid manifest (:func:`_write_manifest`, :func:`load_manifest`).
MANIFEST_FORMAT = "phd-grid"
MANIFEST_VERSION = 1


def _run_cell(cell, root: str, data_dir: str | None, client_pid: int | None = None) -> dict:
    """Worker: train one cell through the store. Returns a small picklable dict.

    client_pid: the grid's own process; a cell run in it (one job) leaves its
    peak memory whole, so the peak recorded is that process's (``"process"``)."""
    start = usage_start(reset=os.getpid() != client_pid)
    try:
        split = cell.load_split(data_dir)
        run = training.run(cell.method, split, cell.bits, seed=cell.seed, overrides=cell.overrides,
                          progress=False, root=Path(root))
        return {"cell": cell, "ok": True, "train_seconds": float(run.wall_seconds),
                "key": run.key, "path": str(run.path) if run.path else None,
                "metrics": dict(run.metrics), "error": None, **usage_since(start)}
    except Exception as exc:  # recorded, reported, and re-raised by run_grid if asked
        return {"cell": cell, "ok": False, "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(), **usage_since(start)}


def _cost(cell) -> int:
    """Rough relative cost, to start the slowest cells first (:meth:`Method.run_cost`)."""
    cfg = methods.resolve_config(cell.method, cell.dataset, cell.bits, cell.overrides)
    return methods.get(cell.method).run_cost(cfg, cell.bits)


def _shared_work(cell):
    """What ``cell``'s fits share with other cells' (:meth:`Method.shared_work`), or None."""
    cfg = methods.resolve_config(cell.method, cell.dataset, cell.bits, cell.overrides)
    work = methods.get(cell.method).shared_work(cfg, cell.bits)
    return None if work is None else (cell.dataset, cell.bits, cell.seed, cell.split_seed, work)


def tasks(cells: list) -> list[list]:
    """``cells`` as tasks, one worker's each: cells whose methods share work (same dataset,
    width, seed and split; :meth:`phdlib.methods.base.Method.shared_work`) form one task
    and run in order there, so the later ones reuse that work; every other cell is a
    task alone. The costliest task comes first (the sum of its cells' costs); a
    task's cells keep their order in ``cells``."""
    groups: dict = {}
    for c in cells:
        work = _shared_work(c)
        groups.setdefault(c if work is None else work, []).append(c)
    cost = {c: _cost(c) for c in cells}
    return sorted(groups.values(), key=lambda t: sum(cost[c] for c in t), reverse=True)


def _run_task(cells: list, root: str, data_dir: str | None, client_pid: int | None = None) -> list:
    """Worker: :func:`_run_cell` for each cell of one task, in order; their outcomes. The
    work they shared is then dropped (:meth:`Method.forget_shared_work`): a worker keeps
    no memory of one task into the next."""
    try:
        return [_run_cell(c, root, data_dir, client_pid) for c in cells]
    finally:
        methods.forget_shared_work(c.method for c in cells)


class GridError(RuntimeError):
    """One or more cells of a grid failed; ``report`` holds every cell's outcome."""

    def __init__(self, message: str, report: pd.DataFrame):
        super().__init__(message)
        self.report = report


def _execute(st: pd.DataFrame, todo: list, twins: dict, jobs, root, data_dir, progress, name,
             outcomes: list) -> None:
    """Run ``todo`` (tasks: lists of cells, :func:`tasks`) with joblib; record each cell's
    outcome in ``st`` (and its twins)."""
    import joblib
    from tqdm import tqdm

    pos = {c: i for i, c in enumerate(st["cell"])}
    par = joblib.Parallel(n_jobs=jobs, return_as="generator_unordered")
    bar = tqdm(total=sum(map(len, todo)), desc=f"{name}: cells", unit="run", disable=not progress)
    try:
        for done in par(joblib.delayed(_run_task)(t, str(root), None if data_dir is None
                                                  else str(data_dir), os.getpid())
                        for t in todo):
            for out in done:
                outcomes.append(out)
                record(st, out, twins, pos)
                bar.set_postfix_str(f"{out['cell'].method} {out['cell'].bits}b "
                                    f"{'ok' if out['ok'] else 'FAILED'} {out['seconds']:.0f}s")
                bar.update(1)
    finally:
        bar.close()


def _missing(st: pd.DataFrame, cells: set | None = None) -> tuple[list, dict]:
    """Tasks to run (:func:`tasks`: one cell per key, the slowest first) and the twins of
    each key."""
    todo, twins = [], {}
    for c, s, k in zip(st["cell"], st["status"], st["key"]):
        if s != "missing" or (cells is not None and c not in cells):
            continue
        if k in twins:
            twins[k].append(c)
        else:
            twins[k] = [c]
            todo.append(c)
    todo.sort(key=_cost, reverse=True)
    return tasks(todo), twins


def _phases(missing: list, first: list, data_dir, share: bool = True) -> tuple[set, set]:
    """The cells of the two phases: first the tuning points, the tuned anchors and every
    missing cell that depends on none of them still missing; then the cells that reuse
    one of those (:func:`phdlib.experiments.cluster.dependency_cells`), and with them
    every other cell that shares work with one of them (:func:`tasks`: DCF's seed-1 cell
    waits for DCF_PHD's tuning when DCF's own is stored, so the two fit from one relaxed
    start instead of two; ``share=False``, where cells run one by one and share nothing,
    as on a Dask cluster, leaves them in the first phase). A tuning point never waits.
    Otherwise a cell waits only when it has to."""
    firsts = set(first)
    pending = firsts & set(missing)
    later = {c for c in missing if c not in pending
             and (pending & set(dependency_cells(c, data_dir))) - {c}}
    if share:
        work = {c: _shared_work(c) for c in missing if c not in firsts}
        shared = {work[c] for c in later} - {None}  # later cells are never first
        later |= {c for c, w in work.items() if w in shared}
    return firsts | (set(missing) - later), later


def run_grid(cells: Iterable, jobs: int | None = None, root=None, data_dir=None,
             progress: bool = True, errors: str = "raise", name: str = "grid",
             dask=None, command: str | None = None) -> pd.DataFrame:
    """Run the cells the store lacks; return one row per cell.

    Tuning points of the missing cells (:func:`grid_cells`) run first, as
    cells of their own, so a grid is tuned in parallel, beside every cell
    that needs none of them; then the cells that reuse them, and the cells that
    share work with those (:func:`_phases`).
    Cells whose methods share work run in one worker, one after another
    (:func:`tasks`; not on a Dask cluster, which runs cells one by one); a
    task's outcomes are recorded when the whole task ends.
    jobs: joblib ``n_jobs`` (None: 1, or whatever an enclosing
    ``joblib.parallel_config`` sets, e.g. the dask backend). errors:
    ``"raise"`` raises :class:`GridError` after every cell has been tried,
    ``"record"`` only records failures in the report. Columns: cell fields,
    ``status`` (stored / ran / failed), ``seconds`` (wall time of the cell in
    this call), ``cpu_seconds`` (its CPU time), ``peak_rss_mb`` and
    ``peak_rss`` (the peak memory of the process that ran it, and what that
    covers: :func:`phdlib.experiments.usage.usage_since`), ``key``, ``path``, ``ndcg@10``,
    ``error``. A manifest with the provenance of the call (:func:`load_manifest`)
    is written to ``<root>/_grids/<name>-<UTC time>.json``; its path is in
    the returned frame's ``attrs["manifest"]``.
    dask: a Dask scheduler address (``"tcp://host:8786"``) or a
    ``distributed.Client``: the cells run on that cluster, whose workers need
    neither the data nor this store (:mod:`phdlib.experiments.cluster`); ``jobs`` is then
    unused. command: the command line that ran the grid, for the manifest
    (``phd reproduce`` gives its own).
    """
    if errors not in ("raise", "record"):
        raise ValueError(f"errors must be 'raise' or 'record', got {errors!r}")
    cells = list(dict.fromkeys(cells))
    root = _root(root)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    t_start = time.perf_counter()
    st = status(cells, root=root, data_dir=data_dir)
    missing = [c for c, s in zip(st["cell"], st["status"]) if s == "missing"]
    # tuning points and tuned anchors first, even an anchor that is also a cell asked
    # for: the other seeds' cells then reuse its choice instead of tuning it again
    first = grid_cells(missing, data_dir)
    points = [c for c in first if c not in set(cells)]
    if points:
        st = pd.concat([status(points, root=root, data_dir=data_dir), st], ignore_index=True)
    st["seconds"] = st["cpu_seconds"] = 0.0
    st["peak_rss_mb"] = st["ndcg@10"] = float("nan")
    st["peak_rss"] = None
    load_start = load_average()
    outcomes: list = []
    pending = [c for c, s in zip(st["cell"], st["status"]) if s == "missing"]  # points too
    for phase in _phases(pending, first, data_dir, share=dask is None):
        todo, twins = _missing(st, phase)
        if todo and dask is not None:  # cells one by one: a worker shares no work between them
            execute_on_cluster(st, [c for t in todo for c in t], twins, dask, root, data_dir,
                               progress, name, outcomes)
        elif todo:
            _execute(st, todo, twins, jobs, root, data_dir, progress, name, outcomes)
    for i, row in st.iterrows():  # metrics of cells that were already stored
        if row["status"] == "stored" and not row["ndcg@10"] == row["ndcg@10"]:
            meta = json.loads((Path(row["path"]) / "meta.json").read_text())
            st.at[i, "ndcg@10"] = meta.get("metrics", {}).get("ndcg@10", float("nan"))
    backend = None
    if dask is not None:
        backend = f"dask {getattr(dask, 'scheduler', None) and dask.scheduler.address or dask}"
    manifest = _write_manifest(root, name, st, outcomes, {
        "started": started, "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "wall_seconds": time.perf_counter() - t_start, "jobs": jobs,
        "effective_jobs": _effective_jobs(jobs, dask, outcomes), "backend": backend,
        "command": command, "load_average_start": load_start})
    st = st[st["cell"].isin(set(cells))].reset_index(drop=True)
    st.attrs["manifest"] = str(manifest)
    failed = st[st["status"] == "failed"]
    if len(failed) and errors == "raise":
        msg = "; ".join(f"{c.label()}: {e}" for c, e in zip(failed["cell"], failed["error"]))
        raise GridError(f"{len(failed)} of {len(st)} cells failed: {msg}", st)
    return st


def _effective_jobs(jobs, dask, outcomes: list) -> int:
    """How many cells could run at once: the worker processes that returned a
    cell, no more than joblib's count for ``jobs`` (at least 1)."""
    workers = len({(o.get("host"), o.get("pid")) for o in outcomes if o.get("pid") is not None})
    if dask is not None or not jobs:  # (jobs 0 or None: joblib's own default)
        return max(1, workers)
    import joblib

    return max(1, min(int(joblib.effective_n_jobs(jobs)), workers or 1))


def _write_manifest(root: Path, name: str, st: pd.DataFrame, outcomes: list, run: dict) -> Path:
    """Write the provenance of one :func:`run_grid` call to ``<root>/_grids/``.

    run: ``started``, ``finished`` (UTC), ``wall_seconds``, ``jobs`` (as asked),
    ``effective_jobs``, ``backend`` (None: joblib's active one), ``command``,
    ``load_average_start``. Per cell: status, key, wall and CPU seconds, and
    the peak memory of the process that ran it with what that peak covers
    (``peak_rss``, :func:`phdlib.experiments.usage.usage_since`); NaN (not measured) is null.
    """
    import joblib

    backend = run["backend"] or type(joblib.parallel.get_active_backend()[0]).__name__
    cells = pd.DataFrame({
        "label": [c.label() for c in st["cell"]], "dataset": st["dataset"],
        "method": st["method"], "bits": st["bits"].astype(int), "seed": st["seed"].astype(int),
        "options": [dict(c.options) for c in st["cell"]],
        "split_seed": [c.split_seed for c in st["cell"]], "status": st["status"],
        "key": st["key"], "seconds": st["seconds"].astype(float),
        "cpu_seconds": st["cpu_seconds"].astype(float),
        "peak_rss_mb": st["peak_rss_mb"].astype(float), "peak_rss": st["peak_rss"],
        "error": st["error"]})
    manifest = {
        "format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "name": name, **run,
        "backend": backend, "phdlib": __version__, "git_commit": git_commit(),
        "python": platform.python_version(), "host": socket.gethostname(),
        "platform": platform.platform(), "cpu": cpu_model(), "cpus": os.cpu_count(),
        "load_average": load_average(), "client_pid": os.getpid(),
        "client_peak_rss_mb": peak_rss_mb(),
        "cells": records(cells),
        "workers": sorted({f"{o['host']}:{o['pid']}" for o in outcomes}),
    }
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return write_json(root / "_grids" / f"{name}-{stamp}-{uuid.uuid4().hex[:8]}.json", manifest)


def load_manifest(path) -> dict:
    """A grid manifest (``<results>/_grids/*.json``, or a copy such as ``phd
    reproduce --manifest``'s): its fields, with ``cells`` as a DataFrame (one
    row per cell: ``method``, ``bits``, ``seed``, ``status``, ``seconds``,
    ``cpu_seconds``, ``peak_rss_mb``, ``peak_rss``...). A manifest written
    before ``peak_rss`` and ``effective_jobs`` were recorded reads as peaks of
    the whole worker process (``"process"``) and ``jobs`` cells at once.
    ``ValueError`` naming the file when it is not a complete manifest."""
    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable grid manifest ({exc})") from None
    need = ("started", "finished", "wall_seconds", "jobs", "cells")
    if not isinstance(obj, dict) or obj.get("format") != MANIFEST_FORMAT or \
            not all(k in obj for k in need) or not isinstance(obj["cells"], list):
        raise ValueError(f"{path}: not a grid manifest written by phdlib.experiments.runner.run_grid "
                         f"(expected format {MANIFEST_FORMAT!r} with {', '.join(need)})")
    if obj.get("version") != MANIFEST_VERSION:
        raise ValueError(f"{path}: grid manifest version {obj.get('version')!r}; this phdlib "
                         f"reads version {MANIFEST_VERSION}")
    cells = pd.DataFrame(obj["cells"]) if obj["cells"] else pd.DataFrame(
        columns=["label", "dataset", "method", "bits", "seed", "status", "seconds",
                 "cpu_seconds", "peak_rss_mb", "peak_rss"])
    if "peak_rss" not in cells:  # written before the field: the worker process's peak
        cells["peak_rss"] = cells.get("peak_rss_mb", pd.Series(index=cells.index)).map(
            lambda v: None if v is None or v != v else "process")
    jobs = obj["jobs"]
    known = jobs if isinstance(jobs, int) and jobs >= 1 else len(obj.get("workers") or []) or 1
    return {**obj, "effective_jobs": obj.get("effective_jobs") or known, "cells": cells}
