"""DCF_PHD's closed-form bit updates (:mod:`phdlib.methods.discrete_phd`) against brute force.

Every single-bit update of the NumPy reference, for both scores (Hamming =
DCF, PHD = DCF_PHD) and both sides (user bits, item bits), must pick the sign
whose full objective, recomputed from the definitions, is the lower; the
Numba sweep must make the same choices as the reference, bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest

from phdlib import codes as C
from phdlib.kernels import dcf as K
from phdlib.methods import discrete, discrete_phd as P

SCORES = ("hamming", "phd")
SIDES = ("user", "item")


def _pm1(rng, shape):
    return np.where(rng.random(shape) < 0.5, 1, -1).astype(np.int8)


def _problem(seed: int, n_users=7, n_items=5, m=6, density=0.5):
    """Observed pairs (every user and item at least once), targets, codes, surrogates, alpha, beta."""
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    mask[np.arange(n_users), rng.integers(0, n_items, n_users)] = True
    mask[rng.integers(0, n_users, n_items), np.arange(n_items)] = True
    user, item = np.nonzero(mask)
    target = rng.uniform(-m, m, user.shape[0])
    if seed % 3 == 0:  # integer targets: exact ties of the two signs are possible
        target = np.round(target)
    B, D = _pm1(rng, (n_users, m)), _pm1(rng, (n_items, m))
    X, Y = rng.normal(size=(n_users, m)), rng.normal(size=(n_items, m))
    alpha, beta = 10.0 ** rng.uniform(-3, 1, 2)
    return user, item, target, B, D, X, Y, float(alpha), float(beta)


def test_phd_score_is_m_minus_twice_the_packed_phd():
    rng = np.random.default_rng(0)
    for m in (1, 6, 64, 70):
        B, D = _pm1(rng, (9, m)), _pm1(rng, (11, m))
        phd = C.PHD.table(C.pack(B, encoding="pm1"), C.pack(D, encoding="pm1"))
        np.testing.assert_array_equal(P.scores(B, D, "phd"), m - 2.0 * phd,
                                      err_msg=f"m={m}: PHD score is not m - 2 PHD")
        ham = C.HAMMING.table(C.pack(B, encoding="pm1"), C.pack(D, encoding="pm1"))
        np.testing.assert_array_equal(P.scores(B, D, "hamming"), m - 2.0 * ham)
        # the summed form of the docstring: (<b, d> - sum b + sum d + m) / 2
        Bf, Df = B.astype(float), D.astype(float)
        summed = (Bf @ Df.T - Bf.sum(1)[:, None] + Df.sum(1)[None, :] + m) / 2
        np.testing.assert_array_equal(P.scores(B, D, "phd"), summed)


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("side", SIDES)
def test_every_bit_update_chooses_the_lower_objective(score, side):
    """Brute force: flip the bit, recompute the full objective; the update keeps the lower one."""
    checked = ties = 0
    for seed in range(60):
        user, item, target, B, D, X, Y, alpha, beta = _problem(seed)
        codes, bias = (B, alpha * X) if side == "user" else (D, beta * Y)
        for row in range(codes.shape[0]):
            for k in range(codes.shape[1]):
                new = P.bit_update(user, item, target, B, D, bias[row, k], score, side, row, k)
                assert new in (-1, 1), f"bit update returned {new}, expected -1 or 1"
                objs = {}
                for v in (-1, 1):
                    Bv, Dv = B.copy(), D.copy()
                    (Bv if side == "user" else Dv)[row, k] = v
                    objs[v] = P.objective(user, item, target, Bv, Dv, X, Y, alpha, beta, score)
                tol = 1e-9 * max(1.0, abs(objs[1]))
                assert objs[new] <= objs[-new] + tol, (
                    f"seed {seed}, {score} {side} {row} bit {k}: update chose {new} with objective "
                    f"{objs[new]!r}, but {-new} gives {objs[-new]!r}")
                if abs(objs[1] - objs[-1]) <= tol:
                    ties += 1
                    assert new == codes[row, k], (f"seed {seed}: tie at {side} {row} bit {k}, "
                                                  f"expected the bit kept ({codes[row, k]}), got {new}")
                checked += 1
    assert checked == 60 * 6 * (7 if side == "user" else 5)
    assert ties < checked // 2, f"{ties} ties of {checked}: the check would be vacuous"


def _graph_problem(seed, n_users=30, n_items=20, m=8):
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < 0.4
    mask[np.arange(n_users), rng.integers(0, n_items, n_users)] = True
    mask[rng.integers(0, n_users, n_items), np.arange(n_items)] = True
    user, item = np.nonzero(mask)
    g = discrete.RatingGraph.from_arrays(user, item, rng.integers(1, 6, user.shape[0]), n_users,
                                         n_items)
    target = discrete.scale_ratings(g.rating, 1, 5, m) + rng.normal(0, 0.3, g.nnz)
    users_by_pos = np.repeat(np.arange(n_users), np.diff(g.u_indptr))  # user layout
    return (g, target, users_by_pos, g.u_items.astype(np.int64), _pm1(rng, (n_users, m)),
            _pm1(rng, (n_items, m)), rng.normal(0, 2.0, (n_users, m)), rng.normal(0, 2.0, (n_items, m)))


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("side", SIDES)
def test_numba_sweep_makes_the_reference_choices(score, side):
    """One sweep of :func:`phdlib.kernels.dcf.dcd_rows_linear` = the reference's bit-by-bit sweep."""
    for seed in range(5):
        g, target, user, item, B, D, bx, by = _graph_problem(seed)
        expect = P.sweep(user, item, target, B, D, bx if side == "user" else by, score, side)
        got_B, got_D = B.copy(), D.copy()
        ones_u, ones_i = np.ones(g.n_users), np.ones(g.n_items)
        if side == "user":
            K.dcd_rows_linear(g.u_indptr, g.u_items, target, ones_u, ones_i, got_B,
                              *P.linear_terms(score, side, got_D), bx, 1)
            got = got_B
        else:
            K.dcd_rows_linear(g.i_indptr, g.i_users, np.ascontiguousarray(target[g.i_pos]), ones_i,
                              ones_u, got_D, *P.linear_terms(score, side, got_B), by, 1)
            got = got_D
        assert not np.array_equal(expect, B if side == "user" else D), "the sweep changed nothing"
        np.testing.assert_array_equal(got, expect, err_msg=f"seed {seed}: {score} {side} sweep")


