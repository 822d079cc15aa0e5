"""Rank held-out ratings by the distance between packed hash codes.

Evaluation goes through :mod:`phdlib.codes` (the same popcount kernels the
runtime chapter measures), never through float arithmetic: user codes are
packed as queries, item codes packed once (and stored negated for PHD, so a
PHD costs one AND and one popcount), and every (user, item) pair of the
evaluated split is looked up in the user-by-item distance table, computed a
block of users at a time.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import codes as C

DISTANCES = ("hamming", "phd")


def item_store(item_codes: C.PackedCodes, distance: str) -> C.PackedCodes:
    """Item codes in the form searched: plain for Hamming, negated for PHD."""
    _check_distance(distance)
    if distance == "phd":
        return item_codes if item_codes.negated else item_codes.negate()
    return item_codes.negate() if item_codes.negated else item_codes


def _check_distance(distance: str) -> None:
    if distance not in DISTANCES:
        raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}")


def pair_distances(user_codes: C.PackedCodes, item_codes: C.PackedCodes, user, item,
                   distance: str, block: int = 1024) -> np.ndarray:
    """Distance of each (user[k], item[k]) pair: int32 ``(N,)`` bit counts.

    user_codes: packed codes of every user ``(n_users, w)``; item_codes: of
    every item ``(n_items, w)``, plain (negated here for PHD) or already
    negated. user, item: int ``(N,)`` ids. distance: ``"hamming"`` or
    ``"phd"`` (``PHD(u, i) = popcount(u AND NOT i)``, user first).
    """
    _check_distance(distance)
    user = np.asarray(user)
    item = np.asarray(item)
    if user.shape != item.shape or user.ndim != 1:
        raise ValueError(f"user and item must be 1-d arrays of one length, got shapes "
                         f"{user.shape} and {item.shape}")
    if user.size and (user.min() < 0 or user.max() >= user_codes.n):
        raise ValueError(f"user ids must lie in [0, {user_codes.n}); got range "
                         f"[{user.min()}, {user.max()}]")
    if item.size and (item.min() < 0 or item.max() >= item_codes.n):
        raise ValueError(f"item ids must lie in [0, {item_codes.n}); got range "
                         f"[{item.min()}, {item.max()}]")
    items = item_store(item_codes, distance)
    fn = C.phd if distance == "phd" else C.hamming
    out = np.empty(user.shape[0], dtype=np.int32)
    order = np.argsort(user, kind="stable")
    us = user[order]
    bounds = np.searchsorted(us, np.arange(0, user_codes.n + block, block))
    for b0 in range(0, user_codes.n, block):
        lo, hi = bounds[b0 // block], bounds[b0 // block + 1]
        if lo == hi:
            continue
        b1 = min(b0 + block, user_codes.n)
        table = fn(user_codes[b0:b1], items)          # (b1 - b0, n_items) int32
        idx = order[lo:hi]
        out[idx] = table[user[idx] - b0, item[idx]]
    return out


def evaluate_codes(user_codes: C.PackedCodes, item_codes: C.PackedCodes, ratings,
                   distance: str, ties: str = "expected", discount: str = "paper",
                   ks=(5, 10), seed: int = 0) -> pd.DataFrame:
    """Per-user NDCG@k and RR of ``ratings`` (a :class:`phdlib.data.Ratings`).

    Each user's rated items are ranked by the code distance, smallest first
    (:func:`phdlib.metrics.evaluate` with ``kind="dissimilarity"``).
    """
    from .. import metrics

    d = pair_distances(user_codes, item_codes, ratings.user, ratings.item, distance)
    return metrics.evaluate(ratings.user, ratings.rating, d, ks=ks, ties=ties,
                            discount=discount, kind="dissimilarity", seed=seed)
