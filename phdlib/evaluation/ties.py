"""How much ties move the metrics: tie profiles, every tie rule side by side, timing.

Built on :mod:`phdlib.evaluation.metrics` (its ``evaluate``): :func:`tie_profile` counts
a user's tied test items, :func:`compare_tie_rules` evaluates one set of
values under every tie rule and discount, :func:`benchmark` times
``evaluate`` per tie rule.
"""
from __future__ import annotations

import time
from typing import Iterable

import numpy as np
import pandas as pd

from .metrics import (DISCOUNTS, KINDS, TIES, _as_1d, _check_choice, _check_k, evaluate, summarize)
from .metrics import mrr, ndcg

__all__ = ["tie_profile", "compare_tie_rules", "rule_table", "median_user", "tie_groups",
           "one_user_rules", "benchmark", "RULES"]

#: The tie rules side by side in :func:`rule_table`: the bounds, the expectation,
#: the input order and the mean of seeded random orders.
RULES = ("pessimistic", "expected", "optimistic", "input", "random")


def tie_profile(user, values, ks: Iterable[int] = (5, 10), rating=None,
                kind: str = "dissimilarity") -> pd.DataFrame:
    """How much each user's test items tie: one row per user, sorted by id.

    user: int (N,); values: (N,) dissimilarities or scores; rating: optional
    (N,) ratings. Columns: ``user``, ``n_test``, ``n_distinct`` (distinct
    values among the user's items), ``tied_items`` (items sharing their value
    with another item of the same user), ``largest_tie`` (size of the largest
    tie group), ``straddles@k`` for each k (True where a tie group covers
    both position k and k + 1, so the tie rule decides which items enter the
    top k) and, with ``rating``, ``top_tie`` (size of the first tie group
    that holds an item with the user's highest rating: 1 means MRR does not
    depend on the tie rule).
    """
    _check_choice("kind", kind, KINDS)
    ks = tuple(_check_k(k) for k in ks)
    u = np.asarray(user)
    if u.ndim != 1 or u.dtype.kind not in "iu":
        raise ValueError(f"user must be a 1-d integer array; got shape {u.shape}, dtype {u.dtype}")
    v = _as_1d("values", values)
    if v.shape != u.shape:
        raise ValueError(f"user and values must have the same length; got {u.shape[0]} and {v.shape[0]}")
    key = v if kind == "dissimilarity" else -v
    order = np.lexsort((key, u))
    us, kk = u[order], key[order]
    new_user = np.concatenate(([True], us[1:] != us[:-1]))
    new_group = new_user | np.concatenate(([True], kk[1:] != kk[:-1]))
    ustart = np.flatnonzero(new_user)
    uid = np.cumsum(new_user) - 1
    gstart = np.flatnonzero(new_group)
    gsize = np.diff(np.concatenate((gstart, [us.shape[0]])))
    gid = np.cumsum(new_group) - 1
    n_users = ustart.shape[0]
    n_test = np.diff(np.concatenate((ustart, [us.shape[0]])))
    g_user = uid[gstart]
    out = {"user": us[ustart], "n_test": n_test,
           "n_distinct": np.bincount(g_user, minlength=n_users),
           "tied_items": np.bincount(g_user, weights=gsize * (gsize > 1), minlength=n_users).astype(np.int64),
           "largest_tie": np.maximum.reduceat(gsize, np.flatnonzero(np.concatenate(([True], g_user[1:] != g_user[:-1]))))}
    a = gstart - ustart[g_user]          # first 0-based position of each group within its user
    b = a + gsize
    for k in ks:
        out[f"straddles@{k}"] = np.bincount(g_user, weights=(a < k) & (b > k), minlength=n_users) > 0
    if rating is not None:
        r = _as_1d("rating", rating)
        if r.shape != u.shape:
            raise ValueError(f"user and rating must have the same length; got {u.shape[0]} and {r.shape[0]}")
        rs = r[order]
        umax = np.maximum.reduceat(rs, ustart)
        hit = rs == umax[uid]
        g_hit = np.bincount(gid, weights=hit, minlength=gstart.shape[0]) > 0
        # first group with a hit, per user: groups are in rank order within users
        first = np.full(n_users, -1)
        gh = np.flatnonzero(g_hit)
        first_idx = np.unique(g_user[gh], return_index=True)[1]
        first[g_user[gh[first_idx]]] = gh[first_idx]
        out["top_tie"] = gsize[first]
    return pd.DataFrame(out)


