"""What a whole book build cost, chapter by chapter, for the chapter "Cost at scale".

Reads a record as :func:`phdlib.book.record.load` returns it (``provenance``,
``build``, ``rows``: one row per chapter with its title, seconds, parameters
and longest cell). :func:`chapter_costs` is the table, :func:`findings` the
computed statements, :func:`parameter_text` how the chapters' parameters
read; :func:`across` and :func:`across_findings` put together the records of
builds that each ran part of the book on one results store (a build
interrupted, and one that ran the chapters it did not reach);
:mod:`phdlib.report.book_machines` sets builds of the same book on other
machines beside one. Units: minutes on the page.
"""
from __future__ import annotations

import math

import pandas as pd

from .page import and_list, cores_text

__all__ = ["across", "across_findings", "chapter_costs", "chapter_titles", "dataset",
           "findings", "hours_minutes", "ordinal", "other_share", "own_rows",
           "parameter_text", "parameter_values", "shared_text", "started_on", "whole"]


def hours_minutes(minutes: float) -> str:
    """``112.4`` -> ``"1 h 52 min"``; under an hour ``"47 min"``; under 10 min ``"7.5 min"``;
    under a minute ``"34 s"``."""
    m = float(minutes)
    if m < 1:
        return f"{m * 60:.0f} s"
    if m < 10:
        return f"{m:.1f} min"
    h, rest = divmod(int(round(m)), 60)
    return f"{h} h {rest} min" if h else f"{rest} min"


def chapter_titles(rows: pd.DataFrame) -> list[str]:
    """Each row's chapter title (its file name where it has none)."""
    return [t or c for t, c in zip(rows["title"], rows["chapter"])]


def chapter_costs(rec: dict) -> pd.DataFrame:
    """One row per chapter in the book's order: ``chapter`` (its title), ``minutes`` of
    execution, ``share`` of the chapters' time (%) and ``longest cell`` (minutes of
    its longest code cell)."""
    rows = rec["rows"]
    total = float(rows["seconds"].sum())
    return pd.DataFrame({
        "chapter": chapter_titles(rows),
        "minutes": rows["seconds"] / 60.0,
        "share": 100.0 * rows["seconds"] / total if total > 0 else float("nan"),
        "longest cell": rows["longest_cell_seconds"].astype(float) / 60.0,
    })


def parameter_values(rec: dict, name: str) -> dict:
    """Value of parameter ``name`` -> the chapters (titles) that ran with it, the most
    used value first; chapters that do not declare it are left out."""
    out: dict = {}
    for title, p in zip(chapter_titles(rec["rows"]), rec["rows"]["parameters"]):
        if name in p:
            out.setdefault(repr(p[name]), (p[name], []))[1].append(title)
    ranked = sorted(out.values(), key=lambda vt: -len(vt[1]))
    return {repr(v): (v, titles) for v, titles in ranked}


def parameter_text(rec: dict, name: str) -> str:
    """``"seeds = 5 (1 in Across users and Convergence)"``: the value most chapters ran
    with, then each other value and its chapters; ``""`` where none declares it."""
    vals = list(parameter_values(rec, name).values())
    if not vals:
        return ""
    (v, _), rest = vals[0], vals[1:]
    others = "; ".join(f"{w} in {and_list(titles)}" for w, titles in rest)
    return f"{name} = {v}" + (f" ({others})" if others else "")


def dataset(rec: dict) -> str | None:
    """The dataset most chapters ran on (None where none declares one)."""
    vals = list(parameter_values(rec, "dataset").values())
    return vals[0][0] if vals else None


def whole(rec: dict) -> bool:
    """The record is of one build that executed every chapter to the end: measured,
    nothing failed, missing, reused from an earlier build or executed from a source
    or library other than today's."""
    rows, b = rec["rows"], rec["build"]
    m = b.get("measured")
    return bool(m and m.get("ended", True) and not m.get("failed") and not m.get("cached")
                and not b.get("missing") and not rows["failed"].any() and rows["current"].all())


