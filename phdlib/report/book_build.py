"""What a whole book build cost, chapter by chapter, for the chapter "Cost at scale".

Reads a record as :func:`phdlib.book.record.load` returns it (``provenance``,
``build``, ``rows``: one row per chapter with its title, seconds, parameters,
code cells and longest cell). :func:`chapter_costs` is the table,
:func:`findings` the computed statements. Units: minutes on the page.
"""
from __future__ import annotations

import pandas as pd

from .page import and_list

__all__ = ["chapter_costs", "findings", "hours_minutes"]


def hours_minutes(minutes: float) -> str:
    """``112.4`` -> ``"1 h 52 min"``; under an hour ``"47 min"``; under 10 min ``"7.5 min"``."""
    m = float(minutes)
    if m < 10:
        return f"{m:.1f} min"
    h, rest = divmod(int(round(m)), 60)
    return f"{h} h {rest} min" if h else f"{rest} min"


def chapter_costs(rec: dict) -> pd.DataFrame:
    """One row per chapter in the book's order: ``chapter`` (its title), ``minutes`` of
    execution, ``share`` of the build's chapter time (%), ``cells`` (code cells) and
    ``longest cell`` (minutes of its longest code cell)."""
    rows = rec["rows"]
    total = float(rows["seconds"].sum())
    return pd.DataFrame({
        "chapter": [t or c for t, c in zip(rows["title"], rows["chapter"])],
        "minutes": rows["seconds"] / 60.0,
        "share": 100.0 * rows["seconds"] / total if total > 0 else float("nan"),
        "cells": rows["cells"].astype(int),
        "longest cell": rows["longest_cell_seconds"].astype(float) / 60.0,
    })


def _parameters(rows: pd.DataFrame) -> dict:
    """The parameters the chapters ran with, merged (a value some chapter used)."""
    out: dict = {}
    for p in rows["parameters"]:
        for k, v in (p or {}).items():
            out.setdefault(k, v)
    return out


def findings(rec: dict, dataset: str, top: int = 3) -> list[str]:
    """Computed statements on a build record of the book on ``dataset`` (its label):
    what ran and with which parameters, how long the chapters took on how many cores,
    which ``top`` chapters took most of it, whether every chapter's execution is
    current and none failed, and what the build measured itself where it did."""
    rows, b, prov = rec["rows"], rec["build"], rec["provenance"]
    costs = chapter_costs(rec)
    params = _parameters(rows)
    total = float(rows["seconds"].sum()) / 60.0
    what = ", ".join(f"{k} = {params[k]}" for k in ("profile", "seeds", "jobs") if k in params)
    cpus = prov.get("cpus")
    stale = rows.loc[~rows["current"].astype(bool), "chapter"].tolist()
    failed = rows.loc[rows["failed"].astype(bool), "chapter"].tolist()
    whole = not (failed or b.get("missing") or (b.get("measured") or {}).get("failed"))
    out = [
        f"**The whole book at the {dataset} shape "
        f"{'ran to the end' if whole else 'did not run to the end'}: "
        f"{hours_minutes(total)}** of chapter execution for its {len(rows)} chapters"
        + (f" ({what})" if what else "")
        + (f" on {cpus} cores" if cpus else "")
        + f", chapter after chapter; from the first chapter's start to the last one's end "
          f"{hours_minutes(float(b['span_seconds']) / 60.0)}."
    ]
    big = costs.sort_values("minutes", ascending=False).head(top)
    out.append(
        f"{and_list([f'{c} ({hours_minutes(m)})' for c, m in zip(big['chapter'], big['minutes'])])}"
        f" took {big['share'].sum():.0f}% of it; the longest single cell ran "
        f"{hours_minutes(float(costs['longest cell'].max()))} "
        f"(in {costs.loc[costs['longest cell'].idxmax(), 'chapter']}).")
    if failed:
        out.append(f"Chapters that failed: {and_list(failed)}.")
    if stale:
        out.append(f"Executed before their source or the library last changed: "
                   f"{and_list(stale)}.")
    if b.get("missing"):
        out.append(f"Never executed: {and_list(list(b['missing']))}.")
    m = b.get("measured")
    if m and m.get("failed"):
        out.append(f"The build stopped: {m['failed']}")
    if m:
        mem = (f"; at most {float(m['peak_total_rss_mb']) / 1024:.2f} GiB for the build, its "
               f"kernels and their workers together (sampled every "
               f"{float(m['sample_interval_s']):g} s), the largest one process "
               f"{float(m['peak_process_rss_mb']) / 1024:.2f} GiB")
        store = (f"; the results store held {m['store_runs_before']:,} runs before and "
                 f"{m['store_runs_after']:,} after")
        out.append(f"The build took {hours_minutes(float(m['wall_seconds']) / 60.0)} of wall "
                   f"time with the site{mem}{store}.")
    return out
