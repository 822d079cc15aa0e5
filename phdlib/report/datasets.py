"""The chapter "Data": its tables and computed statements, from :mod:`phdlib.data`.

- dataset names through :func:`phdlib.report.style.dataset_label` (``ml-1m`` -> ``ML-1M``);
- :func:`paper_table`, :func:`paper_findings`: our dataset statistics beside
  the paper's (from :func:`phdlib.data.paper_comparison`);
- :func:`source_findings`: which raw files were found and whether their
  content fingerprints match the known ones;
- :func:`trace_finding`: what each preprocessing step removed;
- :func:`rating_findings`, :func:`activity_table`: rating values and activity;
- :func:`split_findings`, :func:`test_items_finding`: the split against the
  released code's counts, and what it leaves each user to rank;
- :func:`shape_table`: two datasets side by side (the synthetic data beside ML-1M);
- :func:`source_checks`, :func:`released_table`: the raw files found, the
  released split counts beside ours.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import data, paper
from .style import dataset_label

__all__ = ["paper_table", "paper_findings", "source_findings",
           "trace_finding", "rating_findings", "activity_table", "split_findings",
           "test_items_finding", "shape_table", "source_checks", "released_table", "conclusion"]

def _and(items) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def paper_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """:func:`phdlib.data.paper_comparison` for reading.

    Index: dataset labels. Columns: a MultiIndex (``Users``, ``Items``,
    ``Ratings``, ``Density %``) x (``ours``, ``paper``); counts as nullable
    ``Int64``, densities as float (percent, two decimals in the paper); a
    value that is not there (raw file not in this build, or dataset not in
    the paper) is missing.
    """
    cols = []
    data = {}
    for key, head in (("users", "Users"), ("items", "Items"), ("ratings", "Ratings"),
                      ("density", "Density %")):
        for who, col in (("ours", key), ("paper", f"paper_{key}")):
            v = pd.to_numeric(comparison[col], errors="coerce")
            if key != "density":
                v = v.round().astype("Int64")
            data[(head, who)] = v.reset_index(drop=True)
            cols.append((head, who))
    out = pd.DataFrame(data)
    out.index = [dataset_label(n) for n in comparison["dataset"]]
    out.columns = pd.MultiIndex.from_tuples(cols)
    out.index.name = "dataset"
    return out


def paper_findings(comparison: pd.DataFrame) -> list[str]:
    """One sentence per dataset of :func:`phdlib.data.paper_comparison`: identical to the
    paper's table, which counts differ (by how much), not in the paper, or not available."""
    out, missing = [], []
    for row in comparison.itertuples():
        name = dataset_label(row.dataset)
        if row.status == "not available in this build":
            missing.append(name)
            continue
        if row.paper_users is None or pd.isna(row.paper_users):
            out.append(f"{name} is not in the paper; it is shown for reference "
                       f"({int(row.users):,} users, {int(row.items):,} items, "
                       f"{int(row.ratings):,} ratings).")
            continue
        diff = [f"{k} {int(getattr(row, k)):,} against {int(getattr(row, 'paper_' + k)):,}"
                for k in ("users", "items", "ratings")
                if int(getattr(row, k)) != int(getattr(row, f"paper_{k}"))]
        if diff:
            out.append(f"DISAGREES (dataset statistics): {name} differs from the paper's table: "
                       + "; ".join(diff) + ".")
        else:
            out.append(f"AGREES (dataset statistics): {name} has exactly the paper's "
                       f"{int(row.users):,} users, {int(row.items):,} items and "
                       f"{int(row.ratings):,} ratings after preprocessing.")
    if missing:
        one = len(missing) == 1
        out.append(f"The raw file{'' if one else 's'} of {_and(missing)} "
                   f"{'is' if one else 'are'} not in this build: "
                   f"{'its row shows' if one else 'their rows show'} the paper's numbers only.")
    return out


def source_findings(checks: pd.DataFrame) -> list[str]:
    """Sentences on the raw files found. checks: one row per dataset with columns
    ``dataset``, ``found`` (bool), ``known`` (the known fingerprint or None) and
    ``fingerprint`` (ours, or None when not found)."""
    found = checks[checks["found"]]
    rows = [(dataset_label(d), k if isinstance(k, str) and k else None, f)
            for d, k, f in zip(found["dataset"], found["known"], found["fingerprint"])]
    match = [d for d, k, f in rows if k and f == k]
    differ = [d for d, k, f in rows if k and f != k]
    unknown = [d for d, k, f in rows if not k]
    out = []
    if match:
        out.append(f"The raw file{'s' if len(match) > 1 else ''} of {_and(match)} "
                   f"match{'' if len(match) > 1 else 'es'} the known content fingerprint.")
    if differ:
        out.append(f"The raw file{'s' if len(differ) > 1 else ''} of {_and(differ)} "
                   f"{'do' if len(differ) > 1 else 'does'} **not** match the known content "
                   "fingerprint; read with verification off.")
    if unknown:
        out.append(f"No fingerprint is known for {_and(unknown)}.")
    if found.empty:
        out.append("No raw rating file was found in this build.")
    return out


