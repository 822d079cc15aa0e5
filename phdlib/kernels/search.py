"""Search kernels over packed binary codes: scans, tiled batches, fused top-k.

Codes are ``uint64`` arrays of shape ``(n, w)`` (``w`` words per code, see
:mod:`phdlib.codes`); queries are ``(w,)`` or ``(q, w)``. Every distance is an
integer bit count in ``[0, m]``. ``op`` selects the distance, always as a
plain ``int``:

- ``OP_XOR`` (0): Hamming, ``popcount(q XOR c)``;
- ``OP_AND`` (1): ``popcount(q AND c)``, which is PHD when the index stores
  the NOT of every item code (``PHD(u, i) = popcount(u AND NOT i)``);
- ``OP_XOR_AND`` (2): PHD in its defining form on plain item codes,
  ``popcount(q XOR (q AND c))``.

The distance loops branch on ``op`` once per block, never per code, so each
inner loop is a tight, vectorisable popcount loop (``vpopcntq`` where the CPU
has it). The popcount is the LLVM intrinsic of :mod:`phdlib.kernels.bits`.

Parallel kernels split the codes into contiguous chunks, one ``prange``
iteration each; results do not depend on the number of threads
(``numba.set_num_threads``).

Top-k tie order: among equal distances the smaller id comes first, so the
result is exactly the first ``k`` entries of a stable sort of the distances.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .bits import popcount as _popcount_u64

OP_XOR = 0
OP_AND = 1
OP_XOR_AND = 2

#: codes per block in the fused top-k: a block's minimum distance is computed
#: in one vectorised pass; only a block that holds a candidate is revisited
#: (4096: the per-block overhead stays small, and with a threshold that only
#: admits d < t once k ids are kept, candidate blocks stay rare).
TOPK_BLOCK = 4096
#: a candidate block's distances are checked in segments of this many codes;
#: only segments that hold a candidate are walked code by code.
TOPK_SUB = 64
#: codes per tile in the tiled batch kernels (32 KiB of 64-bit codes: L1/L2).
TILE = 4096
#: queries that share one pass over a tile in the tiled top-k.
QUERY_BLOCK = 16


# --------------------------------------------------------------------------- helpers


@nb.njit(inline="always", cache=True)
def popcount(x):
    """Set bits of one uint64 word as int64 (the ``bits`` intrinsic, cast).

    The cast keeps sums in integers: int64 + uint64 would promote to float64.
    """
    return nb.int64(_popcount_u64(x))


@nb.njit(inline="always", cache=True)
def _dist(op, q, codes, r):
    """Distance of query ``q`` (uint64 (w,)) to code row ``r``; int64."""
    w = codes.shape[1]
    s = 0
    if op == OP_XOR:
        for j in range(w):
            s += popcount(q[j] ^ codes[r, j])
    elif op == OP_AND:
        for j in range(w):
            s += popcount(q[j] & codes[r, j])
    else:
        for j in range(w):
            s += popcount(q[j] ^ (q[j] & codes[r, j]))
    return s


@nb.njit(inline="always", cache=True)
def flat_view(codes):
    """The (n, w) C-contiguous codes as one flat uint64 view (n * w,).

    Kernels take it once, outside their loops: loops over a 1-d slice indexed
    from 0 vectorise, while a ``reshape`` per block (a call into Numba's
    runtime) or indices ``lo..hi`` (possibly negative to Numba) do not.
    """
    return codes.reshape(codes.shape[0] * codes.shape[1])


@nb.njit(cache=True)
def range_sum(op, q, codes, flat, lo, hi):
    """Sum of the distances of ``q`` to codes ``lo..hi-1`` (int64).

    ``flat`` is :func:`flat_view` of ``codes`` (so are the other ``range_*``).

    The checksum that consumes every distance in the benchmark.
    """
    w = codes.shape[1]
    sub = flat[lo * w:hi * w]
    s = 0
    if w == 1:
        q0 = q[0]
        if op == OP_XOR:
            for r in range(sub.shape[0]):
                s += popcount(q0 ^ sub[r])
        elif op == OP_AND:
            for r in range(sub.shape[0]):
                s += popcount(q0 & sub[r])
        else:
            for r in range(sub.shape[0]):
                s += popcount(q0 ^ (q0 & sub[r]))
    else:
        for r in range(lo, hi):
            s += _dist(op, q, codes, r)
    return s


@nb.njit(cache=True)
def range_min(op, q, codes, flat, lo, hi):
    """Smallest distance of ``q`` to codes ``lo..hi-1`` (int64; ``lo < hi``)."""
    w = codes.shape[1]
    sub = flat[lo * w:hi * w]
    mn = 1 << 30
    if w == 1:
        q0 = q[0]
        if op == OP_XOR:
            for r in range(sub.shape[0]):
                mn = min(mn, popcount(q0 ^ sub[r]))
        elif op == OP_AND:
            for r in range(sub.shape[0]):
                mn = min(mn, popcount(q0 & sub[r]))
        else:
            for r in range(sub.shape[0]):
                mn = min(mn, popcount(q0 ^ (q0 & sub[r])))
    else:
        for r in range(lo, hi):
            mn = min(mn, _dist(op, q, codes, r))
    return mn


@nb.njit(cache=True)
def dist_into(op, q, codes, flat, lo, hi, o):
    """Distances of ``q`` to codes ``lo..hi-1`` into ``o[0:hi-lo]`` (int32)."""
    w = codes.shape[1]
    sub = flat[lo * w:hi * w]
    if w == 1:
        q0 = q[0]
        if op == OP_XOR:
            for r in range(sub.shape[0]):
                o[r] = popcount(q0 ^ sub[r])
        elif op == OP_AND:
            for r in range(sub.shape[0]):
                o[r] = popcount(q0 & sub[r])
        else:
            for r in range(sub.shape[0]):
                o[r] = popcount(q0 ^ (q0 & sub[r]))
    else:
        for r in range(hi - lo):
            o[r] = _dist(op, q, codes, lo + r)


@nb.njit(cache=True)
def range_dist(op, q, codes, flat, lo, hi, out):
    """Distances of ``q`` to codes ``lo..hi-1`` into ``out[lo:hi]`` (int32)."""
    dist_into(op, q, codes, flat, lo, hi, out[lo:hi])


# --------------------------------------------------------------------------- scans


@nb.njit(parallel=True, cache=True)
def scan_sum(op, q, codes, nc):
    """Sum of the distances of one query to all codes: int64.

    q: uint64 (w,); codes: uint64 (n, w). Every distance is computed and
    consumed; parallel over chunks of codes.
    """
    n = codes.shape[0]
    flat = flat_view(codes)
    part = np.zeros(nc, dtype=np.int64)
    for c in nb.prange(nc):
        lo = n * c // nc
        hi = n * (c + 1) // nc
        part[c] = range_sum(op, q, codes, flat, lo, hi)
    return part.sum()


@nb.njit(parallel=True, cache=True)
def scan(op, q, codes, out, nc):
    """Distances of one query to all codes.

    q: uint64 (w,); codes: uint64 (n, w); out: int32 (n,), written.
    Parallel over chunks of codes.
    """
    n = codes.shape[0]
    flat = flat_view(codes)
    for c in nb.prange(nc):
        range_dist(op, q, codes, flat, n * c // nc, n * (c + 1) // nc, out)


@nb.njit(parallel=True, cache=True)
def batch_tiled(op, queries, codes, out):
    """Distances of every query to every code, tiled for cache reuse.

    queries: uint64 (q, w); codes: uint64 (n, w); out: int32 (q, n), written.
    Each tile of ``TILE`` codes is read from memory once and scored against
    all queries while it sits in cache; parallel over tiles.
    """
    n, nq = codes.shape[0], queries.shape[0]
    flat = flat_view(codes)
    for t in nb.prange((n + TILE - 1) // TILE):
        lo, hi = t * TILE, min(t * TILE + TILE, n)
        for a in range(nq):
            range_dist(op, queries[a], codes, flat, lo, hi, out[a])


# --------------------------------------------------------------------------- fused top-k


@nb.njit(cache=True)
def topk_range(op, q, codes, flat, lo, hi, k, fill, ids, state, dbuf):
    """One pass of the bucket top-k over codes ``lo..hi-1`` (ids in order).

    Distances are integers in ``[0, m]``: bucket ``d`` keeps, in id order, the
    first ids seen at distance ``d`` (at most ``k``). ``state = [t, s]`` holds
    the threshold ``t`` (no code farther than ``t`` can enter the top-k) and
    ``s``, the number of ids kept in buckets ``0..t``. A block of
    ``TOPK_BLOCK`` codes whose minimum distance exceeds ``t`` is rejected after
    one vectorised pass; in other blocks the distances go to ``dbuf`` and only
    segments of ``TOPK_SUB`` codes that hold a candidate are walked code by
    code.

    flat: :func:`flat_view` of codes; fill: int32 (m + 1,) bucket sizes;
    ids: int64 (m + 1, k) bucket contents;
    state: int64 (2,), initially ``[m, 0]``; all three updated in place.
    dbuf: int32 (TOPK_BLOCK,) scratch.
    """
    t = state[0]
    s = state[1]
    for b0 in range(lo, hi, TOPK_BLOCK):
        b1 = min(b0 + TOPK_BLOCK, hi)
        # a code enters only if d < t, or d == t while fewer than k are kept
        if range_min(op, q, codes, flat, b0, b1) > (t - 1 if s >= k else t):
            continue
        # a candidate block: its distances into the small buffer (vectorised),
        # then the bucket updates from the buffer
        dist_into(op, q, codes, flat, b0, b1, dbuf)
        for s0 in range(0, b1 - b0, TOPK_SUB):
            s1 = min(s0 + TOPK_SUB, b1 - b0)
            seg = dbuf[s0:s1]
            mn = seg[0]
            for r in range(seg.shape[0]):
                mn = min(mn, seg[r])
            if mn > (t - 1 if s >= k else t):
                continue
            for r in range(s0, s1):
                d = dbuf[r]
                if d < t or (d == t and s < k):
                    ids[d, fill[d]] = b0 + r
                    fill[d] += 1
                    s += 1
                    # lower the threshold while buckets 0..t-1 alone hold k ids
                    while t > 0 and s - fill[t] >= k:
                        s -= fill[t]
                        t -= 1
    state[0] = t
    state[1] = s


@nb.njit(cache=True)
def _merge_buckets(fills, idss, k, out_d, out_i):
    """Merge per-chunk buckets (chunks in id order) into the sorted top-k.

    fills: int32 (c, m + 1); idss: int64 (c, m + 1, k); out_d: int32 (k,);
    out_i: int64 (k,). Slots past the number of codes get id -1 and
    distance ``int32 max``.
    """
    nc, mp1 = fills.shape
    j = 0
    for d in range(mp1):
        for c in range(nc):
            f = fills[c, d]
            for x in range(f):
                if j == k:
                    return
                out_d[j] = d
                out_i[j] = idss[c, d, x]
                j += 1
    while j < k:
        out_d[j] = np.iinfo(np.int32).max
        out_i[j] = -1
        j += 1


@nb.njit(parallel=True, cache=True)
def topk_fused(op, q, codes, m, k, out_d, out_i, nc):
    """Top-k of one query in one pass over the codes (bucket counting).

    q: uint64 (w,); codes: uint64 (n, w); m: code width in bits; k >= 1;
    out_d: int32 (k,) distances; out_i: int64 (k,) ids, both written, sorted by
    (distance, id). Parallel over chunks of codes, each with its own buckets,
    merged at the end. Memory: ``chunks * (m + 1) * k`` int64.
    """
    n = codes.shape[0]
    flat = flat_view(codes)
    fills = np.zeros((nc, m + 1), dtype=np.int32)
    idss = np.empty((nc, m + 1, k), dtype=np.int64)
    for c in nb.prange(nc):
        st = np.empty(2, dtype=np.int64)
        st[0] = m
        st[1] = 0
        dbuf = np.empty(TOPK_BLOCK, dtype=np.int32)
        topk_range(op, q, codes, flat, n * c // nc, n * (c + 1) // nc, k, fills[c], idss[c], st,
                   dbuf)
    _merge_buckets(fills, idss, k, out_d, out_i)


@nb.njit(parallel=True, cache=True)
def topk_tiled(op, queries, codes, m, k, out_d, out_i):
    """Top-k of many queries, tiled: a block of queries shares each tile.

    queries: uint64 (q, w); codes: uint64 (n, w); out_d: int32 (q, k);
    out_i: int64 (q, k), written. Parallel over blocks of ``QUERY_BLOCK``
    queries; each tile of ``TILE`` codes is read once per query block.
    """
    n = codes.shape[0]
    flat = flat_view(codes)
    nq = queries.shape[0]
    nb_ = (nq + QUERY_BLOCK - 1) // QUERY_BLOCK
    for b in nb.prange(nb_):
        a0 = b * QUERY_BLOCK
        a1 = min(a0 + QUERY_BLOCK, nq)
        g = a1 - a0
        fills = np.zeros((g, m + 1), dtype=np.int32)
        idss = np.empty((g, m + 1, k), dtype=np.int64)
        sts = np.empty((g, 2), dtype=np.int64)
        dbuf = np.empty(TOPK_BLOCK, dtype=np.int32)
        for a in range(g):
            sts[a, 0] = m
            sts[a, 1] = 0
        for lo in range(0, n, TILE):
            hi = min(lo + TILE, n)
            for a in range(g):
                topk_range(op, queries[a0 + a], codes, flat, lo, hi, k, fills[a], idss[a],
                           sts[a], dbuf)
        for a in range(g):
            _merge_buckets(fills[a:a + 1], idss[a:a + 1], k, out_d[a0 + a], out_i[a0 + a])


# --------------------------------------------------------------------------- two-pass top-k (large k)


@nb.njit(parallel=True, cache=True)
def topk_twopass(op, q, codes, m, k, out_d, out_i, nc):
    """Top-k of one query for large ``k``: a histogram pass, then a gather.

    Memory ``O(chunks * (m + 1))`` whatever ``k``; reads the codes twice.
    Shapes as :func:`topk_fused`; same result and tie order.
    """
    n = codes.shape[0]
    hist = np.zeros((nc, m + 1), dtype=np.int64)
    for c in nb.prange(nc):
        for r in range(n * c // nc, n * (c + 1) // nc):
            hist[c, _dist(op, q, codes, r)] += 1
    tot = hist.sum(axis=0)
    kk = min(k, n)
    # threshold t: smallest distance with cumulative count >= kk
    cum = 0
    t = 0
    for d in range(m + 1):
        t = d
        if cum + tot[d] >= kk:
            break
        cum += tot[d]
    # start[d]: first output slot of distance d; chunk c starts after chunks < c
    start = np.zeros(m + 2, dtype=np.int64)
    for d in range(m + 1):
        start[d + 1] = start[d] + tot[d]
    off = np.zeros((nc, m + 1), dtype=np.int64)
    for d in range(m + 1):
        acc = start[d]
        for c in range(nc):
            off[c, d] = acc
            acc += hist[c, d]
    for c in nb.prange(nc):
        pos = off[c].copy()
        for r in range(n * c // nc, n * (c + 1) // nc):
            d = _dist(op, q, codes, r)
            if d <= t:
                p = pos[d]
                if p < kk:
                    out_d[p] = d
                    out_i[p] = r
                pos[d] = p + 1
    for j in range(kk, k):
        out_d[j] = np.iinfo(np.int32).max
        out_i[j] = -1
