"""Tie-breaking of served lists: which of the items at equal distance a user is shown first.

A ``m``-bit code has ``m + 1`` distances, so a served top-``k`` list is mostly
ties (on ML-1M's 64-bit VH_PHD codes nine of the nine adjacent pairs of a
top-10 list tie). :class:`phdlib.serving.search.BinaryIndex` orders tied items
by id, which is arbitrary. A :class:`TieBreak` is a total order of the items
used as the secondary key:

=================  ===========================================================
``id``             smaller id first: today's order (the default; ``BinaryIndex``
                   then does exactly what it did, at no extra cost)
``popularity``     items with more training ratings first (then smaller id)
``mean-rating``    higher mean training rating first (then smaller id); an item
                   without a training rating (mean ``NaN``) after every other
``score``          higher value of a given per-item float score first (then
                   smaller id; ``NaN`` last); popularity and mean-rating are
                   this rule with those two vectors
``seeded``         a random order that a seed fixes: ``order =
                   numpy.random.default_rng(seed).permutation(n)``, items
                   earlier in ``order`` first
=================  ===========================================================

Semantics (:func:`search`): the served list of a user is the ``k`` items with
the smallest distance, and among equal distances the rule's order: the first
``k`` items of the items sorted by ``(distance, rank)`` where ``rank`` is
each item's position in the rule's order. Ties at the cut (items at the
``k``-th distance that do not all fit) are resolved by the rule too, so the
rule changes which items are served, not only their order.

How (:func:`search`): one exact top-``K`` search in id order with a margin,
``K = k + max(k, 64)``; a user whose ``K``-th distance is beyond the ``k``-th
has every candidate (every item at most the ``k``-th distance away) among
them, and the ``k`` first by ``(distance, rank)`` are served; for the users
whose tie at the ``k``-th distance runs past the ``K`` fetched, every
distance is computed (``BinaryIndex.distances``, in chunks of rows), the items
at most the ``k``-th distance away are kept (those nearer are all served,
those at it compete) and sorted by the composite key ``distance * n + rank``,
and the first ``k`` are served. Any index
with ``search(q, k) -> (int32 (q, k), int64 (q, k))`` in (distance, id) order
and ``distances(q) -> int32 (q, n)`` can be served this way.

The per-item signals of ``popularity`` and ``mean-rating`` come from the
training ratings (:func:`item_stats`), written into the codes file by ``phd
export`` (:mod:`phdlib.serving.codes_file`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..names import TIE_BREAKS

__all__ = ["RULES", "SIGNAL_RULES", "STAT_COLUMNS", "TieBreak", "item_stats", "tie_break",
           "search", "engine_search", "reference_order", "ITEM_STATS_HOW"]

#: Every rule, ``id`` (the default) first (named in :mod:`phdlib.names` for ``phd --help``).
RULES = TIE_BREAKS
#: The rules whose per-item vector is a column of the codes file's ``item_stats``.
SIGNAL_RULES = {"popularity": "popularity", "mean-rating": "mean_rating"}
#: The columns of :func:`item_stats` (and of the codes file's ``item_stats`` field).
STAT_COLUMNS = ("popularity", "mean_rating")
#: How :func:`item_stats` computes its columns (recorded in the codes file's provenance).
ITEM_STATS_HOW = {"popularity": "number of training ratings of the item",
                  "mean_rating": "mean of the item's training ratings (float64 sum / count); "
                                 "NaN where the item has no training rating"}
#: At most this many bytes of int32 distances per chunk of tied users.
_CHUNK_BYTES = 1 << 26
#: :func:`search` first fetches the top ``k + max(k, _MARGIN)`` in id order; a user
#: whose tie at the ``k``-th distance runs past them gets every distance computed.
_MARGIN = 64


@dataclass(frozen=True)
class TieBreak:
    """One tie rule over ``n`` items (:func:`tie_break` builds them).

    rule: one of :data:`RULES`. rank: int64 ``(n,)``, a permutation of
    ``0..n-1``: the position of each item in the rule's order (smaller first);
    None for ``id`` (the rank is then the id). seed: the seed of ``seeded``.
    """

    rule: str
    rank: np.ndarray | None = field(default=None, repr=False, compare=False)
    seed: int | None = None

    @property
    def is_id(self) -> bool:
        return self.rule == "id"

    def __post_init__(self):
        if self.rule not in RULES:
            raise ValueError(f"tie rule {self.rule!r} is not one of {', '.join(RULES)}")
        if self.rule != "id" and self.rank is None:
            raise ValueError(f"tie rule {self.rule!r} needs its rank array (use tie_break())")


def _rank_of_order(order: np.ndarray) -> np.ndarray:
    """The inverse permutation: ``rank[order[j]] = j`` (int64)."""
    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0], dtype=np.int64)
    return rank


def _score_vector(score, n: int, what: str) -> np.ndarray:
    s = np.asarray(score)
    if s.ndim != 1 or s.shape[0] != n or s.dtype.kind not in "biuf":
        raise ValueError(f"{what}: expected a 1-d numeric array of {n} values (one per item), "
                         f"got {s.dtype} of shape {s.shape}")
    return s.astype(np.float64)


def tie_break(rule: str, n_items: int, *, stats: np.ndarray | None = None, score=None,
              seed: int | None = None) -> TieBreak:
    """The :class:`TieBreak` of ``rule`` over ``n_items`` items.

    stats: float64 ``(n_items, 2)``, the columns of :data:`STAT_COLUMNS`
    (popularity, mean rating; :func:`item_stats`), needed by ``popularity``
    and ``mean-rating``. score: ``(n_items,)`` numbers for ``score`` (higher
    first, NaN last). seed: a non-negative integer for ``seeded``.
    """
    if rule not in RULES:
        raise ValueError(f"tie rule {rule!r} is not one of {', '.join(RULES)}")
    if isinstance(n_items, bool) or not isinstance(n_items, (int, np.integer)) or n_items < 0:
        raise ValueError(f"n_items must be a non-negative integer, got {n_items!r}")
    n = int(n_items)
    if rule == "id":
        return TieBreak("id")
    if rule == "seeded":
        if seed is None or isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) \
                or seed < 0:
            raise ValueError(f"tie rule 'seeded' needs a seed (a non-negative integer), got "
                             f"{seed!r}")
        return TieBreak("seeded", _rank_of_order(np.random.default_rng(int(seed)).permutation(n)),
                        int(seed))
    if rule in SIGNAL_RULES:
        if stats is None:
            raise ValueError(f"tie rule {rule!r} needs the items' training statistics "
                             f"(item_stats, column {SIGNAL_RULES[rule]!r})")
        st = np.asarray(stats)
        if st.ndim != 2 or st.shape != (n, len(STAT_COLUMNS)):
            raise ValueError(f"item_stats: expected shape ({n}, {len(STAT_COLUMNS)}), got "
                             f"{st.shape}")
        score = st[:, STAT_COLUMNS.index(SIGNAL_RULES[rule])]
    elif score is None:
        raise ValueError("tie rule 'score' needs a per-item score vector")
    s = _score_vector(score, n, f"tie rule {rule!r}")
    # higher first; -NaN is NaN, which lexsort places last; then smaller id
    order = np.lexsort((np.arange(n), -s))
    return TieBreak(rule, _rank_of_order(order))


def item_stats(item, rating, n_items: int) -> np.ndarray:
    """Per-item popularity and mean rating of some ratings (the training split's).

    item: int (r,) item rows in ``0..n_items-1``; rating: (r,) numbers.
    Returns float64 ``(n_items, 2)``: column 0 the number of ratings of each
    item, column 1 their mean (NaN for an item without a rating), as
    :data:`ITEM_STATS_HOW` says.
    """
    it = np.asarray(item)
    r = np.asarray(rating, dtype=np.float64)
    if it.ndim != 1 or it.shape != r.shape or (it.size and it.dtype.kind not in "iu"):
        raise ValueError(f"item and rating must be 1-d of one length with integer items; got "
                         f"{it.dtype} {it.shape} and {r.shape}")
    if it.size and (it.min() < 0 or it.max() >= n_items):
        raise ValueError(f"item rows must lie in 0..{n_items - 1}; got {it.min()}..{it.max()}")
    count = np.bincount(it, minlength=n_items).astype(np.float64)
    total = np.bincount(it, weights=r, minlength=n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return np.column_stack([count, mean])


def _check_rank(rule: TieBreak, n: int) -> np.ndarray:
    rank = np.asarray(rule.rank)
    if rank.shape != (n,):
        raise ValueError(f"tie rule {rule.rule!r} ranks {rank.shape[0] if rank.ndim else 0} "
                         f"items but the index holds {n}")
    return rank.astype(np.int64, copy=False)


def _prepare(k, rule: TieBreak, n: int, nq: int, cap: int):
    """``(k, kk, wide, rank, out_d, out_i)`` of a tie-ruled search of ``nq`` queries over ``n``
    items: ``k`` checked, ``kk = min(k, n)``, ``wide`` the candidates fetched first (``k``
    plus a margin for the tie, at most ``cap``), the rule's rank and the empty answer."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    k = int(k)
    rank = _check_rank(rule, n)
    kk = min(k, n)
    wide = min(cap, kk + max(kk, _MARGIN))  # fetched in id order: k + a margin for the tie
    return (k, kk, wide, rank, np.full((nq, k), np.iinfo(np.int32).max, dtype=np.int32),
            np.full((nq, k), -1, dtype=np.int64))


def search(index, queries, k: int, rule: TieBreak | None):
    """The top-``k`` of ``index`` for ``queries`` under tie rule ``rule``.

    index: a :class:`phdlib.serving.search.BinaryIndex` (or anything with its
    ``search``, ``distances``, ``ntotal`` and ``_queries``). Returns int32
    ``(q, k)`` distances and int64 ``(q, k)`` ids sorted by ``(distance,
    rank)``, padded with ``2**31 - 1`` / ``-1`` where ``k`` exceeds the items.
    ``rule`` None or ``id``: exactly ``index.search(queries, k)``.
    """
    if rule is None or rule.is_id:
        return index.search(queries, k)
    n = index.ntotal
    q = index._queries(queries)
    nq = q.shape[0]
    k, kk, wide, rank, out_d, out_i = _prepare(k, rule, n, nq, n)
    if nq == 0 or n == 0:
        return out_d, out_i
    d, ids = index.search(q, wide)
    dk = d[:, kk - 1]
    # covered: every item at most the k-th distance away is among the fetched ones
    covered = np.ones(nq, dtype=bool) if wide == n else d[:, wide - 1] > dk
    key = np.where(d <= dk[:, None], d.astype(np.int64) * n + rank[ids], np.iinfo(np.int64).max)
    part = np.argsort(key, axis=1)[:, :kk]  # keys of candidates are distinct
    out_d[:, :kk] = np.take_along_axis(d, part, axis=1)
    out_i[:, :kk] = np.take_along_axis(ids, part, axis=1)
    tied = ~covered
    rows = np.flatnonzero(tied)
    if rows.size == 0:
        return out_d, out_i
    order_of_rank = np.empty(n, dtype=np.int64)
    order_of_rank[rank] = np.arange(n, dtype=np.int64)  # the item at each rank
    step = max(1, _CHUNK_BYTES // (4 * n))
    for a in range(0, rows.size, step):
        r = rows[a:a + step]
        full = index.distances(q[r])
        dk = d[r, kk - 1].astype(np.int64)
        # every item at a distance <= the k-th: those nearer are all served, those at it compete
        rr, cc = np.nonzero(full <= dk[:, None].astype(full.dtype))
        span = (int(dk.max()) + 1) * n
        key = rr.astype(np.int64) * span + full[rr, cc].astype(np.int64) * n + rank[cc]
        key.sort()  # by row, then distance, then rank
        starts = np.searchsorted(key, np.arange(r.size, dtype=np.int64) * span)
        top = key[starts[:, None] + np.arange(kk)[None, :]] % span
        out_d[r, :kk] = (top // n).astype(np.int32)
        out_i[r, :kk] = order_of_rank[top % n]
    return out_d, out_i


def engine_search(search, queries: np.ndarray, k: int, rule: TieBreak | None, n: int,
                  complete: bool = True, cap: int | None = None):
    """The top-``k`` under tie rule ``rule`` from an engine that orders ties by id.

    search: ``search(queries, kk)`` -> the engine's ``(distances, ids)`` sorted by
    (distance, id) (:class:`phdlib.serving.engines.FaissIndex`, ``MilvusIndex``,
    ``USearchIndex``...); queries: uint64 ``(q, w)`` plain codes; n: the items the
    engine holds. The engine is asked for ``k`` plus a margin; with ``complete``
    (an exact engine), a row whose tie at the ``k``-th distance runs past what was
    fetched is asked again for twice as many, until it is covered or ``cap``
    (default ``n``) is reached, so the answer equals :func:`search`'s on
    :class:`~phdlib.serving.search.BinaryIndex`. Without ``complete`` (an
    approximate engine) the fetched candidates are re-ordered as they are. Returns
    int32 ``(q, k)`` distances and int64 ``(q, k)`` ids sorted by (distance, rank).
    ``rule`` None or ``id``: exactly ``search(queries, k)``.
    """
    if rule is None or rule.is_id:
        return search(queries, k)
    cap = int(n if cap is None else min(cap, n))
    nq = queries.shape[0]
    k, kk, wide, rank, out_d, out_i = _prepare(k, rule, n, nq, cap)
    if nq == 0 or n == 0:
        return out_d, out_i
    d, ids = search(queries, wide)
    rows = [(r, d[r], ids[r]) for r in range(nq)]
    if complete:
        need = np.flatnonzero((d[:, wide - 1] <= d[:, kk - 1]) & (ids[:, wide - 1] >= 0))
        w = wide
        while need.size and w < cap:
            w = min(2 * w, cap)
            d2, i2 = search(queries[need], w)
            for j, r in enumerate(need):
                rows[r] = (r, d2[j], i2[j])
            need = need[(d2[:, w - 1] <= d2[:, kk - 1]) & (i2[:, w - 1] >= 0)]
    for r, dr, ir in rows:
        ok = ir >= 0
        dr, ir = dr[ok], ir[ok]
        if not ir.size:
            continue
        dk = dr[min(kk, ir.size) - 1]
        keep = dr <= dk
        dr, ir = dr[keep], ir[keep]
        top = np.lexsort((rank[ir], dr))[:kk]
        out_d[r, :top.size], out_i[r, :top.size] = dr[top], ir[top]
    return out_d, out_i


def reference_order(dist: np.ndarray, rule: TieBreak, k: int | None = None):
    """Brute force: every item of each row ordered by ``numpy.lexsort((id, key, distance))``.

    dist: int ``(q, n)`` all distances. The key is ``rank`` (``id``: the id).
    Returns int64 ``(q, k or n)`` ids and their int32 distances; the
    specification :func:`search` is tested against.
    """
    dist = np.asarray(dist)
    n = dist.shape[1]
    ids = np.arange(n)
    key = ids if rule.is_id else _check_rank(rule, n)
    k = n if k is None else min(int(k), n)
    out = np.empty((dist.shape[0], k), dtype=np.int64)
    for a in range(dist.shape[0]):
        out[a] = np.lexsort((ids, key, dist[a]))[:k]
    return out, np.take_along_axis(dist, out, axis=1).astype(np.int32)