def trace_finding(name: str, trace: pd.DataFrame) -> str:
    """What the preprocessing of ``name`` removed, from :func:`phdlib.data.preprocessing_trace`
    (rows: raw, first rating per pair, items filtered, users filtered once, until stable)."""
    raw, dedup, once, stable = (trace.iloc[k] for k in (0, 1, 3, 4))
    same = once[["users", "items", "ratings"]].equals(stable[["users", "items", "ratings"]])
    s = (f"{dataset_label(name)}: {raw['ratings'] - dedup['ratings']:,} repeated (user, item) "
         f"ratings removed; the filter removes {dedup['items'] - once['items']:,} items and "
         f"{dedup['users'] - once['users']:,} users ({dedup['ratings'] - once['ratings']:,} "
         "ratings); ")
    if same:
        return s + "one pass and repeating until stable give the same data."
    return s + (f"one pass and repeating until stable differ ({once['ratings']:,} against "
                f"{stable['ratings']:,} ratings).")


def rating_findings(datasets) -> list[str]:
    """Mean rating and share of ratings in the top quarter of the scale, per dataset
    (``datasets``: :class:`phdlib.data.Dataset` objects)."""
    out = []
    for ds in datasets:
        lo, hi = ds.rating_scale
        r = ds.ratings.rating
        high = float(np.mean(r >= hi - (hi - lo) / 4))
        out.append(f"{dataset_label(ds.name)}: mean rating {r.mean():.2f} on {lo:g} to {hi:g}; "
                   f"{100 * high:.0f}% of the ratings are in the top quarter of the scale.")
    return out


def activity_table(stats: dict) -> pd.DataFrame:
    """Ratings per user and per item (min, median, mean, max) of each dataset.

    stats: ``{name: phdlib.data.stats(dataset)}``. Index: (dataset label,
    ``per user`` / ``per item``); min and max as int, median and mean as float.
    """
    rows = {}
    for name, s in stats.items():
        for key, what in (("ratings_per_user", "per user"), ("ratings_per_item", "per item")):
            d = s[key]
            rows[(dataset_label(name), what)] = {"min": int(d["min"]), "median": float(d["median"]),
                                                 "mean": float(d["mean"]), "max": int(d["max"])}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index = pd.MultiIndex.from_tuples(out.index, names=["dataset", "ratings"])
    return out


def split_findings(name: str, sizes: pd.DataFrame, released: dict | None, n_ratings: int) -> list[str]:
    """The split against the released code's counts and the nominal shares.

    sizes: one row per split seed, columns ``train``, ``valid``, ``test``
    (ints); released: the released code's counts (or None); n_ratings: the
    dataset's ratings.
    """
    label = dataset_label(name)
    seeds = ", ".join(map(str, sizes.index))
    out = []
    if released:
        same = all(sizes.loc[s].to_dict() == released for s in sizes.index)
        out.append(("AGREES (split sizes): " if same else "DISAGREES (split sizes): ")
                   + f"{label}: every split seed ({seeds}) gives "
                   + ("exactly the released code's train, validation and test counts."
                      if same else "counts that differ from the released code's."))
    first = sizes.iloc[0]
    shares = ", ".join(f"{k} {100 * first[k] / n_ratings:.2f}%" for k in ("train", "valid", "test"))
    out.append(f"Realised shares: {shares} (nominal: train 42.5%, valid 7.5%, test 50%).")
    return out


def test_items_finding(name: str, test_user: np.ndarray, n_users: int) -> str:
    """Test items per user (min, median, max, share with at most 5 and 10)."""
    n = np.bincount(test_user, minlength=n_users)
    return (f"{dataset_label(name)}: a user has between {n.min():,} and {n.max():,} test items, "
            f"median {np.median(n):g}; {np.mean(n <= 5):.1%} of the users have at most 5, "
            f"{np.mean(n <= 10):.1%} at most 10.")


