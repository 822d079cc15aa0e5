"""The differentiable Hamming/PHD score of :mod:`phdlib.codes.autograd`: its gradients
(finite differences, straight-through), its values against the packed-code kernels,
the PHD mask's gradient switch, VH's use of it and the two-tower example of its docstring."""
from __future__ import annotations

import doctest
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from phdlib import codes as C  # noqa: E402
from phdlib.bench import autograd as bench  # noqa: E402
from phdlib.codes import autograd as A  # noqa: E402
from phdlib.methods import vh_model  # noqa: E402
from phdlib.serving.search import BinaryIndex  # noqa: E402

DISTANCES = ["hamming", "phd"]


def _logits(b, m, seed, dtype=torch.float32, scale=2.0):
    g = torch.Generator().manual_seed(seed)
    u = (scale * torch.randn(b, m, generator=g, dtype=dtype)).requires_grad_()
    i = (scale * torch.randn(b, m, generator=g, dtype=dtype)).requires_grad_()
    return u, i


# --------------------------------------------------------------------------- (a) relaxed


@pytest.mark.parametrize("distance", DISTANCES)
def test_relaxed_score_gradient_equals_finite_differences(distance):
    u, i = _logits(5, 9, seed=1, dtype=torch.float64, scale=1.0)

    def f(xu, xi):
        return A.score(xu, xi, distance, relaxed=True)[0]

    assert torch.autograd.gradcheck(f, (u, i), eps=1e-6, atol=1e-7, rtol=1e-5)
    assert torch.autograd.gradgradcheck(f, (u, i), eps=1e-6, atol=1e-6, rtol=1e-4)


def test_relaxed_score_is_the_score_of_the_probabilities():
    u, i = _logits(4, 6, seed=2, dtype=torch.float64)
    pu, pi = torch.sigmoid(u), torch.sigmoid(i)
    s, _, _ = A.phd_score(u, i, relaxed=True)
    want = ((2 * pu - 1) * (2 * pu * pi - 1)).sum(dim=1)
    torch.testing.assert_close(s, want, rtol=0, atol=1e-12)
    s, _, _ = A.hamming_score(u, i, relaxed=True)
    torch.testing.assert_close(s, ((2 * pu - 1) * (2 * pi - 1)).sum(dim=1), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="relaxed=True uses the probabilities"):
        A.phd_score(u, i, relaxed=True, stochastic=True)


# --------------------------------------------------------------------------- (b) straight-through


@pytest.mark.parametrize("distance", DISTANCES)
@pytest.mark.parametrize("stochastic", [False, True])
@pytest.mark.parametrize("mask_grad", [True, False])
def test_straight_through_gradient_is_the_relaxed_gradient_at_the_hard_bits(distance, stochastic,
                                                                              mask_grad):
    u, i = _logits(64, 37, seed=3)
    w = torch.randn(64, generator=torch.Generator().manual_seed(4))
    s, pu, pi = A.score(u, i, distance, stochastic=stochastic,
                        generator=torch.Generator().manual_seed(5), user_mask_grad=mask_grad)
    gu_st, gi_st = torch.autograd.grad((w * s).sum(), (u, i))
    # the same bits, drawn in the same order (users, then items), as leaves
    g = torch.Generator().manual_seed(5)
    bu = A.hard_bits(pu, stochastic, g).requires_grad_()
    bi = A.hard_bits(pi, stochastic, g).requires_grad_()
    relaxed = A.score_bits(bu, bi, distance, user_mask_grad=mask_grad)
    torch.testing.assert_close(relaxed, s.detach(), rtol=0, atol=0)
    qu, qi = torch.autograd.grad((w * relaxed).sum(), (bu, bi))
    # chained through p = sigmoid(logits)
    gu = torch.autograd.grad(torch.sigmoid(u), u, qu)[0]
    gi = torch.autograd.grad(torch.sigmoid(i), i, qi)[0]
    assert torch.equal(gu_st, gu), f"user gradient off by {(gu_st - gu).abs().max():.3g}"
    assert torch.equal(gi_st, gi), f"item gradient off by {(gi_st - gi).abs().max():.3g}"
    assert gu.abs().sum() > 0 and gi.abs().sum() > 0


def test_sampled_bits_follow_the_probabilities():
    p = torch.full((4000, 8), 0.3)
    b = A.sample_bits(p, stochastic=True, generator=torch.Generator().manual_seed(0))
    assert set(b.unique().tolist()) == {0.0, 1.0}
    assert abs(b.mean().item() - 0.3) < 0.01, f"fraction of ones {b.mean().item():.4f}, want 0.3"
    d = A.sample_bits(torch.tensor([[0.2, 0.5, 0.5001, 0.9]]), stochastic=False)
    assert d.tolist() == [[0.0, 0.0, 1.0, 1.0]]


# --------------------------------------------------------------------------- (c) packed codes


