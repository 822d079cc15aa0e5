"""Popcount and the Hamming / PHD distance kernels over packed uint64 codes.

Codes are packed as ``uint64`` arrays of shape ``(n, w)`` with
``w = ceil(m / 64)`` words per code (see :mod:`phdlib.codes`). All distances
are returned as ``int32`` counts of bits, in ``[0, m]``.

Numba has no ``np.bitwise_count``; :func:`popcount` wraps LLVM's ``ctpop``
intrinsic, which compiles to a single ``popcnt`` instruction on x86-64.
"""
from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def _ctpop64(typingctx, x):
    """LLVM ``ctpop`` on one uint64; returns the count as uint64."""
    if not isinstance(x, types.Integer) or x.bitwidth != 64:
        return None
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        (val,) = args
        fnty = ir.FunctionType(ir.IntType(64), [ir.IntType(64)])
        fn = builder.module.declare_intrinsic("llvm.ctpop", [ir.IntType(64)], fnty)
        return builder.call(fn, [val])

    return sig, codegen


@nb.njit(inline="always", cache=True)
def popcount(x):
    """Number of set bits of one uint64 word."""
    return _ctpop64(nb.uint64(x))


@nb.njit(cache=True)
def popcount_rows(codes):
    """Set bits per row. codes: uint64 (n, w) -> int32 (n,)."""
    n, w = codes.shape
    out = np.empty(n, dtype=np.int32)
    for r in range(n):
        s = 0
        for j in range(w):
            s += popcount(codes[r, j])
        out[r] = s
    return out


@nb.njit(cache=True)
def hamming_scan(query, codes, out):
    """Hamming distance of one code to many: popcount(q XOR c).

    query: uint64 (w,); codes: uint64 (n, w); out: int32 (n,), written.
    """
    n, w = codes.shape
    if w == 1:
        q0 = query[0]
        for r in range(n):
            out[r] = popcount(q0 ^ codes[r, 0])
    else:
        for r in range(n):
            s = 0
            for j in range(w):
                s += popcount(query[j] ^ codes[r, j])
            out[r] = s


@nb.njit(cache=True)
def and_scan(query, codes, out):
    """popcount(q AND c) of one code against many.

    With ``codes`` holding the stored NOT of the items this is PHD:
    ``PHD(u, i) = popcount(u AND NOT i)``; one AND and one popcount per word,
    the same cost as Hamming.

    query: uint64 (w,); codes: uint64 (n, w); out: int32 (n,), written.
    """
    n, w = codes.shape
    if w == 1:
        q0 = query[0]
        for r in range(n):
            out[r] = popcount(q0 & codes[r, 0])
    else:
        for r in range(n):
            s = 0
            for j in range(w):
                s += popcount(query[j] & codes[r, j])
            out[r] = s


@nb.njit(cache=True)
def phd_xor_and_scan(query, codes, out):
    """PHD in its defining form: popcount(u XOR (u AND i)), items not negated.

    query: uint64 (w,); codes: uint64 (n, w); out: int32 (n,), written.
    """
    n, w = codes.shape
    for r in range(n):
        s = 0
        for j in range(w):
            q = query[j]
            s += popcount(q ^ (q & codes[r, j]))
        out[r] = s


#: The ``op`` codes of :func:`scan_batch`.
HAMMING, AND, PHD_XOR_AND = 0, 1, 2


@nb.njit(parallel=True, cache=True)
def pair_scan(op, user_codes, item_codes, user, item, out):
    """popcount(u XOR i) or popcount(u AND i) of given (user, item) pairs.

    op: :data:`HAMMING` or :data:`AND` (PHD when ``item_codes`` are stored
    NOT); user_codes: uint64 (n_users, w); item_codes: uint64 (n_items, w);
    user, item: int64 (N,) ids (in range: the caller checks); out: int32
    (N,), written. One pass over the pairs: O(N w), never users x items.
    """
    n, w = user.shape[0], user_codes.shape[1]
    chunks = max(1, min(n // 4096, 64))
    for c in nb.prange(chunks):
        for k in range(n * c // chunks, n * (c + 1) // chunks):
            a, b = user_codes[user[k]], item_codes[item[k]]
            s = 0
            for j in range(w):
                s += popcount(a[j] ^ b[j]) if op == HAMMING else popcount(a[j] & b[j])
            out[k] = s


@nb.njit(parallel=True, cache=True)
def scan_batch(op, queries, codes, out):
    """All queries against all codes, parallel over queries.

    op: :data:`HAMMING` (:func:`hamming_scan`), :data:`AND`
    (:func:`and_scan`: PHD when ``codes`` are stored NOT) or
    :data:`PHD_XOR_AND` (:func:`phd_xor_and_scan`). queries: uint64 (q, w);
    codes: uint64 (n, w); out: int32 (q, n), written.
    """
    for a in nb.prange(queries.shape[0]):
        if op == HAMMING:
            hamming_scan(queries[a], codes, out[a])
        elif op == AND:
            and_scan(queries[a], codes, out[a])
        else:
            phd_xor_and_scan(queries[a], codes, out[a])
