"""Exact nearest-neighbour search over binary codes: ``BinaryIndex``.

In the manner of faiss's ``IndexBinaryFlat``::

    index = BinaryIndex(64, metric="phd")
    index.add(item_codes)                  # PackedCodes or uint64 (n, w)
    distances, ids = index.search(user_codes, k=10)

``metric="hamming"`` ranks by ``popcount(q XOR c)``; ``metric="phd"`` by the
projected Hamming dissimilarity ``popcount(q AND NOT c)`` of the query (user)
to each item. For PHD the index stores the NOT of every item code once, at
``add`` time, so a PHD search costs exactly what a Hamming search costs: one
AND and one popcount per word.

``search`` returns ``distances`` int32 ``(q, k)`` and ``ids`` int64 ``(q, k)``
(ids are positions in the order of ``add``), sorted by distance and, among
equal distances, by id (smaller id first): exactly the first ``k`` entries
of a stable sort of all distances. When ``k`` exceeds the number of codes the
missing slots hold id ``-1`` and distance ``2**31 - 1`` (as faiss does).
``search(..., tie_break=rule)`` orders equal distances by another rule instead
(popularity, mean rating, any score, a seeded order; ties at the cut included):
a :class:`phdlib.serving.ties.TieBreak`, served by :func:`phdlib.serving.ties.search`
on top of this exact search; ``None`` or the ``id`` rule is the search above,
unchanged.

Kernels (:mod:`phdlib.kernels.search`): one query uses a fused top-k that
reads the codes once, keeping per distance value ``d`` in ``[0, m]`` a bucket
of the first ids seen at ``d`` and rejecting whole blocks farther than the
current ``k``-th distance; many queries share tiles of codes in cache; a
very large ``k`` (more than ``2**20`` bucket slots) uses a histogram pass and a
gather pass instead. All run on Numba's threads (``numba.set_num_threads``)
or on one, with the same results.
"""
from __future__ import annotations

import os

import numba
import numpy as np

from ..codes import distances as D
from ..codes import packed as C
from ..kernels import search as K
from . import ties as T

__all__ = ["BinaryIndex", "METRICS", "n_chunks", "reference_search"]

#: Metric name -> the search-kernel op of its scan: each :class:`phdlib.codes.Distance`'s
#: ``search_op`` (from :data:`phdlib.codes.DISTANCES`, in its order).
METRICS = {name: d.search_op for name, d in D.DISTANCES.items()}
#: above this many int64 bucket slots per top-k state ((m + 1) * k; 8 MiB),
#: use the two-pass top-k; the tiled kernel (16 states a block) is used while
#: a block's states stay within 4x this.
_BUCKET_LIMIT = 1 << 20


