"""Bringing untouched rows of an Adam-trained table up to date: the exact sparse update.

A row that no gradient touches follows a fixed recurrence under Adam's dense
pass (:func:`phdlib.kernels.adam.adam_rows`): its moments decay and its first
moment still moves its parameters. So it can be brought up to date when it
is next read, or when someone reads the whole table, instead of every step:
:func:`catch_up` (the rows a batch reads), :func:`catch_up_parallel` and
:func:`catch_up_all` replay the zero-gradient steps each row missed, one by
one, with each step's constants (:func:`_replay`), and give the dense pass's
numbers bit for bit. Two float32 facts make the replay short: once the update
of an element is below half the spacing of float32 numbers at its
parameter, and the step is past :data:`SETTLE` (from then on each step's
update is about 0.92 times the one before: the first moment decays by 0.9,
the denominator by at most ``sqrt(beta2)`` and the bias corrections move the
other way by less), the parameter cannot move again, and only the two moments
(one fused multiply-add and one product an element, no square root or
division) go on (:func:`_decay`); a moment that reaches zero stays zero.

A batch's rows are scattered over tables of hundreds of megabytes, in an
order no hardware prefetcher follows: the next rows are asked for
(:func:`phdlib.kernels.prefetch.prefetch`) while one is replayed.

The row schedules (``catch_up*``) and the replay they call live in one file
on purpose: Numba's cache (``cache=True``) checks only the file a kernel is
defined in, so a kernel that inlines or calls another file's code could be
served stale after that file changes.

Tables and constants as in :mod:`phdlib.kernels.adam`: ``bc2s[t]``, ``nss[t]``
per step ``t``; ``c1``, ``b2``, ``c2``, ``eps`` float32 scalars; ``last``:
int64 ``(n,)``, the step each row is up to date with. The ``catch_up*``
functions return ``(full, missed)``: the row-steps computed in full (a float:
the element-steps over the row width, so that a step of part of a row counts
as that part) and all the row-steps replayed (the rest of them moved the
moments only).
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .floats import fma32, sqrt32
from .fpenv import flush_restore, flush_set
from .prefetch import prefetch

#: The first step after which :func:`_replay` may stop computing a parameter: from
#: step 5 on, ``sqrt(1 - beta2^t)`` grows by less than the
#: first moment's decay, so each update is smaller than the one before (by a
#: factor of about 0.92 from step 20); 32 leaves a margin.
SETTLE = 32


#: :func:`_replay` checks which elements of a row have settled every this many steps
#: (a check in every step would keep LLVM from its widest vectors).
CHECK_EVERY = 8

#: :func:`_replay` gathers the elements of a row still moving into blocks of this many
#: (one AVX-512 vector, two AVX2 ones) once a block's worth has settled: a count of
#: elements that is not a multiple of the vector width leaves a scalar remainder, 3
#: to 4 times slower an element (measured).
LANES = 16


@nb.njit(error_model="numpy", cache=True, inline="always")
def _one(x, y, z, c1, b2, c2, a, n, eps):
    """One zero-gradient step of one element (parameter ``x``, moments ``y, z``): the
    dense pass's untouched branch, operation for operation. Returns the element after
    the step, the update and ``n m``."""
    zero = np.float32(0.0)
    y = fma32(c1, zero - y, y)
    z = fma32(c2 * zero, zero, z * b2)
    nm = n * y
    u = nm / (sqrt32(z) / a + eps)
    return x + u, y, z, u, nm


@nb.njit(error_model="numpy", cache=True, inline="always")
def _one_unit(x, y, z, c1, b2, c2, a, n, eps):
    """:func:`_one` where ``a`` is 1, its division left out (``x / 1 = x``: :func:`_step`);
    the same arguments."""
    zero = np.float32(0.0)
    y = fma32(c1, zero - y, y)
    z = fma32(c2 * zero, zero, z * b2)
    nm = n * y
    u = nm / (sqrt32(z) + eps)
    return x + u, y, z, u, nm


@nb.njit(error_model="numpy", cache=True, inline="always")
def _step(p, m, v, cnt, c1, b2, c2, a, n, eps):
    """One zero-gradient step of elements ``0..cnt-1`` of ``p, m, v`` (float32 ``(>= cnt,)``
    each: a row, or the gathered moving elements of one): :func:`_one` of each.

    Once ``sqrt(1 - beta2^t)`` rounds to 1 in float32 (``t`` past about 17,300),
    the division by it is left out (:func:`_one_unit`): ``x / 1 = x`` exactly, and a
    square root is never subnormal, so no flushing mode can tell the difference.
    """
    if a == np.float32(1.0):
        for j in range(cnt):
            p[j], m[j], v[j], _, _ = _one_unit(p[j], m[j], v[j], c1, b2, c2, a, n, eps)
        return
    for j in range(cnt):
        p[j], m[j], v[j], _, _ = _one(p[j], m[j], v[j], c1, b2, c2, a, n, eps)


@nb.njit(error_model="numpy", cache=True, inline="always")
def _settled(x, u, mm, nm, n, eps, decays):
    """Whether no step after this one can move a parameter that was ``x`` before this
    step's update ``u = nm / (...)`` (``nm = n mm``, ``mm`` the first moment): the test
    of :func:`_replay`."""
    half, quarter = np.float32(2.0 ** -25), np.float32(2.0 ** -27)
    tiny = np.float32(1.1754944e-38)   # the smallest normal float32
    sub = abs(n) * tiny                # a bound on the numerator of a subnormal moment
    ax = abs(x)
    qe = ax * quarter * eps
    normal = (mm == np.float32(0.0)) | (abs(mm) >= tiny)
    return (decays & (abs(u) < ax * half) & normal & (sub < qe)) | (abs(nm) < qe)


@nb.njit(error_model="numpy", cache=True, inline="always")
def _step_counted(p, m, v, f, cnt, c1, b2, c2, a, n, eps, decays):
    """:func:`_step`, flagging in ``f`` (float32, 1 moving, 0 settled) the elements that
    have not settled and returning how many."""
    zero, one = np.float32(0.0), np.float32(1.0)
    for j in range(cnt):
        x = p[j]
        p[j], mm, v[j], u, nm = _one(x, m[j], v[j], c1, b2, c2, a, n, eps)
        m[j] = mm
        f[j] = zero if _settled(x, u, mm, nm, n, eps, decays) else one
    return _count(f, cnt)


@nb.njit(error_model="numpy", cache=True, inline="always")
def _count(f, cnt):
    """How many of ``f[:cnt]`` are flagged moving (non-zero). A loop of its own: an int64
    count inside a step's loop makes LLVM halve the step's vectors (measured)."""
    moving = 0
    for j in range(cnt):
        moving += 0 if f[j] == np.float32(0.0) else 1
    return moving


@nb.njit(error_model="numpy", cache=True, inline="always")
def _block(p, m, v, f, cnt, c1, b2, c2, bc2s, nss, s, eps):
    """Steps ``s..s+7`` (:data:`CHECK_EVERY`) of elements ``0..cnt-1`` of ``p, m, v``,
    each element's eight steps in registers, flagging in ``f`` those not settled after
    the last (:func:`_settled`); returns how many.

    The same operations as eight calls of :func:`_step` and so the same numbers; but
    a step no longer waits for the one before to store its results, so the square
    roots and divisions of consecutive steps overlap: a row down to one vector of
    moving elements is stepped about a third faster (measured).
    """
    a = (bc2s[s], bc2s[s + 1], bc2s[s + 2], bc2s[s + 3],
         bc2s[s + 4], bc2s[s + 5], bc2s[s + 6], bc2s[s + 7])
    n = (nss[s], nss[s + 1], nss[s + 2], nss[s + 3], nss[s + 4], nss[s + 5], nss[s + 6],
         nss[s + 7])
    decays = s + CHECK_EVERY - 1 >= SETTLE
    if a[0] == np.float32(1.0):   # sqrt(1 - beta2^t) only grows: all eight are 1
        _eight(p, m, v, f, cnt, c1, b2, c2, a, n, eps, decays, _one_unit)
    else:
        _eight(p, m, v, f, cnt, c1, b2, c2, a, n, eps, decays, _one)
    return _count(f, cnt)


@nb.njit(error_model="numpy", cache=True, inline="always")
def _eight(p, m, v, f, cnt, c1, b2, c2, a, n, eps, decays, one_step):
    """The loop of :func:`_block` (``a``, ``n``: the eight steps' constants; ``one_step``:
    :func:`_one` or :func:`_one_unit`, so that each call compiles to its own loop)."""
    zero, one = np.float32(0.0), np.float32(1.0)
    for j in range(cnt):
        x, y, z = p[j], m[j], v[j]
        x, y, z, u, nm = one_step(x, y, z, c1, b2, c2, a[0], n[0], eps)
        x, y, z, u, nm = one_step(x, y, z, c1, b2, c2, a[1], n[1], eps)
        x, y, z, u, nm = one_step(x, y, z, c1, b2, c2, a[2], n[2], eps)
        x, y, z, u, nm = one_step(x, y, z, c1, b2, c2, a[3], n[3], eps)
        x, y, z, u, nm = one_step(x, y, z, c1, b2, c2, a[4], n[4], eps)
        x, y, z, u, nm = one_step(x, y, z, c1, b2, c2, a[5], n[5], eps)
        x, y, z, u, nm = one_step(x, y, z, c1, b2, c2, a[6], n[6], eps)
        before = x
        x, y, z, u, nm = one_step(x, y, z, c1, b2, c2, a[7], n[7], eps)
        p[j], m[j], v[j] = x, y, z
        f[j] = zero if _settled(before, u, y, nm, n[7], eps, decays) else one


@nb.njit(error_model="numpy", cache=True, inline="always")
def _lanes(cnt):
    """``cnt`` rounded up to a multiple of :data:`LANES`."""
    return (cnt + LANES - 1) // LANES * LANES


@nb.njit(error_model="numpy", cache=True, inline="always")
def _pad(wp, wm, wv, cnt):
    """Fill the lanes after ``cnt`` up to :func:`_lanes` with an element that never moves
    (parameter 1, moments 0: its update is exactly 0, nothing subnormal is computed)."""
    for k in range(cnt, _lanes(cnt)):
        wp[k], wm[k], wv[k] = np.float32(1.0), np.float32(0.0), np.float32(0.0)


@nb.njit(error_model="numpy", cache=True, inline="always")
def _regather(pr, wp, wm, wv, f, idx, cnt):
    """Of the ``cnt`` gathered elements, put the parameters of those flagged settled back
    into the row ``pr`` and keep the others, in order, at the front; returns how many.
    (Every one's parameter goes back, branch-free: a moving one's is rewritten later;
    each element is kept at the next free place, which moves on only past a moving one.)"""
    keep = 0
    for k in range(cnt):
        j = idx[k]
        pr[j] = wp[k]
        idx[keep] = j
        wp[keep], wm[keep], wv[keep] = wp[k], wm[k], wv[k]
        keep += int(f[k] != np.float32(0.0))
    _pad(wp, wm, wv, keep)
    return keep


@nb.njit(error_model="numpy", cache=True, inline="always")
def _gather(pr, mr, vr, wp, wm, wv, f, idx):
    """Copy a row (``pr, mr, vr``) into ``wp, wm, wv`` and keep the elements flagged
    moving in ``f`` (:func:`_regather`, which writes the row's own parameters back);
    returns how many."""
    for j in range(pr.shape[0]):
        idx[j] = j
        wp[j], wm[j], wv[j] = pr[j], mr[j], vr[j]
    return _regather(pr, wp, wm, wv, f, idx, pr.shape[0])


@nb.njit(error_model="numpy", cache=True, inline="always")
def _replay(p, m, v, r, first, last, c1, b2, c2, bc2s, nss, eps, wp, wm, wv, f, idx):
    """Steps ``first..last`` (inclusive) of row ``r`` with a zero gradient: what the
    dense pass does to an untouched row, operation for operation.

    An element is settled when no later update can move it: ``p + u`` rounds
    to ``p`` for any ``|u|`` below half the smallest spacing of float32
    numbers at ``p``, and ``|p| 2^-25`` is not above it (it equals it at a
    power of two, toward zero; rounded to float32 it stays on or below it, a
    power of two itself, and where that is below the smallest subnormal the
    rounded bound is 0 or ``2^-149``, so no update but 0 is below it). With no
    margin left, the later updates must not grow at all, and they shrink by
    about 8% a step (below). Two bounds on the later updates
    hold: this step's update ``|u|`` itself, past :data:`SETTLE` and while
    the first moment is a normal number (each later update is then smaller,
    by a factor of about 0.92: the module docstring; should the moment later
    go subnormal, its updates stay below ``|nss| 2^-126 / eps``, which must
    not move ``p`` either); and ``|nss m| / eps`` at any step (the
    denominator is never below ``eps``, ``|m|`` and ``|nss|`` never grow;
    compared with ``|p| 2^-27``, a factor of four below the bound for the
    rounding of the update), which also covers a subnormal first moment that rounding keeps
    from decaying when subnormals are not flushed. A zero or subnormal
    parameter never settles this way. Stepping a settled element on leaves
    its parameter as it is.

    The first step is checked on its own (:func:`_step_counted`: a row
    whose elements settled long ago stops there); then the whole row goes on
    :data:`CHECK_EVERY` steps at a time, checked at the end of each
    (:func:`_block`), and the last steps of the gap, fewer than that, one by
    one (:func:`_step`). Once a block of :data:`LANES` elements has settled,
    and a check's worth of steps is left, the ones still moving are gathered
    into ``wp, wm, wv`` (float32 scratch, their columns in ``idx``, flags in
    ``f``: :func:`_scratch`) and only they go on, gathered again each time
    another block has settled, the settled ones' parameters going back into
    the row.
    (Within a row the elements settle tens of steps apart.) The row's
    moments do not depend on its parameters: from the first gathering on
    they go through the remaining steps at once (:func:`_decay`), the same
    numbers as the copies'. Once none is moving, only the moments go on.
    Returns the element-steps computed in full (padding lanes included: they
    are computed); the rest of the ``(last + 1 - first) d`` moved the moments
    only (more moment work than that was done: from the first gathering on,
    the whole row's moments decay, the gathered elements' besides their copies).
    """
    pr, mr, vr = p[r], m[r], v[r]
    d = pr.shape[0]
    s, full = first, d   # the first step, counted: a row settled long ago stops there
    moving = _step_counted(pr, mr, vr, f, d, c1, b2, c2, bc2s[s], nss[s], eps, s >= SETTLE)
    s += 1
    moments = s          # the row's moments are those of step moments - 1
    cnt, lanes, gathered = d, d, False
    while s <= last and moving > 0:
        whole = last - s + 1 >= CHECK_EVERY
        if whole and _lanes(moving) < lanes:
            if gathered:
                cnt = _regather(pr, wp, wm, wv, f, idx, cnt)
            else:
                cnt = _gather(pr, mr, vr, wp, wm, wv, f, idx)
                gathered = True
            lanes = _lanes(cnt)
        if whole:
            if gathered:
                moving = _block(wp, wm, wv, f, lanes, c1, b2, c2, bc2s, nss, s, eps)
            else:
                moving = _block(pr, mr, vr, f, d, c1, b2, c2, bc2s, nss, s, eps)
                moments = s + CHECK_EVERY
            full += lanes * CHECK_EVERY
            s += CHECK_EVERY
        else:   # the last steps, fewer than a block: whoever is still moving
            if gathered:
                _step(wp, wm, wv, lanes, c1, b2, c2, bc2s[s], nss[s], eps)
            else:
                _step(pr, mr, vr, d, c1, b2, c2, bc2s[s], nss[s], eps)
                moments = s + 1
            full += lanes
            s += 1
    if gathered:
        for k in range(cnt):   # reached ``last`` with elements still moving
            pr[idx[k]] = wp[k]
    _decay(mr, vr, last + 1 - moments, c1, b2, c2)
    return full


@nb.njit(error_model="numpy", cache=True, inline="always")
def _scratch(d):
    """The scratch of :func:`_replay` for rows of width ``d``: ``wp, wm, wv, f`` float32
    and ``idx`` int64, each ``d`` rounded up to :data:`LANES`."""
    w = _lanes(d)
    return (np.empty(w, np.float32), np.empty(w, np.float32), np.empty(w, np.float32),
            np.empty(w, np.float32), np.empty(w, np.int64))


@nb.njit(error_model="numpy", cache=True)
def _decay(m, v, steps, c1, b2, c2):
    """``steps`` zero-gradient steps of one row's moments (float32 ``(d,)`` each).

    The same numbers as the dense pass's ``fma(c1, 0 - m, m)`` and ``fma((1 - beta2) 0,
    0, beta2 v)``: the product inside a fused multiply-add is exact, so
    ``c1 (0 - m) = (-c1) m``, and ``fma(0, 0, x) = x`` for the ``x >= 0`` here.
    Eight steps at a time stay in registers (each product rounded as it is
    made: no reassociation), both moments in one loop while the first one is
    not all zero (two chains of dependent products: one alone waits on each
    product's latency, measured about half as fast). A first moment at zero
    stays there (as +0.0 from the step after it reaches zero): from then on
    only the second moment goes on.
    """
    d = v.shape[0]
    nc1, zero = -c1, np.float32(0.0)
    done = 0
    while done < steps:   # both moments, side by side, while the first one lives
        block = min(64, steps - done)
        for _ in range(block // 8):
            for j in range(d):
                x, y = v[j], m[j]
                x = x * b2
                y = fma32(nc1, y, y)
                x = x * b2
                y = fma32(nc1, y, y)
                x = x * b2
                y = fma32(nc1, y, y)
                x = x * b2
                y = fma32(nc1, y, y)
                x = x * b2
                y = fma32(nc1, y, y)
                x = x * b2
                y = fma32(nc1, y, y)
                x = x * b2
                y = fma32(nc1, y, y)
                v[j] = x * b2
                m[j] = fma32(nc1, y, y)
        for _ in range(block % 8):
            for j in range(d):
                v[j] = v[j] * b2
                m[j] = fma32(nc1, m[j], m[j])
        done += block
        live = 0
        for j in range(d):
            live += 0 if m[j] == zero else 1
        if live == 0:
            if done < steps:   # a -0.0 becomes +0.0 at the next step, and stays there
                for j in range(d):
                    m[j] = zero
            break
    rest = steps - done   # the second moment alone
    for _ in range(rest // 8):
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
    for _ in range(rest % 8):
        for j in range(d):
            v[j] = v[j] * b2


@nb.njit(error_model="numpy", cache=True)
def _bring(p, m, v, last, r, upto, c1, b2, c2, bc2s, nss, eps, w):
    """Row ``r`` up to date with step ``upto``; returns ``(full, missed)`` for it: the
    element-steps computed in full and the steps replayed (``w``: :func:`_scratch`).

    Compiled once, on its own, and called by the three schedules (``catch_up*``), not
    inlined into them: Numba's inlining copies the replay's loops into each schedule
    (twice into :func:`catch_up_all`), and its parallel passes then work through them
    all; that was most of two minutes of compiling on a first run from an empty cache.
    A row that is behind does at least ``d`` element-steps, which hide the call; a row
    already up to date costs only the call."""
    if last[r] >= upto:
        return 0, 0
    missed = upto - last[r]
    wp, wm, wv, f, idx = w
    full = _replay(p, m, v, r, last[r] + 1, upto, c1, b2, c2, bc2s, nss, eps, wp, wm, wv, f, idx)
    last[r] = upto
    return full, missed


#: Rows of a batch asked for ahead of the one being replayed (:func:`catch_up`).
AHEAD = 4


@nb.njit(error_model="numpy", cache=True, inline="always")
def _ask(p, m, v, r):
    """Prefetch row ``r`` of ``p, m, v`` (float32 ``(n, d)``, C-contiguous), a cache line
    (16 float32) at a time."""
    d = p.shape[1]
    for k in range(0, d, 16):
        prefetch(p, r * d + k)
        prefetch(m, r * d + k)
        prefetch(v, r * d + k)


@nb.njit(error_model="numpy", cache=True)
def catch_up(p, m, v, last, rows, upto, c1, b2, c2, bc2s, nss, eps):
    """Bring rows ``rows`` (int64 ``(B,)``, repeats allowed) up to date with step
    ``upto``: the zero-gradient steps each missed since ``last[r]``.

    Returns ``(full, missed)`` (the module docstring).
    """
    w = _scratch(p.shape[1])
    full, missed = 0, 0
    n = rows.shape[0]
    for b in range(min(AHEAD, n)):
        _ask(p, m, v, rows[b])
    for b in range(n):
        r = rows[b]
        if b + AHEAD < n:
            _ask(p, m, v, rows[b + AHEAD])
        f, k = _bring(p, m, v, last, r, upto, c1, b2, c2, bc2s, nss, eps, w)
        full += f
        missed += k
    return full / max(p.shape[1], 1), missed


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
        w = _scratch(p.shape[1])
        hi = n * (c + 1) // chunks
        for b in range(n * c // chunks, hi):
            r = rows[b]
            if b + AHEAD < hi:
                _ask(p, m, v, rows[b + AHEAD])
            f, k = _bring(p, m, v, last, r, upto, c1, b2, c2, bc2s, nss, eps, w)
            full += f
            missed += k
        flush_restore(old)
    return full / max(p.shape[1], 1), missed


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
        w = _scratch(p.shape[1])
        for r in range(n):
            if r + 2 < n:   # rows in order: two ahead
                _ask(p, m, v, r + 2)
            f, k = _bring(p, m, v, last, r, upto, c1, b2, c2, bc2s, nss, eps, w)
            full += f
            missed += k
        return full / max(p.shape[1], 1), missed
    blocks = (n + 63) // 64
    for c in nb.prange(chunks):
        old = flush_set(flush)
        w = _scratch(p.shape[1])
        for b in range(c, blocks, chunks):
            for r in range(64 * b, min(n, 64 * b + 64)):
                if r + 2 < n:
                    _ask(p, m, v, r + 2)
                f, k = _bring(p, m, v, last, r, upto, c1, b2, c2, bc2s, nss, eps, w)
                full += f
                missed += k
        flush_restore(old)
    return full / max(p.shape[1], 1), missed


@nb.njit(error_model="numpy", cache=True)
def decay_probe(m, v, steps, c1, b2, c2):
    """:func:`_decay` of every row of ``m, v`` (float32 ``(r, d)``, small enough for the
    L1 cache) over ``steps`` steps: the time per row-step is the floor of the replayed
    steps that move only the moments."""
    for r in range(m.shape[0]):
        _decay(m[r], v[r], steps, c1, b2, c2)
