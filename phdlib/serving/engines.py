"""PHD (or Hamming) top-k in engines that only know the Hamming distance: faiss, Milvus.

Every class here has the interface of :class:`phdlib.serving.search.BinaryIndex`::

    index = FaissIndex(bits, metric="phd", kind="flat")   # or "hnsw", "ivf"
    index.add(item_codes)             # uint64 (n, ceil(m/64)), this library's packing
    distances, ids = index.search(user_codes, k)

For ``metric="phd"`` the codes are padded (:mod:`phdlib.codes.padding`) so that the
engine's Hamming distance is ``2 PHD + m - |u|``; the answer is mapped back to
PHD. Answers are sorted by (distance, id) like ``BinaryIndex``'s. An exact
engine (faiss ``IndexBinaryFlat``, Milvus ``BIN_FLAT``) then returns exactly
``BinaryIndex``'s top-k, ties included: items tied with the ``k``-th at the
cut are fetched by asking the engine for more until the last distance is
beyond the ``k``-th, so the ``k`` kept are the smallest ids (``exact_ties=True``). HNSW and IVF are approximate: their recall is measured
(:mod:`phdlib.bench.serving`), never assumed.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..codes.distances import distance
from ..codes.packed import _check_width
from . import ties
from .search import _as_words

MISSING_DISTANCE = np.iinfo(np.int32).max
#: The most results Milvus returns for one query.
MILVUS_MAX_K = 16_384


def _words(codes, m: int, what: str) -> np.ndarray:
    return _as_words(codes, m, what)


#: Tied rows :func:`complete_ties` asks the engine again at once (bounds the
#: transient ``(rows, kk)`` answer).
TIE_ROWS = 1024


def _canonical(dist: np.ndarray, ids: np.ndarray, k: int):
    """Each row sorted by (distance, id), missing slots (id < 0) last, cut to ``k``."""
    d = np.where(ids < 0, np.iinfo(np.int64).max, dist.astype(np.int64))
    order = np.lexsort((np.where(ids < 0, np.iinfo(np.int64).max, ids), d), axis=-1)
    d = np.take_along_axis(d, order, axis=1)[:, :k]
    i = np.take_along_axis(ids.astype(np.int64), order, axis=1)[:, :k]
    return np.where(i < 0, MISSING_DISTANCE, d).astype(np.int32), i


def complete_ties(raw, q: np.ndarray, k: int, cap: int, ntotal: int, exact_ties: bool = True):
    """An engine's top-``k`` with the ties at the cut completed as :class:`BinaryIndex` keeps them.

    ``raw(q, kk)``: the engine's distances and ids, ``(q, kk)``, asked first for
    ``kk = k + 1``; then, only for the rows whose ``(k+1)``-th distance equals their
    ``k``-th (a tie across the cut), again with ``kk`` doubled until the cut falls
    between two distances or ``kk = cap``. Returns ``(q, k + 1)`` arrays (``(q, k)``
    without ``exact_ties``); a row asked again holds its first ``k`` by (distance, id)
    and id -1 after, so memory stays ``O(q k)`` however many items one row ties with.
    Tied rows are asked again :data:`TIE_ROWS` at a time. ``ntotal``: the engine's
    size (a warning names the rows still tied when ``cap`` is below it).
    """
    kk = k + 1 if exact_ties and k < cap else k
    h, ids = raw(q, kk)
    if kk == k or not len(q):
        return h, ids
    tied = np.flatnonzero(h[:, k] <= h[:, k - 1])
    left = 0
    for s0 in range(0, tied.size, TIE_ROWS):
        need, kr = tied[s0:s0 + TIE_ROWS], kk
        while need.size and kr < cap:
            kr = min(2 * kr + 16, cap)
            h2, i2 = raw(q[need], kr)
            for r, hr, ir in zip(need, h2, i2):
                ok = ir >= 0
                top = np.lexsort((ir[ok], hr[ok]))[:k]
                h[r], ids[r] = -1, -1
                h[r, :top.size], ids[r, :top.size] = hr[ok][top], ir[ok][top]
            need = need[~(h2[:, -1] > h2[:, k - 1])]
        left += need.size
    if left and cap < ntotal:
        warnings.warn(f"{left} queries have more items tied with their {k}-th "
                      f"distance than the engine returns ({cap}); among those ties the "
                      f"ids kept are not the smallest", RuntimeWarning, stacklevel=3)
    return h, ids


class _Padded:
    """Shared part: padding, mapping back, canonical order."""

    def __init__(self, bits: int, metric: str = "phd"):
        self.distance = distance(metric)  # ValueError naming the known metrics
        self.m = _check_width(bits)
        self.metric = metric
        self.ntotal = 0
        # the engine's code width in bits (bytes * 8)
        self.d = 8 * self.distance.engine_bytes(self.m)

    def _items(self, codes) -> np.ndarray:
        w = _words(codes, self.m, f"{type(self).__name__}.add")
        return self.distance.engine_items(w, self.m)

    def _queries(self, codes):
        w = _words(codes, self.m, f"{type(self).__name__}.search")
        return self.distance.engine_queries(w, self.m)

    def _back(self, h: np.ndarray, ids: np.ndarray, aux) -> np.ndarray:
        if not self.distance.items_negated:  # the engine's own distance
            return h
        out = np.full(h.shape, MISSING_DISTANCE, dtype=np.int64)
        ok = ids >= 0
        # missing slots hold any distance: give them one that maps back (to 0), then drop them
        h = np.where(ok, np.asarray(h, dtype=np.int64), self.m - np.asarray(aux)[:, None])
        try:
            d = self.distance.from_engine(h, aux, self.m)
        except ValueError as e:
            raise RuntimeError(f"the engine returned distances that are not padded PHDs ({e})") \
                from None
        out[ok] = d[ok]
        return out

    def _with_ties(self, raw, q: np.ndarray, k: int, cap: int):
        """:func:`complete_ties` with this engine's ``exact_ties`` and size."""
        return complete_ties(raw, q, k, cap, self.ntotal, self.exact_ties)

    def __len__(self) -> int:
        return self.ntotal


