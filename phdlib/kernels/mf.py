"""Numba kernels of matrix factorisation: SGD passes and ALS half-steps.

Ratings are given as a CSR-like layout grouped by the row entity (users for
the user step, items for the item step):

- ``indptr``: int64 ``(n_rows + 1,)``, row ``r`` owns positions
  ``indptr[r]:indptr[r + 1]``;
- ``cols``: int32 ``(nnz,)``, the column entity of each rating;
- ``vals``: float64 ``(nnz,)``, the rating.

Factor matrices are float64 C-contiguous ``(n, dim)`` and are updated in
place. Everything here is deterministic; the randomness (initialisation) is in
:mod:`phdlib.methods.mf`.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from .linalg import solve_spd
from .prefetch import prefetch


@nb.njit(cache=True, inline="always")
def row_dot(A, a, B, b):
    """``<A[a], B[b]>`` summed in index order (float64 accumulator)."""
    acc = 0.0
    for k in range(A.shape[1]):
        acc += A[a, k] * B[b, k]
    return acc


@nb.njit(cache=True)
def sgd_pass(indptr, cols, vals, P, Q, lr, reg):
    """One pass of plain SGD over the observed ratings, rows in order.

    The update of the CCCF repository's ``MF.m``: for each row ``u`` in
    increasing order and each of its ratings ``(u, j, r)`` in stored order,
    ``e = r - <p_u, q_j>``, then
    ``p_u += lr * (2 e q_j - reg p_u)`` and, with the *updated* ``p_u``,
    ``q_j += lr * (2 e p_u - reg q_j)``. This is stochastic gradient descent on
    ``e^2 + (reg / 2) (|p_u|^2 + |q_j|^2)`` per rating.

    indptr: int64 (n_users + 1,); cols: int32 (nnz,); vals: float64 (nnz,);
    P: float64 (n_users, dim), Q: float64 (n_items, dim), updated in place;
    lr, reg: float. Returns the sum of squared errors seen during the pass
    (each ``e`` before its update), float64.

    The column rows are read in the order of the ratings, which no hardware
    prefetcher guesses: the next rating's row of ``Q``, and the next row of ``P``,
    are asked for (:func:`phdlib.kernels.prefetch.prefetch`) while one rating is
    done. A hint only: the arithmetic and its order are unchanged.
    """
    n_rows, dim = P.shape
    nnz = cols.shape[0]
    sse = 0.0
    for u in range(n_rows):
        if u + 1 < n_rows:
            for k in range(0, dim, 8):   # 8 float64 to a 64-byte cache line
                prefetch(P, (u + 1) * dim + k)
        for t in range(indptr[u], indptr[u + 1]):
            if t + 1 < nnz:
                for k in range(0, dim, 8):
                    prefetch(Q, cols[t + 1] * dim + k)
            j = cols[t]
            e = vals[t] - row_dot(P, u, Q, j)
            sse += e * e
            for k in range(dim):
                P[u, k] += lr * (2.0 * e * Q[j, k] - reg * P[u, k])
            for k in range(dim):
                Q[j, k] += lr * (2.0 * e * P[u, k] - reg * Q[j, k])
    return sse


@nb.njit(cache=True, inline="always")
def _gram4(A, b, f0, f1, f2, f3, r0, r1, r2, r3):
    """Add four ratings (column factors ``f0..f3``, float64 ``(dim,)``; ratings
    ``r0..r3``) to the lower triangle of ``A`` and to ``b``, one after another into
    each element: the numbers of four single updates, with one pass over ``A``
    instead of four (a pass loads and stores every element it adds to)."""
    for a in range(A.shape[0]):
        x0, x1, x2, x3 = f0[a], f1[a], f2[a], f3[a]
        b[a] = (((b[a] + r0 * x0) + r1 * x1) + r2 * x2) + r3 * x3
        Aa = A[a]
        for c in range(a + 1):
            Aa[c] = (((Aa[c] + x0 * f0[c]) + x1 * f1[c]) + x2 * f2[c]) + x3 * f3[c]


@nb.njit(cache=True)
def als_half_step(indptr, cols, vals, fixed, out, reg, weighted):
    """Ridge regression of every row on the fixed factors of its columns.

    For each row ``u`` with ratings ``r_uj`` on columns ``j in J(u)``:
    ``out[u] = argmin_x sum_j (r_uj - <x, fixed[j]>)^2 + lam_u |x|^2``, i.e.
    the solution of the normal equations
    ``(sum_j fixed[j] fixed[j]^T + lam_u I) x = sum_j r_uj fixed[j]``,
    with ``lam_u = reg`` (plain) or ``reg * |J(u)|`` (``weighted``, ALS-WR).
    A row without ratings gets the zero vector.

    indptr: int64 (n_rows + 1,); cols: int32 (nnz,); vals: float64 (nnz,);
    fixed: float64 (n_cols, dim); out: float64 (n_rows, dim), written;
    reg: float > 0; weighted: bool. A system that is not positive definite
    (possible only with ``reg = 0``) raises ``LinAlgError``.
    """
    n_rows, dim = out.shape
    A = np.empty((dim, dim))
    b = np.empty(dim)
    for u in range(n_rows):
        lo = indptr[u]
        hi = indptr[u + 1]
        if hi == lo:
            for k in range(dim):
                out[u, k] = 0.0
            continue
        lam = reg * (hi - lo) if weighted else reg
        A[:, :] = 0.0
        b[:] = 0.0
        t = lo
        while t + 4 <= hi:   # four ratings a pass over A, each added in turn
            _gram4(A, b, fixed[cols[t]], fixed[cols[t + 1]], fixed[cols[t + 2]],
                   fixed[cols[t + 3]], vals[t], vals[t + 1], vals[t + 2], vals[t + 3])
            t += 4
        while t < hi:
            f, r = fixed[cols[t]], vals[t]
            for a in range(dim):
                fa = f[a]
                b[a] += r * fa
                Aa = A[a]
                for c in range(a + 1):
                    Aa[c] += fa * f[c]
            t += 1
        for a in range(dim):
            A[a, a] += lam
            for c in range(a + 1, dim):
                A[a, c] = A[c, a]
        solve_spd(A, b)
        for k in range(dim):
            out[u, k] = b[k]


@nb.njit(cache=True)
def squared_error(rows, cols, vals, P, Q):
    """Sum over ratings of ``(r - <P[row], Q[col]>)^2``.

    rows, cols: int32 (nnz,); vals: float64 (nnz,); P: (n_rows, dim),
    Q: (n_cols, dim) float32 or float64. Returns float64.
    """
    s = 0.0
    for t in range(rows.shape[0]):
        e = vals[t] - row_dot(P, rows[t], Q, cols[t])
        s += e * e
    return s


@nb.njit(cache=True)
def pair_scores(rows, cols, P, Q):
    """``<P[rows[t]], Q[cols[t]]>`` for every pair t.

    rows, cols: int32 (n,); P: (n_users, dim), Q: (n_items, dim), float32 or
    float64. Returns float64 (n,).
    """
    n = rows.shape[0]
    out = np.empty(n)
    for t in range(n):
        out[t] = row_dot(P, rows[t], Q, cols[t])
    return out