@pytest.mark.parametrize("distance", DISTANCES)
@pytest.mark.parametrize("m", [1, 7, 64, 100])
def test_score_equals_m_minus_twice_the_packed_code_distance(distance, m):
    u, i = _logits(50, m, seed=m)
    s, _, _ = A.score(u, i, distance)
    uc, ic = A.pack(u, i, distance)
    assert (uc.n, ic.n, uc.m, ic.m, uc.negated, ic.negated) == (50, 50, m, m, False, False)
    d = C.distance(distance)
    table = d.table(uc, ic)
    want = m - 2 * np.diagonal(table).astype(np.int64)
    got = s.detach().numpy()
    assert np.array_equal(got, want.astype(np.float32)), (
        f"scores {got[:5]} ..., want m - 2 d = {want[:5]} ...")
    pairs = C.pair_distances(uc, ic, np.arange(50), np.arange(50), distance)
    np.testing.assert_array_equal(pairs, np.diagonal(table))
    # a stochastic sample packs to the codes of the same draws
    g1, g2 = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    s, _, _ = A.score(u, i, distance, stochastic=True, generator=g1)
    suc, sic = A.pack_logits(u, True, g2), A.pack_logits(i, True, g2)
    np.testing.assert_array_equal(s.detach().numpy(), m - 2 * d.pairs(suc, sic, np.arange(50),
                                                                      np.arange(50)))


def test_phd_score_counts_user_bits_the_item_lacks():
    # bits: user 1 1 0 0, item 1 0 1 0 -> PHD = 1 (bit 1), Hamming = 2
    u = torch.tensor([[3.0, 3.0, -3.0, -3.0]])
    i = torch.tensor([[3.0, -3.0, 3.0, -3.0]])
    assert A.phd_score(u, i)[0].tolist() == [4 - 2 * 1]
    assert A.hamming_score(u, i)[0].tolist() == [4 - 2 * 2]
    ones, zeros = torch.full((1, 4), 3.0), torch.full((1, 4), -3.0)
    assert A.phd_score(u, ones)[0].tolist() == [4]          # the item has every bit the user has
    assert A.phd_score(ones, u)[0].tolist() == [4 - 2 * 2]  # not symmetric: bits 2, 3
    assert A.phd_score(zeros, i)[0].tolist() == [4]         # a user with no bit asks for nothing
    assert A.hamming_score(zeros, i)[0].tolist() == [4 - 2 * 2]


def test_pack_checks_its_arguments():
    u, i = _logits(3, 8, seed=0)
    with pytest.raises(ValueError, match="distance must be one of"):
        A.pack(u, i, "cosine")
    with pytest.raises(ValueError, match="one width m, got 8 and 9"):
        A.pack(u, torch.zeros(3, 9), "phd")
    with pytest.raises(ValueError, match=r"\(n, m\), got"):
        A.pack_logits(torch.zeros(8), False)
    with pytest.raises(ValueError, match=r"one shape, got \(3, 8\) and \(3, 9\)"):
        A.phd_score(u, torch.zeros(3, 9))
    with pytest.raises(TypeError, match="float torch.Tensor"):
        A.hamming_score(u, torch.zeros(3, 8, dtype=torch.int64))


# --------------------------------------------------------------------------- (d) the mask


def test_without_mask_gradient_the_user_gets_only_its_own_factor():
    u, i = _logits(32, 24, seed=6)
    grads = {}
    for mask_grad in (True, False):
        s, pu, pi = A.phd_score(u, i, user_mask_grad=mask_grad)
        grads[mask_grad] = torch.autograd.grad(s.sum(), (u, i))
    with torch.no_grad():
        bu, bi = A.hard_bits(torch.sigmoid(u)), A.hard_bits(torch.sigmoid(i))
        dsig = torch.sigmoid(u) * (1 - torch.sigmoid(u))
        own = 2 * (2 * bu * bi - 1) * dsig            # d/d b_u of (2 b_u - 1), b_i' held
        through_mask = 2 * (2 * bu - 1) * bi * dsig   # d/d b_u of b_i' = b_u b_i
    torch.testing.assert_close(grads[False][0], own, rtol=1e-6, atol=0)
    torch.testing.assert_close(grads[True][0], own + through_mask, rtol=1e-6, atol=1e-7)
    assert (through_mask != 0).sum() > 100, "the example must have mask gradient to stop"
    # the item's gradient does not depend on the switch
    assert torch.equal(grads[True][1], grads[False][1])
    # Hamming has no mask: the switch changes nothing
    a = torch.autograd.grad(A.score(u, i, "hamming", user_mask_grad=True)[0].sum(), u)[0]
    b = torch.autograd.grad(A.score(u, i, "hamming", user_mask_grad=False)[0].sum(), u)[0]
    assert torch.equal(a, b)


# --------------------------------------------------------------------------- VH uses it


