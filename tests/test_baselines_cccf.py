"""CCCF: block layouts under the bit budget, anchor weights, reduction to DCF."""
from __future__ import annotations

import numpy as np
import pytest

from phdlib.baselines import cccf, dcf


def _tiny_split(n_users=50, n_items=30, density=0.5, seed=2):
    from phdlib.data.tables import Dataset, Ratings, Split

    rng = np.random.default_rng(seed)
    P, Q = rng.normal(size=(n_users, 3)), rng.normal(size=(n_items, 3))
    mask = rng.random((n_users, n_items)) < density
    u, i = np.nonzero(mask)
    r = np.clip(np.rint(3 + (P[u] * Q[i]).sum(1) + rng.normal(0, 0.5, len(u))), 1, 5)
    R = Ratings(u.astype(np.int32), i.astype(np.int32), r.astype(np.float32))
    part = np.random.default_rng(5).choice(3, len(u), p=[0.6, 0.15, 0.25])
    ds = Dataset("tiny", R, n_users=n_users, n_items=n_items, rating_scale=(1.0, 5.0),
                 user_ids=np.arange(n_users), item_ids=np.arange(n_items), fingerprint="tiny",
                 synthetic=True)
    return Split(ds, R.take(part == 0), R.take(part == 1), R.take(part == 2), 0, "tinysplit")


def test_layouts_fit_the_budget_counting_16_bits_per_weight():
    assert cccf.layouts(32) == [[32], [16], [8]]
    assert cccf.layouts(64) == [[64], [32], [16], [8], [16, 16], [16, 8], [8, 8]]
    assert cccf.layout_cost([16, 16]) == 64 and cccf.layout_cost([64]) == 64
    for bits in (32, 64, 128):
        for lay in cccf.layouts(bits):
            assert cccf.layout_cost(lay) <= bits


def test_kmedoids_finds_one_medoid_per_separated_cluster():
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0], [10, 0], [0, 10]], dtype=float)
    Z = np.vstack([c + rng.normal(0, 0.5, (40, 2)) for c in centres])
    med = cccf.kmedoids(Z, 3, seed=1)
    assert sorted(m // 40 for m in med) == [0, 1, 2]


def test_anchor_weights_kernel_and_normalisation():
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(200, 6))
    anchors = np.array([3, 50, 120])
    W = cccf.anchor_weights(Z, anchors, width=0.7)
    assert W.shape == (200, 3) and np.all(W >= 0)
    np.testing.assert_allclose(W.sum(axis=1), 1.0)
    # the raw kernel by hand for one row
    z, a = Z[7], Z[anchors]
    cos = a @ z / (np.linalg.norm(a, axis=1) * np.linalg.norm(z))
    sim = 1 - 2 / np.pi * np.arccos(cos)
    k = np.clip(0.75 * (1 - ((1 - sim) / 0.7) ** 2), 0, None)
    if k.sum() > 0:
        np.testing.assert_allclose(W[7], k / k.sum())
    # an anchor is closest to itself: its own block carries its largest weight
    for b, a_idx in enumerate(anchors):
        assert np.argmax(W[a_idx]) == b
    # a row orthogonal-ish to every anchor falls back to uniform weights
    Zo = np.vstack([np.eye(3), -np.ones((1, 3))])
    Wo = cccf.anchor_weights(Zo, np.array([0, 1, 2]), width=0.3)
    np.testing.assert_allclose(Wo[3], 1 / 3)


def test_cccf_one_block_unit_weights_reduces_to_dcf():
    sp = _tiny_split()
    bits = 8
    common = {"alpha": 0.05, "beta": 0.05, "max_iter": 15, "max_sweeps": 5, "init": "relaxed",
              "init_max_iter": 5, "init_tol": 1e-5, "init_x_factor": 1.0,
              "init_count_weighted": True, "tune": False, "ties": "expected"}
    d = dcf.DCF.train(sp, bits, 0, {**dcf.DCF.defaults("tiny", bits), **common})
    c = cccf.CCCF.train(sp, bits, 0, {**cccf.CCCF.defaults("tiny", bits), **common,
                                      "blocks": [bits], "tol": None})
    np.testing.assert_array_equal(c.arrays["user_codes"], d.arrays["user_codes"])
    np.testing.assert_array_equal(c.arrays["item_codes"], d.arrays["item_codes"])
    np.testing.assert_array_equal(c.arrays["user_weights"], 1.0)
    # scores rank as Hamming distances do: identical metrics per user
    for col in ("ndcg@5", "ndcg@10", "mrr"):
        np.testing.assert_allclose(c.per_user[col], d.per_user[col], atol=1e-12)


def test_cccf_scores_are_weighted_block_inner_products():
    sp = _tiny_split(seed=3)
    cfg = {**cccf.CCCF.defaults("tiny", 64), "tune": False, "blocks": [8, 16],
           "weights": "mf-sgd", "mf_passes": 3, "max_iter": 3}
    run = cccf.CCCF.train(sp, 64, 0, cfg)
    from phdlib import codes as C

    B = C.unpack(C.PackedCodes(run.arrays["user_codes"], 24)).astype(float)
    D = C.unpack(C.PackedCodes(run.arrays["item_codes"], 24)).astype(float)
    Wu, Wi = run.arrays["user_weights"].astype(float), run.arrays["item_weights"].astype(float)
    np.testing.assert_allclose(Wu.sum(axis=1), 1.0, atol=2e-3)  # float16 rounding
    u, i = sp.test.user[:20], sp.test.item[:20]
    want = (Wu[u, 0] * Wi[i, 0] * (B[u, :8] * D[i, :8]).sum(1)
            + Wu[u, 1] * Wi[i, 1] * (B[u, 8:] * D[i, 8:]).sum(1))
    model = dcf.BlockModel(B.astype(np.int8), D.astype(np.int8), np.array([0, 8, 24]), Wu, Wi)
    np.testing.assert_allclose(dcf.pair_scores(model, u, i), want)
    assert run.extra["cost_bits"] == 8 + 16 + 32


def test_cccf_rejects_layout_over_budget():
    sp = _tiny_split()
    cfg = {**cccf.CCCF.defaults("tiny", 32), "tune": False, "blocks": [16, 16]}
    with pytest.raises(ValueError, match="cost 64 bits .* over the budget of 32"):
        cccf.CCCF.train(sp, 32, 0, cfg)


def test_grid_search_chooses_on_validation_and_stores_every_point(tmp_path, monkeypatch):
    from phdlib import results

    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path))
    sp = _tiny_split(seed=4)
    cfg = {**dcf.DCF.defaults("tiny", 8), "alpha_grid": [0.01, 1.0], "max_iter": 5,
           "init_max_iter": 3}
    run = dcf.DCF.train(sp, 8, 0, cfg)
    log = run.log
    assert len(log) == 2 and log["chosen"].sum() == 1
    best = log.loc[log["valid_ndcg@10"].idxmax()]
    assert bool(best["chosen"]) and run.extra["chosen"]["alpha"] == best["alpha"]
    assert run.metrics["ndcg@10"] == pytest.approx(best["test_ndcg@10"])
    assert len(results.index(tmp_path)) == 2  # one stored run per grid point
    # CCCF: every layout that fits x alpha
    ccfg = {**cccf.CCCF.defaults("tiny", 16), "alpha_grid": [0.001], "mf_passes": 2, "max_iter": 3}
    crun = cccf.CCCF.train(sp, 16, 0, ccfg)
    assert sorted(crun.log["blocks"]) == sorted(str(lay) for lay in cccf.layouts(16))
