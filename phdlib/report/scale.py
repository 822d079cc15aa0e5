"""Tables and figures of the chapter "Cost at scale" (:mod:`phdlib.studies.scale` measures).

``cells`` below is :func:`phdlib.studies.scale.per_cell`'s frame: one row per
(dataset, method, bits) with ``wall_s`` and ``cpu_s`` (seconds), ``peak_rss_mb``
(MB) and ``users``, ``items``, ``ratings``: what each cell of a sweep cost, and
what that projects to. What one end-to-end grid run cost (a ``phd reproduce``
manifest) and the targets both are held to are :mod:`phdlib.report.reproduction`;
:func:`expectations` joins the two into the chapter's answer.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..studies import scale
from . import page
from .reproduction import (TARGET_GIB, TARGET_MINUTES, cell_costs, least_wall_minutes,
                           reproduction_summary)
from .style import COLORS, dataset_label, label

__all__ = ["by_dataset", "by_method", "catalogue_cost", "commits", "expectation_findings",
           "expectations", "expectations_display", "full_over_quick", "growth_findings",
           "longest_findings",
           "plot_growth", "projected", "projected_by_dataset"]


def by_dataset(cells: pd.DataFrame, expected: int | None = None) -> pd.DataFrame:
    """Per dataset (smallest first): ratings, the summed wall time of every cell
    (minutes: what a one-seed reproduction of these cells costs one process)
    and CPU time (minutes, all threads; less sensitive to other work on the machine),
    the largest peak memory (GiB) and whether each is within the targets.
    expected: the number of cells of a whole reproduction; a dataset with fewer
    measured cells is within the time target only if unknown (``<NA>``)
    unless its partial sum already exceeds it."""
    g = cells.groupby("dataset", sort=False).agg(
        ratings=("ratings", "first"), cells=("method", "size"),
        minutes=("wall_s", lambda s: s.sum() / 60),
        cpu_minutes=("cpu_s", lambda s: s.sum() / 60),
        peak_gib=("peak_rss_mb", lambda s: s.max() / 1024))
    g["within 60 min"] = g["minutes"] <= TARGET_MINUTES
    if expected is not None:
        partial = (g["cells"] < expected) & g["within 60 min"]
        g["within 60 min"] = g["within 60 min"].astype(object).where(~partial, pd.NA)
    g["within 8 GiB"] = g["peak_gib"] <= TARGET_GIB
    return g.sort_values("ratings")


def by_method_table(cells: pd.DataFrame, caption: str, expected, missing: str):
    """:func:`by_method` of the one dataset of ``cells`` as a captioned table, its note
    naming the (method, bits) of ``expected`` that ``cells`` lacks after ``missing``."""
    d = cells["dataset"].iloc[0]
    lack = sorted(set(expected) - set(zip(cells["method"], cells["bits"])))
    shown = by_method(cells, d).rename(columns={"minutes": "wall (min)",
                                               "peak_gib": "peak (GiB)"})
    return page.table(shown, f"{dataset_label(d)}, {caption}", digits=2, lead_zero=True,
                      notes=f"{missing}: " + ", ".join(f"{label(m)} {b}b" for m, b in lack)
                      + "." if lack else "")


def by_method(cells: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """One dataset's cells: wall minutes and peak GiB per method and width."""
    d = cells[cells["dataset"] == dataset]
    t = d.assign(method=d["method"].map(label), minutes=d["wall_s"] / 60,
                 peak_gib=d["peak_rss_mb"] / 1024)
    return t.pivot_table(index="method", columns="bits", values=["minutes", "peak_gib"])