def findings(rec: dict, label: str, top: int = 3) -> list[str]:
    """Computed statements on a build record of the book on the dataset ``label``:
    what ran, with which parameters, how long the chapters took on how many cores;
    which ``top`` chapters took most of it and the longest cell; what failed, was
    stale, missing or reused, or that the build was not measured as one; and what
    the build measured itself where it did."""
    rows, b, prov = rec["rows"], rec["build"], rec["provenance"]
    costs = chapter_costs(rec)
    total = float(rows["seconds"].sum()) / 60.0
    what = "; ".join(t for t in (parameter_text(rec, k) for k in ("profile", "seeds", "jobs")) if t)
    cores = cores_text(prov)
    one = whole(rec)
    n = f"{len(rows)} chapter{'s' if len(rows) != 1 else ''}"
    head = (f"**The whole book on {label} ran to the end in one build: "
            f"{hours_minutes(total)}** of chapter execution for its {n}"
            if one else
            f"**The book on {label}: {hours_minutes(total)}** of chapter execution for the "
            f"{n} recorded")
    out = [head + (f" ({what})" if what else "") + (f" on {cores}" if cores else "")
           + (f", one after another: {hours_minutes(float(b['span_seconds']) / 60.0)} from "
              f"the first one's start to the last one's end." if one else ".")]
    big = costs.sort_values("minutes", ascending=False).head(top)
    out.append(
        f"{and_list([f'{c} ({hours_minutes(m)})' for c, m in zip(big['chapter'], big['minutes'])])}"
        f" took {big['share'].sum():.0f}% of it; the longest single cell ran "
        f"{hours_minutes(float(costs['longest cell'].max()))} "
        f"(in {costs.loc[costs['longest cell'].idxmax(), 'chapter']}).")
    names = dict(zip(rows["chapter"], chapter_titles(rows)))
    titles = {**{c: t for c, t in (b.get("titles") or {}).items() if t}, **names}
    datasets = parameter_values(rec, "dataset")
    if len(datasets) > 1:
        out.append("Chapters ran on different datasets: " + "; ".join(
            f"{v} in {and_list(t)}" for v, t in datasets.values()) + ".")
    m = b.get("measured")
    out += _chapter_states(rec, names, titles)
    if not m:
        out.append("The chapters' times are papermill's; the build itself was not measured "
                   "(a record of the last executions, which may span several builds).")
        return out
    return out + _measured(m, names, titles, prov.get("cpus"))


def _chapter_states(rec: dict, names: dict, titles: dict) -> list[str]:
    """The chapters of a record that did not simply run to the end: failed (or
    interrupted by hand), never ended, stale, never executed (:func:`findings`)."""
    rows, b = rec["rows"], rec["build"]
    m = b.get("measured")
    interrupted = bool(m) and m.get("failed") == "KeyboardInterrupt"
    bad = rows["failed"].astype(bool)
    open_ = (rows["unfinished"].astype(bool) if "unfinished" in rows
             else pd.Series(False, index=rows.index))
    failed = [names[c] for c in rows.loc[bad & ~open_, "chapter"]]
    unfinished = [f"{names[r['chapter']]} ({_so_far(r)})"
                  for r in rows[bad & open_].to_dict("records")]
    stale = [names[c] for c, cur, f in zip(rows["chapter"], rows["current"], rows["failed"])
             if not cur and not f]
    out = []
    if failed:
        out.append(f"Interrupted in {and_list(failed)}, by hand (unfinished, not failed)."
                   if interrupted else f"Failed: {and_list(failed)}.")
    if unfinished:
        out.append(f"Never ran to the end (still running when recorded, or killed): "
                   f"{and_list(unfinished)}.")
    if stale:
        out.append(f"Executed before their source or the library last changed: "
                   f"{and_list(stale)}.")
    if b.get("missing"):
        out.append(f"Never executed in this checkout: "
                   f"{and_list([titles.get(c) or c for c in b['missing']])}.")
    return out


def _measured(m: dict, names: dict, titles: dict, cpus=None) -> list[str]:
    """What a build measured itself (``build["measured"]``): reused chapters, how it
    stopped or that it had not ended, its wall time, memory and store (:func:`findings`)."""
    out = []
    if m.get("cached"):
        out.append(f"Reused from an earlier build: {and_list([names.get(c, c) for c in m['cached']])}.")
    if m.get("failed") and m.get("failed") != "KeyboardInterrupt":
        out.append(f"The build stopped: {m['failed']}")
    going = not m.get("ended", True)
    if going:
        later = list(m.get("not_reached") or [])
        upto = m.get("upto")
        out.append("The build had not ended when this record was last written"
                   + (f", after {names.get(upto, upto)}" if upto else "")
                   + ": still running then, or killed since"
                   + (f"; not reached: {and_list([titles.get(c, c) for c in later])}"
                      if later else "") + ".")
    mem = (f"; at most {float(m['peak_total_rss_mb']) / 1024:.2f} GiB of resident memory "
           f"summed over the build, its kernels and their workers (sampled every "
           f"{float(m['sample_interval_s']):g} s), the largest one process "
           f"{float(m['peak_process_rss_mb']) / 1024:.2f} GiB")
    store = ""
    if m.get("store_runs_before") is not None and m.get("store_runs_after") is not None:
        store = (f"; the results store held {m['store_runs_before']:,} runs before and "
                 f"{m['store_runs_after']:,} after")
    site = " with the site" if m.get("site") and not m.get("failed") and not going else ""
    took = "ran for" if m.get("failed") or going else "took"
    out.append(f"The build {took} {hours_minutes(float(m['wall_seconds']) / 60.0)} of wall "
               f"time{site}{mem}{store}.")
    shared = shared_text(m, cpus)
    if shared:
        out.append(shared)
    return out


