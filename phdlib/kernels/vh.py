"""Numba kernels of the fused VH / VH_PHD training step's batch (:mod:`phdlib.methods.vh_step`).

One step of the variational hashing model is a forward and backward pass over
a batch of ``B`` ratings (``B x m`` bits), then an Adam update of the
embeddings (:mod:`phdlib.kernels.adam`). These kernels do, in float32 and in
the same order of operations, what PyTorch's autograd does, so that the
parameters the fused step produces are those of the autograd step (a test
checks 1,000 steps):

- the straight-through gradient of ``score = <2 b_u - 1, 2 b_i' - 1>``;
- the batch's rows gathered, its targets from the ratings and their noise;
- the random sampling thresholds, from PyTorch's MT19937 stream.

``error_model="numpy"``: no Python zero-division checks.
"""
from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(error_model="numpy", cache=True)
def batch_backward(pu, pi, mu_u, mu_i, target, bias, phd, mask_grad, gu, gi, gscore, score):
    """Forward and backward pass of one batch.

    pu, pi: float32 ``(B, m)`` bit probabilities ``sigmoid(E)`` of the batch's
    user and item rows; mu_u, mu_i: float32 ``(B, m)`` sampling thresholds (0.5:
    deterministic); target: float32 ``(B,)``; bias: float32 ``(B,)``, the
    batch users' bias (zeros without one). phd: rank by PHD (project the item
    bits by the user bits); mask_grad: let the gradient through the mask into
    the user bits. Loss: the mean squared error over the batch.
    Writes gu, gi: float32 ``(B, m)`` gradients of the loss with respect to
    the embedding rows; gscore: float32 ``(B,)`` gradient with respect to each
    score (that is, to each bias); score: float32 ``(B,)`` the scores.

    A bit is ``ceil(p - mu)``, which for ``p, mu`` in ``[0, 1)`` is ``p > mu``
    (a float difference is zero only between equal numbers).
    """
    B, m = pu.shape
    zero, one, two = np.float32(0.0), np.float32(1.0), np.float32(2.0)
    g0 = one / np.float32(B)
    su = np.empty(m, np.float32)   # 2 b_u - 1
    si = np.empty(m, np.float32)   # 2 b_i - 1 (before the projection)
    sp = np.empty(m, np.float32)   # 2 b_i' - 1 (after it)
    for b in range(B):
        s = zero
        for j in range(m):
            su[j] = one if pu[b, j] > mu_u[b, j] else -one
            si[j] = one if pi[b, j] > mu_i[b, j] else -one
            sp[j] = one if (phd and su[j] > zero and si[j] > zero) or (
                not phd and si[j] > zero) else -one
            s += su[j] * sp[j]
        s = s + bias[b]
        score[b] = s
        gs = -(g0 * (two * (target[b] - s)))
        gscore[b] = gs
        g2 = gs * two
        for j in range(m):
            gpu = g2 * sp[j]                       # d loss / d b_u through the score
            gproj = g2 * su[j]                     # d loss / d b_i'
            if phd:
                if mask_grad and si[j] > zero:     # b_i' = b_i b_u: into b_u times b_i
                    gpu = gpu + gproj
                gpi = gproj if su[j] > zero else zero
            else:
                gpi = gproj
            p = pu[b, j]
            gu[b, j] = gpu * (one - p) * p
            p = pi[b, j]
            gi[b, j] = gpi * (one - p) * p


@nb.njit(cache=True)
def gather_batch(idx, users, items, ratings, eps, noise, target_map, bits, lo, hi, span,
                 bu, bi, target):
    """Rows ``idx`` of the training split and their targets.

    idx: int64 ``(B,)``; users, items: int64 ``(n,)``; ratings: float32
    ``(n,)``; eps: float32 ``(B,)`` standard normal draws; noise: float32
    standard deviation (0: no noise, eps unused). The target is
    :func:`phdlib.methods.vh_model.rating_target` of ``rating + eps * noise``
    in the same float32 operations: target_map 0 (released)
    ``2m (r / hi) - m``, 1 (minmax) ``2m (r - lo) / span - m``; bits, lo, hi,
    span (= hi - lo): float32. Writes bu, bi (int64) and target (float32).
    """
    two_m = np.float32(2.0) * bits
    for b in range(idx.shape[0]):
        k = idx[b]
        bu[b] = users[k]
        bi[b] = items[k]
        r = ratings[k] + eps[b] * noise if noise != np.float32(0.0) else ratings[k]
        if target_map == 0:
            target[b] = two_m * (r / hi) - bits
        else:
            target[b] = two_m * (r - lo) / span - bits


@nb.njit(cache=True)
def gather_rows(table, rows, out):
    """``out[b] = table[rows[b]]``: float32 ``(n, d)``, int64 ``(B,)`` -> float32 ``(B, d)``."""
    for b in range(rows.shape[0]):
        out[b, :] = table[rows[b], :]


# --------------------------------------------------------------------------- MT19937

_N, _M = 624, 397


@nb.njit(cache=True, inline="always")
def _mix(a, b, c):
    """One word of the MT19937 transition from words k, k + 1 and k + 397."""
    y = (a & np.uint32(0x80000000)) | (b & np.uint32(0x7FFFFFFF))
    return c ^ (y >> np.uint32(1)) ^ ((y & np.uint32(1)) * np.uint32(0x9908B0DF))


@nb.njit(cache=True)
def _twist(key):
    """The MT19937 state transition, in place on ``key`` (uint32 ``(624,)``)."""
    for k in range(_N - _M):
        key[k] = _mix(key[k], key[k + 1], key[k + _M])
    for k in range(_N - _M, _N - 1):
        key[k] = _mix(key[k], key[k + 1], key[k + _M - _N])
    key[_N - 1] = _mix(key[_N - 1], key[0], key[_M - 1])


@nb.njit(cache=True)
def mt_uniform24(key, pos, out):
    """Uniform float32 numbers in ``[0, 1)`` from an MT19937 stream, as ``torch.rand``.

    key: uint32 ``(624,)`` state and pos: int64 ``(1,)`` index of its next word
    (both updated: the stream goes on). Each number is the tempered 32-bit
    word's low 24 bits times ``2^-24``: PyTorch's CPU ``rand`` for float32.
    out: float32, any shape (filled in C order).
    """
    flat = out.reshape(-1)
    n, k, p = flat.shape[0], 0, pos[0]
    scale = np.float32(1.0 / (1 << 24))
    while k < n:
        if p >= _N:
            _twist(key)
            p = 0
        take = min(_N - p, n - k)
        for t in range(take):
            y = key[p + t]
            y ^= y >> np.uint32(11)
            y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
            y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
            y ^= y >> np.uint32(18)
            flat[k + t] = np.float32(y & np.uint32(0xFFFFFF)) * scale
        k += take
        p += take
    pos[0] = p
