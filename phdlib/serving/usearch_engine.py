"""PHD (or Hamming) top-k in usearch's HNSW over the native packed codes: ``USearchIndex``.

Same interface as :class:`phdlib.serving.search.BinaryIndex`::

    index = USearchIndex(64, metric="phd", expansion_search=64)
    index.add(item_codes)             # uint64 (n, ceil(m/64)), this library's packing
    distances, ids = index.search(user_codes, k)   # int32 (q, k), int64 (q, k)

Unlike :mod:`phdlib.serving.engines` (faiss, Milvus), nothing is padded: usearch
(https://github.com/unum-cloud/usearch, pinned in ``requirements.in``) stores
every code as it is, ``ceil(m/64)`` little-endian uint64 words viewed as
``8 ceil(m/64)`` bytes of a ``ScalarKind.B1`` vector of ``64 ceil(m/64)`` bits
(the bits above ``m`` are 0, as in every plain code), and calls the distance as a
*compiled metric*: a Numba ``cfunc`` ``float32(uint64*, uint64*)`` whose address
usearch calls for every pair it compares, first argument first:

- ``"phd"``: ``popcount(a AND NOT b)`` summed over the words;
- ``"hamming"``: ``popcount(a XOR b)``.

usearch passes the query as ``a`` and a stored code as ``b`` (checked by the tests:
the answers equal :class:`BinaryIndex`'s), so a search ranks items by
``PHD(user, item)``.

Building the graph with an asymmetric distance
----------------------------------------------
HNSW builds its graph by searching for each new item among the items already
inserted, the new item acting as the query, and by pruning the neighbour lists
with item-to-item distances. With PHD that would be ``PHD(new, old) =
popcount(new AND NOT old)``: which of two items counts as the "user" depends on
the insertion order, and a dense item is near every item (``PHD(x, all ones) =
0``), so the graph collects edges towards dense items rather than towards
similar ones. usearch can change the metric of an index after building it
(``Index.metric = ...``, its ``change_metric``), so the graph is built with one
metric and searched with another:

- ``build_metric="hamming"`` (the default): items are linked by their Hamming
  distance, PHD's symmetrisation (``PHD(i, j) + PHD(j, i) = Hamming(i, j)``),
  and the queries use PHD. Hamming on items is the right geometry for a PHD
  search: ``|PHD(u, i) - PHD(u, j)| <= Hamming(i, j)`` for every user ``u`` (each
  flipped item bit changes ``u AND NOT i`` by at most one bit), so neighbours in
  the graph have close PHDs to every user, whichever user asks.
- ``build_metric="phd"``: the graph is built with PHD itself (new item as query)
  and searched with PHD, as if usearch could take only one metric.

Both are measured (recall@10 against :class:`BinaryIndex`,
:func:`phdlib.bench.usearch.run`); recall is never assumed. For
``metric="hamming"`` both build and search use Hamming.

Exact and approximate answers
-----------------------------
``exact=True`` uses usearch's exhaustive search (every stored code compared with
the compiled metric, no graph walk), and the answer equals
:class:`BinaryIndex`'s exactly, ties included: as in
:func:`phdlib.serving.engines.complete_ties`, rows whose ``(k+1)``-th
distance equals their ``k``-th are asked again for more until the cut falls
between two distances, so the ``k`` kept are the smallest ids among the tied.
``exact=False`` walks the graph (``expansion_search`` candidates, HNSW's ``ef``)
and returns what it finds, sorted by (distance, id).

Answers are int32 distances (bit counts) and int64 ids (positions in the order
of ``add``) sorted by (distance, id); slots beyond what was found hold id -1 and
distance ``2**31 - 1``. Determinism: each ``add`` inserts its codes in an order
drawn from ``seed`` (``seed=None``: in id order) on ``threads`` threads; with
``threads=1`` (the default) the graph, hence every approximate answer, is the same
from run to run. One index is not safe to use from several Python threads at
once (``add`` and ``search`` set the index's metric before they run).
"""
from __future__ import annotations

import functools

import numpy as np
from numba import carray, cfunc, types

from ..codes.distances import DISTANCE_NAMES, distance
from ..codes.packed import _check_width, n_words
from ..kernels.bits import popcount
from .engines import MISSING_DISTANCE, _canonical, complete_ties
from . import ties
from .search import _as_words, _check_output_size

__all__ = ["USearchIndex", "BUILD_METRICS", "compiled_metric"]

#: Metrics a PHD graph may be built with (module doc); a Hamming index is built with Hamming.
BUILD_METRICS = DISTANCE_NAMES


