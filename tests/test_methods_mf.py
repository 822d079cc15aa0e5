"""MF by SGD (the paper's) and by ALS (ours), MFmean / MFmedian codes, and the MF methods."""
from types import SimpleNamespace

import numpy as np
import pytest

from phdlib import codes as C
from phdlib import results
from phdlib.experiments import training
from phdlib.methods import mf, mf_methods


def _ratings(n_users=30, n_items=20, density=0.4, seed=0, dim=3):
    """Low-rank-plus-noise ratings on 1..5 at random observed positions."""
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(n_users, dim))
    V = rng.normal(size=(n_items, dim))
    mask = rng.random((n_users, n_items)) < density
    mask[np.arange(n_users), rng.integers(0, n_items, n_users)] = True  # every user rates
    mask[rng.integers(0, n_users, n_items), np.arange(n_items)] = True  # every item is rated
    u, i = np.nonzero(mask)
    r = np.clip(np.rint(3 + (U[u] * V[i]).sum(1) + rng.normal(0, 0.5, len(u))), 1, 5)
    perm = rng.permutation(len(u))  # stored order must not matter
    return SimpleNamespace(user=u[perm].astype(np.int32), item=i[perm].astype(np.int32),
                           rating=r[perm].astype(np.float32)), n_users, n_items


def test_sgd_decreases_its_objective_pass_after_pass():
    tr, nu, ni = _ratings()
    objs = []
    for ep in range(0, 12, 2):
        P, Q = mf.fit_sgd(tr, nu, ni, dim=4, reg=0.1, epochs=ep, lr=0.005, seed=1)
        objs.append(mf.sgd_objective(tr, P, Q, reg=0.1))
    assert all(b < a for a, b in zip(objs, objs[1:])), objs
    assert objs[-1] < 0.5 * objs[0]


def test_sgd_init_uniform01_seeded_and_shapes():
    tr, nu, ni = _ratings()
    P, Q = mf.fit_sgd(tr, nu, ni, dim=5, reg=0.01, epochs=0, seed=3)
    assert P.dtype == np.float32 and Q.dtype == np.float32
    assert P.shape == (nu, 5) and Q.shape == (ni, 5)
    assert P.min() >= 0 and P.max() <= 1 and Q.min() >= 0 and Q.max() <= 1
    P2, _ = mf.fit_sgd(tr, nu, ni, dim=5, reg=0.01, epochs=2, seed=3)
    P3, _ = mf.fit_sgd(tr, nu, ni, dim=5, reg=0.01, epochs=2, seed=3)
    np.testing.assert_array_equal(P2, P3)
    P4, _ = mf.fit_sgd(tr, nu, ni, dim=5, reg=0.01, epochs=2, seed=4)
    assert not np.array_equal(P2, P4)


