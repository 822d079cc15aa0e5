"""What one end-to-end grid run cost, and the targets a reproduction is held to.

Read from a ``phd reproduce --manifest`` file
(:func:`phdlib.experiments.runner.load_manifest`: its ``cells`` frame, one row
per cell with ``status``, ``seconds``, ``cpu_seconds``, ``peak_rss_mb``, and the
run's ``wall_seconds``, ``effective_jobs``, workers and client peak):
:func:`reproduction` per method and width, :func:`reproduction_summary` the
totals and verdicts. :func:`least_wall_minutes` bounds from below the wall time
of any set of cells on some workers (also used for a sweep's projections in
:mod:`phdlib.report.scale`, which imports this module for the chapter "Cost at
scale").
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .style import label

__all__ = ["TARGET_GIB", "TARGET_MINUTES", "cell_costs", "least_wall_minutes", "reproduction",
           "reproduction_summary", "summary_sentence"]

#: What a one-seed reproduction of one dataset should fit on a 2-core, 24 GiB workstation.
TARGET_MINUTES = 60.0
TARGET_GIB = 8.0


def least_wall_minutes(minutes, jobs: int | None = None) -> float:
    """A lower bound on the wall time (minutes) of running cells that take
    ``minutes`` each (one process each) on ``jobs`` workers (``None``: as
    many workers as cells): no schedule ends before its longest cell, nor
    before the cells' total shared evenly by the workers. (Grids that other
    cells reuse only lengthen it.) A cell of unknown time (NaN) counts as
    none: the bound holds, it is only less tight. ``jobs`` below 1 is a
    ``ValueError``."""
    if jobs is not None and int(jobs) < 1:
        raise ValueError(f"jobs: at least 1 worker, or None for one per cell; got {jobs!r}")
    m = np.asarray(minutes, dtype=float)
    m = m[~np.isnan(m)]
    if m.size == 0:
        return 0.0
    return float(max(m.max(), m.sum() / int(jobs) if jobs is not None else 0.0))


def reproduction(manifest: dict) -> pd.DataFrame:
    """What each method cost in one grid run end to end (a ``phd reproduce
    --manifest`` file, :func:`phdlib.experiments.runner.load_manifest`): per method and
    width, the cells that ran (a grid's points count with the width the grid
    is tuned at), their wall and CPU minutes summed, and the largest peak
    memory of the process that ran them (GiB), with ``peak_is``: ``"own"``
    when every one of those peaks is the cell's own, ``"bound"`` when some
    is the worker process's peak since it began (an upper bound:
    :func:`phdlib.experiments.usage.usage_since`)."""
    c = manifest["cells"]
    c = c[c["status"] == "ran"].assign(own=lambda d: d["peak_rss"] == "since start")
    g = c.groupby(["method", "bits"], sort=False).agg(
        cells=("label", "size"), minutes=("seconds", lambda s: s.sum() / 60),
        cpu_minutes=("cpu_seconds", lambda s: s.sum() / 60),
        peak_gib=("peak_rss_mb", lambda s: s.max() / 1024), own=("own", "all")).reset_index()
    g["peak_is"] = np.where(g.pop("own"), "own", "bound")
    g["method"] = g["method"].map(label)
    return g.sort_values("minutes", ascending=False).reset_index(drop=True)


def cell_costs(manifest: dict) -> pd.DataFrame:
    """A grid run's cells (a ``phd reproduce --manifest`` file) in a sweep's terms
    (:func:`phdlib.studies.scale.per_cell`): per (dataset, method, bits) that ran, the
    wall and CPU seconds of its cells summed (``wall_s``, ``cpu_s``; a grid's points
    count with the width it is tuned at) and their largest peak memory
    (``peak_rss_mb``, MB; a worker's peak since it began where the cell's own was not
    measured, :func:`reproduction`). Cells ran side by side, one a job, so they shared
    the machine's memory bandwidth: their wall times are if anything high."""
    c = manifest["cells"]
    c = c[c["status"] == "ran"]
    return c.groupby(["dataset", "method", "bits"], sort=False).agg(
        wall_s=("seconds", "sum"), cpu_s=("cpu_seconds", "sum"),
        peak_rss_mb=("peak_rss_mb", "max")).reset_index()


