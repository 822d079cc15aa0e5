"""Numba kernels of discrete collaborative filtering (DCF) and its block form (CCCF).

Both sides of the factorisation are handled by the same kernels: the "rows"
are the entity being updated (users in the user step, items in the item step)
and the "columns" are the other side, held fixed. Ratings are laid out
CSR-like, grouped by row:

- ``indptr``: int64 ``(n_rows + 1,)``, row ``r`` owns positions
  ``indptr[r]:indptr[r + 1]``;
- ``cols``: int32 ``(nnz,)``, the column entity of each rating;
- ``target``: float64 ``(nnz,)``, the value the model should predict there
  (the scaled rating, or for one block of CCCF the rating minus the other
  blocks' predictions).

Every rating ``t = (u, j)`` carries a weight ``c_t = wrow[u] * wcol[j]``
(float64 per row and per column; all ones for DCF). The model of one block
predicts ``c_t * <b_u, d_j>`` with ``b_u, d_j`` in {-1, +1}^r, stored as
``int8`` C-contiguous ``(n, r)`` arrays.

Objective of one row ``u`` (the DCF paper's Eq. 11, one user at a time)::

    sum_t (target_t - c_t <b_u, d_j>)^2  -  2 * bias_u . b_u

where ``bias_u`` is ``alpha * x_u`` (the balance / decorrelation surrogate).
Discrete coordinate descent sets bit ``k`` to the sign of

    g_k = bias_uk + sum_t c_t d_jk (target_t - p_t) + b_uk * sum_t c_t^2

with ``p_t = c_t <b_u, d_j>`` the current prediction: the sign that lowers the
objective with every other bit fixed (``g_k = 0``: the bit is kept). This is
the update of ``DCDmex.c`` in the reference code, written with running
predictions so that one sweep over the ``r`` bits costs ``O(n_u r)`` instead
of ``O(n_u r^2)`` for the ``r x r`` Gram matrix.

The same descent under another score that is linear in each bit (DCF_PHD's
``m - 2 PHD``) is :func:`dcd_rows_linear`, of which :func:`dcd_rows` is the
inner-product case; :func:`linear_predictions` computes such scores.

Everything here is deterministic and parallel over rows (``prange``); rows are
independent given the other side, so the result does not depend on threads.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .bits import popcount

from .linalg import solve_spd


#: Bits whose sums :func:`dcd_rows_linear` computes in one pass over a row's ratings.
#: :func:`_sums` is written out for four: this is a name for that number, not a setting.
PASS_BITS = 4


@nb.njit(cache=True, parallel=True, error_model="numpy")
def dcd_rows_linear(indptr, cols, target, wrow, wcol, codes, coef, const, bias, max_sweeps):
    """Discrete coordinate descent on every row's code under a score linear in each bit, in place.

    indptr int64 (n+1,), cols int32 (nnz,), target float64 (nnz,),
    wrow float64 (n,), wcol float64 (m,), codes int8 (n, r) (updated),
    coef int8 (m, r), const float64 (m,), bias float64 (n, r), max_sweeps int
    (>= 1): the cap of cyclic sweeps over the bits per row (``maxItr2`` of
    the reference, 5). Rating ``t = (u, j)`` scores
    ``p_t = c_t (sum_k coef[j, k] codes[u, k] + const[j])``: DCF's inner
    product is ``coef = other`` (the column codes), ``const = 0``; DCF_PHD's
    coefficients and constants are :func:`phdlib.methods.discrete_phd.linear_terms`.
    Bit ``k`` is set to the sign of
    ``bias_uk + sum_t c_t coef_jk (target_t - p_t) + b_uk sum_t (c_t coef_jk)^2``
    (kept at 0): the sign that lowers the objective with every other bit fixed.
    A row stops early after a sweep that changes no bit.

    The sums of :data:`PASS_BITS` consecutive bits are computed in one pass over the
    row's ratings (:func:`_sums`), each in the order of the ratings, as one bit's
    alone: a pass waits on one addition after another, so four at once take
    little longer than one. They are the sums bit by bit would give as long as no
    bit before them flips (``p`` is unchanged); the bits are decided in order up to
    the first that flips, and the pass after it starts at the next bit. So the
    codes and flips are those of the bit-by-bit sweep exactly.

    Returns int64 (n,): number of bit flips per row.
    """
    n, r = codes.shape
    flips = np.zeros(n, dtype=np.int64)
    for u in nb.prange(n):
        s, e = indptr[u], indptr[u + 1]
        nu = e - s
        p = np.empty(nu, dtype=np.float64)
        c = np.empty(nu, dtype=np.float64)
        cc = np.zeros(r, dtype=np.float64)
        for t in range(nu):
            j = cols[s + t]
            ct = wrow[u] * wcol[j]
            c[t] = ct
            acc = 0
            for k in range(r):
                acc += codes[u, k] * coef[j, k]
            p[t] = ct * (acc + const[j])
            c2 = ct * ct
            for k in range(r):  # (c_t coef)^2 = c_t^2 coef^2 exactly: coef in {-1, 0, 1}
                cc[k] += c2 * (coef[j, k] * coef[j, k])
        nflip = 0
        for _sweep in range(max_sweeps):
            changed = 0
            k = 0
            while k < r:
                if k + PASS_BITS > r:   # fewer than four bits left in this sweep
                    g = _sum(cols, target, codes, coef, bias, cc, p, c, u, s, nu, k)
                    if _decide(cols, codes, coef, p, c, u, s, nu, k, g):
                        changed += 1
                    k += 1
                    continue
                g4 = _sums(cols, target, codes, coef, bias, cc, p, c, u, s, nu, k)
                for i in range(PASS_BITS):
                    flipped = _decide(cols, codes, coef, p, c, u, s, nu, k, g4[i])
                    k += 1
                    if flipped:   # the later sums read the scores before the flip
                        changed += 1
                        break
            nflip += changed
            if changed == 0:
                break
        flips[u] = nflip
    return flips


@nb.njit(cache=True, error_model="numpy", inline="always")
def _sum(cols, target, codes, coef, bias, cc, p, c, u, s, nu, k):
    """Bit ``k``'s sum of :func:`dcd_rows_linear` for row ``u`` (its ratings at
    ``s .. s + nu - 1``) from its current scores ``p`` and weights ``c`` (float64
    ``(nu,)`` each) and ``cc`` (float64 ``(r,)``, the sums of squared weights);
    the other arguments as in :func:`dcd_rows_linear`. Returns a float64."""
    g = bias[u, k] + codes[u, k] * cc[k]
    for t in range(nu):
        j = cols[s + t]
        g += c[t] * coef[j, k] * (target[s + t] - p[t])
    return g


@nb.njit(cache=True, error_model="numpy", inline="always")
def _sums(cols, target, codes, coef, bias, cc, p, c, u, s, nu, k):
    """:func:`_sum` of bits ``k .. k + 3`` (:data:`PASS_BITS`) in one pass (the same
    arguments): the same operations in the same order for each, four additions in
    flight. Returns a tuple of four float64."""
    g0 = bias[u, k] + codes[u, k] * cc[k]
    g1 = bias[u, k + 1] + codes[u, k + 1] * cc[k + 1]
    g2 = bias[u, k + 2] + codes[u, k + 2] * cc[k + 2]
    g3 = bias[u, k + 3] + codes[u, k + 3] * cc[k + 3]
    for t in range(nu):
        j = cols[s + t]
        d = target[s + t] - p[t]
        ct = c[t]
        g0 += ct * coef[j, k] * d
        g1 += ct * coef[j, k + 1] * d
        g2 += ct * coef[j, k + 2] * d
        g3 += ct * coef[j, k + 3] * d
    return (g0, g1, g2, g3)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _decide(cols, codes, coef, p, c, u, s, nu, k, g):
    """Set bit ``k`` of row ``u`` to the sign of ``g`` (kept at 0) and, if it flips,
    move the row's scores ``p``: ``codes`` and ``p`` change in place (arguments as
    in :func:`_sum`). Returns whether it flipped."""
    bk = codes[u, k]
    if g > 0.0:
        nb_ = 1
    elif g < 0.0:
        nb_ = -1
    else:
        nb_ = bk
    if nb_ == bk:
        return False
    codes[u, k] = nb_
    for t in range(nu):
        j = cols[s + t]
        p[t] += 2.0 * nb_ * c[t] * coef[j, k]
    return True


def dcd_rows(indptr, cols, target, wrow, wcol, codes, other, bias, max_sweeps):
    """Discrete coordinate descent of DCF (inner-product score) on every row's code, in place.

    :func:`dcd_rows_linear` with ``coef = other`` (int8 (m, r), the column
    codes) and ``const = 0``: bit ``k`` is set to the sign of ``bias_uk +
    sum_t c_t d_jk (target_t - p_t) + b_uk sum_t c_t^2`` (DCDmex.c's update;
    ``(c_t d_jk)^2 = c_t^2`` exactly). Returns int64 (n,): bit flips per row.
    """
    return dcd_rows_linear(indptr, cols, target, wrow, wcol, codes, other,
                           np.zeros(other.shape[0]), bias, max_sweeps)


@nb.njit(cache=True, parallel=True)
def linear_predictions(indptr, cols, wrow, wcol, codes, coef, const, out):
    """``out[t] = wrow[u] wcol[j] (sum_k coef[j, k] codes[u, k] + const[j])`` for every rating.

    The score of :func:`dcd_rows_linear` (shapes as there), e.g. ``m - 2
    PHD(u, j)`` with DCF_PHD's terms; out float64 (nnz,), written.
    """
    n, r = codes.shape
    for u in nb.prange(n):
        for t in range(indptr[u], indptr[u + 1]):
            j = cols[t]
            acc = 0
            for k in range(r):
                acc += codes[u, k] * coef[j, k]
            out[t] = wrow[u] * wcol[j] * (acc + const[j])


@nb.njit(cache=True, parallel=True, error_model="numpy")
def weighted_predictions(indptr, cols, wrow, wcol, left, right, out):
    """``out[t] = wrow[u] * wcol[j] * <left[u], right[j]>`` for every rating.

    ``left``/``right`` are either ±1 codes (int8 ``(n, r)``/``(m, r)``) or
    real factors (float64); the inner product is accumulated in float64 in
    index order, exact for codes. Shapes as in :func:`dcd_rows`; out float64
    (nnz,), written. Four ratings of a row are summed side by side, each in
    its own order: a sum waits on one addition after another.
    """
    n, r = left.shape
    for u in nb.prange(n):
        lu = left[u]
        e = indptr[u + 1]
        t = indptr[u]
        while t + 4 <= e:
            j0, j1, j2, j3 = cols[t], cols[t + 1], cols[t + 2], cols[t + 3]
            a0, a1, a2, a3 = 0.0, 0.0, 0.0, 0.0
            for k in range(r):
                x = lu[k]
                a0 += x * right[j0, k]
                a1 += x * right[j1, k]
                a2 += x * right[j2, k]
                a3 += x * right[j3, k]
            out[t] = wrow[u] * wcol[j0] * a0
            out[t + 1] = wrow[u] * wcol[j1] * a1
            out[t + 2] = wrow[u] * wcol[j2] * a2
            out[t + 3] = wrow[u] * wcol[j3] * a3
            t += 4
        while t < e:
            j = cols[t]
            acc = 0.0
            for k in range(r):
                acc += lu[k] * right[j, k]
            out[t] = wrow[u] * wcol[j] * acc
            t += 1


@nb.njit(cache=True, parallel=True)
def ridge_rows(indptr, cols, target, wrow, wcol, other, lam, count_weighted, lin, out):
    """Relaxed (real-valued) row update of the DCF initialisation, in place.

    For each row ``u`` with at least one rating, with ``A`` the ``(n_u, r)``
    matrix of rows ``c_t * other[j_t]``::

        out[u] = solve(A^T A + lam * k_u * I,  A^T target_u + lin[u])

    where ``k_u = n_u`` if ``count_weighted`` else 1 (``lam > 0``: the matrix is
    positive definite). This exactly minimises
    ``sum_t (target_t - c_t <u, v_j>)^2 + lam k_u |u|^2 - 2 lin[u] . u`` over
    ``u``. Rows without ratings are left as they are (as the reference does).

    A row with ``n_u >= r`` ratings is solved in this form, by Cholesky of the
    ``r x r`` matrix. A row with fewer ratings than ``r`` is solved in its dual
    form, by Cholesky of an ``n_u x n_u`` matrix: with ``rho = lam k_u`` and
    ``v = lin[u] / rho``, ``out[u] = v + A^T z`` where
    ``(A A^T + rho I) z = target_u - A v`` (multiply out to check). The two
    are the same solution; the dual costs ``O(n_u^2 r + n_u^3)`` instead of
    ``O(n_u r^2 + r^3)``, which is most rows of a long-tailed catalogue (at
    the Amazon shape the median user has 9 training ratings against r = 64).

    other float64 (m, r); lin float64 (n, r); out float64 (n, r). ``lam <= 0``:
    ``ValueError`` (the system would not be positive definite).
    """
    if not lam > 0.0:
        raise ValueError("ridge_rows: lam must be > 0")
    n, r = out.shape
    for u in nb.prange(n):
        s, e = indptr[u], indptr[u + 1]
        nu = e - s
        if nu == 0:
            continue
        A = np.empty((nu, r), dtype=np.float64)
        y = np.empty(nu, dtype=np.float64)
        for t in range(nu):
            j = cols[s + t]
            ct = wrow[u] * wcol[j]
            for k in range(r):
                A[t, k] = ct * other[j, k]
            y[t] = target[s + t]
        reg = lam * (nu if count_weighted else 1.0)
        if nu >= r:
            G = A.T @ A
            for k in range(r):
                G[k, k] += reg
            rhs = A.T @ y
            for k in range(r):
                rhs[k] += lin[u, k]
            solve_spd(G, rhs)  # symmetric positive definite (lam > 0)
            out[u, :] = rhs
        else:
            v = lin[u] / reg
            K = A @ A.T
            for t in range(nu):
                K[t, t] += reg
            z = y - A @ v
            solve_spd(K, z)  # symmetric positive definite (reg > 0)
            out[u, :] = v + A.T @ z


@nb.njit(cache=True, parallel=True)
def squared_error(indptr, cols, target, pred):
    """``sum_t (target_t - pred_t)^2`` over all ratings; float64."""
    n = indptr.shape[0] - 1
    tot = np.zeros(n, dtype=np.float64)
    for u in nb.prange(n):
        acc = 0.0
        for t in range(indptr[u], indptr[u + 1]):
            d = target[t] - pred[t]
            acc += d * d
        tot[u] = acc
    return tot.sum()


@nb.njit(cache=True)
def _block_masks(starts, words):
    """Per block ``b``, the (word, mask) pairs of its bits: ``ptr`` int64 (K + 1,),
    ``word`` int64, ``mask`` uint64 (bit ``j`` of a code is bit ``j mod 64`` of
    word ``j div 64``)."""
    K = starts.shape[0] - 1
    ptr = np.zeros(K + 1, dtype=np.int64)
    word = np.empty(K * (words + 1), dtype=np.int64)
    mask = np.empty(K * (words + 1), dtype=np.uint64)
    n = 0
    for b in range(K):
        for w in range(starts[b] // 64, (starts[b + 1] + 63) // 64):
            lo = max(starts[b], 64 * w) - 64 * w
            hi = min(starts[b + 1], 64 * (w + 1)) - 64 * w
            if hi <= lo:
                continue
            m = np.uint64(0xFFFFFFFFFFFFFFFF) if hi - lo == 64 else \
                ((np.uint64(1) << np.uint64(hi - lo)) - np.uint64(1)) << np.uint64(lo)
            word[n] = w
            mask[n] = m
            n += 1
        ptr[b + 1] = n
    return ptr, word[:n], mask[:n]


@nb.njit(cache=True, parallel=True)
def table_scores(users, items, uwords, iwords, starts, wu, wi):
    """:func:`pair_scores` of every (user, item) of ``users`` x ``items``, from packed codes.

    users int64 (U,), items int64 (I,); uwords uint64 (n_users, w), iwords
    uint64 (n_items, w): the ±1 codes packed; starts, wu, wi as
    :func:`pair_scores`. A block's inner product is its length less twice the
    bits where the two codes differ (an exact integer), and the value is
    summed over the blocks in block order from 0.0, as :func:`pair_scores`
    and the NumPy form ``out += wu * wi * ip`` compute it: the same numbers.
    Returns float64 (U, I).
    """
    n_u = users.shape[0]
    n_i = items.shape[0]
    K = starts.shape[0] - 1
    ptr, word, mask = _block_masks(starts, uwords.shape[1])
    out = np.empty((n_u, n_i), dtype=np.float64)
    for r in nb.prange(n_u):
        u = users[r]
        for c in range(n_i):
            i = items[c]
            tot = 0.0
            for b in range(K):
                diff = 0
                for q in range(ptr[b], ptr[b + 1]):
                    w = word[q]
                    diff += popcount((uwords[u, w] ^ iwords[i, w]) & mask[q])
                acc = (starts[b + 1] - starts[b]) - 2 * diff
                tot += wu[u, b] * wi[i, b] * acc
            out[r, c] = tot
    return out


@nb.njit(cache=True, parallel=True)
def pair_scores(user, item, ucodes, icodes, starts, wu, wi):
    """Block-weighted inner products of ±1 codes for given (user, item) pairs.

    user, item int (p,); ucodes int8 (n_users, R), icodes int8 (n_items, R);
    starts int64 (K+1,): block ``b`` is columns ``starts[b]:starts[b+1]``;
    wu float64 (n_users, K), wi float64 (n_items, K).
    Returns float64 (p,): ``sum_b wu[u,b] wi[i,b] <ucodes[u,b], icodes[i,b]>``.
    """
    p = user.shape[0]
    K = starts.shape[0] - 1
    out = np.empty(p, dtype=np.float64)
    for t in nb.prange(p):
        u = user[t]
        i = item[t]
        tot = 0.0
        for b in range(K):
            acc = 0
            for k in range(starts[b], starts[b + 1]):
                acc += ucodes[u, k] * icodes[i, k]
            tot += wu[u, b] * wi[i, b] * acc
        out[t] = tot
    return out