def test_sgd_matches_a_plain_python_transcription_of_MF_m():
    tr, nu, ni = _ratings(n_users=6, n_items=5, density=0.6)
    P, Q = mf.fit_sgd(tr, nu, ni, dim=2, reg=0.05, epochs=3, lr=0.01, seed=7)
    rng = np.random.default_rng(7)
    Pr = rng.random((nu, 2))
    Qr = rng.random((ni, 2))
    R = np.zeros((nu, ni))
    R[tr.user, tr.item] = tr.rating
    for _ in range(3):
        for u in range(nu):
            for j in np.flatnonzero(R[u]):  # MATLAB find: increasing column
                e = R[u, j] - Pr[u] @ Qr[j]
                Pr[u] = Pr[u] + 0.01 * (2 * e * Qr[j] - 0.05 * Pr[u])
                Qr[j] = Qr[j] + 0.01 * (2 * e * Pr[u] - 0.05 * Qr[j])
    np.testing.assert_allclose(P, Pr, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(Q, Qr, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("weighted", [False, True])
def test_als_objective_never_increases(weighted):
    tr, nu, ni = _ratings()
    objs = []
    cb = lambda ep, P, Q: objs.append(mf.als_objective(tr, P, Q, 0.5, weighted))  # noqa: E731
    mf.fit_als(tr, nu, ni, dim=4, reg=0.5, epochs=8, seed=0, weighted=weighted, callback=cb)
    assert all(b <= a * (1 + 1e-12) for a, b in zip(objs, objs[1:])), objs
    assert objs[-1] < objs[0]


@pytest.mark.parametrize("weighted", [False, True])
def test_als_solution_satisfies_its_normal_equations(weighted):
    tr, nu, ni = _ratings(n_users=8, n_items=6, density=0.7)
    reg = 0.3
    P, Q = mf.fit_als(tr, nu, ni, dim=3, reg=reg, epochs=300, seed=0, weighted=weighted)
    P = P.astype(np.float64)
    Q = Q.astype(np.float64)
    R = np.zeros((nu, ni))
    M = np.zeros((nu, ni), bool)
    R[tr.user, tr.item] = tr.rating
    M[tr.user, tr.item] = True
    # the item step is exact given P; the user step (done before it) is
    # satisfied at convergence
    for u in range(nu):
        J = M[u]
        lam = reg * J.sum() if weighted else reg
        lhs = (Q[J].T @ Q[J] + lam * np.eye(3)) @ P[u]
        np.testing.assert_allclose(lhs, Q[J].T @ R[u, J], rtol=1e-4, atol=1e-4)
    for i in range(ni):
        U = M[:, i]
        lam = reg * U.sum() if weighted else reg
        lhs = (P[U].T @ P[U] + lam * np.eye(3)) @ Q[i]
        np.testing.assert_allclose(lhs, P[U].T @ R[U, i], rtol=1e-4, atol=1e-4)


def test_bad_input_is_named():
    tr, nu, ni = _ratings()
    bad = SimpleNamespace(user=tr.user.copy(), item=tr.item, rating=tr.rating)
    bad.user[0] = nu
    with pytest.raises(ValueError, match="train.user id .* outside"):
        mf.fit_sgd(bad, nu, ni, dim=2, reg=0.1, epochs=1)
    with pytest.raises(ValueError, match="reg > 0"):
        mf.fit_als(tr, nu, ni, dim=2, reg=0.0, epochs=1)
    with pytest.raises(TypeError, match="no field"):
        mf.fit_sgd(object(), nu, ni, dim=2, reg=0.1, epochs=1)


# --------------------------------------------------------------------------- MFmean / MFmedian

def _vectors(seed=0, n_users=41, n_items=30, dim=6):
    rng = np.random.default_rng(seed)
    # skewed, shifted coordinates: the mean and the median differ
    return rng.gamma(2.0, size=(n_users, dim)) + 1, rng.gamma(2.0, size=(n_items, dim)) - 3


@pytest.mark.parametrize("scope", mf.SCOPES)
def test_mfmedian_codes_are_balanced_per_bit(scope):
    P, Q = _vectors()
    bu, bi, tu, ti = mf.binarize(P, Q, "median", scope)
    assert bu.dtype == bool and bu.shape == P.shape and bi.shape == Q.shape
    if scope == "separate":
        np.testing.assert_array_equal(bu.sum(0), len(P) // 2)
        np.testing.assert_array_equal(bi.sum(0), len(Q) // 2)
    else:
        np.testing.assert_array_equal(bu.sum(0) + bi.sum(0), (len(P) + len(Q)) // 2)
        np.testing.assert_array_equal(tu, ti)


@pytest.mark.parametrize("scope", mf.SCOPES)
def test_mfmean_codes_are_balanced_per_bit(scope):
    """The mean threshold balances each bit's mass: the coordinates above it
    exceed it by as much in total as those below fall short; on symmetric
    coordinates the bit counts are balanced too."""
    P, Q = _vectors()
    bu, bi, tu, ti = mf.binarize(P, Q, "mean", scope)
    groups = [(P, bu, tu), (Q, bi, ti)] if scope == "separate" else \
        [(np.vstack([P, Q]), np.vstack([bu, bi]), tu)]
    for X, B, t in groups:
        above = np.where(B, X - t, 0).sum(0)
        below = np.where(~B, t - X, 0).sum(0)
        np.testing.assert_allclose(above, below, rtol=1e-9)
        assert np.all(B.any(0)) and np.all((~B).any(0))  # no constant bit
    rng = np.random.default_rng(1)
    S, T = rng.normal(size=(4000, 8)) + 2, rng.normal(size=(3000, 8)) - 1
    bs, bt, _, _ = mf.binarize(S, T, "mean", scope)
    frac = np.vstack([bs, bt]).mean(0) if scope == "joint" else np.r_[bs.mean(0), bt.mean(0)]
    if scope == "separate":
        assert np.all(np.abs(frac - 0.5) < 0.03), frac
    else:  # one threshold for both: users sit above it, items below
        assert np.all(bs.mean(0) > 0.8) and np.all(bt.mean(0) < 0.2)


def test_packed_binarised_codes_rank_by_hamming_of_the_bits():
    """MFmean/MFmedian codes packed as the methods store them give the bits' Hamming distances."""
    from phdlib.methods import CodeModel

    rng = np.random.default_rng(0)
    for m in (32, 64, 100):
        U = rng.random((9, m)) < 0.5
        V = rng.random((7, m)) < 0.5
        u = rng.integers(0, 9, 50)
        i = rng.integers(0, 7, 50)
        model = CodeModel(m, {"user_codes": C.pack(U, "bool").words, "item_codes": C.pack(V, "bool").words})
        np.testing.assert_array_equal(model.pairs(u, i), (U[u] != V[i]).sum(1))


def test_binarize_rejects_bad_arguments():
    P, Q = _vectors()
    with pytest.raises(ValueError, match="threshold must be one of"):
        mf.binarize(P, Q, "mode")
    with pytest.raises(ValueError, match="scope must be one of"):
        mf.binarize(P, Q, "mean", "both")
    with pytest.raises(ValueError, match="one dim"):
        mf.binarize(P, Q[:, :3])


# --------------------------------------------------------------------------- the registry methods


def test_fit_path_reads_a_fit_at_every_checkpoint(synthetic_split):
    """Grid points of one reg share a fit: its factors after n epochs are those of a fit of n epochs."""
    sp, ds = synthetic_split, synthetic_split.dataset
    path = mf_methods.fit_path("sgd", sp, 8, 0, 0.1, [2, 5], lr=0.001, init="uniform01")
    assert sorted(path) == [2, 5] and path[2][2] <= path[5][2]
    for ep in (2, 5):
        P, Q = mf.fit_sgd(sp.train, ds.n_users, ds.n_items, 8, 0.1, ep, seed=0)
        np.testing.assert_array_equal(path[ep][0], P)
        np.testing.assert_array_equal(path[ep][1], Q)
    assert mf_methods.fit_path("sgd", sp, 8, 0, 0.1, [5], lr=0.001, init="uniform01") is path  # memoised
    with pytest.raises(ValueError, match="checkpoints"):
        mf_methods.fit_path("sgd", sp, 8, 0, 0.1, [0])
    with pytest.raises(ValueError, match="algorithm"):
        mf_methods.fit_path("svd", sp, 8, 0, 0.1, [1])


def test_fit_paths_runs_fits_in_workers_and_memoises_what_fit_path_computes(synthetic_split,
                                                                             monkeypatch):
    sp, ds = synthetic_split, synthetic_split.dataset
    monkeypatch.setattr(mf_methods, "_PATHS", {})
    sgd = {"lr": 0.001, "init": "uniform01"}
    requests = {"a": ("sgd", 8, 0, 0.1, (2, 5), sgd),
                "a3": ("sgd", 8, 0, 0.1, (3,), dict(sgd)),  # the same fit as "a", read at 3
                "b": ("sgd", 8, 1, 0.3, (3,), {**sgd, "init": "normal"}),
                "c": ("als", 8, 0, 0.1, (2,), {"weighted": True, "init_scale": 0.1})}
    got = mf_methods.fit_paths(sp, requests, jobs=2)
    assert list(got) == ["a", "a3", "b", "c"]
    assert got["a"] is got["a3"] and sorted(got["a"]) == [2, 3, 5], "one fit for both"
    for name, (alg, dim, seed, reg, cps, opts) in requests.items():
        fitter = {"sgd": mf.fit_sgd, "als": mf.fit_als}[alg]
        for ep in cps:
            P, Q = fitter(sp.train, ds.n_users, ds.n_items, dim, reg, ep, seed=seed, **opts)
            np.testing.assert_array_equal(got[name][ep][0], P)
            np.testing.assert_array_equal(got[name][ep][1], Q)
        assert got[name].trace and got[name].trace[-1][0] == max(got[name])
        # memoised here: fit_path hands back the worker's path, it does not fit again
        assert mf_methods.fit_path(alg, sp, dim, seed, reg, cps, **opts) is got[name]

    def no_fit(*a, **k):
        raise AssertionError("a memoised path was fitted again")

    monkeypatch.setattr(mf, "fit_sgd", no_fit)
    monkeypatch.setattr(mf_methods, "fit_sgd", no_fit)
    again = mf_methods.fit_paths(sp, {"x": requests["a"], "y": requests["a3"]}, jobs=2)
    assert again["x"] is got["a"] and again["y"] is got["a"]
    with pytest.raises(ValueError, match="request 'bad': algorithm must be"):
        mf_methods.fit_paths(sp, {"bad": ("svd", 8, 0, 0.1, (1,), {})}, jobs=2)
    with pytest.raises(ValueError, match="request 'a2': checkpoints must be"):
        mf_methods.fit_paths(sp, {"a2": ("sgd", 8, 0, 0.1, (0,), sgd)}, jobs=2)
    with pytest.raises(ValueError, match="request 'o': options must be a dict"):
        mf_methods.fit_paths(sp, {"o": ("sgd", 8, 0, 0.1, (1,), None)}, jobs=2)
    with pytest.raises(ValueError, match="request 's': "):
        mf_methods.fit_paths(sp, {"s": ("sgd", 8, 0)}, jobs=2)
    with pytest.raises(ValueError, match="jobs must be a nonzero integer"):
        mf_methods.fit_paths(sp, requests, jobs=0)


def test_fit_paths_keeps_more_fits_than_the_memo_holds(synthetic_split, monkeypatch):
    """More requests than the memo keeps: every one is fitted once, in a worker, and
    returned; none is fitted again here after the memo let it go."""
    sp = synthetic_split
    monkeypatch.setattr(mf_methods, "_PATHS", {})
    monkeypatch.setattr(mf_methods, "_PATHS_MAX", 2)

    def no_fit(*a, **k):
        raise AssertionError("a path was fitted again in this process")

    monkeypatch.setattr(mf_methods, "fit_sgd", no_fit)  # the workers import their own
    requests = {r: ("sgd", 4, 0, r, (1,), {"lr": 0.001, "init": "uniform01"})
                for r in (0.1, 0.2, 0.3, 0.4)}
    got = mf_methods.fit_paths(sp, requests, jobs=2)
    assert list(got) == list(requests) and all(sorted(p) == [1] for p in got.values())
    assert len(mf_methods._PATHS) == 2


def _best(grid):
    """The row tuning must choose: the first maximum of the validation NDCG@10."""
    best = grid.iloc[int(np.argmax(grid["valid_ndcg@10"].to_numpy()))]
    assert bool(best["chosen"]) and grid["chosen"].sum() == 1
    return best


def test_mf_method_chooses_on_validation_and_stores_vectors(synthetic_split, tmp_path):
    sp, ds = synthetic_split, synthetic_split.dataset
    run = training.run("mf", sp, 8, 0, {"reg_grid": [0.1, 1.0], "epochs_grid": [2, 5]},
                       root=tmp_path, progress=False)
    assert len(run.grid) == 4 and run.log is not None
    best = _best(run.grid)
    assert run.extra["chosen"] == {"reg": best["reg"], "epochs": best["epochs"]}
    assert run.metrics["ndcg@10"] == pytest.approx(best["test_ndcg@10"])
    assert run.metrics["valid_ndcg@10"] == pytest.approx(best["valid_ndcg@10"])
    assert run.arrays["user_vectors"].shape == (ds.n_users, 8)
    assert run.arrays["item_vectors"].dtype == np.float32
    # the stored vectors are those of a fresh fit at the chosen point
    P, Q = mf.fit_sgd(sp.train, ds.n_users, ds.n_items, 8, float(best["reg"]), int(best["epochs"]), seed=0)
    np.testing.assert_array_equal(run.arrays["user_vectors"], P)
    np.testing.assert_array_equal(run.arrays["item_vectors"], Q)
    assert len(results.index(tmp_path)) == 4 + 1  # every point, and the tuned run


def test_mf_als_method_single_point(synthetic_split):
    sp, ds = synthetic_split, synthetic_split.dataset
    run = training.run("mf-als", sp, 6, 0, {"tune": False, "epochs": 3, "reg": 0.1},
                       store=False, reuse=False, progress=False)
    assert run.grid is None and "chosen" not in run.extra
    P, Q = mf.fit_als(sp.train, ds.n_users, ds.n_items, 6, 0.1, 3, seed=0, weighted=True, init_scale=0.1)
    np.testing.assert_array_equal(run.arrays["user_vectors"], P)
    assert run.log["epoch"].tolist() == [1, 2, 3] and run.metrics["train_seconds"] >= 0


@pytest.mark.parametrize("name", ["mf-mean", "mf-median"])
def test_binarized_mf_methods_choose_on_validation_and_store_packed_codes(name, synthetic_split, tmp_path):
    sp, ds = synthetic_split, synthetic_split.dataset
    method = mf_methods.MF_MEAN if name == "mf-mean" else mf_methods.MF_MEDIAN
    run = training.run(name, sp, 8, 0, {"reg_grid": [0.1, 1.0], "epochs_grid": [2, 5]},
                       root=tmp_path, progress=False)
    assert len(run.grid) == 2 * 2 * 2 and set(run.grid["scope"]) == set(mf.SCOPES)
    best = _best(run.grid)
    assert run.extra["chosen"]["scope"] == best["scope"]
    P, Q = mf.fit_sgd(sp.train, ds.n_users, ds.n_items, 8, float(best["reg"]), int(best["epochs"]), seed=0)
    bu, bi, tu, ti = mf.binarize(P, Q, method.threshold, best["scope"])
    assert run.arrays["user_codes"].dtype == np.uint64 and run.arrays["user_codes"].shape == (ds.n_users, 1)
    np.testing.assert_array_equal(run.arrays["user_codes"], C.pack(bu, "bool").words)
    np.testing.assert_array_equal(run.arrays["item_codes"], C.pack(bi, "bool").words)
    np.testing.assert_array_equal(run.arrays["user_thresholds"], tu)
    assert run.metrics["user_ones"] == pytest.approx(bu.mean())
    # tune=False: the single configured point, no grid
    fixed = training.run(name, sp, 8, 0, {"tune": False, "reg": 1.0, "epochs": 5, "scope": "joint"},
                         root=tmp_path, progress=False)
    assert fixed.grid is None and fixed.config["scope"] == "joint" and "chosen" not in fixed.extra
    bad = dict(fixed.config, scope="both")
    with pytest.raises(ValueError, match="scope"):
        method.fit(sp, 8, 0, bad)


def test_binarization_variants_reads_every_threshold_and_scope(synthetic_split):
    sp, ds = synthetic_split, synthetic_split.dataset
    P, Q = mf.fit_sgd(sp.train, ds.n_users, ds.n_items, 8, 0.1, 3, seed=0)
    t = mf_methods.binarization_variants(sp, {"sgd": (P, Q)})
    assert len(t) == len(mf.THRESHOLDS) * len(mf.SCOPES)
    assert t[["valid_ndcg@10", "test_ndcg@10", "test_mrr"]].apply(lambda c: c.between(0, 1).all()).all()
