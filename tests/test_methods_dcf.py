"""DCF: the discrete coordinate descent, the balance surrogate, monotone training, the method."""
from __future__ import annotations

import numpy as np
import pytest

from phdlib import results
from phdlib.experiments import training
from phdlib.methods import discrete, dcf
from phdlib.kernels import dcf as K


def _problem(n_users=40, n_items=30, density=0.4, seed=0):
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    mask[np.arange(n_users), rng.integers(0, n_items, n_users)] = True  # every user rates
    mask[rng.integers(0, n_users, n_items), np.arange(n_items)] = True  # every item is rated
    u, i = np.nonzero(mask)
    r = rng.integers(1, 6, size=u.shape[0]).astype(np.float64)
    return discrete.RatingGraph.from_arrays(u, i, r, n_users, n_items)


def _row_objective(g, target, b, D, u, w_u, w_i, bias):
    s, e = g.u_indptr[u], g.u_indptr[u + 1]
    j = g.u_items[s:e]
    c = w_u * w_i[j]
    pred = c * (D[j].astype(np.float64) @ b)
    return float(np.sum((target[s:e] - pred) ** 2) - 2.0 * bias @ b)


@pytest.mark.parametrize("weighted", [False, True])
def test_dcd_sweep_equals_brute_force_single_bit_choices(weighted):
    """One sweep of the kernel = for each bit in turn, the sign with the lower objective."""
    g = _problem(seed=1)
    r = 7
    rng = np.random.default_rng(2)
    target = discrete.scale_ratings(g.rating, 1, 5, r) + rng.normal(0, 0.3, g.nnz)  # no exact ties
    B = np.where(rng.random((g.n_users, r)) < 0.5, 1, -1).astype(np.int8)
    D = np.where(rng.random((g.n_items, r)) < 0.5, 1, -1).astype(np.int8)
    wu = rng.random(g.n_users) + 0.5 if weighted else np.ones(g.n_users)
    wi = rng.random(g.n_items) + 0.5 if weighted else np.ones(g.n_items)
    bias = rng.normal(0, 2.0, (g.n_users, r))
    expect = B.astype(np.float64).copy()
    for u in range(g.n_users):
        b = expect[u]
        for k in range(r):
            objs = {}
            for v in (-1.0, 1.0):
                b[k] = v
                objs[v] = _row_objective(g, target, b, D, u, wu[u], wi, bias[u])
            b[k] = min(objs, key=objs.get)
    got = B.copy()
    K.dcd_rows(g.u_indptr, g.u_items, target, wu, wi, got, D, bias, 1)
    np.testing.assert_array_equal(got, expect.astype(np.int8))


def test_dcd_converged_codes_are_single_flip_local_minima():
    g = _problem(seed=3)
    r = 6
    rng = np.random.default_rng(4)
    target = discrete.scale_ratings(g.rating, 1, 5, r)
    B = np.where(rng.random((g.n_users, r)) < 0.5, 1, -1).astype(np.int8)
    D = np.where(rng.random((g.n_items, r)) < 0.5, 1, -1).astype(np.int8)
    bias = rng.normal(0, 0.5, (g.n_users, r))
    ones_u, ones_i = np.ones(g.n_users), np.ones(g.n_items)
    K.dcd_rows(g.u_indptr, g.u_items, target, ones_u, ones_i, B, D, bias, 1000)
    for u in range(g.n_users):
        b = B[u].astype(np.float64)
        base = _row_objective(g, target, b, D, u, 1.0, ones_i, bias[u])
        for k in range(r):
            f = b.copy()
            f[k] = -f[k]
            assert _row_objective(g, target, f, D, u, 1.0, ones_i, bias[u]) >= base - 1e-9