#: The share of a machine's CPU time (over a build's wall time and the cores) other work
#: may take before the findings call the machine shared (:func:`other_share`).
SHARED = 0.02


def other_share(m: dict | None, cpus) -> float | None:
    """The share of the machine's CPU time (the build's wall time times ``cpus``) that
    other work took while the build ran (``measured["other_cpu_seconds"]``); None where
    the record does not say (records before the field, or without a measured block)."""
    if not m or m.get("other_cpu_seconds") is None or not cpus or not m.get("wall_seconds"):
        return None
    return float(m["other_cpu_seconds"]) / (float(m["wall_seconds"]) * float(cpus))


def shared_text(m: dict | None, cpus) -> str:
    """How much of the machine other work took while the build ran, where its record
    measured it: ``"Other work used 21 min of CPU time on the machine while it ran, 10%
    of its 2 cores' time: the chapters' times include that contention."`` at
    :data:`SHARED` or more; below it, ``"... 30 s of CPU time ..., 0.4% of its 2
    cores' time, below the 2% at which these findings call a machine shared."`` (the
    share to a tenth of a percent, cut rather than rounded up to the threshold); ``""``
    where the record does not say."""
    share = other_share(m, cpus)
    if share is None:
        return ""
    used = (f"Other work used {hours_minutes(float(m['other_cpu_seconds']) / 60.0)} of CPU "
            f"time on the machine while it ran")
    if share < SHARED:
        shown = round(100 * share, 1)
        if shown >= 100 * SHARED:   # 1.96% is not "2.0%, below the 2%"
            shown = math.floor(1000 * share) / 10
        return (f"{used}, {shown:.1f}% of its {cpus} cores' time, "
                f"below the {100 * SHARED:.0f}% at which these findings call a machine "
                f"shared.")
    return f"{used}, {100 * share:.0f}% of its {cpus} cores' time: the chapters' times " \
           f"include that contention."


def _so_far(row) -> str:
    """How long an unfinished chapter (its row) is known to have run: ``"at least 45
    min: seen running then"`` where the build last saw it running after its last
    completed cell (``seen_running``), else ``"12 min to its last completed cell"``."""
    t = float(row["seconds"])
    if row.get("seen_running"):
        return f"at least {hours_minutes(t / 60.0)}: seen running then"
    return f"{hours_minutes(t / 60.0)} to its last completed cell" if t > 0 else \
        "no cell completed"


def started_on(rec: dict) -> str:
    """What store the build of ``rec`` started on: ``"from an empty results store"``,
    ``"on a store of N runs"``, or ``""`` where the build did not count its store."""
    before = (rec["build"].get("measured") or {}).get("store_runs_before")
    if before is None:
        return ""
    return "from an empty results store" if before == 0 else f"on a store of {before:,} runs"


_ORDINALS = ("first", "second", "third", "fourth", "fifth")


def ordinal(i: int) -> str:
    """``0`` -> ``"first"``, ... (a build's place in a sequence of builds)."""
    return _ORDINALS[i] if i < len(_ORDINALS) else f"number {i + 1}"


def own_rows(recs: list[dict]) -> list[pd.DataFrame]:
    """Of each record in ``recs`` (builds in the order they ran), the rows of the
    chapters that build executed itself: not those it reused from an earlier build
    (named in ``measured["cached"]``, or with the chapter and start of an earlier
    record's row, as ``phd book record`` of a later build repeats them)."""
    seen: set = set()
    out = []
    for rec in recs:
        rows = rec["rows"]
        reused = set((rec["build"].get("measured") or {}).get("cached") or ())
        keys = list(zip(rows["chapter"], rows["started"]))
        keep = [c not in reused and k not in seen for c, k in zip(rows["chapter"], keys)]
        seen.update(keys)
        out.append(rows[keep])
    return out


