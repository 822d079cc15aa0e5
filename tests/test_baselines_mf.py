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
