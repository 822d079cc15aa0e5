"""The variational hashing model: sampling, gradients, scores vs packed codes,
the stopping rule, reproducibility, and the methods VH, VH_PHD, VH+bias on small data."""
from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from phdlib import codes as C
from phdlib import methods  # noqa: E402
from phdlib import evaluation as E  # noqa: E402
from phdlib import results
from phdlib.experiments import training  # noqa: E402
from phdlib.methods import vh, vh_model  # noqa: E402
from phdlib.methods.loop import LoopResult  # noqa: E402
from phdlib.methods.loop import EarlyStopping  # noqa: E402


# --------------------------------------------------------------------------- tiny data


def _ratings(user, item, rating):
    return NS(user=np.asarray(user, np.int32), item=np.asarray(item, np.int32),
              rating=np.asarray(rating, np.float32))


def tiny_split(n_users=100, n_items=80, k=3, seed=0):
    """Low-rank ratings 1..5, every user rates every item; split 50/20/30 per user."""
    rng = np.random.default_rng(seed)
    U, V = rng.normal(size=(n_users, k)), rng.normal(size=(n_items, k))
    s = U @ V.T
    r = np.clip(np.round(3 + 1.5 * s / s.std()), 1, 5)
    parts = {"train": [], "valid": [], "test": []}
    for u in range(n_users):
        perm = rng.permutation(n_items)
        a, b = int(0.5 * n_items), int(0.7 * n_items)
        for name, idx in (("train", perm[:a]), ("valid", perm[a:b]), ("test", perm[b:])):
            parts[name].append(np.stack([np.full(idx.size, u), idx, r[u, idx]], 1))
    out = {k_: _ratings(*np.concatenate(v).T) for k_, v in parts.items()}
    ds = NS(name="synthetic", n_users=n_users, n_items=n_items, rating_scale=(1.0, 5.0))
    return NS(dataset=ds, train=out["train"], valid=out["valid"], test=out["test"],
              seed=seed, fingerprint=f"tiny-{seed}")


def quick_config(distance, **kw):
    cfg = vh.default_config(distance)
    cfg.update(eval_every=100, patience=3, min_iterations=0, max_iterations=600, batch_size=64,
               lr=0.01, device="cpu")
    cfg.update(kw)
    return cfg


# --------------------------------------------------------------------------- sampling and gradient


def test_deterministic_sampling_is_threshold_at_half():
    p = torch.tensor([[0.1, 0.5, 0.50001, 0.9]])
    assert vh_model.sample_bits(p, stochastic=False).tolist() == [[0.0, 0.0, 1.0, 1.0]]


def test_stochastic_sampling_frequency_matches_probability():
    g = torch.Generator().manual_seed(0)
    p = torch.full((20000, 3), 0.0) + torch.tensor([0.2, 0.5, 0.8])
    b = vh_model.sample_bits(p, stochastic=True, generator=g)
    assert set(torch.unique(b).tolist()) <= {0.0, 1.0}
    np.testing.assert_allclose(b.mean(0).numpy(), [0.2, 0.5, 0.8], atol=0.015)


def test_straight_through_gradient_is_identity():
    p = torch.tensor([[0.3, 0.7, 0.55]], requires_grad=True)
    w = torch.tensor([[2.0, -1.0, 5.0]])
    (vh_model.sample_bits(p, stochastic=True) * w).sum().backward()
    assert p.grad.tolist() == w.tolist()


@pytest.mark.parametrize("mask_grad", [True, False])
def test_phd_projection_gradient_reaches_user_only_when_enabled(mask_grad):
    m = vh_model.VHModel(2, 2, 8, "phd", user_mask_grad=mask_grad, generator=torch.Generator().manual_seed(1))
    score, _, _ = m.forward(torch.tensor([0]), torch.tensor([1]), stochastic=False)
    score.sum().backward()
    # d score / d b_u = (2 b_i' - 1) * 2 + (2 b_u - 1) * 2 b_i * [mask_grad] per bit
    with torch.no_grad():
        bu = (torch.sigmoid(m.user_emb[0]) > 0.5).float()
        bi = (torch.sigmoid(m.item_emb[1]) > 0.5).float()
        pu = torch.sigmoid(m.user_emb[0])
        g = 2 * (2 * bi * bu - 1) + (2 * (2 * bu - 1) * bi if mask_grad else 0)
        expect = g * pu * (1 - pu)
    np.testing.assert_allclose(m.user_emb.grad[0].numpy(), expect.numpy(), rtol=1e-6)


def test_rating_target_maps():
    r = torch.tensor([1.0, 3.0, 5.0])
    assert vh_model.rating_target(r, 64, (1, 5), "released").tolist() == pytest.approx([-38.4, 12.8, 64.0])
    assert vh_model.rating_target(r, 64, (1, 5), "minmax").tolist() == pytest.approx([-64.0, 0.0, 64.0])
    with pytest.raises(ValueError, match="target_map"):
        vh_model.rating_target(r, 64, (1, 5), "nope")


# --------------------------------------------------------------------------- scores: float vs packed


