"""Recommending from a codes file (:mod:`phdlib.serving.codes_file`).

:func:`recommend` ranks every item for some users through
:class:`phdlib.serving.search.BinaryIndex` (the file's distance, ``phd`` or
``hamming``), leaving out seen items; :func:`exclusions` matches seen (user, item)
pairs, given as original ids, against the codes and counts what did not match
(:class:`Exclusions`). Ties go by item id unless a tie rule says otherwise
(:func:`tie_rule`, :mod:`phdlib.serving.ties`: popularity and mean rating from
the file's ``item_stats``, any score, a seeded order).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import ties as T
from .codes_file import Codes
from .search import BinaryIndex


@dataclass
class Exclusions:
    """Seen (user, item) pairs matched against a codes file's ids (:func:`exclusions`).

    ``skip``: user row -> set of item rows not to recommend. ``pairs``: pairs
    given; ``applied``: pairs whose user and item are both in the codes;
    ``unknown_user_pairs`` / ``unknown_item_pairs``: pairs left out because
    their user (resp. only their item) is not in the codes, with the distinct
    unknown ids counted in ``unknown_users`` / ``unknown_items`` and the first
    of each in ``first_unknown_user`` / ``first_unknown_item`` (None if none).
    """

    skip: dict
    pairs: int = 0
    applied: int = 0
    unknown_user_pairs: int = 0
    unknown_item_pairs: int = 0
    unknown_users: int = 0
    unknown_items: int = 0
    first_unknown_user: object = None
    first_unknown_item: object = None

    def summary(self) -> dict:
        """Every count as a JSON-ready dict (``skip`` left out)."""
        return {k: _py(v) for k, v in self.__dict__.items() if k != "skip"}


def _distinct_rows(ids, rows_of) -> tuple[np.ndarray, np.ndarray, list]:
    """(row of each id, whether known, the distinct ids in first-seen order): each
    distinct id is looked up once."""
    first: dict = {}
    inverse = np.fromiter((first.setdefault(x, len(first)) for x in ids), dtype=np.int64,
                          count=len(ids))
    distinct = list(first)
    rows = rows_of(distinct) if distinct else np.zeros(0, dtype=np.int64)
    return rows[inverse], rows >= 0, distinct


def exclusions(codes: Codes, users, items) -> Exclusions:
    """Match seen pairs ``(users[k], items[k])`` (original ids, text or integers) against
    ``codes``; nothing unmatched is dropped without being counted (:class:`Exclusions`)."""
    users, items = list(users), list(items)
    if len(users) != len(items):
        raise ValueError(f"{len(users)} user ids for {len(items)} item ids")
    urow, uknown, udistinct = _distinct_rows(users, lambda x: codes.user_rows(x, strict=False))
    irow, iknown, idistinct = _distinct_rows(items, lambda x: codes.item_rows(x, strict=False))
    has_u, has_i = urow >= 0, irow >= 0
    skip: dict[int, set] = {}
    for u, i in zip(urow[has_u & has_i].tolist(), irow[has_u & has_i].tolist()):
        skip.setdefault(u, set()).add(i)
    bad_u = [x for x, k in zip(udistinct, uknown) if not k]
    bad_i = [x for x, k in zip(idistinct, iknown) if not k]
    return Exclusions(skip, len(users), int((has_u & has_i).sum()), int((~has_u).sum()),
                      int((has_u & ~has_i).sum()), len(bad_u), len(bad_i),
                      bad_u[0] if bad_u else None, bad_i[0] if bad_i else None)


def tie_rule(codes: Codes, rule: str = "id", seed: int | None = None,
             score=None) -> T.TieBreak:
    """The :class:`~phdlib.serving.ties.TieBreak` ``rule`` over the items of ``codes``.

    ``popularity`` / ``mean-rating`` read the file's ``item_stats`` (a
    ``ValueError`` naming the file and the field where it has none); ``score``
    takes ``score``, float ``(n_items,)`` in the codes' item order; ``seeded``
    takes ``seed``.
    """
    n = len(codes.item_ids)
    if rule in T.SIGNAL_RULES:
        codes.item_stat(T.SIGNAL_RULES[rule])  # the error naming the file and the field
        return T.tie_break(rule, n, stats=codes.item_stats)
    return T.tie_break(rule, n, score=score, seed=seed)


def recommend(codes: Codes, users, k: int = 10, exclude=None,
              tie_break: T.TieBreak | None = None) -> list[dict]:
    """Top-``k`` items per user, nearest first, through :class:`~phdlib.serving.search.BinaryIndex`.

    users: original user ids (an unknown one is a ``KeyError`` naming it).
    exclude: items not to recommend: an :class:`Exclusions` (its counts say what
    matched), or a dict user id -> item ids (matched as :func:`exclusions` does).
    tie_break: None (ties in id order, as ``BinaryIndex``) or a rule over the
    codes' items (:func:`tie_rule`): the ``k`` unseen items first by
    ``(distance, the rule's rank)``, ties at the cut included.
    Returns one ``{"user", "items", "distances"}`` per user (original item ids).
    """
    users = list(users)
    rows = codes.user_rows(users)
    if isinstance(exclude, dict):
        pairs = [(u, i) for u, its in exclude.items() for i in its]
        exclude = exclusions(codes, [u for u, _ in pairs], [i for _, i in pairs])
    skip_of = exclude.skip if exclude is not None else {}
    index = BinaryIndex(codes.bits, metric=codes.distance)
    index.add(codes.item_codes)
    n_items = len(codes.item_ids)
    extra = max((len(skip_of.get(int(r), ())) for r in rows), default=0)
    kk = min(n_items, k + extra)
    # the first k + extra under one total order hold the first k unseen ones under it
    dist, ids = index.search(codes.user_codes[rows], kk, tie_break=tie_break)
    out = []
    for a, u in enumerate(users):
        skip = skip_of.get(int(rows[a]), set())
        keep = [j for j in range(kk) if ids[a, j] >= 0 and ids[a, j] not in skip][:k]
        out.append({"user": _py(u), "items": [_py(codes.item_ids[ids[a, j]]) for j in keep],
                    "distances": [int(dist[a, j]) for j in keep]})
    return out


def _py(v):
    return v.item() if isinstance(v, np.generic) else v