@functools.lru_cache(maxsize=None)
def _cfunc(name: str, words: int):
    """The Numba ``cfunc`` ``float32(uint64*, uint64*)`` of one distance over ``words``
    words (the word count is a compile-time constant, so the loop unrolls)."""
    sig = types.float32(types.CPointer(types.uint64), types.CPointer(types.uint64))
    if name == "phd":
        def f(a, b):
            x, y = carray(a, words), carray(b, words)
            s = 0
            for j in range(words):
                s += popcount(x[j] & ~y[j])
            return types.float32(s)
    elif name == "hamming":
        def f(a, b):
            x, y = carray(a, words), carray(b, words)
            s = 0
            for j in range(words):
                s += popcount(x[j] ^ y[j])
            return types.float32(s)
    else:
        raise ValueError(f"compiled metrics are 'hamming' and 'phd', got {name!r}")
    return cfunc(sig)(f)


def compiled_metric(name: str, bits: int):
    """usearch ``CompiledMetric`` of ``name`` (``"phd"`` or ``"hamming"``) over
    ``bits``-bit codes (``ceil(bits/64)`` uint64 words): query first, stored code second."""
    from usearch.index import CompiledMetric, MetricKind, MetricSignature

    fn = _cfunc(name, n_words(_check_width(bits)))
    # the kind only labels the metric (usearch calls the pointer); B1 vectors need a bitwise kind
    return CompiledMetric(pointer=fn.address, kind=MetricKind.Hamming,
                          signature=MetricSignature.ArrayArray)


def _positive_int(value, what: str, least: int = 1) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < least:
        raise ValueError(f"{what} must be an integer >= {least}, got {value!r}")
    return int(value)


