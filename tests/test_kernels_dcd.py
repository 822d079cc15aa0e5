"""DCF's descent kernel, which sums several bits in one pass, against the bit-by-bit sweep.

:func:`phdlib.kernels.dcf.dcd_rows_linear` computes the sums of
``PASS_BITS`` consecutive bits in one pass over a row's ratings and decides them
in order up to the first flip. Its codes and flip counts must equal, bit for
bit, those of the plain sweep below: one bit's sum at a time, from the scores
as they are after every earlier bit (the kernel as it was before).
"""
from __future__ import annotations

import numba as nb
import numpy as np
import pytest

from phdlib.kernels import dcf as K
from phdlib.methods import discrete
from phdlib.methods import discrete_phd as P


@nb.njit(cache=False)
def _bit_by_bit(indptr, cols, target, wrow, wcol, codes, coef, const, bias, max_sweeps):
    """The sweep one bit at a time: the reference for the kernel's numbers. Returns
    the flips per row and how many sums were exactly 0 (the bit kept)."""
    n, r = codes.shape
    flips = np.zeros(n, dtype=np.int64)
    zeros = 0
    for u in range(n):
        s, e = indptr[u], indptr[u + 1]
        nu = e - s
        p = np.empty(nu)
        c = np.empty(nu)
        cc = np.zeros(r)
        for t in range(nu):
            j = cols[s + t]
            ct = wrow[u] * wcol[j]
            c[t] = ct
            acc = 0
            for k in range(r):
                acc += codes[u, k] * coef[j, k]
            p[t] = ct * (acc + const[j])
            for k in range(r):
                cc[k] += ct * ct * (coef[j, k] * coef[j, k])
        nflip = 0
        for _sweep in range(max_sweeps):
            changed = 0
            for k in range(r):
                bk = codes[u, k]
                g = bias[u, k] + bk * cc[k]
                for t in range(nu):
                    g += c[t] * coef[cols[s + t], k] * (target[s + t] - p[t])
                zeros += g == 0.0
                nb_ = 1 if g > 0.0 else (-1 if g < 0.0 else bk)
                if nb_ != bk:
                    codes[u, k] = nb_
                    changed += 1
                    for t in range(nu):
                        p[t] += 2.0 * nb_ * c[t] * coef[cols[s + t], k]
            nflip += changed
            if changed == 0:
                break
        flips[u] = nflip
    return flips, zeros


def _problem(seed, r, whole, weighted, n_users=40, n_items=25):
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < 0.4
    mask[np.arange(n_users), rng.integers(0, n_items, n_users)] = True
    mask[rng.integers(0, n_users, n_items), np.arange(n_items)] = True
    mask[0] = False            # a user without ratings
    mask[1] = True             # and one with every item
    user, item = np.nonzero(mask)
    g = discrete.RatingGraph.from_arrays(user, item, rng.integers(1, 6, user.shape[0]), n_users,
                                         n_items)
    target = discrete.scale_ratings(g.rating, 1, 5, r)
    if not whole:   # whole targets, unit weights and whole biases make sums of exactly 0
        target = target + rng.normal(0, 0.3, g.nnz)
    wu = rng.random(n_users) + 0.5 if weighted else np.ones(n_users)
    wi = rng.random(n_items) + 0.5 if weighted else np.ones(n_items)
    B = np.where(rng.random((n_users, r)) < 0.5, 1, -1).astype(np.int8)
    D = np.where(rng.random((n_items, r)) < 0.5, 1, -1).astype(np.int8)
    bias = rng.normal(0, 2.0, (n_users, r))
    if whole:
        bias = np.round(bias)
    return g, target, wu, wi, B, D, bias


