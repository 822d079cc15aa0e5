"""Inverted-file index over native binary codes: ``IVFIndex``.

In the manner of faiss's ``IndexBinaryIVF``, but on the native ``m``-bit codes
(no padding: PHD is computed as ``popcount(u AND NOT i)`` on the stored NOT of
each item, as :class:`phdlib.serving.search.BinaryIndex` does)::

    index = IVFIndex(64, metric="phd", nlist=1024, nprobe=8, seed=0)
    index.add(item_codes)          # trains on the first batch when not trained
    index.nprobe = 32              # settable any time
    distances, ids = index.search(user_codes, k=10)

Layout (all C-contiguous):

- ``centroids``: uint64 ``(nlist, w)``, ``w = ceil(m / 64)``: the plain list
  centres (padding bits 0);
- ``stored``: uint64 ``(ntotal, w)``: the codes list after list (Hamming: as
  added; PHD: their NOT), ascending original id within a list;
- ``id_bytes``: uint8 ``(ntotal, b)``: the original id (position in the
  order of ``add``) of each row of ``stored`` in its ``b`` low little-endian
  bytes, ``b`` the fewest (at least 1) that hold ``ntotal - 1`` (re-laid by
  every ``add``); :attr:`IVFIndex.ids` decodes them to int64;
- ``offsets``: int64 ``(nlist + 1,)``: list ``j`` is rows
  ``offsets[j]:offsets[j + 1]``.

So a 64-bit code costs 8 bytes of code plus ``b`` bytes of id: 3 up to
2**24 codes, 4 up to 2**32. At 10,000,000 64-bit codes and 4096 lists that is
110,065,544 bytes (105.0 MiB) in all (:meth:`IVFIndex.memory_bytes` counts
all four arrays), against 240,098,419 bytes (229.0 MiB) for faiss's
``IndexBinaryIVF`` on the 128-bit padded codes with int64 ids (0.458 of it).
The ids are read only for the codes that pass the top-k threshold, so their
packing costs the scan nothing measurable.

Coarse quantiser: k-majority (binary k-means). ``nlist`` distinct codes of a
seeded sample of at most ``train_per_list * nlist`` training codes start as
centres; each of at most ``niter`` rounds assigns every sample code to its
nearest centre by Hamming distance (ties: smaller list index) and sets each
centre bit to its members' majority (an exact tie keeps the old bit); a list
left empty takes a random sample code (seeded). Every added code goes to its
nearest centre by Hamming distance, for both metrics. Build cost:
``O(s nlist w niter + s m niter + n nlist w)`` for ``s`` sample codes and ``n``
added codes.

Probing: a query scans the ``nprobe`` lists whose centres are nearest to it
(ties: smaller list index). ``probe="phd"`` (the default for ``metric="phd"``)
ranks lists by ``PHD(u, c) = popcount(u AND NOT c)``; ``probe="hamming"`` by
``popcount(u XOR c)``. Why PHD: for an item ``i`` in the list of centre ``c``,
``u AND NOT i`` lies within ``(u AND NOT c) OR (c AND NOT i)`` and
``u AND NOT c`` within ``(u AND NOT i) OR (i AND NOT c)``, so
``|PHD(u, i) - PHD(u, c)| <= Hamming(c, i)``: with
items close to their centre in Hamming distance, ``PHD(u, c)`` estimates the
PHD of the whole list, whereas ``Hamming(u, c)`` also counts the bits of ``c``
that ``u`` lacks, which PHD does not charge. Measured with
``python -m phdlib.bench.ivf --items 1000000`` (1M 64-bit items near 1024
planted centres, Zipf popularity, 15% bit flips; 1000 queries; k = 10;
nlist = 4000; seed 0), tie-aware recall@10 by nprobe = 1, 2, 4, 8, 16, 32, 64:

- ``probe="phd"``:     0.679, 0.818, 0.907, 0.956, 0.978, 0.990, 0.996;
- ``probe="hamming"``: 0.764, 0.804, 0.821, 0.850, 0.882, 0.909, 0.942.

Hamming ranking wins only at ``nprobe = 1`` (the query's own cluster); from
2 lists on PHD ranking wins, and from 4 lists on it reaches a recall that
Hamming ranking needs 4 times the lists for (0.907 at 4 against 0.882 at 16)
or more (0.956 at 8 against 0.942 at 64); hence PHD is the default for PHD.
With the former training sample of 64 codes a list PHD ranking gave 0.663,
0.799, 0.887, 0.945, 0.975, 0.988, 0.995 (256 a list, the most faiss's
k-means uses, costs 7 s of build instead of 4 s here and 15 s instead of
10 s at 10M codes). Two mixes measured with that former sample did not do
better from 4 lists on: PHD with ties broken by ``popcount(c AND NOT u)``
(0.883, 0.937, 0.973 at 4, 8, 16) and ``4 PHD(u, c) + popcount(c AND NOT u)``
(0.877, 0.925, 0.963).

Search (:func:`phdlib.kernels.ivf.search`): the queries are cut into one
contiguous chunk per Numba thread. Per query, the distances to all centres in
one pass and the ``nprobe`` nearest by a heap; then the chunk's lists are
visited in index order, first the nearest list of each query (which sets a
tight ``k``-th distance early), then the other probed lists, each read tile
by tile by every query of the chunk that probes it (a list shared by queries
is read from memory once). A scan computes the distances of 64 contiguous codes and their
minimum in one vectorised popcount pass and walks the 64 only when the minimum
is within the current ``k``-th distance; only such codes are offered to a
max-heap of ``k`` keys ``(distance, id)`` (one int64 each). Search costs
``O(nlist w + sum of the probed lists' lengths * w)`` a query. The
answer is sorted by (distance, id), ties broken by the smaller original id,
exactly as :class:`~phdlib.serving.search.BinaryIndex`. With ``nprobe =
nlist`` every list is scanned, so ids and distances equal BinaryIndex's. Missing
slots (fewer than ``k`` codes probed) hold id ``-1`` and distance ``2**31 - 1``.
Queries run in parallel on Numba's threads, with the same results on any
number of them (the top-k of a set of distinct keys does not depend on the
order they are offered in).

Measured on one thread (``NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1``; CPU time of
the search, best of 5, on a shared 2-core Intel Xeon with AVX-512 VPOPCNTDQ)
at 10,000,000 synthetic 64-bit codes, 1000 queries, k = 10, nlist = 4096,
against faiss ``IndexBinaryIVF`` built on the same codes (padded) and lists
count: recall@10 / queries per second by nprobe 16, 24, 32

- this index: 0.988 / 25.8k, 0.993 / 20.0k, 0.996 / 16.4k (before the
  chunked, segment-minimum scan and the 256-code-a-list sample, at 16 and
  32: 0.988 / 17k, 0.994 / 10k);
- faiss: 0.990 / 12.5k, 0.993 / 9.0k, 0.995 / 7.2k.

At recall 0.99 (interpolated along each curve) that is about 24k against
12k queries per second, with 0.458 of faiss's memory. Of the time at nprobe
16 about a seventh is the centre ranking, a quarter walking the segments
that hold candidates, and the rest the popcount pass, bound by reading the
lists from memory (the same queries repeated, so that the lists stay in
cache, run twice as fast; a software prefetch ahead of the scan did not
help, nor did a histogram instead of the heap to pick the nearest lists).
"""
from __future__ import annotations

