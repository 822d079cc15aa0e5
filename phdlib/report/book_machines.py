"""The same book on other machines: builds set beside one build, chapter by chapter.

A machine's builds are one record (:func:`phdlib.book.record.load`) or several
run one after another on one results store, as when a build is killed and
another goes on from what it stored (:func:`builds`). :func:`machines` is the
table of minutes and ratios, :func:`machines_findings` the computed
statements, for the "Cost at scale" chapter. A chapter is compared only where
a build ran it to the end itself, from today's source, with the parameters of
the build it is set beside, and in one piece: not one cut short and run again
later on the store the cut-short try had filled (:func:`in_parts`). Units:
minutes.
"""
from __future__ import annotations

import pandas as pd

from .book_build import across_findings, chapter_titles, findings, hours_minutes, ordinal
from .page import and_list, cores_text

__all__ = ["builds", "finished_minutes", "in_parts", "machines", "machines_findings"]


def builds(entry) -> list[dict]:
    """One machine's records as a list, in the order they ran: ``entry`` is a record or
    a list of records."""
    return list(entry) if isinstance(entry, (list, tuple)) else [entry]


def _own_minutes(rec: dict) -> pd.Series:
    """Minutes of each chapter the build of ``rec`` itself ran to the end from today's
    source, by chapter file: not one that failed or was cut short, one the build
    reused from an earlier build (``measured["cached"]``), or one executed before its
    source or the library last changed."""
    rows = rec["rows"]
    reused = set((rec["build"].get("measured") or {}).get("cached") or ())
    keep = (~rows["failed"].astype(bool) & rows["current"].astype(bool)
            & ~rows["chapter"].isin(reused))
    done = rows[keep]
    return pd.Series(done["seconds"].astype(float).to_numpy() / 60.0,
                     index=done["chapter"].to_numpy())


def in_parts(recs: list[dict]) -> dict[str, tuple[list[float], float]]:
    """The chapters a build of ``recs`` cut short and a later one ran to the end:
    chapter file -> (the minutes each cut-short try recorded, the minutes of the try
    that ended). The try that ended read the runs the ones before had stored, so its
    time is not what one piece would have taken; the cut-short ones record up to the
    end of their last completed cell (:func:`phdlib.book.record.chapter_row`)."""
    out: dict[str, tuple[list[float], float]] = {}
    for i, rec in enumerate(recs):
        rows = rec["rows"]
        later: dict[str, float] = {}
        for nxt in recs[i + 1:]:
            later.update(_own_minutes(nxt).to_dict())
        for c, s in rows.loc[rows["failed"].astype(bool), ["chapter", "seconds"]] \
                .itertuples(index=False):
            if c in later:
                cut, _ = out.get(c, ([], 0.0))
                out[c] = (cut + [float(s) / 60.0], later[c])
    return out


def finished_minutes(recs: list[dict]) -> pd.Series:
    """Minutes of each chapter one of the builds ``recs`` (one machine's, in the order
    they ran) ran to the end itself, in one piece (:func:`_own_minutes`, the last such
    build's; none of :func:`in_parts`), by chapter file."""
    out: dict[str, float] = {}
    for rec in recs:
        out.update(_own_minutes(rec).to_dict())
    for c in in_parts(recs):
        out.pop(c, None)
    return pd.Series(out, dtype=float)


def _other_parameters(base: dict, recs: list[dict]) -> list[str]:
    """The chapters (file names) a build of ``recs`` ran with other parameters than
    ``base``."""
    ours = dict(zip(base["rows"]["chapter"], base["rows"]["parameters"]))
    return sorted({c for rec in recs
                   for c, p in zip(rec["rows"]["chapter"], rec["rows"]["parameters"])
                   if c in ours and ours[c] != p})


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
    """The sentence on chapters run in parts (:func:`in_parts`)."""
    names = dict(zip(base["rows"]["chapter"], chapter_titles(base["rows"])))
    said = [f"{names.get(c, c)} ({hours_minutes(last)} in the build that ended it, "
            f"{hours_minutes(sum(cut))} recorded before in {len(cut)} cut-short "
            f"tr{'ies' if len(cut) > 1 else 'y'})" for c, (cut, last) in parts.items()]
    return (f"Not compared, as run in parts (a later build going on from the runs a "
            f"cut-short try had stored): {and_list(said)}.")


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
    out.append(line)
    return out
