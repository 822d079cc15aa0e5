"""The :class:`Distance` concept: Hamming and PHD as objects the library asks, never names it compares.

One :class:`Distance` per distance (:data:`HAMMING`, :data:`PHD`) owns all that
differs between them: its name, symmetry, the form item codes are stored in,
table and pair scoring, search-kernel op and how a Hamming-only engine
(faiss, Milvus) serves it. :data:`DISTANCES` (name -> Distance) is the one list
of them, :func:`distance` the lookup, and :data:`RANKS` what a method may rank
by (the distances and ``"score"``). Configs and run keys hold the name, a
plain string.

:func:`pair_distances` scores a list of (user, item) pairs, each on its own
words (how a model of codes scores the pairs it is evaluated on): int32
``(N,)`` bit counts. The codes themselves and the table kernels
(:func:`~phdlib.codes.packed.hamming`, :func:`~phdlib.codes.packed.phd`) are
in :mod:`phdlib.codes.packed`, which this module imports (never the reverse);
:mod:`phdlib.codes.padding` serves PHD to Hamming-only engines.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from . import padding
from ..kernels import bits as _k
from ..kernels import search as _ks
from .packed import PackedCodes, check_pair, hamming, hamming_reference, n_words, phd, \
    phd_reference

__all__ = ["Distance", "HAMMING", "PHD", "DISTANCES", "DISTANCE_NAMES", "RANKS", "distance",
           "item_store", "pair_distances"]


@dataclass(frozen=True, eq=False)
class Distance:
    """A code distance items are ranked by (smaller first): one of :data:`DISTANCES`.

    Everything the library does differently for Hamming and PHD is asked of
    this object, never decided by comparing names:

    - ``name``: the plain string configs, run keys and method ``ranks_by`` hold;
    - ``symmetric``: ``d(u, i) == d(i, u)`` (Hamming) or not (PHD: the user's
      bits select what counts, so user codes go first);
    - :meth:`store`: the form item codes are scanned in (plain for Hamming,
      negated once for PHD, so a PHD costs one AND and one popcount);
    - :meth:`table`: the ``(users, items)`` matrix of distances (:func:`hamming`,
      :func:`phd`); :meth:`pairs`: the distance of each (user, item) pair
      (:func:`pair_distances`); :meth:`reference`: plain NumPy on ±1 codes;
    - ``search_op``: the :mod:`phdlib.kernels.search` op of a
      :class:`phdlib.serving.search.BinaryIndex` scan over :meth:`store`'d codes;
    - :meth:`engine_bytes`, :meth:`engine_items`, :meth:`engine_queries`,
      :meth:`from_engine`: how a Hamming-only engine (faiss, Milvus) serves it
      (PHD through the padding of :mod:`phdlib.codes.padding`, Hamming as is).
    """

    name: str
    symmetric: bool
    #: item codes are scanned negated (stored NOT)
    items_negated: bool
    #: :mod:`phdlib.kernels.bits` op of the pair kernel (on :meth:`store`'d items)
    pair_op: int
    #: :mod:`phdlib.kernels.search` op of a top-k scan (on :meth:`store`'d items)
    search_op: int
    _table: Callable = field(repr=False)
    _reference: Callable = field(repr=False)

    def __str__(self) -> str:
        return self.name

    def store(self, item_codes: PackedCodes) -> PackedCodes:
        """Item codes in the form searched: plain for Hamming, negated for PHD."""
        if item_codes.negated == self.items_negated:
            return item_codes
        return item_codes.negate()

    def table(self, query: PackedCodes, items: PackedCodes) -> np.ndarray:
        """Distance of each query (user) code to each item code: int32 ``(n,)`` for
        one query, ``(q, n)`` for ``q``. Items plain or negated."""
        return self._table(query, self.store(items))

    def pairs(self, user_codes: PackedCodes, item_codes: PackedCodes, user, item) -> np.ndarray:
        """Distance of each ``(user[k], item[k])`` pair: :func:`pair_distances`."""
        return pair_distances(user_codes, item_codes, user, item, self)

    def reference(self, query, items) -> np.ndarray:
        """Plain NumPy distances on unpacked ±1 (or bool) codes (the tests' reference)."""
        return self._reference(query, items)

    # ----------------------------------------------------------- Hamming-only engines

    def engine_bytes(self, m: int) -> int:
        """Bytes of one code as a Hamming engine holds it."""
        return padding.padded_bytes(m) if self.items_negated else n_words(m) * 8

    def engine_items(self, words: np.ndarray, m: int) -> np.ndarray:
        """Item codes (uint64 ``(n, w)``, plain) as uint8 rows for a Hamming engine."""
        if self.items_negated:
            return padding.pad_items(words, m)
        return np.ascontiguousarray(words).view(np.uint8)

    def engine_queries(self, words: np.ndarray, m: int):
        """User codes (uint64 ``(q, w)``) as uint8 rows for a Hamming engine, and what
        :meth:`from_engine` needs to map its answer back (``|u|`` for PHD, else None)."""
        if self.items_negated:
            return padding.pad_users(words, m), padding.popcounts(words, m)
        return np.ascontiguousarray(words).view(np.uint8), None

    def from_engine(self, hamming: np.ndarray, aux, m: int) -> np.ndarray:
        """This distance from a Hamming engine's distances ``(q, k)`` of the codes of
        :meth:`engine_queries` / :meth:`engine_items` (``aux``: its second value).
        ``ValueError`` when they are not such distances."""
        if not self.items_negated:
            return hamming
        return padding.phd_from_padded(hamming, aux, m)


#: Hamming distance ``popcount(u XOR i)``: symmetric.
HAMMING = Distance("hamming", symmetric=True, items_negated=False, pair_op=_k.HAMMING,
                   search_op=_ks.OP_XOR, _table=hamming, _reference=hamming_reference)
#: Projected Hamming dissimilarity ``popcount(u AND NOT i)``: user first.
PHD = Distance("phd", symmetric=False, items_negated=True, pair_op=_k.AND,
               search_op=_ks.OP_AND, _table=phd, _reference=phd_reference)

#: The code distances a model ranks by (smaller first): name -> :class:`Distance`,
#: in the order they are shown (Hamming, then PHD). Iterating gives the names.
DISTANCES: Mapping[str, Distance] = MappingProxyType({d.name: d for d in (HAMMING, PHD)})
#: Their names, in order (a tuple: what configs and messages list).
DISTANCE_NAMES: tuple[str, ...] = tuple(DISTANCES)
#: What a method ranks by: a code distance (smaller first) or ``"score"``, a
#: real-valued score (larger first: MF-like methods), which is not a code distance.
RANKS: tuple[str, ...] = (*DISTANCE_NAMES, "score")


def distance(name) -> Distance:
    """The :class:`Distance` called ``name`` (a Distance is returned as is).
    ``ValueError`` naming the known ones for any other name."""
    if isinstance(name, Distance):
        return name
    try:
        return DISTANCES[name]
    except (KeyError, TypeError):
        raise ValueError(f"distance must be one of {DISTANCE_NAMES}, got {name!r}") from None


_distance = distance  # for functions whose parameter is called ``distance``


def item_store(item_codes: PackedCodes, distance) -> PackedCodes:
    """Item codes in the form searched: plain for Hamming, negated for PHD."""
    return _distance(distance).store(item_codes)


def pair_distances(user_codes: PackedCodes, item_codes: PackedCodes, user, item,
                   distance: str) -> np.ndarray:
    """Distance of each (user[k], item[k]) pair: int32 ``(N,)`` bit counts.

    user_codes: packed codes of every user ``(n_users, w)``; item_codes: of
    every item ``(n_items, w)``, plain (negated here for PHD) or already
    negated. user, item: int ``(N,)`` ids. distance: ``"hamming"`` or
    ``"phd"`` (``PHD(u, i) = popcount(u AND NOT i)``, user first). Time
    O(N w): each pair's words only (:func:`phdlib.kernels.bits.pair_scan`),
    never a users x items table (at the Amazon shape that was 20G distances
    for 2.5M pairs). Item codes are packed once (negated for PHD, so a PHD
    costs one AND and one popcount), each pair on its own words.
    """
    dist = _distance(distance)
    check_pair(user_codes, item_codes, "pair_distances")  # same width, plain user codes
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
    items = dist.store(item_codes)
    out = np.empty(user.shape[0], dtype=np.int32)
    if user.size:
        _k.pair_scan(dist.pair_op,
                     np.ascontiguousarray(user_codes.words), np.ascontiguousarray(items.words),
                     user.astype(np.int64), item.astype(np.int64), out)
    return out
