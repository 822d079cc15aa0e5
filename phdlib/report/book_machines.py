"""The same book on other machines: builds set beside one build, chapter by chapter.

A machine's builds are one record (:func:`phdlib.book.record.load`) or several
run one after another on one results store, as when a build is killed and
another goes on from what it stored (:func:`builds`). :func:`machines` is the
table of minutes and ratios, :func:`machines_findings` the computed
statements, for the "Cost at scale" chapter. A chapter is compared only where
the builds executed it once (:func:`tries`), to the end, from today's source,
with the parameters of the build it is set beside: not one cut short or
executed again later on the store an earlier try had filled
(:func:`in_parts`). Units: minutes.
"""
from __future__ import annotations

import pandas as pd

from .book_build import (SHARED, across_findings, chapter_titles, findings, hours_minutes,
                         ordinal, other_share, own_rows)
from .page import and_list, cores_text

__all__ = ["builds", "finished_minutes", "in_parts", "machines", "machines_findings",
           "tries"]


def builds(entry) -> list[dict]:
    """One machine's records as a list, in the order they ran: ``entry`` is a record or
    a list of records."""
    return list(entry) if isinstance(entry, (list, tuple)) else [entry]


def tries(recs: list[dict]) -> dict[str, list[dict]]:
    """Each chapter's executions over the builds ``recs`` (one machine's, in the order
    they ran), in order: ``{"build": i, "minutes", "ended", "current", "parameters"}``.

    A row a build reused from an earlier one is not an execution of its own
    (:func:`~phdlib.report.book_build.own_rows`). A build whose record was last
    written while it went on (``measured["ended"]`` false) and that has no row for the
    first chapter it had not reached was killed in that chapter: a try of unknown
    length (``minutes`` NaN) that did not end.
    """
    out: dict[str, list[dict]] = {}
    for i, (rec, own) in enumerate(zip(recs, own_rows(recs))):
        m = rec["build"].get("measured") or {}
        for r in own.to_dict("records"):
            out.setdefault(r["chapter"], []).append({
                "build": i, "minutes": float(r["seconds"]) / 60.0,
                "ended": not bool(r["failed"]), "current": bool(r["current"]),
                "parameters": r["parameters"]})
        later = list(m.get("not_reached") or ())
        if not m.get("ended", True) and later and later[0] not in set(rec["rows"]["chapter"]):
            out.setdefault(later[0], []).append({"build": i, "minutes": float("nan"),
                                                 "ended": False, "current": False,
                                                 "parameters": None})
    return out


def in_parts(recs: list[dict]) -> dict[str, tuple[list[float], float]]:
    """The chapters the builds ``recs`` executed more than once, the last time to the
    end from today's source: chapter file -> (the minutes each earlier try recorded,
    NaN where unknown; the minutes of the last). The last read the runs the earlier
    ones had stored (:func:`tries`), so its time is not what one piece would take; a
    try cut short records up to the end of its last completed cell, or to when the
    build last saw it running (:func:`phdlib.book.record.chapter_row`)."""
    return {c: ([t["minutes"] for t in ts[:-1]], ts[-1]["minutes"])
            for c, ts in tries(recs).items()
            if len(ts) > 1 and ts[-1]["ended"] and ts[-1]["current"]}


def finished_minutes(recs: list[dict]) -> pd.Series:
    """Minutes of each chapter the builds ``recs`` (one machine's, in the order they
    ran) executed once, to the end, from today's source (:func:`tries`), by chapter
    file: not one reused from an earlier build, cut short or failed, executed before
    its source or the library last changed, or executed more than once
    (:func:`in_parts`)."""
    return pd.Series({c: ts[0]["minutes"] for c, ts in tries(recs).items()
                      if len(ts) == 1 and ts[0]["ended"] and ts[0]["current"]}, dtype=float)


def _other_parameters(base: dict, recs: list[dict]) -> list[str]:
    """The chapters (file names) whose last execution in ``recs`` ran with other
    parameters than ``base``'s (:func:`tries`)."""
    ours = dict(zip(base["rows"]["chapter"], base["rows"]["parameters"]))
    return sorted(c for c, ts in tries(recs).items()
                  if c in ours and ts[-1]["parameters"] is not None
                  and ours[c] != ts[-1]["parameters"])


def machines(base: dict, others: list) -> pd.DataFrame:
    """The chapters of the build ``base`` beside the same chapters on other machines
    (``others``: each a record or a list of records, :func:`builds`), in ``base``'s
    order: ``chapter`` (title), ``minutes`` in ``base`` and, for each other machine
    ``i`` (from 1), ``minutes i`` and ``ratio i`` (its minutes over ``base``'s); NaN
    where no build ran a chapter to the end itself in one piece
    (:func:`finished_minutes`) or ran it with other parameters than ``base``, and a
    ratio where ``base``'s chapter took no time."""
    here = finished_minutes([base])
    rows = base["rows"]
    out = pd.DataFrame({"chapter": chapter_titles(rows),
                        "minutes": rows["chapter"].map(here).astype(float).to_numpy()})
    for i, entry in enumerate(others, start=1):
        recs = builds(entry)
        there = rows["chapter"].map(finished_minutes(recs)).astype(float).to_numpy(copy=True)
        there[rows["chapter"].isin(_other_parameters(base, recs)).to_numpy()] = float("nan")
        out[f"minutes {i}"] = there
        out[f"ratio {i}"] = there / out["minutes"].where(out["minutes"] > 0).to_numpy()
    return out