def plot_growth(cells: pd.DataFrame, y: str = "wall_s", bits: int = 64, ax=None,
                title: str = ""):
    """Log-log lines of ``y`` against the number of ratings, one per method at
    ``bits``, labelled with the fitted growth exponent (:func:`phdlib.studies.scale.growth`)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.2))
    d = cells[cells["bits"] == bits].sort_values("ratings")
    k = scale.growth(d, y=y).set_index("method")["exponent"]
    scaleby = {"wall_s": 1.0, "cpu_s": 1.0, "peak_rss_mb": 1 / 1024}[y]
    for m, g in d.groupby("method", sort=False):
        ax.plot(g["ratings"], g[y] * scaleby, marker="o", color=COLORS.get(m),
                label=f"{label(m)} (k = {k.get(m, np.nan):.2f})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ratings")
    ax.set_ylabel({"wall_s": "wall time (s)", "cpu_s": "CPU time (s)",
                   "peak_rss_mb": "peak resident memory (GiB)"}[y])
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    return ax


def growth_findings(cells: pd.DataFrame, y: str = "wall_s") -> list[str]:
    """Sentences on the fitted exponents: the fastest- and slowest-growing method."""
    k = scale.growth(cells, y=y).dropna(subset=["exponent"])
    if k.empty:
        return ["Fewer than two dataset sizes were measured: no growth can be fitted."]
    lo, hi = k.loc[k["exponent"].idxmin()], k.loc[k["exponent"].idxmax()]
    what = {"wall_s": "wall time", "cpu_s": "CPU time", "peak_rss_mb": "peak memory"}[y]
    return [f"{what.capitalize()} grows slowest for {label(lo['method'])} at {lo['bits']} bits "
            f"(exponent {lo['exponent']:.2f}) and fastest for {label(hi['method'])} at "
            f"{hi['bits']} bits (exponent {hi['exponent']:.2f}); an exponent of 1 is linear in "
            f"the number of ratings."]


def full_over_quick(full: pd.DataFrame, quick: pd.DataFrame) -> pd.DataFrame:
    """Per (method, bits): the full profile's wall and CPU time over the quick
    profile's, at the largest dataset both sweeps measured (column ``at``,
    with its ``ratings``). ``full`` and ``quick`` are :func:`phdlib.studies.scale.per_cell`
    frames of a full-profile and a quick-profile sweep."""
    keys = ["dataset", "method", "bits"]
    both = full.merge(quick, on=keys, suffixes=("_full", "_quick"))
    both = both.sort_values("ratings_full").groupby(["method", "bits"], sort=False).tail(1)
    return pd.DataFrame({
        "method": both["method"], "bits": both["bits"], "at": both["dataset"],
        "ratings": both["ratings_full"],
        "wall_ratio": both["wall_s_full"] / both["wall_s_quick"],
        "cpu_ratio": both["cpu_s_full"] / both["cpu_s_quick"]}).reset_index(drop=True)


def projected(full: pd.DataFrame, quick: pd.DataFrame) -> pd.DataFrame:
    """The full profile's cost where only the quick profile was measured: per
    (dataset, method, bits) that the quick sweep measured and the full one did
    not, the quick wall time (minutes) times the method's :func:`full_over_quick` wall ratio. A
    PROJECTION, not a measurement: it assumes a method's grid and number of
    iterations grow with the data as they do up to the size the ratio was
    measured at. Methods without a ratio get NaN."""
    r = full_over_quick(full, quick)
    keys = ["dataset", "method", "bits"]
    todo = quick.merge(full[keys], on=keys, how="left", indicator=True)
    todo = todo[todo.pop("_merge") == "left_only"]
    p = todo.merge(r[["method", "bits", "wall_ratio", "at"]], on=["method", "bits"],
                   how="left")
    p["quick_minutes"] = p["wall_s"] / 60
    p["projected_minutes"] = p["quick_minutes"] * p["wall_ratio"]
    return p[["dataset", "ratings", "method", "bits", "quick_minutes", "wall_ratio", "at",
              "projected_minutes"]]


def projected_by_dataset(full: pd.DataFrame, quick: pd.DataFrame,
                         jobs: int | None = 2) -> pd.DataFrame:
    """Per dataset the full sweep did not measure whole: the quick profile's
    minutes (every cell), the full profile's ``measured_minutes`` over the
    ``measured`` cells it has there and the :func:`projected` minutes of the
    ``projected`` others, their sum ``one_seed_minutes`` (a one-seed
    reproduction: every method, both widths, grids included; NaN where a
    cell has no projection), and whether that is within :data:`TARGET_MINUTES`.
    The cells' minutes also bound the wall time from below
    (:func:`least_wall_minutes`, cells without a projection left out):
    ``jobs_at_least`` with ``jobs`` workers (``None``: one per cell), and
    ``longest_minutes`` (with ``longest``, its method and width) on any
    number of workers, a cluster included."""
    p = projected(full, quick)
    ds = list(dict.fromkeys(p["dataset"]))
    q = quick[quick["dataset"].isin(ds)].groupby("dataset", sort=False).agg(
        ratings=("ratings", "first"), quick_minutes=("wall_s", lambda s: s.sum() / 60))
    f = full[full["dataset"].isin(ds)].groupby("dataset").agg(
        measured=("wall_s", "size"), measured_minutes=("wall_s", lambda s: s.sum() / 60))
    g = p.groupby("dataset", sort=False).agg(
        projected=("projected_minutes", "size"),
        projected_minutes=("projected_minutes", lambda s: s.sum(min_count=len(s))))
    g = q.join(f).join(g)
    g["measured"] = g["measured"].fillna(0).astype(int)
    g["measured_minutes"] = g["measured_minutes"].fillna(0.0)
    g["one_seed_minutes"] = g["measured_minutes"] + g["projected_minutes"]
    g["one_seed_hours"] = g["one_seed_minutes"] / 60
    known = g["one_seed_minutes"].notna()
    g["within 60 min"] = (g["one_seed_minutes"] <= TARGET_MINUTES).astype(object).where(
        known, pd.NA)
    measured = full[full["dataset"].isin(ds)].assign(minutes=lambda d: d["wall_s"] / 60)
    parts = [f for f in (measured, p.rename(columns={"projected_minutes": "minutes"})) if len(f)]
    each = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["dataset", "method", "bits", "minutes"])
    for d, c in each.groupby("dataset", sort=False):
        top = c.loc[c["minutes"].idxmax()] if c["minutes"].notna().any() else None
        g.loc[d, "longest"] = ("" if top is None
                               else f"{label(top['method'])} {int(top['bits'])}b")
        g.loc[d, "longest_minutes"] = least_wall_minutes(c["minutes"])
        g.loc[d, "jobs_at_least"] = least_wall_minutes(c["minutes"], jobs)
    g["jobs"] = pd.NA if jobs is None else int(jobs)
    return g.sort_values("ratings")


def catalogue_cost(rows: pd.DataFrame) -> pd.DataFrame:
    """Per cell whose sweep measured the ``catalogue`` stage (``phd scale
    --catalogue``): the dataset's users and items, the (user, item) pairs the
    full-catalogue evaluation ranks at most (``pairs_g``, billions: users x
    items, before each user's rated items are left out), its wall and CPU
    seconds, CPU nanoseconds per pair, the wall seconds of the rated-items
    test evaluation (``evaluate_wall_s``) and of the rest of the cell
    (``rest_wall_s``: :func:`phdlib.studies.scale.per_cell`, training included)
    beside it."""
    keys = ["dataset", "method", "bits"]
    cat = scale.per_cell(rows, stages=("catalogue",))
    ev = scale.per_cell(rows, stages=("evaluate",))[keys + ["wall_s"]].rename(
        columns={"wall_s": "evaluate_wall_s"})
    rest = scale.per_cell(rows)[keys + ["wall_s"]].rename(columns={"wall_s": "rest_wall_s"})
    t = cat.merge(ev, on=keys, how="left").merge(rest, on=keys, how="left")
    t["pairs_g"] = t["users"].astype(float) * t["items"] / 1e9
    t["ns_per_pair"] = t["cpu_s"] / (t["pairs_g"] * 1e9) * 1e9
    t["method"] = t["method"].map(label)
    t = t.rename(columns={"wall_s": "catalogue_wall_s", "cpu_s": "catalogue_cpu_s"})
    return t[["dataset", "method", "bits", "users", "items", "pairs_g", "catalogue_wall_s",
              "catalogue_cpu_s", "ns_per_pair", "evaluate_wall_s", "rest_wall_s"]]


def commits(rows: pd.DataFrame) -> pd.DataFrame:
    """Which cells of a sweep file were measured at which commit: one row per commit.

    rows: a sweep's rows (:func:`phdlib.studies.scale.load`), each with ``commit`` and
    ``date``. Columns: commit (10 hex digits), first and last date, cells,
    datasets and methods (labels), in the order the file first has them.
    """
    ok = rows[rows["error"].isna()] if "error" in rows else rows
    if "commit" not in ok:  # a file written before rows had their own provenance
        ok = ok.assign(commit="unknown", date="")
    out = []
    for commit, g in ok.groupby("commit", sort=False):
        out.append({"commit": str(commit)[:10], "from": g["date"].min(), "to": g["date"].max(),
                    "cells": len(g.groupby(["dataset", "method", "bits"])),
                    "datasets": ", ".join(dict.fromkeys(g["dataset"])),
                    "methods": ", ".join(dict.fromkeys(label(m) for m in g["method"]))})
    return pd.DataFrame(out)


def expectations(quick: pd.DataFrame, full: pd.DataFrame, manifests=(),
                 jobs: int = 2, seeds: int = 5, methods=None) -> pd.DataFrame:
    """What a reader should expect per dataset, smallest first: the answer of "Cost at scale".

    quick, full: :func:`phdlib.studies.scale.per_cell` frames of the quick-profile and the
    full-profile sweeps (every recorded full sweep concatenated); manifests: ``phd
    reproduce`` manifests (:func:`phdlib.experiments.runner.load_manifest`), each of one
    dataset. Where a dataset has one (the last given), its cells at the paper's settings
    are the manifest's (:func:`phdlib.report.reproduction.cell_costs`) and its end-to-end
    wall time replaces the bound; elsewhere the full sweep's cells, with the missing ones
    :func:`projected`. Columns: ``ratings``; ``quick_minutes`` (one seed, the quick
    profile, summed over cells); ``full_minutes`` (one seed at the paper's settings,
    summed over cells) with ``projected`` (cells of it projected from the quick
    profile); ``jobs_minutes`` (wall minutes with ``jobs`` workers: measured end to end
    where a manifest is of that dataset, else :func:`least_wall_minutes`, a lower
    bound) and ``jobs_measured`` (bool); ``seeds_hours`` (Table 1's ``seeds`` seeds: at
    most ``seeds`` times ``jobs_minutes``, in hours, as the grids run once); ``peak_gib``
    (the largest peak of one process, either profile); ``longest`` and
    ``longest_minutes`` (the cell no number of workers can shorten), with
    ``longest_projected`` (bool); ``unmeasured``: the names among ``methods`` (Table 1's
    methods today; None: not checked) that no file measured or projected on that dataset,
    a tuple, so that a row whose files predate a method does not pass for all of Table 1
    (its minutes, bounds included, are then for the other methods).
    """
    by_data = {str(m["cells"]["dataset"].iloc[0]): m for m in manifests}
    proj = projected(full, quick)
    rows = []
    for d, q in quick.groupby("dataset", sort=False):
        man = by_data.get(d)
        if man is not None:
            f, p = cell_costs(man), proj.iloc[:0]
        else:
            f, p = full[full["dataset"] == d], proj[proj["dataset"] == d]
        each = pd.concat([f.assign(minutes=f["wall_s"] / 60, guess=False)
                          [["method", "bits", "minutes", "guess"]],
                          p.rename(columns={"projected_minutes": "minutes"}).assign(guess=True)
                          [["method", "bits", "minutes", "guess"]]], ignore_index=True)
        top = each.loc[each["minutes"].idxmax()] if each["minutes"].notna().any() else None
        summary = reproduction_summary(man) if man is not None else None
        rows.append({
            "dataset": d, "ratings": int(q["ratings"].iloc[0]),
            "quick_minutes": q["wall_s"].sum() / 60,
            "full_minutes": each["minutes"].sum(min_count=1) if len(each) else np.nan,
            "projected": int(len(p)),
            "jobs_minutes": (summary["wall_minutes"] if summary
                             else least_wall_minutes(each["minutes"], jobs)),
            "jobs_measured": summary is not None,
            "peak_gib": max(q["peak_rss_mb"].max(), f["peak_rss_mb"].max() if len(f) else 0,
                            summary["peak_gib"] * 1024 if summary else 0) / 1024,
            "longest": "" if top is None else f"{label(top['method'])} {int(top['bits'])}b",
            "longest_minutes": np.nan if top is None else float(top["minutes"]),
            "longest_projected": top is not None and bool(top["guess"]),
            "unmeasured": tuple(m for m in (methods or ()) if m not in set(each["method"])),
        })
    out = pd.DataFrame(rows).set_index("dataset").sort_values("ratings")
    # an upper bound on one seed with the jobs: measured, or the cells one after another
    out["jobs_upper_minutes"] = out["jobs_minutes"].where(out["jobs_measured"],
                                                          out["full_minutes"])
    out["seeds_hours"] = seeds * out["jobs_upper_minutes"] / 60
    out.attrs.update(jobs=jobs, seeds=seeds)
    return out


def _unmeasured_note(rows: pd.DataFrame, bound: bool = False) -> str:
    """One sentence per set of Table 1 methods that the files of ``rows`` (of
    :func:`expectations`) lack, naming those methods and the datasets, saying the minutes
    there (with ``bound``: and the seeds' bound) are the other methods'; ``""`` where
    every row measured all of them."""
    groups: dict[tuple, list[str]] = {}
    for d, r in rows.iterrows():
        missing = tuple(getattr(r, "unmeasured", ()) or ())
        if missing:
            groups.setdefault(missing, []).append(d)
    out = ""
    for missing, where in groups.items():
        at = "on " + page.and_list(
            [("the " if dataset_label(d).endswith("shape") else "") + dataset_label(d)
             for d in where])
        names = page.and_list([label(m) for m in missing])
        out += (f" No recorded file measured {names} {at}: "
                f"the minutes there{' and the bound on the seeds' if bound else ''} are "
                f"those of Table 1's other methods.")
    return out


def expectation_findings(table: pd.DataFrame, cpus: int | None = None,
                         cpu: str = "") -> list[str]:
    """Sentences from :func:`expectations`: which datasets reproduce one seed at the paper's
    settings within :data:`TARGET_MINUTES` on ``jobs`` workers, which do not and why (the
    longest cell), and the memory they need."""
    jobs, seeds = table.attrs.get("jobs", 2), table.attrs.get("seeds", 5)
    where = f"{jobs} jobs" + (f" on a {cpus}-core machine" if cpus else "") + \
        (f" ({cpu})" if cpu else "")  # noqa: E127
    # within the hour only where even the upper bound is; over it where even the lower bound is
    fits = table[table["jobs_upper_minutes"] <= TARGET_MINUTES]
    over = table[table["jobs_minutes"] > TARGET_MINUTES]
    between = table[(table["jobs_minutes"] <= TARGET_MINUTES)
                    & ~(table["jobs_upper_minutes"] <= TARGET_MINUTES)]
    out = []
    if len(fits):
        note = _unmeasured_note(fits, bound=True)
        out.append("**Within the hour:** one seed of every "
                   + ("measured " if note else "") + "method at the paper's settings "
                   "takes " + "; ".join(
                       (f"{dataset_label(d)} {r.jobs_minutes:.0f} min (measured end to end)"
                        if r.jobs_measured else f"{dataset_label(d)} {r.jobs_minutes:.0f} to "
                        f"{r.jobs_upper_minutes:.0f} min")
                       for d, r in fits.iterrows())
                   + f" with {where}. " + ("The measured methods'" if note else "Table 1's")
                   + f" {seeds} seeds take at most "
                   + ", ".join(f"{r.seeds_hours:.1f} h" for _, r in fits.iterrows())
                   + (" respectively" if len(fits) > 1 else "")
                   + ", as the tuning grids run once." + note)
    for d, r in between.iterrows():
        out.append(f"**{dataset_label(d)}: about the hour.** One seed at the paper's settings "
                   f"takes {r.jobs_minutes:.0f} to {r.jobs_upper_minutes:.0f} min with {jobs} "
                   "jobs, between the least any schedule could take and the cells one after "
                   "another." + _unmeasured_note(between.loc[[d]]))
    for d, r in over.iterrows():
        out.append(f"**{dataset_label(d)}: hours.** One seed at the paper's settings needs at least "
                   f"{r.jobs_minutes:.0f} min with {jobs} jobs"
                   + (f" ({r.projected} of its cells projected from the quick profile)"
                      if r.projected else "")
                   + f", and at least {r.longest_minutes:.0f} min on any number of workers: "
                   f"its longest cell, {r.longest}, cannot be shared. The quick profile takes "
                   f"{r.quick_minutes:.0f} min of cells there." + _unmeasured_note(over.loc[[d]]))
    peak = table["peak_gib"].max()
    out.append(f"**Memory:** no process needed more than {peak:.1f} GiB (largest: "
               f"{dataset_label(table['peak_gib'].idxmax())}), "
               + (f"within a budget of {TARGET_GIB:.0f} GiB." if peak <= TARGET_GIB else
                  f"more than a budget of {TARGET_GIB:.0f} GiB."))
    return out


def longest_findings(table: pd.DataFrame) -> list[str]:
    """One sentence from :func:`expectations`: the datasets whose longest cell at the
    paper's settings is over :data:`TARGET_MINUTES` (no number of workers brings one
    seed within the hour there), or that no dataset's is, with the longest of all."""
    t = table[table["longest_minutes"].notna()]
    if t.empty:
        return []
    over = t[t["longest_minutes"] > TARGET_MINUTES]
    if len(over):
        return ["**Over the hour on any number of workers:** " + "; ".join(
            f"{dataset_label(d)}, whose longest cell ({r.longest}"
            f"{', projected' if r.longest_projected else ''}) takes {r.longest_minutes:.0f} min"
            for d, r in over.iterrows()) + "."]
    top = t["longest_minutes"].idxmax()
    return [f"**No cell is over the hour:** the longest of all, {t.loc[top, 'longest']} "
            f"on {dataset_label(top)}, takes {t.loc[top, 'longest_minutes']:.0f} min."]


def expectations_display(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`expectations` for reading: labelled datasets, minutes and hours rounded, a bound
    marked ``≥`` and a partly projected sum marked as such."""
    jobs, seeds = table.attrs.get("jobs", 2), table.attrs.get("seeds", 5)
    out = pd.DataFrame(index=[dataset_label(d) for d in table.index])
    out.index.name = "dataset"
    out["ratings"] = [f"{int(r):,}" for r in table["ratings"]]
    out["quick profile, one seed (min)"] = [f"{m:.1f}" for m in table["quick_minutes"]]
    out["paper's settings, one seed (min of cells)"] = [
        f"{m:.0f}" + (f" ({p} cells projected)" if p else "")
        for m, p in zip(table["full_minutes"], table["projected"])]
    out[f"… with {jobs} jobs (min)"] = [
        f"{m:.0f} (measured)" if ok else f"{m:.0f} to {u:.0f}"
        for m, u, ok in zip(table["jobs_minutes"], table["jobs_upper_minutes"],
                            table["jobs_measured"])]
    out[f"Table 1 with {seeds} seeds (h)"] = [
        f"≤ {h:.1f}" if not p else f"≈ {h:.0f} (projected)"
        for h, p in zip(table["seeds_hours"], table["projected"])]
    out["longest cell"] = [f"{c}, {m:.0f} min" for c, m in zip(table["longest"],
                                                               table["longest_minutes"])]
    out["peak memory (GiB)"] = [f"{g:.2f}" for g in table["peak_gib"]]
    if "unmeasured" in table and any(len(u) for u in table["unmeasured"]):
        out["Table 1 methods not measured"] = [
            ", ".join(label(m) for m in u) if len(u) else "none" for u in table["unmeasured"]]
    return out