def shape_table(stats: dict) -> pd.DataFrame:
    """Datasets side by side, formatted for reading: users, items, ratings
    (``6,040``), density in percent (two decimals), the share of each rating
    value (percent, one decimal) and the median ratings per user. stats:
    ``{name: phdlib.data.stats(dataset)}``. Rows: those quantities; columns:
    dataset labels; cells: str (``n/a`` where a dataset lacks a rating value)."""
    cols = {}
    for name, s in stats.items():
        col = {"users": f"{int(s['users']):,}", "items": f"{int(s['items']):,}",
               "ratings": f"{int(s['ratings']):,}", "density %": f"{100 * s['density']:.2f}"}
        for v, c in s["histogram"].items():
            col[f"% rated {v}"] = f"{100 * c / s['ratings']:.1f}"
        col["median ratings per user"] = f"{s['ratings_per_user']['median']:g}"
        cols[dataset_label(name)] = col
    return pd.DataFrame(cols).fillna("n/a")


def source_checks(names, data_dir=None) -> pd.DataFrame:
    """Which raw files this build has, and their content fingerprints.

    One row per name: ``dataset``, ``found`` (bool), ``file`` (path or None),
    ``known`` (the known fingerprint or None) and ``fingerprint`` (ours, None
    when not found). Loading goes through :func:`phdlib.data.load_dataset`
    (which refuses a file whose fingerprint differs from the known one).
    """

    rows = []
    for name in names:
        src = data.SOURCES.get(name)
        known = src.fingerprint if src else None
        if not data.available(name, data_dir):
            rows.append({"dataset": name, "found": False, "file": None, "known": known,
                         "fingerprint": None})
            continue
        ds = data.load_dataset(name, data_dir=data_dir)
        rows.append({"dataset": name, "found": True, "file": ds.source, "known": known,
                     "fingerprint": ds.fingerprint})
    return pd.DataFrame(rows, columns=["dataset", "found", "file", "known", "fingerprint"])


def released_table(seed: int = 0, data_dir=None) -> pd.DataFrame:
    """The released code's split counts beside ours for every dataset it hard-codes.

    Index: dataset labels; columns: a MultiIndex (``train``, ``valid``,
    ``test``) x (``released``, ``ours``), nullable ``Int64`` (ours missing
    where the raw file is not in this build).
    """

    rows, index = [], []
    for name, rel in paper.RELEASED_SPLITS.items():
        ours = (data.load_split(name, seed=seed, data_dir=data_dir).sizes
                if data.available(name, data_dir) else {})
        rows.append({(k, who): (rel[k] if who == "released" else ours.get(k))
                     for k in ("train", "valid", "test") for who in ("released", "ours")})
        index.append(dataset_label(name))
    out = pd.DataFrame(rows, index=index).astype("Int64")
    out.columns = pd.MultiIndex.from_tuples(out.columns)
    out.index.name = "dataset"
    return out


def conclusion(comparison: pd.DataFrame, name: str, sizes: pd.DataFrame,
               released: dict | None) -> str:
    """The chapter's conclusion as one paragraph computed from
    :func:`phdlib.data.paper_comparison` (``comparison``) and the split sizes
    of ``name`` per split seed (``sizes``, as in :func:`split_findings`)."""
    in_paper = comparison[comparison["paper_users"].notna()]
    have = in_paper[in_paper["status"] != "not available in this build"]
    lacking = [dataset_label(d) for d in in_paper.loc[in_paper["status"]
                                                      == "not available in this build", "dataset"]]
    same = [dataset_label(r.dataset) for r in have.itertuples()
            if all(int(getattr(r, k)) == int(getattr(r, f"paper_{k}"))
                   for k in ("users", "items", "ratings"))]
    differ = [dataset_label(d) for d in have["dataset"] if dataset_label(d) not in same]
    parts = [f"Of the paper's {len(in_paper)} datasets, this build had "
             f"{len(have)}" + (f" ({_and(dataset_label(d) for d in have['dataset'])})"
                               if len(have) else "") + "."]
    if same:
        parts.append(f"Prepared as the paper describes, {_and(same)} "
                     f"{'has' if len(same) == 1 else 'have'} exactly the paper's numbers of "
                     "users, items and ratings.")
    if differ:
        parts.append(f"{_and(differ)} {'differs' if len(differ) == 1 else 'differ'} from the "
                     "paper's table (see the findings above).")
    if released:
        ok = all(sizes.loc[s].to_dict() == released for s in sizes.index)
        parts.append(f"The per-user split rule gives the released code's {dataset_label(name)} "
                     f"split {'exactly' if ok else 'only approximately'}, for every split seed "
                     f"tried ({len(sizes)}).")
    if lacking:
        parts.append(f"{_and(lacking)} could not be checked here; for "
                     f"{'it' if len(lacking) == 1 else 'them'} the book relies on the paper's "
                     "numbers.")
    return " ".join(parts)
