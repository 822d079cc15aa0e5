"""Kernels of the inverted-file index (:class:`phdlib.serving.ivf.IVFIndex`).

Codes are ``uint64`` arrays of shape ``(n, w)``, ``w = ceil(m / 64)`` words a
code (see :mod:`phdlib.codes`); every distance is an integer bit count in
``[0, m]``. The popcount is the LLVM intrinsic of :mod:`phdlib.kernels.bits`.

- :func:`assign`: the nearest centroid of every code by Hamming distance
  (ties: the smaller centroid index), parallel over contiguous chunks;
- :func:`bit_counts` and :func:`majority`: the k-majority update (per list,
  how many members have each bit set; a centroid bit is the members' majority,
  a tie keeps the old bit);
- :func:`search`: per chunk of queries (parallel over chunks) pick each
  query's ``nprobe`` nearest lists, scan each probed list's contiguous codes
  once for all the chunk's queries that probe it, and keep each query's ``k``
  smallest ``(distance, id)`` pairs.

Top-k state: a max-heap of ``k`` int64 keys ``(d << ID_BITS) | id``, so one
integer comparison orders by distance and then by id, the order of
:class:`phdlib.serving.search.BinaryIndex` (ties: smaller id first). Free slots
hold ``EMPTY`` (the int64 maximum). The caller guarantees ``id < 2**ID_BITS``
and ``m < 2**(62 - ID_BITS)``.

Results do not depend on the number of Numba threads.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .bits import popcount

#: bits of an id in a top-k key (ids below 2**40, about 10**12 codes)
ID_BITS = 40
#: a free top-k slot (larger than every real key)
EMPTY = np.iinfo(np.int64).max
#: the ``probe`` codes of :func:`search`: rank lists by popcount(q XOR c) or popcount(q AND NOT c)
PROBE_HAMMING, PROBE_PHD = 0, 1


@nb.njit(parallel=True, cache=True)
def assign(codes, centroids, labels, dists):
    """Nearest centroid of each code by Hamming distance (ties: smaller index).

    codes: uint64 (n, w); centroids: uint64 (nlist, w); labels: int32 (n,),
    dists: int32 (n,), both written. O(n nlist w). The running minimum is of
    one int64 key ``(d << 32) | j`` a centroid, so the loop over centroids is
    a branch-free min reduction that vectorises.
    """
    n, w = codes.shape
    nl = centroids.shape[0]
    chunks = max(1, min(n // 1024, 256))
    for c in nb.prange(chunks):
        for r in range(n * c // chunks, n * (c + 1) // chunks):
            best = EMPTY
            if w == 1:
                x = codes[r, 0]
                for j in range(nl):
                    best = min(best, (nb.int64(popcount(x ^ centroids[j, 0])) << 32) | j)
            else:
                for j in range(nl):
                    d = 0
                    for t in range(w):
                        d += popcount(codes[r, t] ^ centroids[j, t])
                    best = min(best, (nb.int64(d) << 32) | j)
            labels[r] = best & 0xFFFFFFFF
            dists[r] = best >> 32


@nb.njit(cache=True)
def bit_counts(codes, labels, m, counts, sizes):
    """Per list, members with each bit set. codes: uint64 (n, w); labels:
    int32 (n,); counts: int64 (nlist, m), sizes: int64 (nlist,), both zeroed
    by the caller and accumulated here. O(n m)."""
    n, w = codes.shape
    for r in range(n):
        lab = labels[r]
        sizes[lab] += 1
        for t in range(w):
            x = codes[r, t]
            b = t * 64
            while x:
                low = x & (~x + nb.uint64(1))  # lowest set bit
                counts[lab, b + popcount(low - nb.uint64(1))] += 1
                x ^= low


@nb.njit(cache=True)
def majority(counts, sizes, old, out):
    """Centroid words from member bit counts: bit set when more than half of
    the members have it, the ``old`` bit on an exact tie (and for an empty
    list). counts: int64 (nlist, m); sizes: int64 (nlist,); old, out: uint64
    (nlist, w), ``out`` written."""
    nl, m = counts.shape
    for j in range(nl):
        for t in range(out.shape[1]):
            out[j, t] = 0
        for b in range(m):
            t, s = b // 64, nb.uint64(b % 64)
            twice = 2 * counts[j, b]
            if twice > sizes[j]:
                bit = nb.uint64(1)
            elif twice < sizes[j]:
                bit = nb.uint64(0)
            else:
                bit = (old[j, t] >> s) & nb.uint64(1)
            out[j, t] |= bit << s


@nb.njit(inline="always", cache=True)
def _push(heap, key):
    """Replace the largest key of the max-heap ``heap`` (int64 (k,)) by the
    smaller ``key`` and restore the heap."""
    k = heap.shape[0]
    i = 0
    while True:
        a = 2 * i + 1
        if a >= k:
            break
        b = a + 1
        if b < k and heap[b] > heap[a]:
            a = b
        if heap[a] <= key:
            break
        heap[i] = heap[a]
        i = a
    heap[i] = key


@nb.njit(cache=True)
def _probe_keys(probe, q, centroids, out):
    """Keys ``(d << 32) | j`` of the query ``q`` (uint64 (w,)) to each centroid
    (uint64 (nlist, w)) into ``out`` (int64 (nlist,)); one vectorisable pass."""
    nl, w = centroids.shape
    if w == 1:
        q0 = q[0]
        if probe == PROBE_PHD:
            for j in range(nl):
                out[j] = (nb.int64(popcount(q0 & ~centroids[j, 0])) << 32) | j
        else:
            for j in range(nl):
                out[j] = (nb.int64(popcount(q0 ^ centroids[j, 0])) << 32) | j
    else:
        for j in range(nl):
            d = 0
            if probe == PROBE_PHD:
                for t in range(w):
                    d += popcount(q[t] & ~centroids[j, t])
            else:
                for t in range(w):
                    d += popcount(q[t] ^ centroids[j, t])
            out[j] = (nb.int64(d) << 32) | j


#: codes a segment of a list scan: their distances are computed in one
#: vectorised pass with their minimum; only a segment whose minimum is within
#: the current k-th distance is walked code by code.
SEG = 64
#: codes of a list kept in cache while every query that probes the list scans them
TILE = 512


@nb.njit(inline="always", cache=True)
def _id_at(ids, r):
    """The id of row ``r`` from ``ids`` (uint8 (n, b), little-endian bytes); int64."""
    v = nb.int64(0)
    for t in range(ids.shape[1]):
        v |= nb.int64(ids[r, t]) << (8 * t)
    return v


@nb.njit(inline="always", cache=True)
def _scan(op, q, stored, ids, lo, hi, heap, buf):
    """Offer rows ``stored[lo:hi]`` to the top-k max-heap ``heap`` (int64 (k,))
    of the query ``q`` (uint64 (w,)); ``buf``: int64 (SEG,) scratch.

    Per segment of ``SEG`` rows: distances and their minimum in one pass; when
    the minimum exceeds the heap's largest distance no row of the segment can
    enter (a key with a larger distance is larger), else the segment's rows
    within that distance are offered as keys ``(d << ID_BITS) | id``.
    """
    w = stored.shape[1]
    for s0 in range(lo, hi, SEG):
        s1 = min(s0 + SEG, hi)
        mn = nb.int64(1) << 62
        if w == 1:
            q0 = q[0]
            if op == 1:
                for r in range(s0, s1):
                    d = nb.int64(popcount(q0 & stored[r, 0]))
                    buf[r - s0] = d
                    mn = min(mn, d)
            else:
                for r in range(s0, s1):
                    d = nb.int64(popcount(q0 ^ stored[r, 0]))
                    buf[r - s0] = d
                    mn = min(mn, d)
        else:
            for r in range(s0, s1):
                d = nb.int64(0)
                if op == 1:
                    for t in range(w):
                        d += popcount(q[t] & stored[r, t])
                else:
                    for t in range(w):
                        d += popcount(q[t] ^ stored[r, t])
                buf[r - s0] = d
                mn = min(mn, d)
        thr = heap[0] >> ID_BITS
        if mn <= thr:
            for r in range(s0, s1):
                d = buf[r - s0]
                if d <= thr:
                    key = (d << ID_BITS) | _id_at(ids, r)
                    if key < heap[0]:
                        _push(heap, key)
                        thr = heap[0] >> ID_BITS


@nb.njit(cache=True)
def _nearest_lists(probe, q, centroids, ck, pk):
    """The ``nprobe = pk.shape[0]`` lists nearest to ``q`` into ``pk`` (int64),
    nearest first (ties: smaller list index); ``ck``: int64 (nlist,) scratch."""
    _probe_keys(probe, q, centroids, ck)
    pk[:] = EMPTY
    top = pk[0]
    for j in range(ck.shape[0]):
        if ck[j] < top:
            _push(pk, ck[j])
            top = pk[0]
    pk[:] = np.sort(pk) & 0xFFFFFFFF


@nb.njit(parallel=True, cache=True)
def search(op, probe, queries, centroids, stored, ids, offsets, nprobe, chunks, probes, keys):
    """Top-k of each query over its ``nprobe`` nearest lists.

    op: :data:`phdlib.kernels.search.OP_XOR` (0, Hamming) or ``OP_AND`` (1,
    PHD on stored NOT codes); probe: :data:`PROBE_HAMMING` or
    :data:`PROBE_PHD`, the distance from query to centroid that ranks the
    lists (ties: smaller list index); queries: uint64 (q, w); centroids:
    uint64 (nlist, w), plain codes; stored: uint64 (n, w), the codes list
    after list; ids: uint8 (n, b), the original id of each row in ``b``
    little-endian bytes; offsets: int64 (nlist + 1,), list ``j`` is
    ``stored[offsets[j]:offsets[j + 1]]``; chunks: the queries are split into
    this many contiguous chunks, one parallel task each; probes: int64 (q,
    nprobe) scratch; keys: int64 (q, k), written: each row the ``k`` smallest
    keys ``(d << ID_BITS) | id`` of the probed codes, ascending, ``EMPTY``
    where fewer codes were probed.

    Per chunk: (1) each query's ``nprobe`` nearest lists; (2) the nearest
    list of every query, which sets a tight k-th distance early; (3) the other
    probed lists. In (2) and (3) the lists are visited in index order and the
    codes of a list are read tile by tile (``TILE`` codes, in cache) by every
    query of the chunk that probes it, so a list shared by several queries is
    read from memory once.
    The top-k of a set of distinct keys does not depend on the order codes are
    offered in, so results do not depend on ``chunks`` or the thread count.
    """
    nq = queries.shape[0]
    nl = centroids.shape[0]
    for c in nb.prange(chunks):
        a0, a1 = nq * c // chunks, nq * (c + 1) // chunks
        ck = np.empty(nl, dtype=np.int64)
        buf = np.empty(SEG, dtype=np.int64)
        for a in range(a0, a1):
            _nearest_lists(probe, queries[a], centroids, ck, probes[a])
            keys[a, :] = EMPTY
        # ranks 0, then 1..nprobe-1: the (query, list) pairs grouped by list (counting sort)
        start = np.empty(nl + 1, dtype=np.int64)
        fill = np.empty(nl, dtype=np.int64)
        who = np.empty((a1 - a0) * max(1, nprobe - 1), dtype=np.int64)
        for r0, r1 in ((0, 1), (1, nprobe)):
            start[:] = 0
            for a in range(a0, a1):
                for p in range(r0, r1):
                    start[probes[a, p] + 1] += 1
            for j in range(nl):
                start[j + 1] += start[j]
            fill[:] = start[:nl]
            for a in range(a0, a1):
                for p in range(r0, r1):
                    j = probes[a, p]
                    who[fill[j]] = a
                    fill[j] += 1
            for j in range(nl):
                g0, g1 = start[j], start[j + 1]
                if g0 == g1:
                    continue
                lo, hi = offsets[j], offsets[j + 1]
                if g1 - g0 == 1:
                    a = who[g0]
                    _scan(op, queries[a], stored, ids, lo, hi, keys[a], buf)
                    continue
                for t0 in range(lo, hi, TILE):
                    t1 = min(t0 + TILE, hi)
                    for g in range(g0, g1):
                        a = who[g]
                        _scan(op, queries[a], stored, ids, t0, t1, keys[a], buf)
        for a in range(a0, a1):
            keys[a, :] = np.sort(keys[a])