@pytest.mark.parametrize("shape", [(50, 8), (200, 16), (33, 32)])
@pytest.mark.parametrize("deficient", [False, True])
def test_balanced_decorrelated_constraints_and_optimality(shape, deficient):
    n, r = shape
    rng = np.random.default_rng(n + r)
    W = np.where(rng.random((n, r)) < 0.5, 1.0, -1.0)
    if deficient:  # a constant bit and a duplicated bit: two null directions
        W[:, 0] = 1.0
        W[:, 2] = W[:, 1]
    X = discrete.balanced_decorrelated(W, np.random.default_rng(0))
    assert X.shape == (n, r)
    np.testing.assert_allclose(X.sum(axis=0), 0.0, atol=1e-8)
    np.testing.assert_allclose(X.T @ X, n * np.eye(r), atol=1e-8)
    # optimal: tr(W^T X) = sqrt(n) * nuclear norm of the centred W, above any feasible X
    J = W - W.mean(axis=0)
    best = np.sqrt(n) * np.linalg.svd(J, compute_uv=False).sum()
    assert np.sum(W * X) == pytest.approx(best, rel=1e-10)
    Z = rng.normal(size=(n, r))
    Z -= Z.mean(axis=0)
    Qz, _ = np.linalg.qr(Z)
    assert np.sum(W * np.sqrt(n) * Qz) <= best + 1e-9


@pytest.mark.parametrize("codes", [False, True])
def test_balanced_decorrelated_equals_the_svd_polar_factor_at_full_rank(codes):
    """From the r x r Gram matrix, the same X as sqrt(n) P Q^T of the thin SVD of the
    centred W (DCF's Eq. 16), to rounding: the polar factor is unique at full rank."""
    rng = np.random.default_rng(12)
    n, r = 3000, 32
    W = np.where(rng.random((n, r)) < 0.3, 1.0, -1.0) if codes else rng.random((n, r))
    P, s, Qt = np.linalg.svd(W - W.mean(axis=0), full_matrices=False)
    assert s[-1] > 1e-3 * s[0]  # full rank
    X = discrete.balanced_decorrelated(W, np.random.default_rng(0))
    np.testing.assert_allclose(X, np.sqrt(n) * P @ Qt, rtol=0, atol=1e-9)


@pytest.mark.parametrize("smallest", [1e-5, 1e-6, 1e-7])
def test_balanced_decorrelated_keeps_the_constraints_when_ill_conditioned(smallest):
    """Singular values spread down to ``smallest`` (not null): still X^T X = n I and the
    SVD's polar factor, where the Gram route alone would lose both."""
    rng = np.random.default_rng(13)
    n, r = 400, 16
    U, _ = np.linalg.qr(rng.normal(size=(n, r)))
    U -= U.mean(axis=0)
    V, _ = np.linalg.qr(rng.normal(size=(r, r)))
    W = (U * np.geomspace(1.0, smallest, r)) @ V.T
    P, s, Qt = np.linalg.svd(W - W.mean(axis=0), full_matrices=False)
    X = discrete.balanced_decorrelated(W, np.random.default_rng(0))
    np.testing.assert_allclose(X.T @ X / n, np.eye(r), atol=1e-10)
    np.testing.assert_allclose(X, np.sqrt(n) * P @ Qt, atol=1e-6)


def test_ridge_rows_refuses_a_zero_lambda():
    g = _problem(seed=8)
    r = 40  # every row short: the dual form, where lam = 0 would divide by zero
    with pytest.raises(ValueError, match="lam must be > 0"):
        K.ridge_rows(g.u_indptr, g.u_items, np.ones(g.nnz), np.ones(g.n_users),
                     np.ones(g.n_items), np.ones((g.n_items, r)), 0.0, True,
                     np.zeros((g.n_users, r)), np.zeros((g.n_users, r)))


def test_balanced_decorrelated_rejects_too_few_rows():
    with pytest.raises(ValueError, match="more rows than bits"):
        discrete.balanced_decorrelated(np.ones((4, 8)), np.random.default_rng(0))


