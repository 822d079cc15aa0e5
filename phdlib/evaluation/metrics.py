"""NDCG@k and MRR over each user's held-out test items, exact under ties.

The paper's protocol (Section 5.2): for every user, rank only that user's
test items by the model's dissimilarity (smallest first) or score (largest
first); relevance is the rating. Then

- ``NDCG@k = DCG@k / IDCG@k`` with ``DCG@k = sum_{i=1..k} (2^rel_i - 1) d(i)``
  and the discount ``d(i) = 1 / log2(i + 1)`` (``discount="paper"``, the
  default) or the released code's ``d(1) = 1``, ``d(i) = 1 / log2(i)`` for
  ``i >= 2`` (``discount="released"``: positions 1 and 2 undiscounted);
  ``IDCG@k`` is the DCG@k of the ratings sorted in decreasing order. A user
  with ``n < k`` test items gets NDCG@k over the ``n`` items they have (both
  DCG and IDCG sum over ``min(k, n)`` positions). A user whose gains are all
  0 (every rating 0) has ``IDCG = 0``; NDCG is then defined as 0, as in
  ``sklearn.metrics.ndcg_score``.
- ``RR = 1 / rank`` of the first item carrying the user's highest test
  rating; MRR is its mean over users.

Integer dissimilarities tie constantly (a 32-bit code has 33 values), and
the order of tied items moves both metrics. ``ties`` chooses the rule:

- ``"expected"`` (default): the exact expectation over all orderings of the
  tied items, each equally likely (McSherry & Najork, ECIR 2008). For NDCG,
  by linearity, an item in a tie group occupying the 0-based positions
  ``[a, b)`` has the expected discount ``(1 / (b - a)) sum_{p=a}^{b-1} d_k(p)``
  with ``d_k(p) = 0`` for ``p >= k``. For RR, if the first tie group holding
  any top-rated item has ``g`` items of which ``r`` are top-rated and starts
  at position ``a``, the first top-rated item lands at offset ``x`` with
  probability ``C(g-1-x, r-1) / C(g, r)`` and ``E[RR] = sum_x P(x) / (a+1+x)``.
- ``"random"``: the given arrays are permuted by
  ``numpy.random.default_rng(seed).permutation`` and then ranked with ties
  kept in that order (one random draw, seeded);
- ``"optimistic"`` / ``"pessimistic"``: within a tie, higher / lower ratings
  first (upper and lower bounds);
- ``"input"``: ties keep the order of the given arrays (stable sort).

Per user: :func:`ndcg`, :func:`mrr` (plain NumPy; the specification). All
users at once: :func:`evaluate` (a Numba kernel, equal to the per-user
functions), :func:`summarize`. Timing: :func:`benchmark`.
"""
from __future__ import annotations

from math import comb
from typing import Iterable

import numpy as np
import pandas as pd
from ..kernels import ranking as K

TIES = ("expected", "random", "optimistic", "pessimistic", "input")
DISCOUNTS = ("paper", "released")
KINDS = ("dissimilarity", "score")
#: The paper's three metrics, in the order of its tables, and their display labels.
METRICS = ("ndcg@5", "ndcg@10", "mrr")
METRIC_LABELS = {"ndcg@5": "NDCG@5", "ndcg@10": "NDCG@10", "mrr": "MRR"}

__all__ = [
    "METRICS", "METRIC_LABELS", "TIES", "DISCOUNTS", "KINDS", "discounts", "gains", "ranked_ratings", "ndcg", "mrr",
    "evaluate", "summarize",
]


# --------------------------------------------------------------------------- checks