def reproduction_summary(manifest: dict) -> dict:
    """The totals of a grid run (:func:`reproduction`): ``wall_minutes`` from
    start to end; ``jobs``, the cells it ran at once at most; ``cells`` that
    ran and ``failed``; ``cell_minutes`` (their wall times summed: what one
    process would take, if the cells cost the same alone) and ``cpu_minutes``;
    ``busy``, the share of the jobs' time spent in cells; ``least_minutes``,
    the wall time no schedule of these cells on ``jobs`` workers could beat
    (:func:`least_wall_minutes`); ``peak_gib``, the
    largest peak of any one process (a worker's or the client's); and
    ``memory_bound_gib``, an upper bound on the memory of all of them at once
    (the client's peak plus ``jobs`` times the largest worker's; the largest
    peak when the cells ran in the client itself). The
    verdicts (within :data:`TARGET_MINUTES`, within :data:`TARGET_GIB` by the
    bound) are ``pd.NA`` when the run measured nothing (no cell ran, no peak)."""
    c = manifest["cells"]
    ran = c[c["status"] == "ran"]
    jobs = manifest.get("effective_jobs") or 1  # (load_manifest fills it in)
    worker = ran["peak_rss_mb"].max() if ran["peak_rss_mb"].notna().any() else np.nan
    client = manifest.get("client_peak_rss_mb") or np.nan
    wall = manifest["wall_seconds"] / 60
    out = {"wall_minutes": wall, "jobs": jobs, "cells": len(ran),
           "failed": int((c["status"] == "failed").sum()),
           "cell_minutes": float(ran["seconds"].sum() / 60),
           "cpu_minutes": float(ran["cpu_seconds"].sum() / 60),
           "peak_gib": float(np.fmax(worker, client) / 1024),
           "memory_bound_gib": float((client + jobs * worker) / 1024)}
    if manifest.get("workers") == [f"{manifest.get('host')}:{manifest.get('client_pid')}"]:
        out["memory_bound_gib"] = out["peak_gib"]  # the cells ran in the client itself
    out["busy"] = out["cell_minutes"] / (jobs * wall) if len(ran) and wall > 0 else np.nan
    out["least_minutes"] = least_wall_minutes(ran["seconds"] / 60, jobs)
    out["within 60 min"] = (pd.NA if not len(ran)
                            else bool(wall <= TARGET_MINUTES and not out["failed"]))
    bound = out["memory_bound_gib"]
    out["within 8 GiB"] = pd.NA if bound != bound else bool(bound <= TARGET_GIB)
    return out


def summary_sentence(manifest: dict, dataset: str) -> str:
    """:func:`reproduction_summary` of a grid run on ``dataset`` (its label) as one
    paragraph: cells, wall time against :data:`TARGET_MINUTES`, the cells' own time,
    how busy the jobs were, the least any schedule could take, and memory against
    :data:`TARGET_GIB` (by the bound: the client's peak plus each job's largest)."""
    r = reproduction_summary(manifest)
    verdict = {True: "within", False: "over"}
    return (
        f"**{dataset}: {r['cells']} cells ran** ({r['failed']} failed) with {r['jobs']} "
        f"jobs in **{r['wall_minutes']:.1f} min** of wall time "
        f"({verdict.get(r['within 60 min'], 'not measured against')} the hour). Their "
        f"own wall times sum to {r['cell_minutes']:.1f} min and their CPU time to "
        f"{r['cpu_minutes']:.1f} min; the jobs were busy {r['busy']:.0%} of the time, and "
        f"no schedule of these cells on {r['jobs']} jobs could end before "
        f"{r['least_minutes']:.1f} min. Memory: at most {r['memory_bound_gib']:.2f} GiB at "
        f"once ({verdict.get(r['within 8 GiB'], 'not measured against')} "
        f"{TARGET_GIB:.0f} GiB), the largest one process {r['peak_gib']:.2f} GiB.")
