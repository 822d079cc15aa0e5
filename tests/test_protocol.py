"""Re-evaluation of stored runs: scorers, tie rules, and the full-catalogue extension."""
from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from phdlib import codes as C
from phdlib import metrics, protocol, results


def _split(rng, n_users=30, n_items=40):
    R = lambda u, i, r: types.SimpleNamespace(user=np.array(u, dtype=np.int32),  # noqa: E731
                                              item=np.array(i, dtype=np.int32),
                                              rating=np.array(r, dtype=np.float32))
    parts = {"train": ([], [], []), "valid": ([], [], []), "test": ([], [], [])}
    for u in range(n_users):
        items = rng.permutation(n_items)[:12]
        for k, i in enumerate(items):
            part = "test" if k < 6 else ("train" if k < 10 else "valid")
            parts[part][0].append(u)
            parts[part][1].append(i)
            parts[part][2].append(float(rng.integers(1, 6)))
    return types.SimpleNamespace(dataset=types.SimpleNamespace(n_users=n_users, n_items=n_items),
                                 **{k: R(*v) for k, v in parts.items()})


def _code_run(method, rng, split, bits=16):
    uc = C.pack(rng.choice([-1, 1], size=(split.dataset.n_users, bits)))
    ic = C.pack(rng.choice([-1, 1], size=(split.dataset.n_items, bits)))
    return results.Run(method=method, dataset="x", bits=bits, seed=0, config={}, metrics={},
                       per_user=pd.DataFrame(), fingerprint="f", wall_seconds=0,
                       arrays={"user_codes": uc.words, "item_codes": ic.words}), uc, ic


@pytest.mark.parametrize("method,fn", [("vh", C.hamming), ("vh-phd", C.phd)])
def test_evaluate_test_matches_direct_metrics(method, fn):
    rng = np.random.default_rng(1)
    split = _split(rng)
    run, uc, ic = _code_run(method, rng, split)
    t = split.test
    d = np.array([fn(uc[int(u)], ic[np.array([i])])[0] for u, i in zip(t.user, t.item)], dtype=float)
    for ties in ("expected", "input"):
        ref = metrics.evaluate(t.user, t.rating, d, ties=ties)
        got = protocol.evaluate_test(run, split, ties=ties)
        pd.testing.assert_frame_equal(got, ref)


def test_input_ties_follow_storage_order_for_all_tied_scores():
    rng = np.random.default_rng(2)
    split = _split(rng)
    run = results.Run(method="random", dataset="x", bits=0, seed=0, config={}, metrics={},
                      per_user=pd.DataFrame(), fingerprint="f", wall_seconds=0)
    t = split.test
    order = np.lexsort((-t.rating, t.user))  # store each user's test ratings best first
    split.test = types.SimpleNamespace(user=t.user[order], item=t.item[order], rating=t.rating[order])
    best = protocol.summarize(protocol.evaluate_test(run, split, ties="input"))
    exp = protocol.summarize(protocol.evaluate_test(run, split, ties="expected"))
    assert best["ndcg@10"] == pytest.approx(1.0) and exp["ndcg@10"] < 0.95


def test_catalogue_equals_test_protocol_when_every_unrated_item_is_a_test_item():
    rng = np.random.default_rng(3)
    split = _split(rng, n_items=12)  # each user rated all 12 items: catalogue = own items
    run, _, _ = _code_run("vh-phd", rng, split)
    a = protocol.evaluate_catalogue(run, split)
    b = protocol.evaluate_test(run, split)
    assert np.allclose(a["ndcg@10"], b["ndcg@10"]) and np.allclose(a["mrr"], b["mrr"])
    assert (a["n_ranked"] == 6).all()


def test_catalogue_ranks_every_unrated_item_and_is_harder():
    rng = np.random.default_rng(4)
    split = _split(rng)
    run, _, _ = _code_run("vh", rng, split)
    cat = protocol.evaluate_catalogue(run, split)
    assert (cat["n_ranked"] == 40 - 6).all() and (cat["n_test"] == 6).all()
    assert cat["ndcg@10"].mean() < protocol.evaluate_test(run, split)["ndcg@10"].mean()
    full = protocol.evaluate_catalogue(run, split, exclude=())
    assert (full["n_ranked"] == 40).all()


def test_vectors_and_sanity_scorers_and_unknown_arrays():
    rng = np.random.default_rng(5)
    split = _split(rng)
    P, Q = rng.standard_normal((30, 4)), rng.standard_normal((40, 4))
    run = results.Run(method="mf", dataset="x", bits=4, seed=0, config={}, metrics={},
                      per_user=pd.DataFrame(), fingerprint="f", wall_seconds=0,
                      arrays={"user_vectors": P, "item_vectors": Q})
    s = protocol.run_scorer(run, split)
    assert s.kind == "score" and np.allclose(s.values(np.array([3]), np.arange(40)), P[3] @ Q.T)
    im = results.Run(method="item-mean", dataset="x", bits=0, seed=0, config={}, metrics={},
                     per_user=pd.DataFrame(), fingerprint="f", wall_seconds=0)
    v = protocol.run_scorer(im, split).values(np.array([0, 1]), np.arange(40))
    assert np.allclose(v[0], v[1])
    i0 = split.train.item[0]
    assert v[0, i0] == pytest.approx(split.train.rating[split.train.item == i0].mean())
    bad = results.Run(method="cccf", dataset="x", bits=4, seed=0, config={}, metrics={},
                      per_user=pd.DataFrame(), fingerprint="f", wall_seconds=0, arrays={"w": P})
    with pytest.raises(ValueError, match="cannot score"):
        protocol.run_scorer(bad, split)


def test_block_scorer_is_weighted_sum_of_block_inner_products():
    rng = np.random.default_rng(6)
    split = _split(rng)
    u = rng.choice([-1, 1], size=(30, 32))
    i = rng.choice([-1, 1], size=(40, 32))
    wu, wi = rng.random((30, 2)), rng.random((40, 2))
    run = results.Run(method="cccf", dataset="x", bits=64, seed=0, config={}, metrics={},
                      per_user=pd.DataFrame(), fingerprint="f", wall_seconds=0,
                      arrays={"user_codes": C.pack(u).words, "item_codes": C.pack(i).words,
                              "user_weights": wu, "item_weights": wi,
                              "block_starts": np.array([0, 16, 32])})
    s = protocol.run_scorer(run, split)
    got = s.values(np.array([3, 7]), np.arange(40))
    ref = np.array([[wu[x, 0] * wi[y, 0] * (u[x, :16] @ i[y, :16]) + wu[x, 1] * wi[y, 1] * (u[x, 16:] @ i[y, 16:])
                     for y in range(40)] for x in (3, 7)])
    assert s.kind == "score" and np.allclose(got, ref)