def _code(recs: list[dict]) -> str | None:
    """The commit the builds ran (``+dirty`` kept); None where a record names none or
    they ran different commits."""
    commits = {rec["provenance"].get("commit") for rec in recs}
    c = commits.pop() if len(commits) == 1 else None
    return str(c) if c else None


def _short(commit: str) -> str:
    return commit[:10] + ("+dirty" if commit.endswith("+dirty") else "")


def _who(recs: list[dict], label: str) -> list[str]:
    """What the builds of one machine ran and on what: :func:`findings` of one build;
    of several, :func:`across_findings` and the machine (or machines) they ran on."""
    if len(recs) == 1:
        return findings(recs[0], label)
    out = across_findings(recs, label)
    where = list(dict.fromkeys(cores_text(r["provenance"]) or "a machine not named"
                               for r in recs))
    out.insert(1, f"The {len(recs)} builds ran on {where[0]}." if len(where) == 1 else
               "The builds ran on different machines: " + "; ".join(
                   f"the {ordinal(i)} on {cores_text(r['provenance']) or 'one not named'}"
                   for i, r in enumerate(recs)) + ".")
    return out


def _parts_line(base: dict, parts: dict) -> str:
    """The sentence on chapters executed more than once (:func:`in_parts`)."""
    names = dict(zip(base["rows"]["chapter"], chapter_titles(base["rows"])))
    said = []
    for c, (earlier, last) in parts.items():
        k = len(earlier)
        known = [m for m in earlier if m == m]
        said.append(f"{names.get(c, c)} ({hours_minutes(last)} in the last, after {k} "
                    f"earlier tr{'ies' if k > 1 else 'y'}"
                    + (f" recorded as {hours_minutes(sum(known))}" if known else "") + ")")
    return (f"Not compared, as executed more than once (the last going on from the runs "
            f"the earlier tries had stored): {and_list(said)}.")


def machines_findings(base: dict, other, label: str) -> list[str]:
    """Computed statements on ``other`` (a record, or a list of records of builds run one
    after another on one results store: :func:`builds`), the book on another machine
    than ``base``'s: on which machine and code it ran (:func:`findings` or
    :func:`~phdlib.report.book_build.across_findings` for the rest), and how its
    chapters' times compare with ``base``'s for the chapters run to the end in one
    piece with the same parameters: the ratio of the sums, its range over chapters
    and the longest chapter's; the chapters run in parts (:func:`in_parts`); and what
    else the ratios hold besides the machines: other code (or code a record cannot
    name: no commit, uncommitted changes, builds at different commits), and the
    results store the first build started on where it differs from ``base``'s or a
    record does not say."""
    recs = builds(other)
    out = _who(recs, label)
    table = machines(base, [recs]).dropna(subset=["minutes", "minutes 1"])
    differ = set(_other_parameters(base, recs))
    table = table[table["minutes"] > 0]
    if differ:
        names = dict(zip(base["rows"]["chapter"], chapter_titles(base["rows"])))
        out.append(f"Ran with other parameters than the build above, so not compared: "
                   f"{and_list([names[c] for c in base['rows']['chapter'] if c in differ])}.")
    parts = {c: v for c, v in in_parts(recs).items() if c not in differ}
    if parts:
        out.append(_parts_line(base, parts))
    if table.empty:
        return out
    ratio = float(table["minutes 1"].sum() / table["minutes"].sum())
    n = len(table)
    who = "this build" if len(recs) == 1 else "these builds"
    line = (f"For the {n} chapter{'s' if n != 1 else ''} run to the end in one piece on both "
            f"machines, {who} took {ratio:.2f} times as long as the build above "
            f"({hours_minutes(float(table['minutes 1'].sum()))} against "
            f"{hours_minutes(float(table['minutes'].sum()))}")
    if n > 1:
        big = table.sort_values("minutes", ascending=False).iloc[0]
        line += (f"; from {float(table['ratio 1'].min()):.2f} to "
                 f"{float(table['ratio 1'].max()):.2f} times by chapter, "
                 f"{float(big['ratio 1']):.2f} in the longest, {big['chapter']}")
    line += ")."
    ours, theirs = _code([base]), _code(recs)
    if ours is None or theirs is None or ours.endswith("+dirty") or theirs.endswith("+dirty"):
        line += (" Whether the two ran the same code cannot be told (a record without its "
                 "commit, with changes not committed, or builds at different commits), so "
                 "the ratios may be the code's as well as the machines'.")
    elif ours != theirs:
        line += (f" The two ran different code ({_short(theirs)} here, {_short(ours)} "
                 "above), so the ratios are the machines' and the code's together.")
    stores = [(r["build"].get("measured") or {}).get("store_runs_before")
              for r in (base, recs[0])]
    if None in stores:
        line += (" A record does not say which results store its build started on; a build "
                 "that found runs stored had less to train.")
    elif stores[0] != stores[1]:
        line += (f" The builds started on different results stores ({stores[1]:,} runs here, "
                 f"{stores[0]:,} above); one that found runs stored had less to train.")
    here = [f"the {ordinal(i)} build here" if len(recs) > 1 else "the build here"
            for i, r in enumerate(recs) if _shared(r)]
    shared = here + ["the build above"] * _shared(base)
    if shared:
        line += (f" Other work shared the machine during {and_list(shared)} (at least "
                 f"{100 * SHARED:.0f}% of its cores' time), so some of its chapters' times "
                 f"include that contention.")
    out.append(line)
    return out


def _shared(rec: dict) -> bool:
    """Other work took at least :data:`~phdlib.report.book_build.SHARED` of the machine
    during the build of ``rec`` (False where the record does not say)."""
    share = other_share(rec["build"].get("measured"), rec["provenance"].get("cpus"))
    return share is not None and share >= SHARED
