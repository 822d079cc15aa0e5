"""Re-evaluating stored runs under other protocols: tie rules and the full catalogue.

The paper ranks, for each user, only that user's rated test items
(:mod:`phdlib.metrics`). This module re-scores stored runs
(:class:`phdlib.results.Run`) without retraining:

- :func:`run_scorer` turns a run's stored arrays into a scoring function:
  packed codes (``user_codes``/``item_codes``) give Hamming or PHD
  dissimilarities, real vectors (``user_vectors``/``item_vectors``) give inner
  product scores; runs of the sanity baselines without arrays are scored
  from the training split (item mean rating, item popularity, a constant);
- :func:`evaluate_test` evaluates a run on the test split under any tie rule
  of :func:`phdlib.metrics.evaluate` (``"input"`` keeps the order in which
  the test ratings are stored, i.e. the order of the rating file, as the
  released code effectively does);
- :func:`evaluate_catalogue`: our extension, every item the user has not
  rated in training or validation is ranked (the user's test items among
  all unrated items); relevance is the test rating, 0 for the other items.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from . import codes as C

#: Methods scored with PHD (all other code-based methods use Hamming).
PHD_METHODS = ("vh-phd",)


@dataclass
class Scorer:
    """``values(users, items) -> (q, n) float64`` matrix for user ids and item ids.

    kind: ``"dissimilarity"`` (smaller first) or ``"score"`` (larger first);
    how: a short description of where the values come from.
    """

    values: Callable[[np.ndarray, np.ndarray], np.ndarray]
    kind: str
    how: str


def _train_item_stat(split, stat: str) -> np.ndarray:
    n_items = split.dataset.n_items
    tr = split.train
    cnt = np.bincount(tr.item, minlength=n_items).astype(np.float64)
    if stat == "popularity":
        return cnt
    s = np.bincount(tr.item, weights=tr.rating.astype(np.float64), minlength=n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s / cnt
    glob = float(tr.rating.mean())
    return np.where(cnt > 0, mean, glob)


def run_scorer(run, split) -> Scorer:
    """A :class:`Scorer` for a stored run (see the module docstring).

    Raises ``ValueError`` naming the run when its arrays are not understood
    (e.g. CCCF's block-weighted codes without stored weights).
    """
    a = run.arrays or {}
    if {"user_codes", "item_codes", "user_weights", "item_weights", "block_starts"} <= set(a):
        return _block_scorer(run, a)
    if "user_codes" in a and "item_codes" in a and not any(k.startswith(("user_weights", "item_weights"))
                                                             for k in a):
        distance = run.config.get("distance", "phd" if run.method in PHD_METHODS else "hamming")
        uc = C.PackedCodes(np.asarray(a["user_codes"], dtype=np.uint64), int(run.bits))
        ic = C.PackedCodes(np.asarray(a["item_codes"], dtype=np.uint64), int(run.bits))
        items = ic.negate() if distance == "phd" else ic
        fn = C.phd if distance == "phd" else C.hamming

        def values(users, item_ids, uc=uc, items=items, fn=fn):
            return fn(uc[np.asarray(users)], items[np.asarray(item_ids)]).astype(np.float64)

        return Scorer(values, "dissimilarity", f"{distance} of stored {run.bits}-bit codes")
    if "user_vectors" in a and "item_vectors" in a:
        P = np.asarray(a["user_vectors"], dtype=np.float64)
        Q = np.asarray(a["item_vectors"], dtype=np.float64)
        return Scorer(lambda users, item_ids: P[np.asarray(users)] @ Q[np.asarray(item_ids)].T,
                      "score", "inner product of stored real vectors")
    if "item_scores" in a:
        s = np.asarray(a["item_scores"], dtype=np.float64)
        return Scorer(lambda users, item_ids: np.broadcast_to(s[np.asarray(item_ids)],
                                                              (len(users), len(item_ids))).copy(),
                      "score", "stored item scores (the same for every user)")
    if run.method in ("item-mean", "popularity", "random"):
        s = (np.zeros(split.dataset.n_items) if run.method == "random"
             else _train_item_stat(split, "mean" if run.method == "item-mean" else "popularity"))
        return Scorer(lambda users, item_ids: np.broadcast_to(s[np.asarray(item_ids)],
                                                              (len(users), len(item_ids))).copy(),
                      "score", f"{run.method} recomputed from the training split")
    raise ValueError(f"run {run.method!r} ({run.bits} bits, {run.path}) stores arrays "
                     f"{sorted(a)}; cannot score them outside the method (expected user/item "
                     f"codes, user/item vectors or item_scores)")


def _block_scorer(run, a) -> Scorer:
    """CCCF: ``sum_b w_u,b w_i,b <u_b, i_b>`` over code blocks ``[starts[b], starts[b+1])``.

    ``<u_b, i_b>`` is the inner product of the ±1 codes of the block
    (``len_b - 2 * Hamming``); weights are float (n, n_blocks).
    """
    starts = np.asarray(a["block_starts"], dtype=np.int64)
    width = int(starts[-1])
    uc = C.unpack(C.PackedCodes(np.asarray(a["user_codes"], dtype=np.uint64), width)).astype(np.float32)
    ic = C.unpack(C.PackedCodes(np.asarray(a["item_codes"], dtype=np.uint64), width)).astype(np.float32)
    wu = np.asarray(a["user_weights"], dtype=np.float64)
    wi = np.asarray(a["item_weights"], dtype=np.float64)
    nb = len(starts) - 1
    if wu.shape[1] != nb or wi.shape[1] != nb:
        raise ValueError(f"run {run.method!r} at {run.path}: {nb} blocks but weights of shapes "
                         f"{wu.shape} and {wi.shape}")
    def values(users, item_ids):
        users, item_ids = np.asarray(users), np.asarray(item_ids)
        out = np.zeros((len(users), len(item_ids)))
        for b in range(nb):
            s0, s1 = starts[b], starts[b + 1]
            ip = uc[users, s0:s1].astype(np.float64) @ ic[item_ids, s0:s1].T.astype(np.float64)
            out += wu[users, b][:, None] * wi[item_ids, b][None, :] * ip
        return out

    return Scorer(values, "score", f"block-weighted inner products of stored codes ({nb} blocks)")


def pair_values(scorer: Scorer, user: np.ndarray, item: np.ndarray, n_items: int,
                block: int = 512) -> np.ndarray:
    """Values of the pairs (user[k], item[k]) for item ids in [0, n_items): float64 (N,)."""
    user = np.asarray(user)
    item = np.asarray(item)
    out = np.empty(user.shape[0], dtype=np.float64)
    all_items = np.arange(n_items)
    order = np.argsort(user, kind="stable")
    us = user[order]
    uniq = np.unique(us)
    for b0 in range(0, len(uniq), block):
        ub = uniq[b0:b0 + block]
        table = scorer.values(ub, all_items)
        lo, hi = np.searchsorted(us, ub[0]), np.searchsorted(us, ub[-1], side="right")
        idx = order[lo:hi]
        row = np.searchsorted(ub, user[idx])
        out[idx] = table[row, item[idx]]
    return out


def evaluate_test(run, split, ties: str = "expected", discount: str = "paper", seed: int = 0,
                  scorer: Scorer | None = None) -> pd.DataFrame:
    """Per-user metrics of ``run`` under the paper's protocol with tie rule ``ties``.

    The test ratings are taken in the order the split stores them (the order
    of the rating file), so ``ties="input"`` breaks ties by file order.
    """
    from . import metrics

    scorer = scorer or run_scorer(run, split)
    t = split.test
    v = pair_values(scorer, t.user, t.item, split.dataset.n_items)
    return metrics.evaluate(t.user, t.rating, v, ties=ties, discount=discount, kind=scorer.kind,
                            seed=seed)


def evaluate_catalogue(run, split, exclude: tuple = ("train", "valid"), ties: str = "expected",
                       discount: str = "paper", block: int = 256, scorer: Scorer | None = None,
                       ks=(5, 10)) -> pd.DataFrame:
    """Per-user NDCG@k and RR over the full catalogue (our extension).

    For every test user, every item except those the user rated in the parts
    named by ``exclude`` is ranked; an item's relevance is the user's test
    rating, 0 for items outside the user's test set. Returns the frame of
    :func:`phdlib.metrics.evaluate` plus ``n_ranked`` (items ranked per user).
    """
    from . import metrics

    scorer = scorer or run_scorer(run, split)
    n_users, n_items = split.dataset.n_users, split.dataset.n_items
    seen = np.zeros((n_users, n_items), dtype=bool)
    for part in exclude:
        r = getattr(split, part)
        seen[r.user, r.item] = True
    rel = np.zeros((n_users, n_items), dtype=np.float32)
    rel[split.test.user, split.test.item] = split.test.rating
    if seen[split.test.user, split.test.item].any():
        raise ValueError("some test pairs are also in the excluded parts; the split overlaps")
    users = np.unique(split.test.user)
    frames = []
    all_items = np.arange(n_items)
    for b0 in range(0, len(users), block):
        ub = users[b0:b0 + block]
        vals = scorer.values(ub, all_items)
        keep = ~seen[ub]
        uu = np.broadcast_to(ub[:, None], keep.shape)[keep]
        frames.append(metrics.evaluate(uu, rel[ub][keep], vals[keep], ks=ks, ties=ties,
                                       discount=discount, kind=scorer.kind))
    out = pd.concat(frames, ignore_index=True)
    out["n_ranked"] = out.pop("n_test")
    out["n_test"] = np.bincount(split.test.user, minlength=n_users)[out["user"].to_numpy()]
    return out


def summarize(per_user: pd.DataFrame) -> dict:
    """Means over users of ``ndcg@5``, ``ndcg@10``, ``mrr``, plus ``users``."""
    return {**{k: float(per_user[k].mean()) for k in ("ndcg@5", "ndcg@10", "mrr")
               if k in per_user}, "users": int(len(per_user))}
