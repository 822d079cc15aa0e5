"""One evaluation path for every method: a fitted model and ratings in, per-user metrics out.

- :func:`evaluate`: the paper's protocol. Each user's held-out items are
  ranked by the model's values (:meth:`phdlib.methods.Fitted.pairs`),
  smallest first for Hamming and PHD, largest first for a score, and scored
  by :func:`phdlib.evaluation.metrics.evaluate` (NDCG@k, RR; ties by ``ties``);
- :func:`evaluate_catalogue`: our extension, every item the user has not
  rated in the excluded parts is ranked;
- code distances of (user, item) pairs are :func:`phdlib.codes.pair_distances`,
  through the same popcount kernels the runtime chapter measures.

Used by training (:mod:`phdlib.experiments.training`), the protocol chapter and anything
that re-scores a stored run (:func:`phdlib.experiments.training.fitted`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import metrics
# scoring pairs by a code distance belongs to the codes; its old names still work here
from ..data.tables import check_ids
from .metrics import summarize
from ..kernels import ranking as K


def evaluate(fitted, ratings, ties: str = "expected", discount: str = "paper", ks=(5, 10),
             seed: int = 0) -> pd.DataFrame:
    """Per-user NDCG@k and RR of ``ratings`` ranked by ``fitted`` (the paper's protocol).

    fitted: a :class:`phdlib.methods.Fitted`; ratings: a
    :class:`phdlib.data.Ratings` (user, item int32 ``(r,)``, rating float32
    ``(r,)``), taken in its stored order (so ``ties="input"`` keeps file
    order). Returns :func:`phdlib.evaluation.metrics.evaluate`'s frame: one row per user
    (``user``, ``n_test``, ``ndcg@k``..., ``mrr``).
    """
    return evaluate_many(fitted, ratings, (ties,), (discount,), ks, seed)[ties, discount]


def evaluate_many(fitted, ratings, ties=("expected",), discounts=("paper",), ks=(5, 10),
                  seed: int = 0) -> dict[tuple[str, str], pd.DataFrame]:
    """:func:`evaluate` under several tie rules and discounts, scoring the pairs once.

    Returns ``{(tie rule, discount): per-user frame}`` for every combination.
    """
    values = fitted.pairs(np.asarray(ratings.user), np.asarray(ratings.item))
    return {(t, d): metrics.evaluate(ratings.user, ratings.rating, values, ks=ks, ties=t,
                                     discount=d, kind=fitted.kind, seed=seed)
            for t in ties for d in discounts}


def tie_rules(fitted, ratings, ties, discount: str = "paper") -> pd.DataFrame:
    """Summary metrics of ``fitted`` on ``ratings`` under each tie rule: one row per rule.

    Columns: every metric of :func:`phdlib.evaluation.metrics.summarize` (``ndcg@5``,
    ``ndcg@10``, ``mrr``, ``users``); index ``ties``.
    """
    per_rule = evaluate_many(fitted, ratings, tuple(ties), (discount,))
    rows = {t: summarize(per_rule[t, discount]) for t in ties}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("ties")


def evaluate_catalogue(fitted, split, exclude: tuple = ("train", "valid"), ties: str = "expected",
                       discount: str = "paper", block: int = 256, ks=(5, 10),
                       sort: bool = False) -> pd.DataFrame:
    """Per-user NDCG@k and RR over the full catalogue (our extension).

    For every test user, every item except those the user rated in the parts
    of ``split`` named by ``exclude`` is ranked by ``fitted``; an item's
    relevance is the user's test rating, 0 for items outside the user's test
    set. Returns :func:`phdlib.evaluation.metrics.evaluate`'s frame plus ``n_ranked``
    (items ranked per user); ``n_test`` is the user's number of test items.
    Memory: sparse rated/test pairs and one block of users' scores at a time,
    never a dense users x items array. Time: under ``ties="expected"`` (with
    every test rating > 0) no row is sorted: the items outside the test set
    only move the test items' tie groups, so they are counted against the
    row's test keys (:func:`phdlib.kernels.ranking.catalogue_expected`, equal
    to the general path, which the other tie rules take; ``sort=True`` takes
    the general path always, to check one against the other); and a model
    whose values every user shares (``fitted.shared_values()``: one score per
    item) needs no pass over the catalogue per user at all: the counts come
    from the sorted values less each user's rated items.
    """
    import scipy.sparse as sp

    n_users, n_items = split.dataset.n_users, split.dataset.n_items
    parts = [getattr(split, part) for part in exclude]
    su = np.concatenate([r.user for r in parts]) if parts else np.empty(0, np.int64)
    si = np.concatenate([r.item for r in parts]) if parts else np.empty(0, np.int64)
    seen = sp.csr_matrix((np.ones(su.size, dtype=bool), (su, si)), shape=(n_users, n_items))
    t = split.test
    if np.asarray(seen[t.user, t.item]).any():
        raise ValueError("some test pairs are also in the excluded parts; the split overlaps")
    rel = sp.csr_matrix((np.asarray(t.rating, dtype=np.float32), (t.user, t.item)),
                        shape=(n_users, n_items))
    users = np.unique(t.user)
    # users x items is never dense: one block of users at a time (at most ~16M cells)
    block = max(1, min(int(block), (1 << 24) // max(n_items, 1)))
    frames, all_items = [], np.arange(n_items)
    fast = not sort and ties == "expected" and bool((np.asarray(t.rating) > 0).all())
    shared = _shared_row(fitted, users, n_items) if fast else None
    if shared is not None:  # one ranking for every user: counted without a users x items pass
        frames.append(_catalogue_shared(users, shared, seen, rel, ks, discount, fitted.kind))
        users = users[:0]
    for b0 in range(0, len(users), block):
        ub = users[b0:b0 + block]
        vals = fitted.table(ub, all_items)
        keep = ~seen[ub].toarray()
        if fast:
            frames.append(_catalogue_block(ub, vals, keep, rel[ub], ks, discount, fitted.kind))
            continue
        uu = np.broadcast_to(ub[:, None], keep.shape)[keep]
        frames.append(metrics.evaluate(uu, rel[ub].toarray()[keep], vals[keep], ks=ks, ties=ties,
                                       discount=discount, kind=fitted.kind))
    out = pd.concat(frames, ignore_index=True)
    out["n_ranked"] = out.pop("n_test")
    out["n_test"] = np.bincount(split.test.user, minlength=n_users)[out["user"].to_numpy()]
    return out


def _shared_row(fitted, users, n_items: int):
    """The row of values every user shares (float64 ``(n_items,)``), checked as
    ``fitted.table(users, all items)`` checks its ids; None where the model has no
    such row, or where it is not finite (the per-row path then reports only
    non-finite values among the ranked items, as for any model)."""
    row = fitted.shared_values()
    if row is None:
        return None
    check_ids(users, fitted.n_users, "user")
    check_ids(np.arange(n_items), fitted.n_items, "item")
    row = np.asarray(row, dtype=np.float64)[:n_items]
    return row if np.isfinite(row).all() else None


def _catalogue_shared(users, values, seen, rel, ks, discount: str, kind: str) -> pd.DataFrame:
    """:func:`_catalogue_block`'s frame for ``users`` when every user's row of values is
    ``values`` (float64 ``(I,)``): by
    :func:`phdlib.kernels.ranking.catalogue_expected_shared`, in time of the users'
    test and rated items rather than users x items."""
    ks = tuple(metrics._check_k(k) for k in ks)
    values = np.asarray(values, dtype=np.float64)   # finite (:func:`_shared_row`)
    key = np.ascontiguousarray(values if kind == "dissimilarity" else -values)
    rel = rel[users].tocsr()
    rel.sort_indices()
    seen = seen[users].tocsr()
    out_ndcg = np.empty((len(users), len(ks)))
    out_mrr = np.empty(len(users))
    out_n = np.empty(len(users), dtype=np.int64)
    K.catalogue_expected_shared(key, np.sort(key), seen.indptr.astype(np.int64),
                                seen.indices.astype(np.int64), rel.indptr.astype(np.int64),
                                rel.indices.astype(np.int64), rel.data.astype(np.float64),
                                np.asarray(ks, dtype=np.int64),
                                metrics.discounts(max(ks), discount), out_ndcg, out_mrr, out_n)
    cols = {"user": users, "n_test": out_n}
    for j, k in enumerate(ks):
        cols[f"ndcg@{k}"] = out_ndcg[:, j]
    cols["mrr"] = out_mrr
    return pd.DataFrame(cols)


def _catalogue_block(ub, vals, keep, rel, ks, discount: str, kind: str) -> pd.DataFrame:
    """:func:`phdlib.evaluation.metrics.evaluate`'s frame (``ties="expected"``) of one block of users
    over their kept items, by :func:`phdlib.kernels.ranking.catalogue_expected`."""
    ks = tuple(metrics._check_k(k) for k in ks)
    vals = np.asarray(vals)
    # (the whole block is checked first: one pass, no copy of the kept values)
    if (vals.dtype.kind == "f" and not np.isfinite(vals).all()
            and not np.isfinite(vals[keep]).all()):
        raise ValueError("values contain NaN or infinite entries; a ranking needs finite "
                         "dissimilarities or scores")
    # code distances are small non-negative integers: counted in a histogram, read as
    # they are (the same values as float64 keys, half the bytes, no conversion pass)
    int_max = -1
    if vals.dtype.kind in "iu" and kind == "dissimilarity" and vals.size:
        lo, hi = int(vals.min()), int(vals.max())
        int_max = hi if lo >= 0 and hi <= 1 << 16 else -1
    if int_max >= 0:
        key = np.ascontiguousarray(vals)
    else:  # float64 keys, smaller first, in one pass (never written into ``vals``, which
        # may be a model's own array)
        key = np.ascontiguousarray(vals.astype(np.float64, copy=False) if kind == "dissimilarity"
                                   else np.negative(vals, dtype=np.float64))
    rel = rel.tocsr()
    rel.sort_indices()
    out_ndcg = np.empty((len(ub), len(ks)))
    out_mrr = np.empty(len(ub))
    out_n = np.empty(len(ub), dtype=np.int64)
    K.catalogue_expected(key, np.ascontiguousarray(keep), rel.indptr.astype(np.int64),
                         rel.indices.astype(np.int64), rel.data.astype(np.float64),
                         np.asarray(ks, dtype=np.int64), metrics.discounts(max(ks), discount),
                         out_ndcg, out_mrr, out_n, int_max)
    cols = {"user": ub, "n_test": out_n}
    for j, k in enumerate(ks):
        cols[f"ndcg@{k}"] = out_ndcg[:, j]
    cols["mrr"] = out_mrr
    return pd.DataFrame(cols)