@pytest.mark.parametrize("score", SCORES)
def test_linear_predictions_are_the_scores(score):
    """The linear terms of either side give the score of every pair."""
    g, target, user, item, B, D, _, _ = _graph_problem(7)
    expect = P.scores(B, D, score)[user, item]
    out = np.empty(g.nnz)
    K.linear_predictions(g.u_indptr, g.u_items, np.ones(g.n_users), np.ones(g.n_items), B,
                         *P.linear_terms(score, "user", D), out)
    np.testing.assert_array_equal(out, expect, err_msg=f"{score}: user-row terms")
    K.linear_predictions(g.i_indptr, g.i_users, np.ones(g.n_items), np.ones(g.n_users), D,
                         *P.linear_terms(score, "item", B), out)
    np.testing.assert_array_equal(out, expect[g.i_pos], err_msg=f"{score}: item-row terms")


def test_phd_coefficients_are_minus_one_exactly_where_the_item_bit_is_minus_one():
    rng = np.random.default_rng(1)
    D, B = _pm1(rng, (6, 9)), _pm1(rng, (5, 9))
    coef, const = P.linear_terms("phd", "user", D)
    np.testing.assert_array_equal(coef, np.where(D == -1, -1, 0))
    np.testing.assert_array_equal(const, (D == 1).sum(axis=1))
    coef, const = P.linear_terms("phd", "item", B)
    np.testing.assert_array_equal(coef, np.where(B == 1, 1, 0))
    np.testing.assert_array_equal(const, (B == -1).sum(axis=1))


def test_dcd_rows_is_the_inner_product_case():
    g, target, *_, B, D, bx, _ = _graph_problem(3)
    a, b = B.copy(), B.copy()
    fa = K.dcd_rows(g.u_indptr, g.u_items, target, np.ones(g.n_users), np.ones(g.n_items), a, D,
                    bx, 5)
    fb = K.dcd_rows_linear(g.u_indptr, g.u_items, target, np.ones(g.n_users), np.ones(g.n_items),
                           b, *P.linear_terms("hamming", "user", D), bx, 5)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fa, fb)


def test_unknown_score_and_side_are_named():
    with pytest.raises(ValueError, match="score must be one of .* got 'cosine'"):
        P.scores(np.ones((2, 3)), np.ones((2, 3)), "cosine")
    with pytest.raises(ValueError, match="side must be 'user' or 'item', got 'both'"):
        P.linear_terms("phd", "both", np.ones((2, 3), dtype=np.int8))
    with pytest.raises(ValueError, match="side must be 'user' or 'item', got 'both'"):
        P.bit_update([0], [0], [1.0], np.ones((1, 2)), np.ones((1, 2)), 0.0, "phd", "both", 0, 0)


def test_phd_bench_dcd_times_both_sweeps_on_a_dataset(capsys, tmp_path):
    """``phd bench --dcd``: both sweeps timed on the same problem, the ratio and the flips
    reported; a wrong dataset is one ``phd: error:`` line."""
    import json

    from phdlib.cli import main

    out = tmp_path / "dcd.json"
    assert main(["bench", "--dcd", "--dataset", "ml-100k", "--bits", "16", "--repeats", "2",
                 "--json", "--out", str(out)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert json.loads(out.read_text()) == res and list(res) == ["16"]
    r = res["16"]
    assert r["bits"] == 16 and r["nnz"] > 0 and r["ratio"]["rounds"] == 2
    assert set(r["seconds"]) == set(r["flips"]) == {"hamming", "phd"}
    assert r["ratio"]["median"] > 0 and all(v > 0 for v in r["seconds"].values())
    assert main(["bench", "--dcd", "--dataset", "no-such-set"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("phd: error: unknown dataset 'no-such-set'") and "Traceback" not in err
