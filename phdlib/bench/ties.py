"""What a tie rule does to the served order: effectiveness and cost per rule.

Served lists break ties by a rule (:mod:`phdlib.serving.ties`: ``id``,
``popularity``, ``mean-rating``, ``score``, ``seeded``). The paper's protocol
ranks only the items a user rated in test, by the model's distance, and
reports NDCG@k and MRR; :mod:`phdlib.evaluation.metrics` does that with the
expectation over tied orders (``ties="expected"``) by default. Here the order
is the one a server would actually show: each user's test items sorted by
``(distance, the rule's rank)``, a deterministic permutation, scored with
``evaluate(..., ties="input")`` (ties kept in the given order).

:func:`served_effectiveness` gives one row per rule: the served order's
NDCG@k and MRR, and the time to serve the top-``k`` of every user through
:class:`phdlib.serving.search.BinaryIndex` with that rule, as seconds per query
and extra seconds per query over ``id`` (timed on at most :data:`TIME_QUERIES`
users, spread evenly; only the rules named in ``timed``, and ``id``, where it is
given); a first row ``expected`` is the
protocol's expectation (no order, no timing). :func:`of_run` does it for a
stored code run (its split's test ratings, its training split's item
statistics).
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..evaluation.metrics import evaluate, summarize
from ..kernels.order import lexsort_packed
from ..serving import ties as T
from ..serving.codes_file import codes_of_run, split_of_run
from ..serving.item_stats import stats_of_split
from ..serving.search import BinaryIndex
from .. import results

__all__ = ["served_order", "served_effectiveness", "pair_distances", "of_run",
           "timed_queries", "TIME_QUERIES"]


def pair_distances(user_codes, item_codes, bits: int, distance: str, user, item) -> np.ndarray:
    """Distance of each (user, item) test pair: int32 ``(N,)``.

    user_codes, item_codes: uint64 ``(n, ceil(bits/64))`` plain codes; user,
    item: int ``(N,)`` rows of the codes. One user's row of distances at a
    time is never formed: the pairs' words are combined directly.
    """
    u = np.asarray(user_codes)[np.asarray(user)]
    i = np.asarray(item_codes)[np.asarray(item)]
    x = u & ~i if distance == "phd" else u ^ i
    return np.bitwise_count(x).sum(axis=1).astype(np.int32)


def served_order(user, item, dist, rule: T.TieBreak) -> np.ndarray:
    """The order (int64 ``(N,)`` indices) that sorts test pairs by user, then as served:
    distance, then the rule's rank of the item (``id``: the item row).

    ``numpy.lexsort((rank, dist, user))``'s order, computed as one stable sort of the
    three keys packed into an int64 (:func:`phdlib.kernels.order.lexsort_packed`): at
    the ML-10M shape (5.0M test pairs) 0.22 s in place of 2.4 s, for each of a run's
    eight rules.
    """
    item = np.asarray(item)
    key = item if rule.is_id else np.asarray(rule.rank)[item]
    return lexsort_packed((key, np.asarray(dist), np.asarray(user)))


def _time_search(index, queries, k, rule, repeats: int) -> float:
    index.search(queries, k, tie_break=rule)  # warm-up (compiles)
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        index.search(queries, k, tie_break=rule)
        best = min(best, time.perf_counter() - t0)
    return float(best)


#: Users whose top-k :func:`served_effectiveness` times per rule (at most): the time
#: per query is the figure, and at the ML-10M shape (69,878 users) searching every
#: user four times for each of 8 rules and 15 runs took most of the chapter's half hour.
TIME_QUERIES = 4096


def timed_queries(n: int, at_most: int | None = TIME_QUERIES) -> np.ndarray:
    """The rows (int64, increasing) of the ``n`` users whose searches are timed: all of
    them, or ``at_most`` spread evenly over the rows (the same ones for every rule)."""
    if at_most is None or n <= at_most:
        return np.arange(n, dtype=np.int64)
    if at_most < 1:
        raise ValueError(f"time_queries must be at least 1, got {at_most}")
    return np.unique(np.linspace(0, n - 1, at_most).round().astype(np.int64))


def served_effectiveness(user_codes, item_codes, bits: int, distance: str, test,
                         rules: dict, k: int = 10, repeats: int = 3,
                         time_queries: int | None = TIME_QUERIES,
                         timed=None) -> pd.DataFrame:
    """NDCG@k and MRR of the served order, and serving time, under each tie rule.

    user_codes, item_codes: uint64 codes (rows = the split's dense ids); test:
    a :class:`phdlib.data.Ratings` of test ratings (dense ids); rules: name ->
    :class:`~phdlib.serving.ties.TieBreak` over the items (``id`` among them,
    the baseline of the timing). Returns one row per rule and a first row
    ``expected`` (the protocol's expectation over tied orders): columns
    ``rule``, ``ndcg@k``, ``mrr``, ``users`` (every test user),
    ``seconds_per_query`` (best of ``repeats`` searches of the top-``k`` of
    the users :func:`timed_queries` picks, at most ``time_queries``; None:
    every user; divided by their number), ``extra_seconds_per_query`` (minus
    ``id``'s; NaN for ``expected``), ``timed_queries``. ``timed``: the names of
    the rules whose searches are timed (None: every rule; ``id`` always); the
    others' three time columns are NaN (not measured).
    """
    if "id" not in rules:
        raise ValueError(f"rules must hold 'id' (the timing baseline); got {sorted(rules)}")
    if isinstance(timed, str):
        raise ValueError(f"timed must be a list of rule names, not the string {timed!r}")
    timed = set(rules) if timed is None else {"id", *timed}
    if timed - set(rules):
        raise ValueError(f"timed names rules that are not among the rules: "
                         f"{sorted(timed - set(rules))}; the rules are {sorted(rules)}")
    u, i, r = np.asarray(test.user), np.asarray(test.item), np.asarray(test.rating)
    d = pair_distances(user_codes, item_codes, bits, distance, u, i)
    rows = [{"rule": "expected",
             **summarize(evaluate(u, r, d, ks=(k,), ties="expected"))}]
    index = BinaryIndex(bits, distance)
    index.add(np.asarray(item_codes))
    codes = np.asarray(user_codes)
    queries = np.ascontiguousarray(codes[timed_queries(codes.shape[0], time_queries)])
    nq = queries.shape[0]
    for name, rule in rules.items():
        o = served_order(u, i, d, rule)
        res = summarize(evaluate(u[o], r[o], d[o], ks=(k,), ties="input"))
        if name not in timed:
            rows.append({"rule": name, **res, "seconds_per_query": np.nan,
                         "timed_queries": np.nan})
            continue
        secs = _time_search(index, queries, k, rule, repeats) / nq
        rows.append({"rule": name, **res, "seconds_per_query": secs, "timed_queries": nq})
    out = pd.DataFrame(rows)
    base = float(out.loc[out.rule == "id", "seconds_per_query"].iloc[0])
    out["extra_seconds_per_query"] = out["seconds_per_query"] - base
    return out


def of_run(run_path, data_dir=None, k: int = 10, seeds=(0,), repeats: int = 3,
           time_queries: int | None = TIME_QUERIES) -> pd.DataFrame:
    """:func:`served_effectiveness` of a stored code run: its codes, its split's test
    ratings, and the rules ``id``, ``popularity``, ``mean-rating`` (from the training
    split) and ``seeded`` (one row per seed in ``seeds``, named ``seeded:SEED``).

    Of the seeded rules only the first seed's searches are timed: a permutation is
    searched by the same code whatever its seed, and at the ML-10M shape the timing
    was two thirds of the call (the other seeds' time columns are NaN).
    """
    seeds = list(seeds)
    run = results.load(run_path)
    codes = codes_of_run(run, data_dir, stats=False)
    split = split_of_run(run, data_dir)
    n = len(codes.item_ids)
    stats, _ = stats_of_split(split, n)
    rules = {"id": T.tie_break("id", n),
             "popularity": T.tie_break("popularity", n, stats=stats),
             "mean-rating": T.tie_break("mean-rating", n, stats=stats)}
    rules.update({f"seeded:{s}": T.tie_break("seeded", n, seed=s) for s in seeds})
    timed = ["popularity", "mean-rating", *[f"seeded:{s}" for s in seeds[:1]]]
    return served_effectiveness(codes.user_codes, codes.item_codes, codes.bits, codes.distance,
                                split.test, rules, k=k, repeats=repeats,
                                time_queries=time_queries, timed=timed)
