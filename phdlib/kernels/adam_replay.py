"""Bringing untouched rows of an Adam-trained table up to date: the exact sparse update.

A row that no gradient touches follows a fixed recurrence under Adam's dense
pass (:func:`phdlib.kernels.adam.adam_rows`): its moments decay and its first
moment still moves its parameters. So it can be brought up to date when it
is next read, or when someone reads the whole table, instead of every step:
:func:`catch_up` (the rows a batch reads), :func:`catch_up_parallel` and
:func:`catch_up_all` replay the zero-gradient steps each row missed, one by
one, with each step's constants (:func:`_replay`), and give the dense pass's
numbers bit for bit. Two float32 facts make the replay short: once the update
of every element of a row is below half the spacing of float32 numbers at its
parameter, and the step is past :data:`SETTLE` (from then on each step's
update is about 0.92 times the one before: the first moment decays by 0.9,
the denominator by at most ``sqrt(beta2)`` and the bias corrections move the
other way by less), the parameter cannot move again, and only the two moments
(one fused multiply-add and one product an element, no square root or
division) go on (:func:`_decay`); a moment that reaches zero stays zero.

Tables and constants as in :mod:`phdlib.kernels.adam`: ``bc2s[t]``, ``nss[t]``
per step ``t``; ``c1``, ``b2``, ``c2``, ``eps`` float32 scalars; ``last``:
int64 ``(n,)``, the step each row is up to date with.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .floats import fma32, sqrt32
from .fpenv import flush_restore, flush_set

#: The first step after which :func:`_replay` may stop computing a row's
#: parameter: from step 5 on, ``sqrt(1 - beta2^t)`` grows by less than the
#: first moment's decay, so each update is smaller than the one before (by a
#: factor of about 0.92 from step 20); 32 leaves a margin.
SETTLE = 32


#: :func:`_replay` checks whether a row has settled every this many steps (a check
#: in every step would keep LLVM from its widest vectors).
CHECK_EVERY = 8


@nb.njit(error_model="numpy", cache=True, inline="always")
def _zero_step(p, m, v, r, c1, b2, c2, a, n, eps):
    """One zero-gradient step of row ``r``: the dense pass's untouched branch.

    Once ``sqrt(1 - beta2^t)`` rounds to 1 in float32 (``t`` past about 17,300),
    the division by it is left out: ``x / 1 = x`` exactly, and a square root is
    never subnormal, so no flushing mode can tell the difference.
    """
    zero = np.float32(0.0)
    if a == np.float32(1.0):
        for j in range(p.shape[1]):
            mm = fma32(c1, zero - m[r, j], m[r, j])
            vv = fma32(c2 * zero, zero, v[r, j] * b2)
            m[r, j] = mm
            v[r, j] = vv
            p[r, j] = p[r, j] + n * mm / (sqrt32(vv) + eps)
        return
    for j in range(p.shape[1]):
        mm = fma32(c1, zero - m[r, j], m[r, j])
        vv = fma32(c2 * zero, zero, v[r, j] * b2)
        m[r, j] = mm
        v[r, j] = vv
        p[r, j] = p[r, j] + n * mm / (sqrt32(vv) / a + eps)


@nb.njit(error_model="numpy", cache=True, inline="always")
def _zero_step_checked(p, m, v, r, c1, b2, c2, a, n, eps, decays):
    """:func:`_zero_step`, returning how many elements have not settled (see :func:`_replay`)."""
    zero = np.float32(0.0)
    half, quarter = np.float32(2.0 ** -26), np.float32(2.0 ** -27)
    tiny = np.float32(1.1754944e-38)   # the smallest normal float32
    sub = abs(n) * tiny                # a bound on the numerator of a subnormal moment
    moving = 0
    for j in range(p.shape[1]):
        mm = fma32(c1, zero - m[r, j], m[r, j])
        vv = fma32(c2 * zero, zero, v[r, j] * b2)
        m[r, j] = mm
        v[r, j] = vv
        nm = n * mm
        u = nm / (sqrt32(vv) / a + eps)
        x = p[r, j]
        p[r, j] = x + u
        ax = abs(x)
        qe = ax * quarter * eps
        normal = (mm == zero) | (abs(mm) >= tiny)
        settled = (decays & (abs(u) < ax * half) & normal & (sub < qe)) | (abs(nm) < qe)
        moving += 0 if settled else 1
    return moving


@nb.njit(error_model="numpy", cache=True, inline="always")
def _replay(p, m, v, r, first, last, c1, b2, c2, bc2s, nss, eps):
    """Steps ``first..last`` (inclusive) of row ``r`` with a zero gradient: what the
    dense pass does to an untouched row, operation for operation.

    While some element's update could still move its parameter, the whole
    step is computed. An element is settled when no later update can move it:
    ``p + u`` rounds to ``p`` for any ``|u|`` below half the smallest spacing
    of float32 numbers at ``p``, which ``|p| 2^-26`` is. Two bounds on the
    later updates hold: this step's update ``|u|`` itself, past
    :data:`SETTLE` and while the first moment is a normal number (each later
    update is then smaller, by a factor of about 0.92: the module docstring;
    should the moment later go subnormal, its updates stay below ``|nss|
    2^-126 / eps``, which must not move ``p`` either); and ``|nss m| / eps``
    at any step (the denominator is never below ``eps``, ``|m|`` and
    ``|nss|`` never grow; compared with ``|p| 2^-27``, a factor of two for
    the rounding of the update), which also covers a subnormal first moment
    that rounding keeps from decaying when subnormals are not flushed. Every
    :data:`CHECK_EVERY` steps, once every element of the row has settled,
    only its moments go on (:func:`_decay`). A zero or subnormal parameter
    never settles this way. Returns the number of steps computed in full (the
    rest, ``last + 1 - first`` minus it, moved the moments only). (Settling in blocks of 16 elements, each on its
    own, measured 4 times slower: LLVM vectorises the short loops badly.)
    """
    s = first
    while s <= last:
        if (s - first) % CHECK_EVERY == 0:
            moving = _zero_step_checked(p, m, v, r, c1, b2, c2, bc2s[s], nss[s], eps,
                                        s >= SETTLE)
            s += 1
            if moving == 0:
                break
        else:
            _zero_step(p, m, v, r, c1, b2, c2, bc2s[s], nss[s], eps)
            s += 1
    _decay(m[r], v[r], last + 1 - s, c1, b2, c2)
    return s - first


@nb.njit(error_model="numpy", cache=True)
def _decay(m, v, steps, c1, b2, c2):
    """``steps`` zero-gradient steps of one row's moments (float32 ``(d,)`` each).

    The same numbers as the dense pass's ``fma(c1, 0 - m, m)`` and ``fma((1 - beta2) 0,
    0, beta2 v)``: the product inside a fused multiply-add is exact, so
    ``c1 (0 - m) = (-c1) m``, and ``fma(0, 0, x) = x`` for the ``x >= 0`` here.
    Eight steps at a time stay in registers (each product rounded as it is
    made: no reassociation). A first moment at zero stays there (as +0.0 from
    the step after it reaches zero): the loop over ``m`` stops when all are.
    """
    d = v.shape[0]
    eights = steps // 8
    for _ in range(eights):
        for j in range(d):
            x = v[j]
            x = x * b2
            x = x * b2
            x = x * b2
            x = x * b2
            x = x * b2
            x = x * b2
            x = x * b2
            v[j] = x * b2
    for _ in range(steps - 8 * eights):
        for j in range(d):
            v[j] = v[j] * b2
    nc1, zero = -c1, np.float32(0.0)
    done = 0
    while done < steps:
        if steps - done >= 64:
            for _ in range(8):
                for j in range(d):
                    x = m[j]
                    x = fma32(nc1, x, x)
                    x = fma32(nc1, x, x)
                    x = fma32(nc1, x, x)
                    x = fma32(nc1, x, x)
                    x = fma32(nc1, x, x)
                    x = fma32(nc1, x, x)
                    x = fma32(nc1, x, x)
                    m[j] = fma32(nc1, x, x)
            done += 64
        else:
            for _ in range(steps - done):
                for j in range(d):
                    m[j] = fma32(nc1, m[j], m[j])
            done = steps
        live = 0
        for j in range(d):
            live += 0 if m[j] == zero else 1
        if live == 0:
            if done < steps:   # a -0.0 becomes +0.0 at the next step, and stays there
                for j in range(d):
                    m[j] = zero
            break


@nb.njit(error_model="numpy", cache=True, inline="always")
def _bring(p, m, v, last, r, upto, c1, b2, c2, bc2s, nss, eps):
    """Row ``r`` up to date with step ``upto``; returns ``(full, missed)`` for it (see
    :func:`catch_up`)."""
    if last[r] >= upto:
        return 0, 0
    missed = upto - last[r]
    full = _replay(p, m, v, r, last[r] + 1, upto, c1, b2, c2, bc2s, nss, eps)
    last[r] = upto
    return full, missed


@nb.njit(error_model="numpy", cache=True)
def catch_up(p, m, v, last, rows, upto, c1, b2, c2, bc2s, nss, eps):
    """Bring rows ``rows`` (int64 ``(B,)``, repeats allowed) up to date with step
    ``upto``: the zero-gradient steps each missed since ``last[r]``.

    Returns ``(full, missed)``: the row-steps computed in full and all the
    row-steps replayed (the others moved the moments only).
    """
    full, missed = 0, 0
    for b in range(rows.shape[0]):
        r = rows[b]
        f, k = _bring(p, m, v, last, r, upto, c1, b2, c2, bc2s, nss, eps)
        full += f
        missed += k
    return full, missed


@nb.njit(error_model="numpy", cache=True, parallel=True)
def catch_up_parallel(p, m, v, last, rows, upto, c1, b2, c2, bc2s, nss, eps, chunks,
                      flush=False):
    """:func:`catch_up` of distinct rows ``rows`` in ``chunks`` parts on Numba's threads
    (``flush``: each part flushes subnormals, as :func:`adam_rows_parallel`); returns
    ``(full, missed)`` as :func:`catch_up`."""
    n = rows.shape[0]
    full, missed = 0, 0
    for c in nb.prange(chunks):
        old = flush_set(flush)
        for b in range(n * c // chunks, n * (c + 1) // chunks):
            r = rows[b]
            f, k = _bring(p, m, v, last, r, upto, c1, b2, c2, bc2s, nss, eps)
            full += f
            missed += k
        flush_restore(old)
    return full, missed


@nb.njit(error_model="numpy", cache=True, parallel=True)
def catch_up_all(p, m, v, last, upto, c1, b2, c2, bc2s, nss, eps, chunks, flush=False):
    """Bring every row up to date with step ``upto``, in ``chunks`` row ranges on
    Numba's threads (``flush``: each chunk flushes subnormals, as
    :func:`adam_rows_parallel`); ``chunks=1`` runs on the calling thread, in its mode.
    The rows' work varies (a row touched lately replays its settling steps), so
    the ranges are interleaved: chunk ``c`` takes the rows ``r`` with ``r // 64 = c
    (mod chunks)``. Returns ``(full, missed)`` as :func:`catch_up`."""
    n = p.shape[0]
    full, missed = 0, 0
    if chunks <= 1:
        for r in range(n):
            f, k = _bring(p, m, v, last, r, upto, c1, b2, c2, bc2s, nss, eps)
            full += f
            missed += k
        return full, missed
    blocks = (n + 63) // 64
    for c in nb.prange(chunks):
        old = flush_set(flush)
        for b in range(c, blocks, chunks):
            for r in range(64 * b, min(n, 64 * b + 64)):
                f, k = _bring(p, m, v, last, r, upto, c1, b2, c2, bc2s, nss, eps)
                full += f
                missed += k
        flush_restore(old)
    return full, missed


@nb.njit(error_model="numpy", cache=True)
def decay_probe(m, v, steps, c1, b2, c2):
    """:func:`_decay` of every row of ``m, v`` (float32 ``(r, d)``, small enough for the
    L1 cache) over ``steps`` steps: the time per row-step is the floor of the replayed
    steps that move only the moments."""
    for r in range(m.shape[0]):
        _decay(m[r], v[r], steps, c1, b2, c2)