def compare_tie_rules(user, rating, values, ks: Iterable[int] = (5, 10),
                      kind: str = "dissimilarity", discounts_: Iterable[str] = DISCOUNTS,
                      random_seeds: Iterable[int] = range(10)) -> pd.DataFrame:
    """Means over users of NDCG@k and MRR under every tie rule and discount.

    user, rating, values: (N,) flat test arrays as for :func:`evaluate`.
    ``random`` is drawn once per seed of ``random_seeds``; its row gives the
    mean over the draws and ``*_sd`` columns their standard deviation (0 for
    the other rules). Returns one row per (discount, ties): columns
    ``discount``, ``ties``, ``draws``, ``ndcg@k``..., ``mrr``, ``ndcg@k_sd``...,
    ``mrr_sd``.
    """
    ks = tuple(ks)
    seeds = list(random_seeds)
    rows = []
    for disc in discounts_:
        for t in TIES:
            draws = seeds if t == "random" else [0]
            if not draws:
                continue
            sums = [summarize(evaluate(user, rating, values, ks=ks, ties=t, discount=disc,
                                       kind=kind, seed=s)) for s in draws]
            row = {"discount": disc, "ties": t, "draws": len(draws)}
            cols = [f"ndcg@{k}" for k in ks] + ["mrr"]
            for c in cols:
                vals = np.array([x[c] for x in sums])
                row[c] = float(vals.mean())
                row[c + "_sd"] = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
            rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- benchmark


def rule_table(tables: dict, metric: str, label: str, paper: dict | None = None,
               stored: dict | None = None) -> pd.DataFrame:
    """One row per key of ``tables`` (:func:`compare_tie_rules` frames): ``metric`` under each rule.

    Columns ``"{label} {rule}"`` for every rule of :data:`RULES` (paper's
    discount), ``"{label} random sd"`` (standard deviation over the random
    draws) and, when given, ``"{label} paper's"`` and ``"{label} stored run"``
    from ``paper`` and ``stored`` (key -> value; NaN where absent). The index
    is the keys, named ``method`` and ``bits``.
    """
    rows = []
    for (name, bits), t in tables.items():
        p = t[t.discount == "paper"].set_index("ties")
        row = {"method": name, "bits": bits,
               **{f"{label} {r}": p.loc[r, metric] for r in RULES},
               f"{label} random sd": p.loc["random", f"{metric}_sd"]}
        for what, src in (("paper's", paper), ("stored run", stored)):
            if src is not None:
                row[f"{label} {what}"] = src.get((name, bits), np.nan)
        rows.append(row)
    return pd.DataFrame(rows).set_index(["method", "bits"])


def median_user(user, rating, values):
    """The user with the median number of test items: ``(u, ratings, values)`` of that user.

    user int (N,), rating (N,), values (N,): one row per test rating. Ties in
    the count go to the smaller user id. Returns the id and the user's
    float64 ratings and values, in their stored order.
    """
    tp = tie_profile(user, values, rating=rating)
    u0 = int(tp.sort_values(["n_test", "user"]).iloc[len(tp) // 2]["user"])
    m0 = np.asarray(user) == u0
    return u0, np.asarray(rating)[m0].astype(float), np.asarray(values)[m0]


def tie_groups(ratings, values) -> pd.DataFrame:
    """One user's items grouped by value: per value, the count and the ratings (best first)."""
    return (pd.DataFrame({"distance": values, "rating": ratings}).groupby("distance")["rating"]
            .agg(items="size",
                 ratings=lambda s: " ".join(str(int(x)) for x in sorted(s, reverse=True))))


def one_user_rules(ratings, values) -> pd.DataFrame:
    """NDCG@5, NDCG@10 and RR of one user's ranking under every tie rule (one row each)."""
    return pd.DataFrame({t: {"NDCG@5": ndcg(ratings, values, 5, ties=t),
                             "NDCG@10": ndcg(ratings, values, 10, ties=t),
                             "RR": mrr(ratings, values, ties=t)} for t in TIES}).T


def benchmark(user=None, rating=None, values=None, ties: Iterable[str] = TIES,
              repeats: int = 5, seed: int = 0, bits: int = 32) -> pd.DataFrame:
    """Wall time of :func:`evaluate` (best of ``repeats``, after one warm-up).

    With no arrays given, uses a synthetic stand-in of ML-1M's test split's
    shape: 6,040 users, 500,767 test ratings (a per-user count drawn from a
    heavy-tailed distribution), ratings 1..5 and random integer
    dissimilarities in ``[0, bits]`` (so ties are as frequent as with real
    ``bits``-bit codes). Returns one row per tie rule: ``ties``, ``users``,
    ``ratings``, ``seconds`` (best), ``seconds_median``, ``ratings_per_s``.
    """
    if user is None:
        rng = np.random.default_rng(seed)
        n_users, n_total = 6040, 500_767
        w = rng.pareto(1.2, n_users) + 1.0
        counts = np.maximum(10, np.floor(w / w.sum() * n_total)).astype(np.int64)
        counts[np.argmax(counts)] += n_total - counts.sum()
        user = np.repeat(np.arange(n_users, dtype=np.int32), counts)
        rating = rng.integers(1, 6, n_total).astype(np.float32)
        values = rng.integers(0, bits + 1, n_total).astype(np.int32)
    rows = []
    for t in ties:
        evaluate(user, rating, values, ties=t)  # warm-up / compile
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            evaluate(user, rating, values, ties=t)
            times.append(time.perf_counter() - t0)
        best = min(times)
        rows.append({"ties": t, "users": int(np.unique(user).shape[0]), "ratings": int(len(user)),
                     "seconds": best, "seconds_median": float(np.median(times)),
                     "ratings_per_s": len(user) / best})
    return pd.DataFrame(rows)
