"""The variational hashing model: sampling, gradients, scores vs packed codes,
the stopping rule, reproducibility, and the registered methods on small data."""
from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from phdlib import codes as C  # noqa: E402
from phdlib.models import evaluation as E  # noqa: E402
from phdlib.models import vh  # noqa: E402
from phdlib.models.stopping import EarlyStopping  # noqa: E402


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
    assert vh.VHModel.sample(p, stochastic=False).tolist() == [[0.0, 0.0, 1.0, 1.0]]


def test_stochastic_sampling_frequency_matches_probability():
    g = torch.Generator().manual_seed(0)
    p = torch.full((20000, 3), 0.0) + torch.tensor([0.2, 0.5, 0.8])
    b = vh.VHModel.sample(p, stochastic=True, generator=g)
    assert set(torch.unique(b).tolist()) <= {0.0, 1.0}
    np.testing.assert_allclose(b.mean(0).numpy(), [0.2, 0.5, 0.8], atol=0.015)


def test_straight_through_gradient_is_identity():
    p = torch.tensor([[0.3, 0.7, 0.55]], requires_grad=True)
    w = torch.tensor([[2.0, -1.0, 5.0]])
    (vh.VHModel.sample(p, stochastic=True) * w).sum().backward()
    assert p.grad.tolist() == w.tolist()


@pytest.mark.parametrize("mask_grad", [True, False])
def test_phd_projection_gradient_reaches_user_only_when_enabled(mask_grad):
    m = vh.VHModel(2, 2, 8, "phd", user_mask_grad=mask_grad, generator=torch.Generator().manual_seed(1))
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
    assert vh.rating_target(r, 64, (1, 5), "released").tolist() == pytest.approx([-38.4, 12.8, 64.0])
    assert vh.rating_target(r, 64, (1, 5), "minmax").tolist() == pytest.approx([-64.0, 0.0, 64.0])
    with pytest.raises(ValueError, match="target_map"):
        vh.rating_target(r, 64, (1, 5), "nope")


# --------------------------------------------------------------------------- scores: float vs packed


@pytest.mark.parametrize("distance", ["hamming", "phd"])
@pytest.mark.parametrize("bits", [7, 32, 64, 100])
def test_float_scores_equal_packed_code_distances(distance, bits):
    """The training score <z_u, z_i'> equals m - 2 d(u, i) from the packed kernels."""
    n_users, n_items = 23, 31
    m = vh.VHModel(n_users, n_items, bits, distance, init_range=2.0,
                   generator=torch.Generator().manual_seed(bits))
    uu, ii = np.meshgrid(np.arange(n_users), np.arange(n_items), indexing="ij")
    uu, ii = uu.ravel(), ii.ravel()
    with torch.no_grad():
        score, _, _ = m.forward(torch.as_tensor(uu), torch.as_tensor(ii), stochastic=False)
    uc, ic = m.codes(stochastic=False)
    d = E.pair_distances(uc, ic, uu, ii, distance, block=5)
    np.testing.assert_array_equal(score.numpy().astype(np.int64), bits - 2 * d.astype(np.int64))
    # and the kernels agree with the NumPy reference definitions
    ref = (C.phd_reference if distance == "phd" else C.hamming_reference)(
        C.unpack(uc), C.unpack(ic))
    np.testing.assert_array_equal(d, ref[uu, ii])


def test_phd_items_are_stored_negated():
    uc = C.pack(np.array([[1, 0, 1, 1]], np.uint8), "01")
    ic = C.pack(np.array([[1, 1, 0, 0]], np.uint8), "01")
    assert E.item_store(ic, "phd").negated and not E.item_store(ic, "hamming").negated
    assert E.pair_distances(uc, ic, [0], [0], "phd").tolist() == [2]
    assert E.pair_distances(uc, ic.negate(), [0], [0], "phd").tolist() == [2]
    assert E.pair_distances(uc, ic, [0], [0], "hamming").tolist() == [3]


def test_pair_distances_rejects_bad_ids():
    uc = C.pack(np.ones((2, 8), np.uint8), "01")
    with pytest.raises(ValueError, match="user ids"):
        E.pair_distances(uc, uc, [0, 2], [0, 0], "hamming")
    with pytest.raises(ValueError, match="distance"):
        E.pair_distances(uc, uc, [0], [0], "cosine")


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
    from phdlib import metrics

    split = tiny_split()
    cfg = quick_config(distance, max_iterations=1500, min_iterations=1500, noise_std=0.0, lr=0.03,
                       batch_size=128, eval_every=300)
    res = vh.fit(split.train, split.valid, 100, 80, 16, (1, 5), cfg, seed=0)
    v = split.valid
    chance = metrics.summarize(metrics.evaluate(v.user, v.rating, np.zeros(v.user.size)))["ndcg@10"]
    best = res.log["valid_ndcg@10"].max()
    assert best > chance + 0.2, (chance, best)
    assert res.log["train_loss"].iloc[-1] < res.log["train_loss"].iloc[0]


@pytest.mark.parametrize("method", [vh.VH, vh.VH_PHD])
def test_method_train_returns_a_complete_run(method):
    split = tiny_split()
    cfg = method.defaults("synthetic", 16)
    cfg.update(quick_config(method.distance, max_iterations=200, min_iterations=0))
    run = method.train(split, 16, 0, cfg, progress=False)
    assert run.method == method.name and run.bits == 16 and run.fingerprint == "tiny-0"
    for k in ("ndcg@5", "ndcg@10", "mrr", "released:ndcg@10", "best_iteration", "valid_ndcg@10"):
        assert k in run.metrics
    assert run.arrays["user_codes"].dtype == np.uint64 and run.arrays["user_codes"].shape == (100, 1)
    assert run.arrays["item_codes"].shape == (80, 1)
    assert set(["iteration", "seconds", "train_loss", "valid_ndcg@5", "valid_ndcg@10",
                "valid_mrr"]) <= set(run.log.columns)
    assert len(run.per_user) == 100
    # the test metrics are recomputable from the stored packed codes
    from phdlib import metrics
    uc, ic = C.PackedCodes(run.arrays["user_codes"], 16), C.PackedCodes(run.arrays["item_codes"], 16)
    again = metrics.summarize(E.evaluate_codes(uc, ic, split.test, method.distance))
    assert again["ndcg@10"] == pytest.approx(run.metrics["ndcg@10"])


def test_method_rejects_a_config_of_the_other_distance():
    with pytest.raises(ValueError, match="distance"):
        vh.VH.train(tiny_split(), 8, 0, vh.VH_PHD.defaults("synthetic", 8))


def test_device_auto_resolves():
    assert vh.resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="device"):
        vh.resolve_device("tpu")