@pytest.mark.parametrize("distance", DISTANCES)
@pytest.mark.parametrize("mask_grad", [True, False])
def test_vh_forward_is_the_building_block_on_embedding_rows(distance, mask_grad):
    model = vh_model.VHModel(30, 40, 16, distance, user_mask_grad=mask_grad,
                             generator=torch.Generator().manual_seed(0))
    users, items = torch.randint(0, 30, (200,)), torch.randint(0, 40, (200,))
    s, pu, pi = model(users, items, True, torch.Generator().manual_seed(1))
    s.sum().backward()
    ue = model.user_emb.detach().clone().requires_grad_()
    ie = model.item_emb.detach().clone().requires_grad_()
    s2, pu2, pi2 = A.score(ue[users], ie[items], distance, stochastic=True,
                           generator=torch.Generator().manual_seed(1), user_mask_grad=mask_grad)
    s2.sum().backward()
    assert torch.equal(s, s2) and torch.equal(pu, pu2) and torch.equal(pi, pi2)
    assert torch.equal(model.user_emb.grad, ue.grad) and torch.equal(model.item_emb.grad, ie.grad)
    uc, ic = model.codes()
    uc2, ic2 = A.pack(model.user_emb, model.item_emb, distance)
    assert np.array_equal(uc.words, uc2.words) and np.array_equal(ic.words, ic2.words)


def test_code_score_module_samples_in_training_only():
    u, i = _logits(500, 16, seed=7, scale=0.3)
    mod = A.CodeScore("phd", generator=torch.Generator().manual_seed(0))
    assert "distance='phd'" in repr(mod)
    det = A.phd_score(u, i)[0]
    trained = mod(u, i)[0]
    assert not torch.equal(trained, det), "training mode should sample stochastic bits"
    mod.eval()
    assert torch.equal(mod(u, i)[0], det)


# --------------------------------------------------------------------------- (e) the example


def test_the_two_tower_example_of_the_docstring_trains_packs_and_searches():
    finder = doctest.DocTestFinder(exclude_empty=True)
    (example,) = [t for t in finder.find(A, "phdlib.codes.autograd", globs={})
                  if t.name == "phdlib.codes.autograd"]
    assert len(example.examples) >= 15
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(example, clear_globs=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples failed"
    ns = example.globs
    losses = ns["losses"]
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5]), f"the loss did not fall: {losses}"
    # the index returns the items of least PHD, as the trained towers score them
    m, n_items = ns["m"], ns["n_items"]
    for row in range(3):
        with torch.no_grad():
            s, _, _ = A.phd_score(ns["user_tower"].weight[row].expand(n_items, m),
                                  ns["item_tower"].weight)
        phd = ((m - s.numpy()) / 2).astype(np.int64)
        order = np.lexsort((np.arange(n_items), phd))[:5]
        np.testing.assert_array_equal(ns["ids"][row], order)
        np.testing.assert_array_equal(ns["dist"][row], phd[order])
    assert isinstance(ns["index"], BinaryIndex) and ns["index"].ntotal == n_items


# --------------------------------------------------------------------------- CUDA


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("distance", DISTANCES)
def test_cuda_scores_gradients_and_codes_equal_the_cpu_ones(distance):
    u, i = _logits(256, 64, seed=8)
    s, _, _ = A.score(u, i, distance)
    gu, gi = torch.autograd.grad(s.sum(), (u, i))
    uc_, ic_ = u.detach().cuda().requires_grad_(), i.detach().cuda().requires_grad_()
    sc, puc, _ = A.score(uc_, ic_, distance)
    assert sc.device.type == "cuda" and puc.device.type == "cuda"
    gu_c, gi_c = torch.autograd.grad(sc.sum(), (uc_, ic_))
    assert torch.equal(sc.cpu(), s)
    torch.testing.assert_close(gu_c.cpu(), gu, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(gi_c.cpu(), gi, rtol=1e-5, atol=1e-7)
    a, b = A.pack(uc_, ic_, distance), A.pack(u, i, distance)
    assert np.array_equal(a[0].words, b[0].words) and np.array_equal(a[1].words, b[1].words)
    g = torch.Generator(device="cuda").manual_seed(0)
    st, _, _ = A.score(uc_, ic_, distance, stochastic=True, generator=g)
    assert st.device.type == "cuda" and torch.all(st.abs() <= 64)


# --------------------------------------------------------------------------- the timing


def test_the_timing_runs_both_scores_and_prints_one_json_object(capsys):
    assert bench.main(["--batch", "256", "--bits", "16", "--repeats", "3", "--threads", "1",
                       "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert (res["device"], res["batch"], res["bits"], res["threads"]) == ("cpu", 256, 16, 1)
    assert set(res["seconds"]) == {"hamming", "phd"} and min(res["seconds"].values()) > 0
    assert res["ratio"]["rounds"] == 3 and res["ratio"]["q25"] <= res["ratio"]["median"] \
        <= res["ratio"]["q75"]
    # every call computed the same scores: the sum of m - 2 d over the batch, an integer
    for name, total in res["score_sums"].items():
        assert total == int(total) and abs(total) <= 256 * 16, (name, total)
    assert bench.main(["--device", "cuda:99"] if torch.cuda.is_available()
                      else ["--device", "cuda"]) == 2
    assert "error: device" in capsys.readouterr().err
    assert bench.main(["--device", "tpu"]) == 2
    assert "device must be 'cpu', 'cuda' or 'cuda:n', got 'tpu'" in capsys.readouterr().err