class FaissIndex(_Padded):
    """faiss binary index over padded codes: ``kind`` ``"flat"`` (exact),
    ``"hnsw"`` (graph, ``M`` links, ``ef_search``) or ``"ivf"`` (``nlist`` lists,
    ``nprobe`` probed; trained on the first ``add``)."""

    def __init__(self, bits: int, metric: str = "phd", kind: str = "flat", M: int = 32,
                 ef_search: int = 64, nlist: int = 1024, nprobe: int = 16,
                 exact_ties: bool | None = None):
        import faiss

        super().__init__(bits, metric)
        if kind == "flat":
            self.index = faiss.IndexBinaryFlat(self.d)
        elif kind == "hnsw":
            self.index = faiss.IndexBinaryHNSW(self.d, int(M))
            self.index.hnsw.efSearch = int(ef_search)
        elif kind == "ivf":
            self.quantizer = faiss.IndexBinaryFlat(self.d)
            self.index = faiss.IndexBinaryIVF(self.quantizer, self.d, int(nlist))
            self.index.nprobe = int(nprobe)
        else:
            raise ValueError(f"kind must be 'flat', 'hnsw' or 'ivf', got {kind!r}")
        # completing ties is what makes the exact scan equal BinaryIndex; an approximate
        # index is measured as the engine answers
        self.kind = kind
        self.exact_ties = kind == "flat" if exact_ties is None else bool(exact_ties)

    def add(self, codes) -> None:
        x = self._items(codes)
        if self.kind == "ivf" and not self.index.is_trained:
            if len(x) < self.index.nlist:
                raise ValueError(f"IVF with nlist={self.index.nlist} needs at least that many "
                                 f"codes to train, got {len(x)}")
            self.index.train(x)
        self.index.add(x)
        self.ntotal += len(x)

    def search(self, queries, k: int, tie_break=None):
        """``(distances int32 (q, k), ids int64 (q, k))`` in PHD (or Hamming) units.

        tie_break: a :class:`phdlib.serving.ties.TieBreak` (None: by id) ordering tied
        items (:func:`phdlib.serving.ties.engine_search`; exact for ``"flat"``, the
        fetched candidates re-ordered for HNSW and IVF)."""
        if tie_break is not None and not tie_break.is_id:
            return ties.engine_search(self.search, _words(queries, self.m, "search"), k,
                                      tie_break, self.ntotal, complete=self.exact_ties)
        q, pops = self._queries(queries)
        k = int(k)
        h, ids = self._with_ties(lambda x, kk: self.index.search(x, kk), q, k, self.ntotal)
        return _canonical(self._back(h, ids, pops), ids, k)

    def memory_bytes(self) -> int:
        """Bytes of the serialised index (codes, graph or lists)."""
        import faiss

        return int(faiss.serialize_index_binary(self.index).size)