@pytest.mark.parametrize("r", [1, 3, 4, 5, 8, 13, 64])
@pytest.mark.parametrize("score", ["hamming", "phd"])
def test_descent_equals_the_bit_by_bit_sweep(r, score):
    ties = 0
    for seed in range(6):
        whole, weighted = seed % 2 == 0, seed % 3 == 2
        g, target, wu, wi, B, D, bias = _problem(seed, r, whole, weighted)
        coef, const = P.linear_terms(score, "user", D)
        for sweeps in (1, 5):
            expect, got = B.copy(), B.copy()
            fe, zeros = _bit_by_bit(g.u_indptr, g.u_items, target, wu, wi, expect, coef, const,
                                    bias, sweeps)
            ties += zeros
            fg = K.dcd_rows_linear(g.u_indptr, g.u_items, target, wu, wi, got, coef, const,
                                   bias, sweeps)
            np.testing.assert_array_equal(got, expect, err_msg=f"seed {seed}, {sweeps} sweeps")
            np.testing.assert_array_equal(fg, fe, err_msg=f"seed {seed}, {sweeps} sweeps")
            assert fe.sum() > 0, "the sweep flipped nothing: the comparison is empty"
        # the item side, from the user side's codes
        coef, const = P.linear_terms(score, "item", B)
        expect, got = D.copy(), D.copy()
        ti = np.ascontiguousarray(target[g.i_pos])
        fe, zeros = _bit_by_bit(g.i_indptr, g.i_users, ti, wi, wu, expect, coef, const,
                                bias[:g.n_items], 5)
        ties += zeros
        fg = K.dcd_rows_linear(g.i_indptr, g.i_users, ti, wi, wu, got, coef, const,
                               bias[:g.n_items], 5)
        np.testing.assert_array_equal(got, expect)
        np.testing.assert_array_equal(fg, fe)
    assert ties > 0, "no sum was exactly 0: the kept-bit branch went untested"


def test_a_zero_sum_keeps_the_bit():
    """A sum of exactly 0 keeps the bit, wherever in a pass of several bits it falls."""
    # one user, one item, r = 8: the target equals the score, so every sum is 0
    g = discrete.RatingGraph.from_arrays(np.array([0]), np.array([0]), np.array([3]), 1, 1)
    D = np.ones((1, 8), dtype=np.int8)
    B = np.array([[1, -1, 1, 1, -1, -1, 1, -1]], dtype=np.int8)
    target = np.array([float(np.sum(B[0] * D[0]))])
    bias = -B.astype(np.float64)   # cancels the sum's other term, b_k sum_t c_t^2 = b_k
    got = B.copy()
    flips = K.dcd_rows_linear(g.u_indptr, g.u_items, target, np.ones(1), np.ones(1), got, D,
                              np.zeros(1), bias, 3)
    np.testing.assert_array_equal(got, B)
    assert flips.tolist() == [0]


@nb.njit(cache=False)
def _predictions_one_by_one(indptr, cols, wrow, wcol, left, right, out):
    for u in range(left.shape[0]):
        for t in range(indptr[u], indptr[u + 1]):
            j = cols[t]
            acc = 0.0
            for k in range(left.shape[1]):
                acc += left[u, k] * right[j, k]
            out[t] = wrow[u] * wcol[j] * acc


@pytest.mark.parametrize("kind", ["real", "codes"])
@pytest.mark.parametrize("r", [1, 7, 64])
def test_predictions_four_at_a_time_equal_one_at_a_time(kind, r):
    """:func:`phdlib.kernels.dcf.weighted_predictions` sums four ratings side by side;
    each sum must be the one-by-one sum, bit for bit (rows of 0 to 11 ratings)."""
    rng = np.random.default_rng(r)
    n_rows, n_cols = 50, 30
    per_row = rng.integers(0, 12, n_rows)
    indptr = np.concatenate([[0], np.cumsum(per_row)]).astype(np.int64)
    cols = rng.integers(0, n_cols, indptr[-1]).astype(np.int32)
    if kind == "real":   # magnitudes spread so that the order of the sum shows
        left = rng.normal(size=(n_rows, r)) * 10.0 ** rng.integers(-8, 8, (n_rows, r))
        right = rng.normal(size=(n_cols, r))
    else:
        left = np.where(rng.random((n_rows, r)) < 0.5, 1, -1).astype(np.int8)
        right = np.where(rng.random((n_cols, r)) < 0.5, 1, -1).astype(np.int8)
    wrow, wcol = rng.random(n_rows) + 0.5, rng.random(n_cols) + 0.5
    got, expect = np.empty(indptr[-1]), np.empty(indptr[-1])
    K.weighted_predictions(indptr, cols, wrow, wcol, left, right, got)
    _predictions_one_by_one(indptr, cols, wrow, wcol, left, right, expect)
    np.testing.assert_array_equal(got, expect)
    if kind == "real" and r > 1:   # the order matters for these numbers
        rev = np.empty(indptr[-1])
        _predictions_one_by_one(indptr, cols, wrow, wcol, left[:, ::-1].copy(),
                                right[:, ::-1].copy(), rev)
        assert not np.array_equal(rev, expect)