@pytest.mark.parametrize("init,x_factor", [("relaxed", 1.0), ("relaxed", 2.0), ("random", 1.0)])
def test_objective_never_increases_across_outer_iterations(init, x_factor):
    g = _problem(n_users=60, n_items=45, seed=5)
    r = 8
    target = discrete.scale_ratings(g.rating, 1, 5, r)
    m = discrete.fit_blocks(g, target, [r], alpha=0.05, beta=0.05, seed=0, max_iterations=30,
                       init=init, init_max_iterations=5, init_x_factor=x_factor)
    obj = np.array([row["objective"] for row in m.log])
    assert len(obj) >= 3
    assert np.all(np.diff(obj) <= 1e-9 * np.abs(obj[:-1]).max())
    assert obj[-1] < obj[0]
    # the logged objective is the one recomputed from scratch
    Bs, Ds = [m.B], [m.D]
    recomputed, _ = discrete.objective(g, target, Bs, Ds, m.X, m.Y, m.Wu, m.Wi, 0.05, 0.05)
    assert recomputed == obj[-1]


@pytest.mark.parametrize("score", ["hamming", "phd"])
@pytest.mark.parametrize("offset", [False, True])
def test_logged_objective_is_the_objective_recomputed_from_the_codes(score, offset):
    """A round logs the objective from the predictions it keeps; recomputed from the
    codes after every round it must be the same number exactly (two blocks, both
    scores, with and without DCF+bias's per-user offset)."""
    g = _problem(n_users=50, n_items=40, seed=8)
    rng = np.random.default_rng(9)
    Wu, Wi = rng.random((g.n_users, 2)) + 0.5, rng.random((g.n_items, 2)) + 0.5
    target = discrete.scale_ratings(g.rating, 1, 5, 12)
    user = np.repeat(np.arange(g.n_users), np.diff(g.u_indptr))
    checked = []

    def check(it, model):
        Bs = [model.B[:, :4], model.B[:, 4:]]
        Ds = [model.D[:, :4], model.D[:, 4:]]
        fit_to = target - model.offset[user] if offset else target
        obj, _ = discrete.objective(g, fit_to, Bs, Ds, model.X, model.Y, Wu, Wi, 0.02, 0.02,
                                    score)
        assert obj == model.log[-1]["objective"], it
        checked.append(it)

    discrete.fit_blocks(g, target, [4, 8], Wu, Wi, alpha=0.02, beta=0.02, seed=0,
                        max_iterations=6, init="random", callback=check, score=score,
                        user_offset=offset)
    assert checked


def test_block_objective_never_increases_with_weights():
    g = _problem(n_users=60, n_items=45, seed=6)
    rng = np.random.default_rng(7)
    Wu, Wi = rng.random((g.n_users, 2)), rng.random((g.n_items, 2))
    target = discrete.scale_ratings(g.rating, 1, 5, 4)
    m = discrete.fit_blocks(g, target, [4, 8], Wu, Wi, alpha=0.01, beta=0.01, seed=0, max_iterations=20,
                       init="random")
    obj = np.array([row["objective"] for row in m.log])
    assert np.all(np.diff(obj) <= 1e-9 * np.abs(obj[:-1]).max())


def test_relaxed_init_rows_solve_their_ridge_problems():
    """With x_factor=1 each row update is the exact minimiser of the relaxed objective."""
    g = _problem(seed=8)
    r, alpha = 5, 0.3
    rng = np.random.default_rng(9)
    target = discrete.scale_ratings(g.rating, 1, 5, r)
    V = rng.normal(size=(g.n_items, r))
    lin = rng.normal(size=(g.n_users, r))
    U = np.zeros((g.n_users, r))
    K.ridge_rows(g.u_indptr, g.u_items, target, np.ones(g.n_users), np.ones(g.n_items), V,
                 alpha, True, lin, U)
    for u in (0, 7, 19):
        s, e = g.u_indptr[u], g.u_indptr[u + 1]
        A = V[g.u_items[s:e]]

        def f(x):
            return np.sum((target[s:e] - A @ x) ** 2) + alpha * (e - s) * x @ x - 2 * lin[u] @ x
        grad = -2 * A.T @ (target[s:e] - A @ U[u]) + 2 * alpha * (e - s) * U[u] - 2 * lin[u]
        np.testing.assert_allclose(grad, 0.0, atol=1e-8)
        assert f(U[u]) <= f(U[u] + 1e-3 * rng.normal(size=r))


