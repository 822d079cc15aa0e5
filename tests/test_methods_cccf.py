"""CCCF: block layouts under the bit budget, anchor weights, reduction to DCF, the tuning grid."""
from __future__ import annotations

import numpy as np
import pytest

from phdlib import codes as C
from phdlib import results
from phdlib.experiments import training
from phdlib.methods import discrete, cccf


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


def test_cccf_one_block_unit_weights_reduces_to_dcf(synthetic_split):
    sp = synthetic_split
    bits = 8
    common = {"alpha": 0.05, "beta": 0.05, "max_iterations": 15, "max_sweeps": 5, "init": "relaxed",
              "init_max_iterations": 5, "init_tol": 1e-5, "init_x_factor": 1.0,
              "init_count_weighted": True, "tune": False, "ties": "expected"}
    d = training.run("dcf", sp, bits, 0, common, store=False, reuse=False, progress=False)
    c = training.run("cccf", sp, bits, 0, {**common, "blocks": [bits], "tol": None},
                     store=False, reuse=False, progress=False)
    np.testing.assert_array_equal(c.arrays["user_codes"], d.arrays["user_codes"])
    np.testing.assert_array_equal(c.arrays["item_codes"], d.arrays["item_codes"])
    assert "user_weights" not in c.arrays  # one block: no weight is stored (it would be 1)
    # scores rank as Hamming distances do: identical metrics per user
    for col in ("ndcg@5", "ndcg@10", "mrr"):
        np.testing.assert_allclose(c.per_user[col], d.per_user[col], atol=1e-12)


def test_cccf_scores_are_weighted_block_inner_products(synthetic_split):
    sp = synthetic_split
    run = training.run("cccf", sp, 64, 0, {"tune": False, "blocks": [8, 16], "weights": "mf-sgd",
                                           "mf_epochs": 3, "max_iterations": 3},
                       store=False, reuse=False, progress=False)
    B = C.unpack(C.PackedCodes(run.arrays["user_codes"], 24)).astype(float)
    D = C.unpack(C.PackedCodes(run.arrays["item_codes"], 24)).astype(float)
    Wu, Wi = run.arrays["user_weights"].astype(float), run.arrays["item_weights"].astype(float)
    np.testing.assert_allclose(Wu.sum(axis=1), 1.0, atol=2e-3)  # float16 rounding
    np.testing.assert_array_equal(run.arrays["block_starts"], [0, 8, 24])
    u, i = sp.test.user[:20], sp.test.item[:20]
    want = (Wu[u, 0] * Wi[i, 0] * (B[u, :8] * D[i, :8]).sum(1)
            + Wu[u, 1] * Wi[i, 1] * (B[u, 8:] * D[i, 8:]).sum(1))
    model = discrete.BlockModel(B.astype(np.int8), D.astype(np.int8), np.array([0, 8, 24]), Wu, Wi)
    np.testing.assert_allclose(discrete.pair_scores(model, u, i), want)
    # the fitted model of the stored arrays scores the same
    np.testing.assert_allclose(training.fitted(run).pairs(u, i), want)
    assert run.metrics["cost_bits"] == 8 + 16 + 32
    assert len(run.extra["weights_anchor_users"]) == 2


def test_cccf_rejects_layout_over_budget(synthetic_split):
    cfg = {**cccf.CCCF.defaults("synthetic", 32), "tune": False, "blocks": [16, 16]}
    with pytest.raises(ValueError, match="cost 64 bits .* over the budget of 32"):
        cccf.CCCF.fit(synthetic_split, 32, 0, cfg)


def test_cccf_grid_is_every_layout_times_alpha():
    cfg = cccf.CCCF.defaults("ml-1m", 64)
    pts = cccf.CCCF.grid(cfg, 64)
    assert len(pts) == len(cccf.layouts(64)) * len(cfg["alpha_grid"])
    assert all(p["alpha"] == p["beta"] and p["tune"] is False for p in pts)
    assert cccf.CCCF.grid(dict(cfg, layouts=[[32]], alpha_grid=[0.1]), 64) == [
        {"blocks": [32], "alpha": 0.1, "beta": 0.1, "tune": False}]
    assert cccf.CCCF.grid(dict(cfg, tune=False), 64) == []


def test_cccf_grid_search_stores_every_point(synthetic_split, tmp_path):
    crun = training.run("cccf", synthetic_split, 16, 0,
                        {"alpha_grid": [0.001], "mf_epochs": 2, "max_iterations": 3},
                        root=tmp_path, progress=False)
    assert sorted(crun.grid["blocks"]) == sorted(str(lay) for lay in cccf.layouts(16))
    best = crun.grid.iloc[int(np.argmax(crun.grid["valid_ndcg@10"].to_numpy()))]
    assert bool(best["chosen"]) and str(crun.extra["chosen"]["blocks"]) == best["blocks"]
    assert len(results.index(tmp_path)) == len(cccf.layouts(16)) + 1
