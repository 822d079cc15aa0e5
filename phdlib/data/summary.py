"""Statistics of a dataset and its split (for ``phd data stats`` and the Data chapter)."""
from __future__ import annotations

import numpy as np

from ..paper import DATA_STATS, RELEASED_SPLITS
from .formats import read_ratings
from .registry import available, load_dataset
from .preprocess import filter_min_ratings, first_occurrences
from .sources import PAPER_DATASETS, locate, source
from .tables import Dataset, Split


def _dist(counts: np.ndarray) -> dict:
    c = np.asarray(counts)
    return {"min": int(c.min()), "median": float(np.median(c)), "mean": float(c.mean()),
            "max": int(c.max())}


def histogram(dataset: Dataset) -> dict[str, int]:
    """Ratings per rating value, keys as printed values (``"1"``, ``"4.5"``)."""
    vals, counts = np.unique(dataset.ratings.rating, return_counts=True)
    return {f"{v:g}": int(c) for v, c in zip(vals, counts)}


def per_user(dataset: Dataset) -> np.ndarray:
    """int64 (n_users,): ratings of each user."""
    return np.bincount(dataset.ratings.user, minlength=dataset.n_users)


def per_item(dataset: Dataset) -> np.ndarray:
    """int64 (n_items,): ratings of each item."""
    return np.bincount(dataset.ratings.item, minlength=dataset.n_items)


def stats(obj: Dataset | Split) -> dict:
    """Users, items, ratings, density (fraction), rating scale and histogram,
    ratings per user / item (min, median, mean, max), provenance, and for a
    :class:`Split` its sizes, seed and fingerprint."""
    ds = obj.dataset if isinstance(obj, Split) else obj
    out = {
        "dataset": ds.name, "synthetic": bool(ds.synthetic), "users": ds.n_users,
        "items": ds.n_items, "ratings": ds.n_ratings, "density": ds.density,
        "rating_scale": list(ds.rating_scale), "histogram": histogram(ds),
        "ratings_per_user": _dist(per_user(ds)), "ratings_per_item": _dist(per_item(ds)),
        "fingerprint": ds.fingerprint, "raw_rows": ds.raw_rows, "source": ds.source,
        "preprocessing": ds.preprocessing,
    }
    if isinstance(obj, Split):
        out["split"] = obj.sizes
        out["seed"] = obj.seed
        out["split_fingerprint"] = obj.fingerprint
    return out


def paper_comparison(names=None, data_dir=None, **preprocessing):
    """Our statistics beside the paper's (Table 1, bottom), one row per dataset.

    ``names``: defaults to the paper's four datasets. A dataset that is not
    present is shown with the paper's numbers only and ``status`` "not
    available in this build". Returns a ``pandas.DataFrame`` with columns
    dataset, status, users, items, ratings, density (%) -- each as ours and
    ``paper_*`` -- and fingerprint.
    """
    import pandas as pd

    rows = []
    for name in names or PAPER_DATASETS:
        paper = DATA_STATS.get(name, {})
        row = {"dataset": name}
        if available(name, data_dir):
            ds = load_dataset(name, data_dir=data_dir, **preprocessing)
            row.update(status="synthetic (not real data)" if ds.synthetic else "ours",
                       users=ds.n_users, items=ds.n_items, ratings=ds.n_ratings,
                       density=round(100 * ds.density, 2), fingerprint=ds.fingerprint[:12])
        else:
            row.update(status="not available in this build", users=None, items=None, ratings=None,
                       density=None, fingerprint=None)
        for k in ("users", "items", "ratings", "density"):
            row[f"paper_{k}"] = paper.get(k)
        rows.append(row)
    cols = ["dataset", "status", "users", "paper_users", "items", "paper_items", "ratings",
            "paper_ratings", "density", "paper_density", "fingerprint"]
    return pd.DataFrame(rows)[cols]


def preprocessing_trace(name: str, data_dir=None, min_ratings: int = 10):
    """Users, items and ratings after each preprocessing step, both filterings.

    Returns a ``pandas.DataFrame`` with one row per step: raw file, after
    keeping the first rating of a repeated (user, item), after removing items
    then users with fewer than ``min_ratings`` ratings (one pass), and after
    repeating that until stable.
    """
    import pandas as pd


    src = source(name)
    path = locate(name, data_dir)
    if path is None:
        raise FileNotFoundError(f"{name}: raw file not found")
    raw = read_ratings(path, src.fmt, src.scale, src.step)

    def count(u, i):
        return {"users": int(np.unique(u).size), "items": int(np.unique(i).size), "ratings": int(u.size)}

    rows = [{"step": "raw file", **count(raw.user, raw.item)}]
    keep = first_occurrences(raw.user, raw.item, raw.timestamp, len(raw.item_ids))
    u, i = raw.user[keep], raw.item[keep]
    rows.append({"step": "first rating per (user, item)", **count(u, i)})
    ic = np.bincount(i)
    m = ic[i] >= min_ratings
    rows.append({"step": f"items with < {min_ratings} ratings removed", **count(u[m], i[m])})
    m1 = filter_min_ratings(u, i, min_ratings, "once")
    rows.append({"step": f"then users with < {min_ratings} removed (one pass)", **count(u[m1], i[m1])})
    m2 = filter_min_ratings(u, i, min_ratings, "until_stable")
    rows.append({"step": "repeated until stable", **count(u[m2], i[m2])})
    return pd.DataFrame(rows)


def split_table(split: Split):
    """Split sizes beside the released code's counts and the nominal 42.5/7.5/50 %."""
    import pandas as pd


    rel = RELEASED_SPLITS.get(split.dataset.name, {})
    n = split.dataset.n_ratings
    nominal = {"train": 42.5, "valid": 7.5, "test": 50.0}
    rows = [{"part": p, "ours": c, "released code": rel.get(p), "ours %": round(100 * c / n, 2),
             "paper %": nominal[p]} for p, c in split.sizes.items()]
    return pd.DataFrame(rows)
