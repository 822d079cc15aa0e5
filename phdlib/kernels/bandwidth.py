"""Memory-bandwidth probes of the runtime benchmark: a plain read and a float inner product.

``read_sum`` reads every word once (the read bandwidth a scan can reach);
``ip_sum`` is the Numba inner-product scan of the baseline of Table 2.
"""
from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(parallel=True, cache=True)
def read_sum(a, nc):
    """Sum of a uint64 array (wrapping), parallel over chunks.

    The read-bandwidth probe: one load and one add per word, nothing written.
    a: uint64 (n,). Returns uint64.
    """
    n = a.shape[0]
    part = np.zeros(nc, dtype=np.uint64)
    for c in nb.prange(nc):
        sub = a[n * c // nc:n * (c + 1) // nc]
        s = np.uint64(0)
        for r in range(sub.shape[0]):
            s += sub[r]
        part[c] = s
    tot = np.uint64(0)
    for c in range(nc):
        tot += part[c]
    return tot


@nb.njit(parallel=True, fastmath=True, cache=True)
def ip_sum(x, q, nc):
    """Sum of the inner products of one float32 query with every row of ``x``.

    x: float32 (n, d); q: float32 (d,). Returns float64. Parallel over chunks;
    every score is computed and consumed.
    """
    n, dim = x.shape
    part = np.zeros(nc, dtype=np.float64)
    for c in nb.prange(nc):
        sub = x[n * c // nc:n * (c + 1) // nc]
        s = 0.0
        for r in range(sub.shape[0]):
            acc = np.float32(0.0)
            for j in range(dim):
                acc += sub[r, j] * q[j]
            s += acc
        part[c] = s
    return part.sum()