def n_chunks(n: int, per_thread: int = 4, min_chunk: int = 1 << 14) -> int:
    """Contiguous chunks for ``n`` codes on the current Numba thread count."""
    c = numba.get_num_threads() * per_thread
    return max(1, min(c, n // min_chunk))


def _as_words(x, m: int, what: str) -> np.ndarray:
    """Validate codes given as PackedCodes or uint64 words; return (n, w) C array."""
    w = C.n_words(m)
    if isinstance(x, C.PackedCodes):
        if x.m != m:
            raise ValueError(f"{what}: codes have m={x.m} bits, the index has m={m}")
        if x.negated:
            raise ValueError(f"{what}: pass plain codes, not negated (stored NOT) ones")
        return np.ascontiguousarray(x.rows())
    arr = np.asarray(x)
    if arr.dtype != np.uint64:
        raise TypeError(
            f"{what}: codes must be PackedCodes or a uint64 array of shape (n, {w}), "
            f"got dtype {arr.dtype}"
        )
    if arr.ndim == 1 and arr.shape[0] == w:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != w:
        raise ValueError(
            f"{what}: codes of m={m} bits are uint64 arrays of shape (n, {w}), got shape {arr.shape}"
        )
    tail = m % 64
    if tail and arr.shape[0] and np.any(arr[:, -1] >> np.uint64(tail)):
        row = int(np.argmax(arr[:, -1] >> np.uint64(tail) != 0))
        raise ValueError(
            f"{what}: row {row} has bits set above bit {m - 1} (padding must be 0 for m={m})"
        )
    return np.ascontiguousarray(arr)


class BinaryIndex:
    """Exact top-k search over ``m``-bit codes by Hamming distance or PHD.

    Parameters
    ----------
    bits : int
        Code width ``m`` (any positive integer; ``ceil(m/64)`` words a code).
    metric : {"hamming", "phd"}
        ``"phd"``: the query is the user code, the stored codes are items;
        ``PHD(u, i) = popcount(u AND NOT i)``.

    Attributes
    ----------
    stored : np.ndarray
        uint64 ``(ntotal, w)``: the codes as added (Hamming) or their NOT (PHD).
    """

    def __init__(self, bits: int, metric: str = "hamming"):
        self.m = C._check_width(bits)
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
        self.metric = metric
        self.distance = D.distance(metric)
        self.op = self.distance.search_op
        self.w = C.n_words(self.m)
        self.stored = np.empty((0, self.w), dtype=np.uint64)

    @property
    def ntotal(self) -> int:
        return self.stored.shape[0]

    def __len__(self) -> int:
        return self.ntotal

    def __repr__(self) -> str:
        return f"BinaryIndex(bits={self.m}, metric={self.metric!r}, ntotal={self.ntotal})"

    def add(self, codes) -> None:
        """Append codes (ids continue from ``ntotal``).

        codes: PackedCodes of width ``m`` or uint64 ``(n, w)``, plain (not
        negated). PHD stores ``NOT codes``.
        """
        words = _as_words(codes, self.m, "BinaryIndex.add")
        if self.distance.items_negated:
            words = np.bitwise_not(words)
        self.stored = np.ascontiguousarray(np.concatenate([self.stored, words])) \
            if self.ntotal else np.ascontiguousarray(words.copy())

    def reset(self) -> None:
        """Remove every code."""
        self.stored = np.empty((0, self.w), dtype=np.uint64)

    def _queries(self, queries) -> np.ndarray:
        return _as_words(queries, self.m, "BinaryIndex.search")

    def distances(self, queries) -> np.ndarray:
        """All distances: int32 ``(q, ntotal)`` (tiled batch kernel)."""
        q = self._queries(queries)
        out = np.empty((q.shape[0], self.ntotal), dtype=np.int32)
        if q.shape[0] == 1:
            K.scan(self.op, q[0], self.stored, out[0], n_chunks(self.ntotal))
        elif q.shape[0] and self.ntotal:
            K.batch_tiled(self.op, q, self.stored, out)
        return out

    def search(self, queries, k: int, tie_break: T.TieBreak | None = None):
        """The ``k`` nearest stored codes of each query.

        queries: PackedCodes or uint64 ``(q, w)`` (or one code ``(w,)``).
        tie_break: None (or the ``id`` rule): ties by smaller id; else a
        :class:`phdlib.serving.ties.TieBreak` over the ``ntotal`` stored codes
        (:func:`phdlib.serving.ties.search`: ties, at the cut too, by its rank).
        Returns ``(distances, ids)``: int32 ``(q, k)`` and int64 ``(q, k)``,
        sorted by (distance, id) or (distance, the rule's rank).
        """
        if tie_break is not None:
            if not isinstance(tie_break, T.TieBreak):
                raise TypeError(f"tie_break must be a phdlib.serving.ties.TieBreak or None, got "
                                f"{type(tie_break).__name__}")
            if not tie_break.is_id:
                return T.search(self, queries, k, tie_break)
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        k = int(k)
        q = self._queries(queries)
        nq, n = q.shape[0], self.ntotal
        _check_output_size(nq, k, n)
        out_d = np.empty((nq, k), dtype=np.int32)
        out_i = np.empty((nq, k), dtype=np.int64)
        if nq == 0:
            return out_d, out_i
        if n == 0:
            out_d[:] = np.iinfo(np.int32).max
            out_i[:] = -1
            return out_d, out_i
        slots = (self.m + 1) * k  # bucket slots of one top-k state
        nc = n_chunks(n, 2)
        if slots > _BUCKET_LIMIT:
            for a in range(nq):
                K.topk_twopass(self.op, q[a], self.stored, self.m, k, out_d[a], out_i[a], nc)
        elif (nq >= max(numba.get_num_threads() * 2, K.QUERY_BLOCK)
              and slots * K.QUERY_BLOCK <= 4 * _BUCKET_LIMIT):
            K.topk_tiled(self.op, q, self.stored, self.m, k, out_d, out_i)
        else:
            for a in range(nq):
                K.topk_fused(self.op, q[a], self.stored, self.m, k, out_d[a], out_i[a], nc)
        return out_d, out_i


def _check_output_size(nq: int, k: int, n: int) -> None:
    """Refuse a ``k`` whose (padded) answer cannot fit in memory: ``ValueError`` naming it."""
    need = nq * k * 12  # int32 distance and int64 id per slot
    try:
        avail = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        avail = 1 << 34
    if need > avail:
        raise ValueError(f"k={k} for {nq} queries needs {need / 2**30:,.1f} GiB of output "
                         f"(the index holds n={n} codes; slots beyond n are padding); "
                         f"expected k in 1..{n} or an answer within {avail / 2**30:,.0f} GiB")


def reference_search(queries: np.ndarray, stored: np.ndarray, k: int, metric: str = "hamming"):
    """Plain NumPy top-k, the reference for every kernel.

    queries: uint64 ``(q, w)``; stored: uint64 ``(n, w)`` as held by
    :class:`BinaryIndex` (NOT codes for PHD). Distances with
    ``np.bitwise_count``, order by a stable sort (ties: smaller id first).
    Returns int32 ``(q, k)`` distances and int64 ``(q, k)`` ids, padded with
    ``2**31 - 1`` / ``-1`` when ``k > n``.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    nq, n = queries.shape[0], stored.shape[0]
    out_d = np.full((nq, k), np.iinfo(np.int32).max, dtype=np.int32)
    out_i = np.full((nq, k), -1, dtype=np.int64)
    for a in range(nq):
        x = queries[a][None, :] & stored if D.distance(metric).items_negated \
            else queries[a][None, :] ^ stored
        d = np.bitwise_count(x).sum(axis=1).astype(np.int32)
        order = np.argsort(d, kind="stable")[:k]
        out_d[a, : order.size] = d[order]
        out_i[a, : order.size] = order
    return out_d, out_i