def _check_choice(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not supported; expected one of {', '.join(map(repr, allowed))}")


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k={k!r} is not a valid cut-off; expected an integer >= 1")
    return int(k)


def _as_1d(name: str, x, dtype=np.float64) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array; got shape {a.shape}")
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric; got dtype {a.dtype}")
    a = a.astype(dtype, copy=False)
    if dtype is np.float64:
        bad = ~np.isfinite(a)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{name}[{i}] = {float(a[i])!r} is not finite; every value must be a finite number")
    return a


def _check_ratings(r: np.ndarray, name: str = "ratings") -> None:
    neg = r < 0
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise ValueError(f"{name}[{i}] = {float(r[i])!r} is negative; NDCG's gain 2^rel - 1 needs ratings >= 0")


def _prepare(ratings, values, kind):
    _check_choice("kind", kind, KINDS)
    r = _as_1d("ratings", ratings)
    v = _as_1d("values", values)
    if r.shape != v.shape:
        raise ValueError(f"ratings and values must have the same length; got {r.shape[0]} and {v.shape[0]}")
    if r.shape[0] == 0:
        raise ValueError("no test items: ratings and values are empty (a user needs at least one test item)")
    _check_ratings(r)
    key = v if kind == "dissimilarity" else -v
    return r, key


# --------------------------------------------------------------------------- building blocks


def discounts(n: int, discount: str = "paper") -> np.ndarray:
    """The discount ``d(i)`` of the 1-based positions ``i = 1..n``: float64 (n,).

    ``"paper"``: ``1 / log2(i + 1)``; ``"released"``: 1 at ``i = 1`` and
    ``1 / log2(i)`` from ``i = 2`` on (so positions 1 and 2 both get 1).
    """
    _check_choice("discount", discount, DISCOUNTS)
    i = np.arange(1, n + 1, dtype=np.float64)
    if discount == "paper":
        return 1.0 / np.log2(i + 1.0)
    return 1.0 / np.log2(np.maximum(i, 2.0))


def gains(ratings) -> np.ndarray:
    """``2^rel - 1`` for each rating: float64, same shape."""
    return np.exp2(np.asarray(ratings, dtype=np.float64)) - 1.0


def _tie_groups(sorted_key: np.ndarray) -> np.ndarray:
    """Boundaries ``[0, b1, ..., n]`` of runs of equal values in a sorted array."""
    n = sorted_key.shape[0]
    cut = np.flatnonzero(sorted_key[1:] != sorted_key[:-1]) + 1
    return np.concatenate(([0], cut, [n]))


def ranked_ratings(ratings, values, ties: str = "input", kind: str = "dissimilarity",
                   seed: int = 0) -> np.ndarray:
    """The ratings in ranked order under one deterministic or seeded tie rule.

    ratings, values: (n,) numbers. ``ties`` is one of ``random``,
    ``optimistic``, ``pessimistic``, ``input`` (``expected`` is no single
    order). Returns float64 (n,).
    """
    _check_choice("ties", ties, TIES)
    if ties == "expected":
        raise ValueError("ties='expected' is an expectation over orderings, not one ranking; "
                         "use 'random', 'optimistic', 'pessimistic' or 'input'")
    r, key = _prepare(ratings, values, kind)
    if ties == "random":
        perm = np.random.default_rng(seed).permutation(r.shape[0])
        r, key = r[perm], key[perm]
    if ties == "optimistic":
        order = np.lexsort((-r, key))
    elif ties == "pessimistic":
        order = np.lexsort((r, key))
    else:
        order = np.argsort(key, kind="stable")
    return r[order]


# --------------------------------------------------------------------------- per user


def ndcg(ratings, values, k: int, ties: str = "expected", discount: str = "paper",
         kind: str = "dissimilarity", seed: int = 0) -> float:
    """NDCG@k of one user's test items.

    ratings: (n,) the user's test ratings (>= 0); values: (n,) the model's
    dissimilarity (``kind="dissimilarity"``, smaller first) or score
    (``kind="score"``, larger first) of the same items; k: cut-off >= 1
    (``n < k`` uses the ``n`` items); ``seed`` only matters for
    ``ties="random"``. Returns a float in [0, 1].
    """
    k = _check_k(k)
    _check_choice("ties", ties, TIES)
    _check_choice("discount", discount, DISCOUNTS)
    r, key = _prepare(ratings, values, kind)
    n = r.shape[0]
    m = min(k, n)
    d = discounts(m, discount)
    idcg = float(np.sum(gains(np.sort(r)[::-1][:m]) * d))
    if ties == "expected":
        order = np.argsort(key, kind="stable")
        rs, ks = r[order], key[order]
        dk = np.zeros(n)
        dk[:m] = d
        bounds = _tie_groups(ks)
        exp_disc = np.empty(n)
        for a, b in zip(bounds[:-1], bounds[1:]):
            exp_disc[a:b] = dk[a:b].mean()
        dcg = float(np.sum(gains(rs) * exp_disc))
    else:
        rs = ranked_ratings(r, key, ties=ties, kind="dissimilarity", seed=seed)
        dcg = float(np.sum(gains(rs[:m]) * d))
    return dcg / idcg if idcg > 0 else 0.0


def mrr(ratings, values, ties: str = "expected", kind: str = "dissimilarity", seed: int = 0) -> float:
    """Reciprocal rank of the first item with the user's highest test rating.

    ratings, values: (n,) as in :func:`ndcg`. Returns a float in (0, 1].
    (Averaged over users this is the MRR.)
    """
    _check_choice("ties", ties, TIES)
    r, key = _prepare(ratings, values, kind)
    top = r.max()
    if ties != "expected":
        rs = ranked_ratings(r, key, ties=ties, kind="dissimilarity", seed=seed)
        return 1.0 / (int(np.flatnonzero(rs == top)[0]) + 1)
    order = np.argsort(key, kind="stable")
    rs, ks = r[order], key[order]
    bounds = _tie_groups(ks)
    for a, b in zip(bounds[:-1], bounds[1:]):
        hits = int(np.count_nonzero(rs[a:b] == top))
        if hits:
            g = int(b - a)
            # P(first hit at offset x) = C(g-1-x, hits-1) / C(g, hits)
            total = comb(g, hits)
            return float(sum(comb(g - 1 - x, hits - 1) / total / (a + 1 + x)
                             for x in range(g - hits + 1)))
    raise AssertionError("unreachable: the maximum rating is always present")


# --------------------------------------------------------------------------- all users


def _group_by_user(user: np.ndarray):
    """Order that groups ``user`` (stable) and the segment starts: int64 arrays.

    The stable order is counted (:func:`phdlib.kernels.ranking.group_stable`) where the
    ids span no more than a few times their number, else sorted: the same order."""
    if user.shape[0] > 1 and np.any(user[1:] < user[:-1]):
        lo, hi = int(user.min()), int(user.max())
        if hi - lo <= 4 * user.shape[0] + 1024 and -2**62 < lo and hi < 2**62:
            order = K.group_stable(user.astype(np.int64, copy=False), lo, hi)
        else:
            order = np.argsort(user, kind="stable")
        us = user[order]
    else:
        order = None
        us = user
    cut = np.flatnonzero(us[1:] != us[:-1]) + 1
    starts = np.concatenate(([0], cut, [us.shape[0]])).astype(np.int64)
    return order, starts, us[starts[:-1]]


def evaluate(user, rating, values, ks: Iterable[int] = (5, 10), ties: str = "expected",
             discount: str = "paper", kind: str = "dissimilarity", seed: int = 0) -> pd.DataFrame:
    """NDCG@k for each k in ``ks`` and RR of every user, from flat arrays.

    user: int (N,) user id of each test rating; rating: (N,) the rating
    (>= 0); values: (N,) the model's dissimilarity or score of that
    (user, item) pair. Every user present in ``user`` gets one row, sorted by
    user id: columns ``user``, ``n_test`` (int64), ``ndcg@k`` for each k, and
    ``mrr`` (the user's reciprocal rank), all float64.

    Equals :func:`ndcg` / :func:`mrr` called per user. For
    ``ties="random"`` the flat arrays are permuted once by
    ``default_rng(seed).permutation(N)`` and ties are then kept in that order
    (the same rule as per user, with one draw for all users).
    """
    _check_choice("ties", ties, TIES)
    _check_choice("discount", discount, DISCOUNTS)
    _check_choice("kind", kind, KINDS)
    ks = tuple(_check_k(k) for k in ks)
    if not ks:
        raise ValueError("ks is empty; expected at least one cut-off")
    u = np.asarray(user)
    if u.ndim != 1 or u.dtype.kind not in "iu":
        raise ValueError(f"user must be a 1-d integer array; got shape {u.shape}, dtype {u.dtype}")
    r = _as_1d("rating", rating)
    v = _as_1d("values", values)
    if not (u.shape[0] == r.shape[0] == v.shape[0]):
        raise ValueError(f"user, rating and values must have the same length; got "
                         f"{u.shape[0]}, {r.shape[0]} and {v.shape[0]}")
    if u.shape[0] == 0:
        raise ValueError("no test ratings: user, rating and values are empty")
    _check_ratings(r, "rating")
    key = v if kind == "dissimilarity" else -v
    tiebreak = np.empty(0, dtype=np.int64)
    if ties == "random":   # each pair's place in the permutation orders its ties
        perm = np.random.default_rng(seed).permutation(u.shape[0])
        tiebreak = np.empty(u.shape[0], dtype=np.int64)
        tiebreak[perm] = np.arange(u.shape[0], dtype=np.int64)
    order, starts, users = _group_by_user(u)
    if order is not None:
        r, key = r[order], key[order]
        if tiebreak.shape[0]:
            tiebreak = tiebreak[order]
    mode = {"expected": K.MODE_EXPECTED, "random": K.MODE_AS_GIVEN, "input": K.MODE_AS_GIVEN,
            "optimistic": K.MODE_OPTIMISTIC, "pessimistic": K.MODE_PESSIMISTIC}[ties]
    n_users = users.shape[0]
    out_ndcg = np.empty((n_users, len(ks)))
    out_mrr = np.empty(n_users)
    K.evaluate_segments(np.ascontiguousarray(key), np.ascontiguousarray(r), starts,
                        np.asarray(ks, dtype=np.int64), discounts(max(ks), discount), mode,
                        out_ndcg, out_mrr, tiebreak)
    cols = {"user": users, "n_test": np.diff(starts)}
    for j, k in enumerate(ks):
        cols[f"ndcg@{k}"] = out_ndcg[:, j]
    cols["mrr"] = out_mrr
    return pd.DataFrame(cols)


def summarize(per_user: pd.DataFrame) -> dict:
    """Means over users: ``{"ndcg@5": ..., "ndcg@10": ..., "mrr": ..., "users": n}``.

    per_user: a frame from :func:`evaluate` (every ``ndcg@k`` column and
    ``mrr`` are averaged). Every user counts once, whatever their number of
    test items.
    """
    cols = [c for c in per_user.columns if c.startswith("ndcg@")] + ["mrr"]
    missing = [c for c in cols if c not in per_user.columns]
    if missing:
        raise ValueError(f"per_user has no column {missing[0]!r}; columns: {list(per_user.columns)}")
    out = {c: float(per_user[c].mean()) for c in cols}
    out["users"] = int(len(per_user))
    return out