class USearchIndex:
    """usearch HNSW (or its exhaustive scan) over ``bits``-bit codes by PHD or Hamming.

    Parameters
    ----------
    bits : int
        Code width ``m``; codes are uint64 ``(n, ceil(m/64))``.
    metric : {"phd", "hamming"}
        ``"phd"``: queries are user codes, stored codes items, ``popcount(u AND NOT i)``.
    connectivity : int
        HNSW links a node per layer (``M``).
    expansion_add, expansion_search : int
        Candidates kept while inserting (``efConstruction``) and searching (``ef``);
        ``expansion_search`` may be changed later (the attribute of that name).
    exact : bool
        Exhaustive search (equals :class:`BinaryIndex`, ties included) instead of the graph.
    seed : int or None
        Seeds the order each ``add`` inserts its codes in (ids stay positions).
    build_metric : {"hamming", "phd"} or None
        Distance the graph is built with for ``metric="phd"`` (module doc); ``None``:
        ``"hamming"``. Must be ``"hamming"`` (or ``None``) for ``metric="hamming"``.
    threads : int
        Threads of ``add`` and ``search`` (0: all cores; 1 gives a reproducible graph).
    """

    def __init__(self, bits: int, metric: str = "phd", connectivity: int = 16,
                 expansion_add: int = 128, expansion_search: int = 64, exact: bool = False,
                 seed: int | None = 0, build_metric: str | None = None, threads: int = 1):
        from usearch.index import Index, ScalarKind

        self.m = _check_width(bits)
        self.distance = distance(metric)  # ValueError naming the known metrics
        self.metric = metric
        self.w = n_words(self.m)
        if build_metric is None:
            build_metric = "hamming"
        if build_metric not in BUILD_METRICS:
            raise ValueError(f"build_metric must be one of {BUILD_METRICS} or None, "
                             f"got {build_metric!r}")
        if metric == "hamming" and build_metric != "hamming":
            raise ValueError(f"a Hamming index is built with Hamming; got "
                             f"build_metric={build_metric!r} for metric='hamming'")
        self.build_metric = build_metric
        if not isinstance(exact, (bool, np.bool_)):
            raise ValueError(f"exact must be True or False, got {exact!r}")
        self.exact = bool(exact)
        # completing ties is what makes the exhaustive scan equal BinaryIndex; the
        # graph's answer is measured as it comes
        self.exact_ties = self.exact
        if seed is not None and (isinstance(seed, (bool, np.bool_))
                                 or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
        self.seed = seed
        self._rng = None if seed is None else np.random.default_rng(int(seed))
        self.threads = _positive_int(threads, "threads", least=0)
        self._search_metric = compiled_metric(metric, self.m)
        self._build_metric = compiled_metric(build_metric, self.m)
        self.index = Index(ndim=64 * self.w, metric=self._build_metric, dtype=ScalarKind.B1,
                           connectivity=_positive_int(connectivity, "connectivity", 2),
                           expansion_add=_positive_int(expansion_add, "expansion_add"),
                           expansion_search=_positive_int(expansion_search, "expansion_search"))
        self.ntotal = 0

    def __len__(self) -> int:
        return self.ntotal

    def __repr__(self) -> str:
        return (f"USearchIndex(bits={self.m}, metric={self.metric!r}, "
                f"build_metric={self.build_metric!r}, exact={self.exact}, ntotal={self.ntotal})")

    @property
    def expansion_search(self) -> int:
        """HNSW's ``ef`` of the next searches (settable)."""
        return int(self.index.expansion_search)

    @expansion_search.setter
    def expansion_search(self, value) -> None:
        self.index.expansion_search = _positive_int(value, "expansion_search")

    def add(self, codes) -> None:
        """Append plain codes (PackedCodes or uint64 ``(n, ceil(m/64))``); ids continue
        from ``ntotal``. Inserted in a seeded order, linked by ``build_metric``."""
        words = _as_words(codes, self.m, "USearchIndex.add")
        n = words.shape[0]
        if n == 0:
            return
        keys = np.arange(self.ntotal, self.ntotal + n, dtype=np.uint64)
        if self._rng is not None:
            order = self._rng.permutation(n)
            keys, words = keys[order], np.ascontiguousarray(words[order])
        self.index.metric = self._build_metric
        self.index.add(keys, words.view(np.uint8), threads=self.threads)
        self.ntotal += n

    def _raw(self, q: np.ndarray, kk: int):
        """usearch's answer for ``q`` (uint64 ``(nq, w)``), ``kk`` a query: int64 distances
        and ids ``(nq, kk)`` in usearch's order, id -1 (distance int64 max) where none."""
        res = self.index.search(q.view(np.uint8), kk, exact=self.exact, threads=self.threads)
        keys, dist = np.atleast_2d(res.keys), np.atleast_2d(res.distances)
        counts = np.asarray(getattr(res, "counts", [keys.shape[1]]))
        h = np.full((len(q), kk), np.iinfo(np.int64).max, dtype=np.int64)
        ids = np.full((len(q), kk), -1, dtype=np.int64)
        have = np.arange(kk)[None, :] < counts[:, None]
        c = min(kk, keys.shape[1])
        have = have[:, :c]
        h[:, :c] = np.where(have, np.rint(dist[:, :c]), h[:, :c])
        ids[:, :c] = np.where(have, keys[:, :c].astype(np.int64), -1)
        return h, ids

    def search(self, queries, k: int, tie_break=None):
        """The ``k`` nearest stored codes of each query (user) code.

        queries: PackedCodes or uint64 ``(q, ceil(m/64))`` (or one code). Returns
        ``(distances int32 (q, k), ids int64 (q, k))`` sorted by (distance, id); with
        ``exact=True`` exactly :meth:`BinaryIndex.search`'s answer. tie_break: a
        :class:`phdlib.serving.ties.TieBreak` ordering tied items instead of the id
        (:func:`phdlib.serving.ties.engine_search`; exact with ``exact=True``).
        """
        if tie_break is not None and not tie_break.is_id:
            return ties.engine_search(self.search, _as_words(queries, self.m, "search"), k,
                                      tie_break, self.ntotal, complete=self.exact_ties)
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        k = int(k)
        q = _as_words(queries, self.m, "USearchIndex.search")
        nq = q.shape[0]
        _check_output_size(nq, k, self.ntotal)
        if nq == 0 or self.ntotal == 0:
            return (np.full((nq, k), MISSING_DISTANCE, dtype=np.int32),
                    np.full((nq, k), -1, dtype=np.int64))
        self.index.metric = self._search_metric
        # the tie completion of the padded engines, on this index's raw answer
        h, ids = complete_ties(self._raw, q, min(k, self.ntotal), self.ntotal, self.ntotal,
                                self.exact_ties)
        if h.shape[1] < k:  # k beyond the codes: pad as BinaryIndex does
            pad = k - h.shape[1]
            h = np.pad(h, ((0, 0), (0, pad)), constant_values=np.iinfo(np.int64).max)
            ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=-1)
        return _canonical(h, ids, k)

    def memory_bytes(self) -> int:
        """Bytes of the serialised index (codes and graph), as :meth:`FaissIndex.memory_bytes`."""
        return int(self.index.serialized_length)

    def allocated_bytes(self) -> int:
        """Bytes usearch has allocated in memory (it grows in arenas of many MiB)."""
        return int(self.index.memory_usage)
