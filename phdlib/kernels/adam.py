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
- **exact sparse** (:func:`catch_up`, :func:`catch_up_all`,
  :func:`adam_touched`): the same numbers, bit for bit, with the work
  moved to where it changes something. A row that no gradient touches
  follows a fixed recurrence; it is brought up to date (:func:`_replay`:
  the zero-gradient steps it missed, one by one, with each step's constants)
  only when the batch reads it, or when someone reads the whole table. Two
  float32 facts make the replay short: once the update of every element of a
  row is below a quarter of the spacing of float32 numbers at its parameter,
  and the step is past :data:`SETTLE` (from then on each step's update is
  about 0.92 times the one before: the first moment decays by 0.9, the
  denominator by at most ``sqrt(beta2)`` and the bias corrections move the
  other way by less), the parameter cannot move again, and only the two
  moments (one fused multiply-add and one product an element, no square root
  or division) go on; a moment that reaches zero stays zero.
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

#: The first step after which :func:`_replay` may stop computing a row's
#: parameter: from step 5 on, ``sqrt(1 - beta2^t)`` grows by less than the
#: first moment's decay, so each update is smaller than the one before (by a
#: factor of about 0.92 from step 20); 32 leaves a margin.
SETTLE = 32


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
def _adam_span(p, m, v, slot, acc, lo, hi, c1, b2, c2, bc2s, eps, nss):
    """Adam on rows ``lo..hi-1``; rows without a slot have a zero gradient."""
    zero = np.float32(0.0)
    d = p.shape[1]
    for r in range(lo, hi):
        k = slot[r]
        if k >= 0:
            for j in range(d):
                g = acc[k, j]
                mm = fma32(c1, g - m[r, j], m[r, j])
                vv = fma32(c2 * g, g, v[r, j] * b2)
                m[r, j] = mm
                v[r, j] = vv
                p[r, j] = p[r, j] + nss * mm / (sqrt32(vv) / bc2s + eps)
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


#: :func:`_replay` checks whether a row has settled every this many steps (a check
#: in every step would keep LLVM from its widest vectors).
CHECK_EVERY = 8


@nb.njit(error_model="numpy", cache=True, inline="always")
def _zero_step(p, m, v, r, c1, b2, c2, a, n, eps):
    """One zero-gradient step of row ``r``: the dense pass's untouched branch."""
    zero = np.float32(0.0)
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
        if last[r] < upto:
            full += _replay(p, m, v, r, last[r] + 1, upto, c1, b2, c2, bc2s, nss, eps)
            missed += upto - last[r]
            last[r] = upto
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
            if last[r] < upto:
                full += _replay(p, m, v, r, last[r] + 1, upto, c1, b2, c2, bc2s, nss, eps)
                missed += upto - last[r]
                last[r] = upto
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
            if last[r] < upto:
                full += _replay(p, m, v, r, last[r] + 1, upto, c1, b2, c2, bc2s, nss, eps)
                missed += upto - last[r]
                last[r] = upto
        return full, missed
    blocks = (n + 63) // 64
    for c in nb.prange(chunks):
        old = flush_set(flush)
        for k in range(c, blocks, chunks):
            for r in range(64 * k, min(n, 64 * k + 64)):
                if last[r] < upto:
                    full += _replay(p, m, v, r, last[r] + 1, upto, c1, b2, c2, bc2s, nss, eps)
                    missed += upto - last[r]
                    last[r] = upto
        flush_restore(old)
    return full, missed


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
    d = p.shape[1]
    for b in range(rows.shape[0]):
        r = rows[b]
        k = slot[r]
        if k < 0:
            continue
        for j in range(d):
            gj = acc[k, j]
            mm = fma32(c1, gj - m[r, j], m[r, j])
            vv = fma32(c2 * gj, gj, v[r, j] * b2)
            m[r, j] = mm
            v[r, j] = vv
            p[r, j] = p[r, j] + n * mm / (sqrt32(vv) / a + eps)
        slot[r] = -1
        last[r] = t


@nb.njit(error_model="numpy", cache=True)
def decay_probe(m, v, steps, c1, b2, c2):
    """:func:`_decay` of every row of ``m, v`` (float32 ``(r, d)``, small enough for the
    L1 cache) over ``steps`` steps: the time per row-step is the floor of the replayed
    steps that move only the moments."""
    for r in range(m.shape[0]):
        _decay(m[r], v[r], steps, c1, b2, c2)
