"""MF by SGD (the paper's) and by ALS (ours), MFmean / MFmedian codes."""
from types import SimpleNamespace

import numpy as np
import pytest

from phdlib.baselines import mf


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
    with pytest.raises(ValueError, match="train.user holds id"):
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


def test_pair_hamming_matches_unpacked_codes():
    from phdlib import codes as C

    rng = np.random.default_rng(0)
    for m in (32, 64, 100):
        U = rng.random((9, m)) < 0.5
        V = rng.random((7, m)) < 0.5
        u = rng.integers(0, 9, 50)
        i = rng.integers(0, 7, 50)
        d = mf.pair_hamming(C.pack(U, "bool").words, C.pack(V, "bool").words, u, i)
        np.testing.assert_array_equal(d, (U[u] != V[i]).sum(1))


def test_binarize_rejects_bad_arguments():
    P, Q = _vectors()
    with pytest.raises(ValueError, match="threshold must be one of"):
        mf.binarize(P, Q, "mode")
    with pytest.raises(ValueError, match="scope must be one of"):
        mf.binarize(P, Q, "mean", "both")
    with pytest.raises(ValueError, match="one dim"):
        mf.binarize(P, Q[:, :3])


# --------------------------------------------------------------------------- the registry methods

def _tiny_split():
    from phdlib.data.tables import Dataset, Ratings, Split

    tr, nu, ni = _ratings(n_users=40, n_items=25, density=0.5, seed=2)
    rng = np.random.default_rng(5)
    part = rng.integers(0, 3, len(tr.user))  # 0 train, 1 valid, 2 test
    R = Ratings(tr.user, tr.item, tr.rating)
    ds = Dataset("tiny", R, n_users=nu, n_items=ni, rating_scale=(1.0, 5.0), user_ids=np.arange(nu),
                 item_ids=np.arange(ni), fingerprint="tiny", synthetic=True)
    return Split(ds, R.take(part == 0), R.take(part == 1), R.take(part == 2), 0, "tinysplit")


def test_mf_method_chooses_on_validation_and_stores_vectors():
    sp = _tiny_split()
    cfg = dict(mf.MF.defaults("tiny", 8), reg_grid=[0.1, 1.0], passes_grid=[2, 5])
    run = mf.MF.train(sp, 8, 0, cfg, progress=False)
    log = run.log
    assert len(log) == 4 and log["chosen"].sum() == 1
    best = log.loc[log["valid_ndcg@10"].idxmax()]
    assert bool(best["chosen"]) and run.metrics["reg"] == best["reg"]
    assert run.metrics["ndcg@10"] == pytest.approx(best["test_ndcg@10"])
    assert run.arrays["user_vectors"].shape == (40, 8) and run.arrays["item_vectors"].dtype == np.float32
    # the stored vectors are those of a fresh fit at the chosen point
    P, Q = mf.fit_sgd(sp.train, 40, 25, 8, float(best["reg"]), int(best["passes"]), seed=0)
    np.testing.assert_array_equal(run.arrays["user_vectors"], P)


@pytest.mark.parametrize("method", [mf.MF_MEAN, mf.MF_MEDIAN])
def test_binarized_mf_methods_choose_on_validation_and_store_packed_codes(method):
    from phdlib import codes as C

    sp = _tiny_split()
    cfg = dict(method.defaults("tiny", 8), reg_grid=[0.1, 1.0], passes_grid=[2, 5])
    run = method.train(sp, 8, 0, cfg, progress=False)
    log = run.log
    assert len(log) == 2 * 2 * 2 and log["chosen"].sum() == 1
    best = log.loc[log["valid_ndcg@10"].idxmax()]
    assert bool(best["chosen"]) and run.metrics["scope"] == best["scope"]
    P, Q = mf.fit_sgd(sp.train, 40, 25, 8, float(best["reg"]), int(best["passes"]), seed=0)
    bu, bi, _, _ = mf.binarize(P, Q, method.threshold, best["scope"])
    assert run.arrays["user_codes"].dtype == np.uint64 and run.arrays["user_codes"].shape == (40, 1)
    np.testing.assert_array_equal(run.arrays["user_codes"], C.pack(bu, "bool").words)
    np.testing.assert_array_equal(run.arrays["item_codes"], C.pack(bi, "bool").words)
    # tune=False: the single configured point
    fixed = method.train(sp, 8, 0, dict(cfg, tune=False, reg=1.0, passes=5, scope="joint"))
    assert len(fixed.log) == 1 and fixed.metrics["scope"] == "joint"
