"""The containers of :mod:`phdlib.data`: ``Ratings``, ``Dataset``, ``Split``.

These are the contract of CONTRIBUTING.md ("Interfaces between modules");
fields after the contract's carry defaults, so code written against the
contract keeps working.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def check_ids(x, n: int, what: str) -> np.ndarray:
    """``x`` as an array, checked to be 1-d integer ids in ``[0, n)``; the error names
    ``what`` (``"user"`` or ``"item"``) and the range found."""
    x = np.asarray(x)
    if x.ndim != 1 or not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"{what} ids must be a 1-d integer array, got dtype {x.dtype} shape {x.shape}")
    if x.size and (x.min() < 0 or x.max() >= n):
        raise ValueError(f"{what} ids must lie in [0, {n}); got range [{x.min()}, {x.max()}]")
    return x


@dataclass
class Ratings:
    """One table of ratings with re-indexed ids.

    ``user``: int32 (r,) in 0..n_users-1; ``item``: int32 (r,) in
    0..n_items-1; ``rating``: float32 (r,) on the dataset's scale.
    """

    user: np.ndarray
    item: np.ndarray
    rating: np.ndarray

    def __post_init__(self):
        self.user = np.ascontiguousarray(self.user, dtype=np.int32)
        self.item = np.ascontiguousarray(self.item, dtype=np.int32)
        self.rating = np.ascontiguousarray(self.rating, dtype=np.float32)
        if not (self.user.shape == self.item.shape == self.rating.shape) or self.user.ndim != 1:
            raise ValueError(f"Ratings: user, item, rating must be 1-d of one length, got "
                             f"{self.user.shape}, {self.item.shape}, {self.rating.shape}")

    def __len__(self) -> int:
        return int(self.user.shape[0])

    def take(self, idx) -> "Ratings":
        """The rows ``idx`` (indices or a boolean mask)."""
        return Ratings(self.user[idx], self.item[idx], self.rating[idx])


@dataclass
class Dataset:
    """A dataset after de-duplication, filtering and re-indexing.

    ``user_ids[k]``/``item_ids[k]``: the original id of new id ``k`` (int64
    for MovieLens, str for Yelp/Amazon). ``fingerprint``: content
    fingerprint (sha256 hex) of the raw ratings. ``preprocessing``: the
    parameters that produced it (part of every cache key and of
    ``Split.fingerprint``). ``source``: the file read ("generated" for
    synthetic data). ``raw_rows``: rows in the raw file. ``truth``: for
    synthetic data, the planted codes (``user_codes``, ``item_codes`` packed
    uint64 (n, 1), ``bits``); None for real data. ``origin``: what finds the
    dataset again beyond its name and ``preprocessing`` and is no part of any
    key (a user's file: ``path``, ``sep``); recorded in a run's provenance.
    """

    name: str
    ratings: Ratings
    n_users: int
    n_items: int
    rating_scale: tuple[float, float]
    user_ids: np.ndarray
    item_ids: np.ndarray
    fingerprint: str
    synthetic: bool
    preprocessing: dict = field(default_factory=dict)
    source: str = ""
    raw_rows: int = 0
    truth: dict | None = None
    origin: dict = field(default_factory=dict)

    @property
    def n_ratings(self) -> int:
        return len(self.ratings)

    @property
    def density(self) -> float:
        """Ratings / (users * items), a fraction (not percent)."""
        return self.n_ratings / max(1, self.n_users * self.n_items)

    @property
    def label(self) -> str:
        """Name for tables and plots; synthetic data always says so."""
        return self.name if not self.synthetic or "synthetic" in self.name else f"{self.name} (synthetic)"

    def __repr__(self) -> str:
        kind = "SYNTHETIC " if self.synthetic else ""
        return (f"<{kind}Dataset {self.name}: {self.n_users} users, {self.n_items} items, "
                f"{self.n_ratings} ratings, scale {self.rating_scale}, fingerprint {self.fingerprint[:12]}>")


@dataclass
class Split:
    """Train / validation / test ratings of one dataset for one split seed.

    ``fingerprint``: 16 hex digits identifying data, preprocessing, split rule
    and seed (what the results store keys runs on).
    """

    dataset: Dataset
    train: Ratings
    valid: Ratings
    test: Ratings
    seed: int
    fingerprint: str

    @property
    def sizes(self) -> dict:
        return {"train": len(self.train), "valid": len(self.valid), "test": len(self.test)}

    def __repr__(self) -> str:
        s = self.sizes
        return (f"<Split of {self.dataset.label} seed {self.seed}: train {s['train']}, "
                f"valid {s['valid']}, test {s['test']}, fingerprint {self.fingerprint}>")