def across(recs: list[dict]) -> pd.DataFrame:
    """The chapters of several builds' records, ``recs`` in the order they ran: each
    chapter once, from the last build that executed it to the end (or, where none
    did, the last that tried; a build that reused a chapter from an earlier build
    did not execute it), in the order they ran (build, then start). Columns as
    :func:`chapter_costs` (``share`` of the rows shown), plus ``build`` (``"first"``,
    ``"second"``, ...) and ``finished`` (bool)."""
    picked: dict[str, tuple] = {}
    for i, (rec, own) in enumerate(zip(recs, own_rows(recs))):
        ran = set(own["chapter"])
        for _, r in rec["rows"].iterrows():
            c = r["chapter"]
            ok = not bool(r["failed"])
            if c in picked and c not in ran:   # an earlier build's execution
                continue
            if c not in picked or ok or not picked[c][2]:
                picked[c] = (i, r, ok)
    order = sorted(picked, key=lambda c: (picked[c][0], pd.Timestamp(picked[c][1]["started"])))
    rows = pd.DataFrame([picked[c][1] for c in order]).reset_index(drop=True)
    total = float(rows["seconds"].sum())
    return pd.DataFrame({
        "chapter": chapter_titles(rows),
        "build": [ordinal(picked[c][0]) for c in order],
        "minutes": rows["seconds"].astype(float) / 60.0,
        "share": 100.0 * rows["seconds"].astype(float) / total if total > 0 else float("nan"),
        "longest cell": rows["longest_cell_seconds"].astype(float) / 60.0,
        "finished": [picked[c][2] for c in order],
    })


def across_findings(recs: list[dict], label: str) -> list[str]:
    """Computed statements on the records ``recs`` of builds run one after another on
    one results store: how long the book's chapters took together, chapter by
    chapter from the build that finished each; what each build ran and lost to an
    interruption; which chapters none finished; the largest memory any reached."""
    if len(recs) < 2:
        return []
    table = across(recs)
    total = float(table["minutes"].sum())
    done = table[table["finished"]]
    parts = []
    for i, (rec, own) in enumerate(zip(recs, own_rows(recs))):
        mins = float(own["seconds"].sum()) / 60.0
        n = len(own)
        start = started_on(rec)
        parts.append(f"the {ordinal(i)} {hours_minutes(mins)} for {n} "
                     f"chapter{'s' if n != 1 else ''}" + (f" {start}" if start else ""))
    out = [f"**Chapter by chapter over {len(recs)} builds, the book on {label} took "
           f"{hours_minutes(total)} of chapter execution**, each chapter counted once, from "
           f"the build that ran it to the end ({'; '.join(parts)}). Each build after the "
           f"first read the runs the ones before had stored, as one build going on would "
           f"have: the sum is what one build from an empty store would take, less the "
           f"time lost to interruptions, not a build that ran in one go."]
    last_try = {}   # chapter -> the last build that executed it
    for i, rec in enumerate(recs):
        for c in rec["rows"]["chapter"]:
            last_try[c] = i
    again, cut = [], []
    for i, rec in enumerate(recs):
        rows = rec["rows"]
        for _, r in rows[rows["failed"].astype(bool)].iterrows():
            what = (f"{r['title'] or r['chapter']} in the {ordinal(i)} build"
                    + (f" ({_so_far(r)})" if r.get("unfinished") else
                       f", after {hours_minutes(float(r['seconds']) / 60.0)}"))
            (again if last_try[r["chapter"]] > i else cut).append(what)
    if again:
        out.append(f"Cut short and run again later: {and_list(again)}.")
    if cut:
        out.append(f"Cut short and not run again: {and_list(cut)}.")
    unfinished = table.loc[~table["finished"], "chapter"].tolist()
    if unfinished:
        out.append(f"No build finished {and_list(unfinished)}.")
    ran = {c for rec in recs for c in rec["rows"]["chapter"]}
    never = sorted({c for rec in recs for c in rec["build"].get("missing", [])} - ran)
    if never:
        out.append(f"No build executed {and_list(never)}.")
    peaks = [(float(m["peak_total_rss_mb"]), i) for i, m in
             enumerate(r["build"].get("measured") or {} for r in recs) if m]
    if peaks:
        mb, i = max(peaks)
        out.append(f"The most memory any of them held: {mb / 1024:.2f} GiB summed over the "
                   f"build, its kernels and their workers, in the {ordinal(i)}.")
    if len(done) == len(table):
        big = done.sort_values("minutes", ascending=False).head(3)
        named = [f"{c} ({hours_minutes(m)})" for c, m in zip(big["chapter"], big["minutes"])]
        out.append(f"{and_list(named)} took {big['share'].sum():.0f}% of it.")
    return out