import numba
import numpy as np

from ..codes import distances as D
from ..codes import packed as C
from ..kernels import ivf as K
from . import ties
from .search import METRICS, _as_words, _check_output_size

__all__ = ["IVFIndex", "PROBES"]

#: probe name -> :mod:`phdlib.kernels.ivf` probe code (distance from a query to a list
#: centre): the distances of :mod:`phdlib.codes.distances` that the kernel has a probe for
PROBES = {D.HAMMING.name: K.PROBE_HAMMING, D.PHD.name: K.PROBE_PHD}
_INT32_MAX = np.iinfo(np.int32).max


def _positive_int(value, what: str, low: int = 1, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]``, else ValueError naming it."""
    ok = (not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, np.integer))
          and value >= low and (high is None or value <= high))
    if not ok:
        span = f"in {low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{what} must be an integer {span}, got {value!r}")
    return int(value)


class IVFIndex:
    """Approximate top-k over ``m``-bit codes: inverted lists on k-majority centres.

    Parameters
    ----------
    bits : int
        Code width ``m`` (any positive integer; ``ceil(m/64)`` words a code).
    metric : {"hamming", "phd"}
        As :class:`phdlib.serving.search.BinaryIndex`: the query is the user
        code, the stored codes are items, ``PHD(u, i) = popcount(u AND NOT i)``.
    nlist : int or None
        Number of lists. None: chosen at training from the ``n`` training
        codes, ``min(n, 4096, max(1, round(4 sqrt(n))))``.
    nprobe : int
        Lists scanned a query, ``1..nlist`` (settable after build).
    seed : int
        Seeds the training sample, the initial centres and empty-list refills.
    probe : {"phd", "hamming"} or None
        Distance that ranks lists for a query; None: the metric's own.
    niter : int
        At most this many k-majority rounds (stops early when no code moves).
    train_per_list : int
        Training sample size a list (the sample is ``min(n, train_per_list * nlist)``).
    """

    def __init__(self, bits: int, metric: str = "phd", nlist: int | None = None,
                 nprobe: int = 1, seed: int = 0, probe: str | None = None,
                 niter: int = 10, train_per_list: int = 256):
        self.m = C._check_width(bits)
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
        probe = metric if probe is None else probe
        if probe not in PROBES:
            raise ValueError(f"probe must be one of {sorted(PROBES)}, got {probe!r}")
        if self.m >= 1 << (62 - K.ID_BITS):
            raise ValueError(f"bits must be below {1 << (62 - K.ID_BITS)} for IVFIndex, got {bits}")
        self.metric, self.probe = metric, probe
        self.distance = D.distance(metric)
        self.op = self.distance.search_op
        self.w = C.n_words(self.m)
        self._nlist = None if nlist is None else _positive_int(nlist, "nlist")
        self._nprobe = _positive_int(nprobe, "nprobe", 1, self._nlist)
        self.seed = int(seed)
        self.niter = _positive_int(niter, "niter")
        self.train_per_list = _positive_int(train_per_list, "train_per_list")
        self.centroids = None
        self.reset()

    # -- state -----------------------------------------------------------
    @property
    def is_trained(self) -> bool:
        return self.centroids is not None

    @property
    def nlist(self) -> int | None:
        """Number of lists (None before training when not given)."""
        return self._nlist

    @property
    def nprobe(self) -> int:
        return self._nprobe

    @nprobe.setter
    def nprobe(self, value) -> None:
        self._nprobe = _positive_int(value, "nprobe", 1, self._nlist)

    @property
    def ntotal(self) -> int:
        return self.stored.shape[0]

    def __len__(self) -> int:
        return self.ntotal

    def __repr__(self) -> str:
        return (f"IVFIndex(bits={self.m}, metric={self.metric!r}, nlist={self._nlist}, "
                f"nprobe={self._nprobe}, probe={self.probe!r}, ntotal={self.ntotal})")

    def list_sizes(self) -> np.ndarray:
        """int64 ``(nlist,)``: codes in each list."""
        return np.diff(self.offsets)

    @property
    def ids(self) -> np.ndarray:
        """int64 ``(ntotal,)``: the original id of each row of ``stored`` (decoded
        from :attr:`id_bytes`; a new array)."""
        full = np.zeros((self.ntotal, 8), dtype=np.uint8)
        full[:, :self.id_bytes.shape[1]] = self.id_bytes
        return full.view("<i8").reshape(-1).astype(np.int64)

    def memory_bytes(self) -> int:
        """Bytes of every array the index holds: codes, ids, offsets and centroids."""
        cent = 0 if self.centroids is None else self.centroids.nbytes
        return int(self.stored.nbytes + self.id_bytes.nbytes + self.offsets.nbytes + cent)

    def reset(self) -> None:
        """Remove every code (the centres stay)."""
        self.stored = np.empty((0, self.w), dtype=np.uint64)
        self.id_bytes = np.empty((0, 1), dtype=np.uint8)
        self.offsets = np.zeros((self._nlist or 0) + 1, dtype=np.int64)

    # -- build -----------------------------------------------------------
    def train(self, codes) -> None:
        """Learn the ``nlist`` centres by k-majority on (a seeded sample of) ``codes``.

        codes: PackedCodes of width ``m`` or uint64 ``(n, w)``, plain. Needs
        ``n >= nlist``. Retraining drops every stored code.
        """
        x = _as_words(codes, self.m, "IVFIndex.train")
        n = x.shape[0]
        nlist = self._nlist
        if nlist is None:
            nlist = int(min(n, 4096, max(1, round(4 * np.sqrt(n)))))
        if n < max(nlist, 1):
            raise ValueError(f"IVFIndex.train: needs at least nlist={nlist} codes, got {n}")
        if self._nprobe > nlist:
            raise ValueError(f"nprobe must be an integer in 1..{nlist} (nlist), "
                             f"got {self._nprobe}")
        rng = np.random.default_rng(self.seed)
        s = min(n, self.train_per_list * nlist)
        sample = x if s == n else x[np.sort(rng.choice(n, size=s, replace=False))]
        sample = np.ascontiguousarray(sample)
        cent = _distinct_start(sample, nlist, rng)
        labels = np.full(s, -1, dtype=np.int32)
        new = np.empty(s, dtype=np.int32)
        dists = np.empty(s, dtype=np.int32)
        for _ in range(self.niter):
            K.assign(sample, cent, new, dists)
            if np.array_equal(new, labels):
                break
            labels[:] = new
            counts = np.zeros((nlist, self.m), dtype=np.int64)
            sizes = np.zeros(nlist, dtype=np.int64)
            K.bit_counts(sample, labels, self.m, counts, sizes)
            out = np.empty_like(cent)
            K.majority(counts, sizes, cent, out)
            empty = np.flatnonzero(sizes == 0)
            if empty.size:
                out[empty] = sample[rng.choice(s, size=empty.size, replace=False)]
            cent = out
        self._nlist = nlist
        self.centroids = np.ascontiguousarray(cent)
        self.reset()

    def add(self, codes) -> None:
        """Append codes (ids continue from ``ntotal``); trains on them first when untrained.

        codes: PackedCodes of width ``m`` or uint64 ``(n, w)``, plain (not
        negated). Each goes to the list of its nearest centre (Hamming).
        """
        words = _as_words(codes, self.m, "IVFIndex.add")
        if not self.is_trained:
            self.train(words)
        n = words.shape[0]
        if n == 0:
            return
        if self.ntotal + n >= 1 << K.ID_BITS:
            raise ValueError(f"IVFIndex holds fewer than 2**{K.ID_BITS} codes, "
                             f"got {self.ntotal} + {n}")
        labels = np.empty(n, dtype=np.int32)
        K.assign(words, self.centroids, labels, np.empty(n, dtype=np.int32))
        if self.distance.items_negated:
            words = np.bitwise_not(words)
        old = np.repeat(np.arange(self._nlist, dtype=np.int32), np.diff(self.offsets))
        all_labels = np.concatenate([old, labels])
        order = np.argsort(all_labels, kind="stable")  # keeps ids ascending within a list
        start = self.ntotal
        ids = np.concatenate([self.ids, np.arange(start, start + n, dtype=np.int64)])[order]
        self.id_bytes = _id_bytes(ids, start + n)
        self.stored = np.ascontiguousarray(np.concatenate([self.stored, words])[order])
        self.offsets = np.zeros(self._nlist + 1, dtype=np.int64)
        np.cumsum(np.bincount(all_labels, minlength=self._nlist), out=self.offsets[1:])

    # -- search ----------------------------------------------------------
    def search(self, queries, k: int, tie_break=None):
        """The ``k`` nearest codes among the ``nprobe`` probed lists of each query.

        queries: PackedCodes or uint64 ``(q, w)`` (or one code ``(w,)``).
        Returns ``(distances, ids)``: int32 ``(q, k)`` and int64 ``(q, k)``,
        sorted by (distance, id); id ``-1`` / distance ``2**31 - 1`` where the
        probed lists hold fewer than ``k`` codes. tie_break: a
        :class:`phdlib.serving.ties.TieBreak` ordering tied items instead of the id
        (:func:`phdlib.serving.ties.engine_search`: exact when every list is probed,
        else the fetched candidates re-ordered).
        """
        if tie_break is not None and not tie_break.is_id:
            return ties.engine_search(self.search, _as_words(queries, self.m, "IVFIndex.search"),
                                      k, tie_break, self.ntotal,
                                      complete=self._nprobe >= self.nlist)
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        k = int(k)
        if not self.is_trained:
            raise ValueError("IVFIndex.search: the index is not trained; expected train(codes) "
                             "or add(codes) first")
        q = _as_words(queries, self.m, "IVFIndex.search")
        nq = q.shape[0]
        _check_output_size(nq, k, self.ntotal)
        keys = np.empty((nq, k), dtype=np.int64)
        if nq:
            probes = np.empty((nq, self._nprobe), dtype=np.int64)
            chunks = max(1, min(nq, numba.get_num_threads()))
            K.search(self.op, PROBES[self.probe], q, self.centroids, self.stored, self.id_bytes,
                     self.offsets, self._nprobe, chunks, probes, keys)
        empty = keys == K.EMPTY
        ids = np.where(empty, -1, keys & ((1 << K.ID_BITS) - 1)).astype(np.int64)
        dist = np.where(empty, _INT32_MAX, keys >> K.ID_BITS).astype(np.int32)
        return dist, ids


def _id_bytes(ids: np.ndarray, n: int) -> np.ndarray:
    """uint8 ``(len(ids), b)``: each id (int64, ``0 <= id < n``) in its ``b``
    little-endian low bytes, ``b`` the fewest (at least 1) that hold ``n - 1``."""
    b = max(1, (int(n - 1).bit_length() + 7) // 8)
    return np.ascontiguousarray(ids.astype("<i8").view(np.uint8).reshape(-1, 8)[:, :b])


def _distinct_start(sample: np.ndarray, nlist: int, rng) -> np.ndarray:
    """``nlist`` starting centres: distinct codes of ``sample`` (uint64 ``(s, w)``)
    in a seeded random order, topped up with random sample codes when the sample
    holds fewer distinct codes."""
    perm = rng.permutation(sample.shape[0])
    _, first = np.unique(sample[perm], axis=0, return_index=True)
    pick = perm[np.sort(first)][:nlist]
    if pick.size < nlist:
        pick = np.concatenate([pick, rng.choice(sample.shape[0], nlist - pick.size)])
    return np.ascontiguousarray(sample[pick])