@pytest.mark.parametrize("distance", ["hamming", "phd"])
@pytest.mark.parametrize("bits", [7, 32, 64, 100])
def test_float_scores_equal_packed_code_distances(distance, bits):
    """The training score <z_u, z_i'> equals m - 2 d(u, i) from the packed kernels."""
    n_users, n_items = 23, 31
    m = vh_model.VHModel(n_users, n_items, bits, distance, init_range=2.0,
                   generator=torch.Generator().manual_seed(bits))
    uu, ii = np.meshgrid(np.arange(n_users), np.arange(n_items), indexing="ij")
    uu, ii = uu.ravel(), ii.ravel()
    with torch.no_grad():
        score, _, _ = m.forward(torch.as_tensor(uu), torch.as_tensor(ii), stochastic=False)
    uc, ic = m.codes(stochastic=False)
    d = C.pair_distances(uc, ic, uu, ii, distance)
    np.testing.assert_array_equal(score.numpy().astype(np.int64), bits - 2 * d.astype(np.int64))
    # and the kernels agree with the NumPy reference definitions
    ref = (C.phd_reference if distance == "phd" else C.hamming_reference)(
        C.unpack(uc), C.unpack(ic))
    np.testing.assert_array_equal(d, ref[uu, ii])


# --------------------------------------------------------------------------- the budget rule


def test_early_stopping_patience_and_start():
    s = EarlyStopping(patience=2, min_iterations=300, max_iterations=10_000)
    assert s.update(100, 0.5)
    assert not s.update(200, 0.4) and not s.stop          # before the start: does not count
    assert s.bad == 0
    assert not s.update(300, 0.4) and not s.stop
    assert not s.update(400, 0.45) and s.stop
    assert s.best_iteration == 100 and "2 evaluations" in s.reason


def test_early_stopping_max_iterations():
    s = EarlyStopping(patience=5, min_iterations=0, max_iterations=200)
    s.update(100, 0.1)
    s.update(200, 0.2)
    assert s.stop and "max_iterations" in s.reason
    with pytest.raises(ValueError, match="patience"):
        EarlyStopping(patience=0)


# --------------------------------------------------------------------------- training


def test_config_errors_name_the_key():
    split = tiny_split()
    for key, bad in (("train_sampling", "sometimes"), ("lr", -1.0), ("batch_size", 0),
                     ("noise_decay", 1.5), ("target_map", "x")):
        with pytest.raises(ValueError, match=key):
            vh.fit(split.train, split.valid, 100, 80, 8, (1, 5), quick_config("phd", **{key: bad}))


@pytest.mark.parametrize("distance", ["hamming", "phd"])
def test_fit_is_reproducible_and_seed_dependent(distance):
    split = tiny_split()
    cfg = quick_config(distance, max_iterations=300, min_iterations=300)
    a = vh.fit(split.train, split.valid, 100, 80, 16, (1, 5), cfg, seed=3)
    b = vh.fit(split.train, split.valid, 100, 80, 16, (1, 5), cfg, seed=3)
    c = vh.fit(split.train, split.valid, 100, 80, 16, (1, 5), cfg, seed=4)
    cols = ["iteration", "train_loss", "valid_ndcg@10", "valid_mrr"]
    assert a.log[cols].equals(b.log[cols])
    assert torch.equal(a.model.user_emb, b.model.user_emb)
    assert not torch.equal(a.model.user_emb, c.model.user_emb)
    assert list(a.log["iteration"]) == [100, 200, 300]


@pytest.mark.parametrize("distance", ["hamming", "phd"])
def test_model_learns_on_low_rank_data(distance):
    """Validation NDCG@10 ends well above chance (an all-tied ranking) and the loss falls."""
    from phdlib.evaluation import metrics

    split = tiny_split()
    cfg = quick_config(distance, max_iterations=1500, min_iterations=1500, noise_std=0.0, lr=0.03,
                       batch_size=128, eval_every=300)
    res = vh.fit(split.train, split.valid, 100, 80, 16, (1, 5), cfg, seed=0)
    v = split.valid
    chance = metrics.summarize(metrics.evaluate(v.user, v.rating, np.zeros(v.user.size)))["ndcg@10"]
    best = res.log["valid_ndcg@10"].max()
    assert best > chance + 0.2, (chance, best)
    assert res.log["train_loss"].iloc[-1] < res.log["train_loss"].iloc[0]
    # fit's result is the loop's result plus VH's own fields (not a copy of its fields)
    assert isinstance(res, LoopResult) and res.best == best
    assert res.log["iteration"].iloc[-1] == res.iterations and res.best_iteration in set(res.log["iteration"])
    assert res.ms_per_iteration == pytest.approx(1000 * res.train_seconds / res.iterations)
    assert res.model is not None and res.train_step in ("fused", "autograd")


