"""The training ratings of the discrete learners (DCF, CCCF, DCF_PHD) as a graph.

:class:`RatingGraph` holds the observed (user, item, rating) triples in
compressed rows both ways (users to items and items to users), as the
coordinate-descent kernels of :mod:`phdlib.kernels.dcf` sweep them;
:func:`scale_ratings` maps ratings onto the codes' score range ``[-r, r]``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.order import lexsort_packed
from .base import rating_arrays

__all__ = ["RatingGraph", "scale_ratings"]


@dataclass
class RatingGraph:
    """Training ratings grouped by user and by item (two CSR layouts).

    u_indptr int64 (n_users+1,), u_items int32 (nnz,): ratings by user, items
    ascending within a user; i_indptr int64 (n_items+1,), i_users int32
    (nnz,): the same ratings by item; i_pos int64 (nnz,): position in the
    user layout of each entry of the item layout; rating float64 (nnz,): the
    raw rating, user layout.
    """

    n_users: int
    n_items: int
    u_indptr: np.ndarray
    u_items: np.ndarray
    i_indptr: np.ndarray
    i_users: np.ndarray
    i_pos: np.ndarray
    rating: np.ndarray

    @property
    def nnz(self) -> int:
        return int(self.u_items.shape[0])

    @classmethod
    def from_arrays(cls, user, item, rating, n_users: int, n_items: int) -> "RatingGraph":
        """From parallel arrays of user id, item id (ints) and rating (float)."""
        user, item, rating = rating_arrays(user, item, rating, n_users, n_items)
        order = lexsort_packed((item, user))   # np.lexsort's order, one packed stable sort
        u_indptr = np.zeros(n_users + 1, dtype=np.int64)
        np.cumsum(np.bincount(user, minlength=n_users), out=u_indptr[1:])
        u_items = np.ascontiguousarray(item[order].astype(np.int32))
        u_users = user[order]
        rat = np.ascontiguousarray(rating[order])
        iorder = np.lexsort((u_users, u_items))
        i_indptr = np.zeros(n_items + 1, dtype=np.int64)
        np.cumsum(np.bincount(u_items, minlength=n_items), out=i_indptr[1:])
        return cls(int(n_users), int(n_items), u_indptr, u_items, i_indptr,
                   np.ascontiguousarray(u_users[iorder].astype(np.int32)),
                   np.ascontiguousarray(iorder.astype(np.int64)), rat)

    @classmethod
    def from_ratings(cls, ratings, n_users: int, n_items: int) -> "RatingGraph":
        """From a :class:`phdlib.data.Ratings` (fields user, item, rating)."""
        for f in ("user", "item", "rating"):
            if not hasattr(ratings, f):
                raise TypeError(f"expected phdlib.data.Ratings; {type(ratings).__name__} has no field {f!r}")
        return cls.from_arrays(ratings.user, ratings.item, ratings.rating, n_users, n_items)


def scale_ratings(rating, lo: float, hi: float, scale: float) -> np.ndarray:
    """Ratings mapped affinely from [lo, hi] to [-scale, scale] (DCF's footnote 2); float64."""
    if not hi > lo:
        raise ValueError(f"rating scale must have max > min, got ({lo}, {hi})")
    s = (np.asarray(rating, dtype=np.float64) - lo) / (hi - lo)
    return 2.0 * scale * s - scale


# ---------------------------------------------------------------------------
# the balance / decorrelation surrogate