@pytest.mark.parametrize("count_weighted", [True, False])
@pytest.mark.parametrize("lam", [1e-4, 0.3])
def test_ridge_rows_short_rows_dual_form_equals_the_normal_equations(count_weighted, lam):
    """Rows with fewer ratings than r take the dual (n_u x n_u) form: the same solution
    as a dense solve of the r x r ridge system, with weights, whatever lam."""
    g = _problem(seed=8)
    n_u = np.diff(g.u_indptr)
    r = int(np.median(n_u)) + 1  # some rows below r (dual form), some at or above it
    assert (n_u < r).any() and (n_u >= r).any()
    rng = np.random.default_rng(11)
    target = rng.normal(size=g.nnz)
    wu, wi = rng.random(g.n_users) + 0.5, rng.random(g.n_items) + 0.5
    V = rng.normal(size=(g.n_items, r))
    lin = rng.normal(size=(g.n_users, r))
    U = np.full((g.n_users, r), 7.0)
    K.ridge_rows(g.u_indptr, g.u_items, target, wu, wi, V, lam, count_weighted, lin, U)
    for u in range(g.n_users):
        s, e = g.u_indptr[u], g.u_indptr[u + 1]
        if e == s:
            np.testing.assert_array_equal(U[u], 7.0)  # no ratings: left as it was
            continue
        A = (wu[u] * wi[g.u_items[s:e]])[:, None] * V[g.u_items[s:e]]
        reg = lam * ((e - s) if count_weighted else 1.0)
        want = np.linalg.solve(A.T @ A + reg * np.eye(r), A.T @ target[s:e] + lin[u])
        np.testing.assert_allclose(U[u], want, rtol=1e-7, atol=1e-9 * np.abs(want).max())


def test_rating_graph_layouts_agree():
    g = _problem(seed=10)
    # item layout, mapped back through i_pos, lists the same (user, item) pairs
    users_by_pos = np.repeat(np.arange(g.n_users), np.diff(g.u_indptr))
    items_by_item_layout = np.repeat(np.arange(g.n_items), np.diff(g.i_indptr))
    np.testing.assert_array_equal(users_by_pos[g.i_pos], g.i_users)
    np.testing.assert_array_equal(g.u_items[g.i_pos], items_by_item_layout)


def test_rating_graph_bad_input_is_named():
    with pytest.raises(ValueError, match="item id 9 outside 0..4"):
        discrete.RatingGraph.from_arrays([0, 1], [0, 9], [1.0, 2.0], 2, 5)
    with pytest.raises(ValueError, match=r"rating\[1\] = nan"):
        discrete.RatingGraph.from_arrays([0, 1], [0, 1], [1.0, np.nan], 2, 5)


def test_scale_ratings_maps_to_plus_minus_r():
    np.testing.assert_allclose(discrete.scale_ratings([1, 3, 5], 1, 5, 64), [-64, 0, 64])


def test_relaxed_init_stops_at_max_iterations():
    g = _problem(seed=11)
    target = discrete.scale_ratings(g.rating, 1, 5, 4)
    W = np.ones((g.n_users, 1)), np.ones((g.n_items, 1))
    *_, log = discrete.relaxed_init(g, target, [4], *W, 0.1, 0.1, np.random.default_rng(0),
                                  max_iterations=3, tol=0.0)
    assert [row["iteration"] for row in log] == [1, 2, 3]


# --------------------------------------------------------------------------- the method


