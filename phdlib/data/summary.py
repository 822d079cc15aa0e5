"""Statistics of a dataset and its split (for ``phd data stats`` and the Data chapter)."""
from __future__ import annotations

import numpy as np

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
