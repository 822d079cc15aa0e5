"""Adam over the rows of an embedding table: the dense pass, its exact sparse form, lazy Adam.

The variational hashing model's parameters are two embedding tables (and a
per-user bias); a batch of ``B`` ratings touches at most ``2 B`` of their
rows. Three ways to update them after a batch, all in float32 and in the
order of operations of PyTorch's fused CPU Adam (``torch.optim.Adam(fused=True)``:
``m = fma(1 - beta1, g - m, m)``, ``v = fma((1 - beta2) g, g, beta2 v)``
as GCC contracts that expression, ``p = p + (-step_size m) / (sqrt(v) /
sqrt(1 - beta2^t) + eps)``):

- **dense** (:func:`adam_rows`, :func:`adam_rows_parallel`): every row, every
  step. TF1's Adam, like PyTorch's, decays the moments of the rows the
  batch did not touch (their gradient is zero), and a decaying first moment
  still moves the parameter: the paper's semantics. A step costs
  ``O(users + items)`` memory traffic.
- **exact sparse** (:func:`adam_touched` on the touched rows, and
  :mod:`phdlib.kernels.adam_replay` for the others): the same numbers, bit
  for bit, with the work moved to where it changes something: a row that
  no gradient touches is brought up to date only when it is next read.
- **lazy** (``adam_touched`` alone): only the touched rows' moments and
  parameters change (TensorFlow's ``LazyAdam``, PyTorch's ``SparseAdam``):
  a different optimiser, with each step's bias corrections.

The per-step constants come as tables indexed by the step ``t`` (1-based):
``bc2s[t] = sqrt(1 - beta2^t)`` and ``nss[t] = -lr / (1 - beta1^t)`` as
float32; ``c1 = 1 - beta1``, ``b2 = beta2``, ``c2 = 1 - beta2`` and ``eps``
are float32 scalars. ``last``: int64 ``(n,)``, the step each row is up to
date with.

``error_model="numpy"``: no Python zero-division checks, so LLVM vectorises
the division and square root of the dense pass.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .floats import fma32, sqrt32
from .fpenv import flush_restore, flush_set


#: Bytes the moment tables are aligned to (:func:`zeros_aligned`): a cache line, and
#: one AVX-512 vector.
ALIGN = 64


def zeros_aligned(shape, dtype=np.float32) -> np.ndarray:
    """A zero array whose data starts on an :data:`ALIGN`-byte boundary.

    NumPy's own allocation of a large array starts 16 bytes past a page, so
    every 64-byte vector of a row of 64 float32 straddles two cache lines:
    the exact sparse update (:mod:`phdlib.kernels.adam_replay`) measured
    about 15% slower on such moment tables at the Amazon shape than on
    aligned ones (PyTorch's parameters are aligned already).
    """
    dtype = np.dtype(dtype)
    shape = tuple(int(x) for x in np.atleast_1d(shape)) if np.ndim(shape) else (int(shape),)
    if any(x < 0 for x in shape) or dtype.hasobject:
        raise ValueError(f"zeros_aligned: shape {shape} must not be negative and dtype {dtype} "
                         f"must hold plain numbers")
    n = int(np.prod(shape)) * dtype.itemsize
    buf = np.zeros(n + ALIGN, np.uint8)
    off = (-buf.ctypes.data) % ALIGN
    return buf[off:off + n].view(dtype).reshape(shape)


@nb.njit(error_model="numpy", cache=True)
def accumulate_rows(rows, g, slot, acc):
    """Sum the gradient rows of repeated indices, in batch order.

    rows: int64 ``(B,)`` parameter rows; g: float32 ``(B, d)``; slot: int64
    ``(n,)``, -1 for every row on entry; acc: float32 ``(B, d)``. On return
    ``slot[r]`` is the row of ``acc`` holding row ``r``'s summed gradient.
    """
    n = 0
    for b in range(rows.shape[0]):
        r = rows[b]
        k = slot[r]
        if k < 0:
            k = n
            slot[r] = k
            n += 1
            for j in range(g.shape[1]):
                acc[k, j] = np.float32(0.0) + g[b, j]
        else:
            for j in range(g.shape[1]):
                acc[k, j] = acc[k, j] + g[b, j]
    return n


@nb.njit(error_model="numpy", cache=True, inline="always")
def _step_row(p, m, v, r, acc, k, c1, b2, c2, bc2s, eps, nss):
    """Adam on row ``r`` with the summed gradient ``acc[k]``: PyTorch's fused update."""
    for j in range(p.shape[1]):
        g = acc[k, j]
        mm = fma32(c1, g - m[r, j], m[r, j])
        vv = fma32(c2 * g, g, v[r, j] * b2)
        m[r, j] = mm
        v[r, j] = vv
        p[r, j] = p[r, j] + nss * mm / (sqrt32(vv) / bc2s + eps)


@nb.njit(error_model="numpy", cache=True, inline="always")
def _adam_span(p, m, v, slot, acc, lo, hi, c1, b2, c2, bc2s, eps, nss):
    """Adam on rows ``lo..hi-1``; rows without a slot have a zero gradient."""
    zero = np.float32(0.0)
    d = p.shape[1]
    for r in range(lo, hi):
        k = slot[r]
        if k >= 0:
            _step_row(p, m, v, r, acc, k, c1, b2, c2, bc2s, eps, nss)
            slot[r] = -1
        else:
            for j in range(d):
                mm = fma32(c1, zero - m[r, j], m[r, j])
                vv = fma32(c2 * zero, zero, v[r, j] * b2)
                m[r, j] = mm
                v[r, j] = vv
                p[r, j] = p[r, j] + nss * mm / (sqrt32(vv) / bc2s + eps)


@nb.njit(error_model="numpy", cache=True)
def adam_rows(p, m, v, rows, g, slot, acc, c1, b2, c2, bc2s, eps, nss):
    """One dense Adam step on every row from a batch's gradient rows, one thread.

    p, m, v: float32 ``(n, d)`` parameters and moments (updated in place);
    rows: int64 ``(B,)`` and g: float32 ``(B, d)`` the batch's rows and their
    gradients (summed by :func:`accumulate_rows` into slot / acc, which are
    left as they came: slot all -1). c1 = 1 - beta1, b2 = beta2, c2 = 1 -
    beta2, bc2s = sqrt(1 - beta2^t), eps, and nss = -lr / (1 - beta1^t): float32.
    """
    accumulate_rows(rows, g, slot, acc)
    _adam_span(p, m, v, slot, acc, 0, p.shape[0], c1, b2, c2, bc2s, eps, nss)


@nb.njit(error_model="numpy", cache=True, parallel=True)
def adam_rows_parallel(p, m, v, rows, g, slot, acc, c1, b2, c2, bc2s, eps, nss, chunks,
                       flush=False):
    """:func:`adam_rows` with the dense pass in ``chunks`` row ranges on Numba's threads.

    flush: each chunk runs with subnormals flushed to zero (True) or computed
    (False), whatever mode its worker thread was in (:mod:`phdlib.kernels.fpenv`).
    :func:`adam_rows` runs on the calling thread, in its mode.
    """
    accumulate_rows(rows, g, slot, acc)
    n = p.shape[0]
    for c in nb.prange(chunks):
        old = flush_set(flush)
        _adam_span(p, m, v, slot, acc, n * c // chunks, n * (c + 1) // chunks,
                   c1, b2, c2, bc2s, eps, nss)
        flush_restore(old)


@nb.njit(error_model="numpy", cache=True, inline="always")
def _traffic_span(p, m, v, lo, hi):
    """Rows ``lo..hi-1``: read and rewrite p, m, v once, as :func:`_adam_span` does."""
    h, k = np.float32(0.5), np.float32(1e-3)
    d = p.shape[1]
    for r in range(lo, hi):
        for j in range(d):
            mm = (m[r, j] + v[r, j]) * h      # averages: the values stay normal numbers
            vv = (v[r, j] + p[r, j]) * h
            m[r, j] = mm
            v[r, j] = vv
            p[r, j] = p[r, j] + k * (mm - vv)


@nb.njit(error_model="numpy", cache=True)
def traffic_probe(p, m, v):
    """Read and rewrite three float32 ``(n, d)`` arrays once, with the loops of the Adam pass.

    Little arithmetic per element: the time of this call is the memory-traffic
    floor of :func:`adam_rows` on arrays of that size.
    """
    _traffic_span(p, m, v, 0, p.shape[0])


@nb.njit(error_model="numpy", cache=True, parallel=True)
def traffic_probe_parallel(p, m, v, chunks):
    """:func:`traffic_probe` in ``chunks`` row ranges on Numba's threads."""
    n = p.shape[0]
    for c in nb.prange(chunks):
        _traffic_span(p, m, v, n * c // chunks, n * (c + 1) // chunks)


@nb.njit(error_model="numpy", cache=True)
def arithmetic_probe(p, m, v, repeats, c1, b2, c2, bc2s, eps, nss):
    """:func:`adam_rows` ``repeats`` times on a block small enough for the L1 cache.

    p, m, v: float32 ``(r, d)``. Every row gets the same small gradient (so
    the moments stay normal numbers: decaying alone they would reach
    subnormals, which are slow). The time per row is the arithmetic floor of
    the dense Adam pass, memory traffic aside.
    """
    slot = np.zeros(p.shape[0], np.int64)
    acc = np.full((1, p.shape[1]), np.float32(1e-3), np.float32)
    for _ in range(repeats):
        slot[:] = 0
        _adam_span(p, m, v, slot, acc, 0, p.shape[0], c1, b2, c2, bc2s, eps, nss)


@nb.njit(error_model="numpy", cache=True)
def adam_touched(p, m, v, rows, g, slot, acc, last, t, c1, b2, c2, bc2s, nss, eps):
    """Step ``t`` of Adam on the rows a batch touched, and on no other.

    rows: int64 ``(B,)`` and g: float32 ``(B, d)`` the batch's rows and their
    gradients, summed by :func:`accumulate_rows` (slot / acc are left as they
    came: slot all -1). Each touched row must be up to date with step
    ``t - 1`` (the exact sparse step) or is taken as it is (lazy Adam);
    ``last[r]`` becomes ``t``.
    """
    accumulate_rows(rows, g, slot, acc)
    a, n = bc2s[t], nss[t]
    for b in range(rows.shape[0]):
        r = rows[b]
        k = slot[r]
        if k < 0:
            continue
        _step_row(p, m, v, r, acc, k, c1, b2, c2, a, eps, n)
        slot[r] = -1
        last[r] = t