class MilvusIndex(_Padded):
    """A Milvus collection of padded codes (``BINARY_VECTOR``, ``BIN_FLAT``, ``HAMMING``).

    ``uri``: a local file (Milvus Lite, embedded: ``"./codes.db"``) or a server
    or cluster (``"http://host:19530"``, with ``token``); the client code is the
    same. Ids are the positions in the order of ``add``. Milvus returns at most
    16,384 results a query (more tied items than that: a ``RuntimeWarning``);
    queries are sent in batches of ``query_batch``. The collection is created
    with strong consistency (a search sees every row inserted before it). A
    collection of that name that exists already is an error unless
    ``replace=True``, which drops it.
    """

    def __init__(self, bits: int, uri: str, collection: str = "phd_codes",
                 metric: str = "phd", token: str | None = None, exact_ties: bool = True,
                 replace: bool = False, query_batch: int = 1024):
        from pymilvus import DataType, MilvusClient

        super().__init__(bits, metric)
        self.client = MilvusClient(uri, **({"token": token} if token else {}))
        self.collection = collection
        self.query_batch = int(query_batch)
        if self.client.has_collection(collection):
            if not replace:
                raise ValueError(f"Milvus at {uri} already has a collection {collection!r}; "
                                 f"pass replace=True to drop it, or another name")
            self.client.drop_collection(collection)
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("code", DataType.BINARY_VECTOR, dim=self.d)
        params = self.client.prepare_index_params()
        params.add_index(field_name="code", index_type="BIN_FLAT", metric_type="HAMMING")
        self.client.create_collection(collection, schema=schema, index_params=params,
                                      consistency_level="Strong")
        self.exact_ties = exact_ties

    def add(self, codes, batch: int = 10_000) -> None:
        x = self._items(codes)
        for a in range(0, len(x), batch):
            rows = [{"id": self.ntotal + a + j, "code": x[a + j].tobytes()}
                    for j in range(min(batch, len(x) - a))]
            self.client.insert(self.collection, rows)
        self.ntotal += len(x)
        self.client.load_collection(self.collection)

    def _raw(self, q: np.ndarray, k: int):
        h = np.full((len(q), k), -1, dtype=np.int64)
        ids = np.full((len(q), k), -1, dtype=np.int64)
        for s0 in range(0, len(q), self.query_batch):
            res = self.client.search(
                self.collection, data=[r.tobytes() for r in q[s0:s0 + self.query_batch]],
                limit=k, search_params={"metric_type": "HAMMING"}, anns_field="code")
            for a, hits in enumerate(res, start=s0):
                for j, hit in enumerate(hits):
                    h[a, j], ids[a, j] = int(round(hit["distance"])), int(hit["id"])
        return h, ids

    def search(self, queries, k: int, tie_break=None):
        """``(distances int32 (q, k), ids int64 (q, k))`` in PHD (or Hamming) units;
        ``tie_break`` as :meth:`FaissIndex.search` (exact, up to Milvus' answer size)."""
        if tie_break is not None and not tie_break.is_id:
            return ties.engine_search(self.search, _words(queries, self.m, "search"), k,
                                      tie_break, self.ntotal, complete=self.exact_ties,
                                      cap=MILVUS_MAX_K)
        q, pops = self._queries(queries)
        k = int(k)
        if not 1 <= k <= MILVUS_MAX_K:
            raise ValueError(f"k={k}: Milvus answers 1..{MILVUS_MAX_K} results a query")
        h, ids = self._with_ties(self._raw, q, k, min(self.ntotal, MILVUS_MAX_K))
        return _canonical(self._back(h, ids, pops), ids, k)