@pytest.mark.parametrize("method", [vh.VH, vh.VH_PHD, vh.VH_BIAS])
def test_method_run_is_complete(method, tmp_path):
    split = tiny_split()
    over = {k: v for k, v in quick_config(method.distance, max_iterations=200, min_iterations=0).items()
            if k not in ("distance", "user_bias")}
    run = training.run(method.name, split, 16, 0, dict(over, tune=False), root=tmp_path, progress=False)
    assert run.method == method.name and run.bits == 16 and run.fingerprint == "tiny-0"
    assert run.config["user_bias"] is method.user_bias and run.config["distance"] == method.distance
    for k in ("ndcg@5", "ndcg@10", "mrr", "released:ndcg@10", "best_iteration", "iterations",
              "valid_ndcg@10", "train_seconds"):
        assert k in run.metrics
    assert run.extra["stop_reason"] and run.extra["ranks_by"] == method.ranks_by
    assert run.arrays["user_codes"].dtype == np.uint64 and run.arrays["user_codes"].shape == (100, 1)
    assert run.arrays["item_codes"].shape == (80, 1)
    assert {"iteration", "seconds", "train_loss", "valid_ndcg@5", "valid_ndcg@10",
            "valid_mrr", "best"} <= set(run.log.columns)
    assert len(run.per_user) == 100 and run.grid is None
    # the test metrics are recomputable from the stored packed codes
    from phdlib.evaluation import metrics
    back = results.load(run.path)
    uc, ic = C.PackedCodes(back.arrays["user_codes"], 16), C.PackedCodes(back.arrays["item_codes"], 16)
    again = metrics.summarize(methods.evaluate_codes(uc, ic, split.test, method.distance))
    assert again["ndcg@10"] == pytest.approx(run.metrics["ndcg@10"], abs=1e-12)
    # and the codes are those of a direct fit at the best state
    res = vh.fit(split.train, split.valid, 100, 80, 16, (1.0, 5.0), run.config, seed=0)
    want_u, _ = res.model.codes()
    np.testing.assert_array_equal(want_u.words, back.arrays["user_codes"])
    assert run.metrics["best_iteration"] == res.best_iteration


def test_user_bias_is_a_training_parameter_only():
    m = vh_model.VHModel(5, 4, 8, "hamming", user_bias=True, generator=torch.Generator().manual_seed(0))
    assert m.user_bias.shape == (5,) and float(m.user_bias.detach().abs().sum()) == 0.0
    with torch.no_grad():
        m.user_bias += torch.arange(5.0)
        s, _, _ = m.forward(torch.tensor([2, 2]), torch.tensor([0, 1]), stochastic=False)
    uc, ic = m.codes()
    d = C.pair_distances(uc, ic, [2, 2], [0, 1], "hamming")
    np.testing.assert_array_equal(s.numpy(), 8 - 2 * d + 2.0)


def test_tuning_grid_is_lr_times_training_sampling(tmp_path):
    """With ``tune`` the shared path runs lr_grid x train_sampling_grid and keeps the best on validation."""
    cfg = vh.VH.defaults("ml-1m", 64)
    assert cfg["tune"] is True and cfg["tune_bits"] == 64
    assert vh.VH.grid(cfg, 64) == [{"lr": lr, "train_sampling": s, "tune": False}
                                   for lr in vh.LR_GRID for s in vh.SAMPLING_GRID]
    assert vh.VH.grid(dict(cfg, tune=False), 64) == []
    split = tiny_split()
    over = {k: v for k, v in quick_config("phd", max_iterations=100, min_iterations=0).items()
            if k not in ("distance", "user_bias", "lr", "train_sampling")}
    over.update(tune=True, tune_bits=8, lr_grid=[0.01])
    run = training.run("vh-phd", split, 8, 0, over, root=tmp_path, progress=False)
    assert list(run.grid["train_sampling"]) == list(vh.SAMPLING_GRID) and list(run.grid["lr"]) == [0.01] * 2
    best = int(np.argmax(run.grid["valid_ndcg@10"].to_numpy()))
    assert run.grid["chosen"].tolist() == [i == best for i in range(2)]
    assert run.extra["chosen"] == {"lr": 0.01, "train_sampling": vh.SAMPLING_GRID[best]}
    assert run.metrics["ndcg@10"] == run.grid.loc[best, "test_ndcg@10"]
    assert run.config["tune"] is True and len(results.index(tmp_path)) == 3
    import pandas as pd
    pd.testing.assert_frame_equal(results.load(run.path).grid, run.grid)
    # another width reuses the choice made at tune_bits (no new grid) and records it
    other = training.run("vh-phd", split, 16, 0, over, root=tmp_path, progress=False)
    assert other.extra["tuned_at"] == {"bits": 8, "seed": training.TUNE_SEED}
    assert other.extra["chosen"] == run.extra["chosen"] and other.bits == 16
    pd.testing.assert_frame_equal(other.grid, run.grid)
    assert len(results.index(tmp_path)) == 3 + 2  # the chosen point at 16 bits, and the run


def test_method_rejects_a_config_of_the_other_distance():
    with pytest.raises(ValueError, match="distance"):
        vh.VH.fit(tiny_split(), 8, 0, vh.VH_PHD.defaults("synthetic", 8))
    with pytest.raises(ValueError, match="user_bias"):
        vh.VH.fit(tiny_split(), 8, 0, vh.VH_BIAS.defaults("synthetic", 8))


def test_device_auto_resolves():
    assert vh_model.resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="device"):
        vh_model.resolve_device("tpu")