def test_dcf_fit_returns_packed_codes_of_the_block_model(synthetic_split):
    sp, ds = synthetic_split, synthetic_split.dataset
    cfg = {**dcf.DCF.defaults(ds.name, 16), "tune": False, "max_iterations": 4, "init_max_iterations": 3}
    m = dcf.DCF.fit(sp, 16, 0, cfg)
    assert m.ranks_by == "hamming" and m.arrays["user_codes"].shape == (ds.n_users, 1)
    assert m.info["iterations"] <= 4 and m.info["init_iterations"] <= 3
    assert list(m.log["phase"].unique()) == ["init", "discrete"]
    # the same fit by hand: codes packed from fit_blocks' +-1 matrices
    g = discrete.RatingGraph.from_ratings(sp.train, ds.n_users, ds.n_items)
    target = discrete.scale_ratings(g.rating, *ds.rating_scale, 16)
    bm = discrete.fit_blocks(g, target, [16], alpha=cfg["alpha"], beta=cfg["beta"], seed=0,
                           max_iterations=4, init_max_iterations=3)
    np.testing.assert_array_equal(m.arrays["user_codes"], dcf.packed(bm)["user_codes"])
    np.testing.assert_array_equal(m.arrays["item_codes"], dcf.packed(bm)["item_codes"])


def test_dcf_grid_is_the_alpha_beta_diagonal_unless_untied():
    cfg = dcf.DCF.defaults("ml-1m", 64)
    assert cfg["alpha"] == cfg["beta"] == dcf.CHOSEN[("ml-1m", 64)]
    pts = dcf.DCF.grid(cfg, 64)
    assert [(p["alpha"], p["beta"]) for p in pts] == [(a, a) for a in dcf.PAPER_GRID]
    assert all(p["tune"] is False for p in pts)
    assert len(dcf.DCF.grid(dict(cfg, grid_tied=False), 64)) == len(dcf.PAPER_GRID) ** 2
    assert dcf.DCF.grid(dict(cfg, tune=False), 64) == []


def test_grid_search_chooses_on_validation_and_stores_every_point(synthetic_split, tmp_path):
    sp = synthetic_split
    run = training.run("dcf", sp, 8, 0, {"alpha_grid": [0.01, 1.0], "max_iterations": 5,
                                         "init_max_iterations": 3}, root=tmp_path, progress=False)
    grid = run.grid
    assert len(grid) == 2 and grid["chosen"].sum() == 1
    best = grid.iloc[int(np.argmax(grid["valid_ndcg@10"].to_numpy()))]
    assert bool(best["chosen"]) and run.extra["chosen"]["alpha"] == best["alpha"]
    assert run.metrics["ndcg@10"] == pytest.approx(best["test_ndcg@10"])
    assert run.metrics["grid_points"] == 2
    idx = results.index(tmp_path)
    assert len(idx) == 3  # one stored run per grid point, and the tuned run
    # the tuned run holds the chosen point's codes
    point = results.load(next(p for p in idx["path"] if p.endswith(run.extra["chosen_key"])))
    np.testing.assert_array_equal(point.arrays["user_codes"], run.arrays["user_codes"])


def test_the_relaxed_start_refuses_a_ridge_not_above_zero_and_only_where_it_solves_one():
    from phdlib.methods.discrete import check_ridge

    for bad in ({"alpha": 0.0}, {"beta": -1.0}, {"alpha": float("nan")},
                {"alpha_grid": [0.1, 0.0]}):
        (key,) = bad
        with pytest.raises(ValueError, match=f"config '{key}' must be > 0 with init 'relaxed'"):
            check_ridge("relaxed", 50, **bad)
    check_ridge("relaxed", 50, alpha=1e-9, alpha_grid=[0.01, 1.0])
    # a random start, or a relaxed one of no iteration, solves no ridge problem
    check_ridge("random", 50, alpha=0.0, alpha_grid=[0.0])
    check_ridge("relaxed", 0, alpha=0.0)
