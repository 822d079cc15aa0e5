"""MF's SGD pass and ALS half-step against their plain forms, bit for bit.

:func:`phdlib.kernels.mf.sgd_pass` prefetches the next rating's column row and
the next row while it does one rating. Its factors and sum of squared errors
must equal, bit for bit, those of the plain pass below (the kernel as it was
before): every row in order, every rating of it in stored order, including
the last row and rating (no next one to ask for), rows without ratings and
columns rated twice. :func:`phdlib.kernels.mf.als_half_step` adds four
ratings to the normal equations in one pass; its solutions must equal those of
adding them one at a time.
"""
from __future__ import annotations

import numba as nb
import numpy as np
import pytest

from phdlib.kernels import mf as K
from phdlib.kernels.linalg import solve_spd


@nb.njit(cache=False)
def _in_order(indptr, cols, vals, P, Q, lr, reg):
    """The pass one rating at a time: the reference for the kernel's numbers."""
    sse = 0.0
    for u in range(P.shape[0]):
        for t in range(indptr[u], indptr[u + 1]):
            j = cols[t]
            acc = 0.0
            for k in range(P.shape[1]):
                acc += P[u, k] * Q[j, k]
            e = vals[t] - acc
            sse += e * e
            for k in range(P.shape[1]):
                P[u, k] += lr * (2.0 * e * Q[j, k] - reg * P[u, k])
            for k in range(P.shape[1]):
                Q[j, k] += lr * (2.0 * e * P[u, k] - reg * Q[j, k])
    return sse


def _csr(rng, n_rows, n_cols, per_row, repeats=False):
    """Ratings grouped by row: ``per_row`` (n_rows,) ratings each, columns drawn at
    random (with repeats of a column in a row if ``repeats``), values in 1..5."""
    indptr = np.concatenate([[0], np.cumsum(per_row)]).astype(np.int64)
    cols = []
    for n in per_row:
        if repeats:
            cols.append(rng.integers(0, n_cols, n))
        else:
            cols.append(rng.permutation(n_cols)[:n])
    cols = np.concatenate(cols).astype(np.int32) if len(cols) else np.zeros(0, np.int32)
    vals = rng.integers(1, 6, cols.shape[0]).astype(np.float64)
    return indptr, cols, vals


CASES = {
    # few columns: the next rating's column is often the one just written
    "crowded": dict(n_rows=30, n_cols=4, lo=0, hi=4),
    "sparse": dict(n_rows=60, n_cols=200, lo=1, hi=12),
    "long and short": dict(n_rows=25, n_cols=40, lo=0, hi=40),
    "one row": dict(n_rows=1, n_cols=10, lo=7, hi=8),
    "two rows": dict(n_rows=2, n_cols=3, lo=3, hi=4),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dim", [1, 3, 8, 64])
def test_the_pass_equals_the_plain_pass(case, dim):
    c = CASES[case]
    for seed in range(4):
        rng = np.random.default_rng(seed)
        per_row = rng.integers(c["lo"], c["hi"] + 1, c["n_rows"])
        if seed == 1 and c["n_rows"] > 2:   # rows without ratings first, in between, last
            per_row[[0, 1, c["n_rows"] // 2, -1]] = 0
        repeats = seed == 2   # a row may rate a column twice
        if not repeats:
            per_row = np.minimum(per_row, c["n_cols"])
        indptr, cols, vals = _csr(rng, c["n_rows"], c["n_cols"], per_row, repeats)
        assert cols.shape[0] == indptr[-1]
        P0 = rng.random((c["n_rows"], dim))
        Q0 = rng.random((c["n_cols"], dim))
        P, Q, Pe, Qe = P0.copy(), Q0.copy(), P0.copy(), Q0.copy()
        for _ in range(3):
            got = K.sgd_pass(indptr, cols, vals, P, Q, 0.01, 0.05)
            expect = _in_order(indptr, cols, vals, Pe, Qe, 0.01, 0.05)
            np.testing.assert_array_equal(P, Pe, err_msg=f"{case}, seed {seed}: P")
            np.testing.assert_array_equal(Q, Qe, err_msg=f"{case}, seed {seed}: Q")
            assert got == expect
        if cols.shape[0]:
            assert not np.array_equal(P, P0), "the pass changed nothing"


def test_a_pass_without_ratings_changes_nothing():
    indptr = np.zeros(4, dtype=np.int64)
    P, Q = np.ones((3, 2)), np.ones((2, 2))
    assert K.sgd_pass(indptr, np.zeros(0, np.int32), np.zeros(0), P, Q, 0.1, 0.1) == 0.0
    np.testing.assert_array_equal(P, 1.0)
    np.testing.assert_array_equal(Q, 1.0)


@nb.njit(cache=False)
def _als_one_at_a_time(indptr, cols, vals, fixed, out, reg, weighted):
    """The half-step adding one rating at a time (the kernel as it was before)."""
    n_rows, dim = out.shape
    A = np.empty((dim, dim))
    b = np.empty(dim)
    for u in range(n_rows):
        lo, hi = indptr[u], indptr[u + 1]
        if hi == lo:
            out[u, :] = 0.0
            continue
        lam = reg * (hi - lo) if weighted else reg
        A[:, :] = 0.0
        b[:] = 0.0
        for t in range(lo, hi):
            j = cols[t]
            for a in range(dim):
                fa = fixed[j, a]
                b[a] += vals[t] * fa
                for c in range(a + 1):
                    A[a, c] += fa * fixed[j, c]
        for a in range(dim):
            A[a, a] += lam
            for c in range(a + 1, dim):
                A[a, c] = A[c, a]
        solve_spd(A, b)
        out[u, :] = b


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dim", [1, 5, 32])
def test_als_half_step_equals_one_rating_at_a_time(weighted, dim):
    rng = np.random.default_rng(dim)
    per_row = rng.integers(0, 15, 40)   # 0 to 14 ratings: every remainder of four
    per_row[3] = 0
    indptr, cols, vals = _csr(rng, 40, 20, np.minimum(per_row, 20))
    fixed = rng.normal(size=(20, dim)) * 10.0 ** rng.integers(-4, 4, (20, dim))
    got, expect = np.full((40, dim), np.nan), np.full((40, dim), np.nan)
    K.als_half_step(indptr, cols, vals, fixed, got, 0.1, weighted)
    _als_one_at_a_time(indptr, cols, vals, fixed, expect, 0.1, weighted)
    np.testing.assert_array_equal(got, expect)
    assert np.all(got[3] == 0.0)
    if dim > 1:   # the order of the additions shows in these numbers
        rev = np.full((40, dim), np.nan)
        flipped = np.concatenate([cols[indptr[u]:indptr[u + 1]][::-1] for u in range(40)])
        back = np.concatenate([vals[indptr[u]:indptr[u + 1]][::-1] for u in range(40)])
        _als_one_at_a_time(indptr, flipped.astype(np.int32), back, fixed, rev, 0.1, weighted)
        assert not np.array_equal(rev, expect)
