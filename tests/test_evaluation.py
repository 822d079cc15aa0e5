"""The one evaluation path: fitted models of every kind, tie rules, the full catalogue,
pair distances, and re-scoring stored runs (``training.fitted``)."""
from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest

from phdlib import codes as C
from phdlib import methods
from phdlib import evaluation as E
from phdlib.evaluation import metrics
from phdlib import results
from phdlib.experiments import training
from phdlib.methods import BlockCodeModel, CodeModel, ItemScoreModel, VectorModel


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


def _codes(rng, split, bits=16, ranks_by="hamming"):
    uc = C.pack(rng.choice([-1, 1], size=(split.dataset.n_users, bits)))
    ic = C.pack(rng.choice([-1, 1], size=(split.dataset.n_items, bits)))
    return CodeModel(bits, {"user_codes": uc.words, "item_codes": ic.words}, ranks_by), uc, ic


def _run(method, bits, arrays):
    return results.Run(method=method, dataset="x", bits=bits, seed=0, config={}, metrics={},
                       per_user=pd.DataFrame(), fingerprint="f", wall_seconds=0, arrays=arrays)


# --------------------------------------------------------------------------- the paper's protocol


@pytest.mark.parametrize("ranks_by,fn", [("hamming", C.hamming), ("phd", C.phd)])
def test_evaluate_matches_direct_metrics(ranks_by, fn):
    rng = np.random.default_rng(1)
    split = _split(rng)
    model, uc, ic = _codes(rng, split, ranks_by=ranks_by)
    t = split.test
    items = ic.negate() if ranks_by == "phd" else ic
    d = np.array([fn(uc[int(u)], items[np.array([i])])[0] for u, i in zip(t.user, t.item)], dtype=float)
    for ties in ("expected", "input"):
        ref = metrics.evaluate(t.user, t.rating, d, ties=ties, kind="dissimilarity")
        got = E.evaluate(model, t, ties=ties)
        pd.testing.assert_frame_equal(got, ref)
    # evaluate_codes is the same path for packed codes
    pd.testing.assert_frame_equal(methods.evaluate_codes(uc, ic, t, ranks_by), E.evaluate(model, t))


def test_input_ties_follow_storage_order_for_all_tied_scores():
    rng = np.random.default_rng(2)
    split = _split(rng)
    model = ItemScoreModel(0, {"item_scores": np.zeros(40)})
    t = split.test
    order = np.lexsort((-t.rating, t.user))  # store each user's test ratings best first
    test = types.SimpleNamespace(user=t.user[order], item=t.item[order], rating=t.rating[order])
    best = metrics.summarize(E.evaluate(model, test, ties="input"))
    exp = metrics.summarize(E.evaluate(model, test, ties="expected"))
    assert best["ndcg@10"] == pytest.approx(1.0) and exp["ndcg@10"] < 0.95


def test_catalogue_equals_test_protocol_when_every_unrated_item_is_a_test_item():
    rng = np.random.default_rng(3)
    split = _split(rng, n_items=12)  # each user rated all 12 items: catalogue = own items
    model, _, _ = _codes(rng, split, ranks_by="phd")
    a = E.evaluate_catalogue(model, split)
    b = E.evaluate(model, split.test)
    assert np.allclose(a["ndcg@10"], b["ndcg@10"]) and np.allclose(a["mrr"], b["mrr"])
    assert (a["n_ranked"] == 6).all()


def test_catalogue_ranks_every_unrated_item_and_is_harder():
    rng = np.random.default_rng(4)
    split = _split(rng)
    model, _, _ = _codes(rng, split)
    cat = E.evaluate_catalogue(model, split)
    assert (cat["n_ranked"] == 40 - 6).all() and (cat["n_test"] == 6).all()
    assert cat["ndcg@10"].mean() < E.evaluate(model, split.test)["ndcg@10"].mean()
    full = E.evaluate_catalogue(model, split, exclude=())
    assert (full["n_ranked"] == 40).all()


def _catalogue_models(rng, split):
    nu, ni = split.dataset.n_users, split.dataset.n_items
    yield _codes(rng, split, bits=8)[0]                      # few distances: large ties
    yield _codes(rng, split, bits=64, ranks_by="phd")[0]
    yield VectorModel(4, {"user_vectors": rng.normal(size=(nu, 4)),
                          "item_vectors": rng.normal(size=(ni, 4))}, "score")
    yield ItemScoreModel(0, {"item_scores": rng.integers(0, 3, ni).astype(float)})
    yield ItemScoreModel(0, {"item_scores": np.zeros(ni)})   # one tie group of everything


@pytest.mark.parametrize("discount", ["paper", "released"])
@pytest.mark.parametrize("exclude", [("train", "valid"), ()])
def test_catalogue_counting_equals_sorting_bit_for_bit(discount, exclude):
    """Under expected ties the catalogue counts items against the test keys instead of
    sorting each row: the numbers must be those of the general (sorting) path, exactly."""
    rng = np.random.default_rng(11)
    split = _split(rng, n_users=50, n_items=60)
    for model in _catalogue_models(rng, split):
        for ks in ((5, 10), (1, 3, 20)):
            fast = E.evaluate_catalogue(model, split, exclude=exclude, discount=discount, ks=ks,
                                        block=7)
            slow = E.evaluate_catalogue(model, split, exclude=exclude, discount=discount, ks=ks,
                                        block=7, sort=True)
            pd.testing.assert_frame_equal(fast, slow, check_exact=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_catalogue_counts_by_comparison_and_by_search_agree_bit_for_bit(dtype):
    """Non-integer keys are counted against a row's test keys by comparisons up to
    ``LINEAR_MAX`` distinct test keys and by a binary search past it: both must give
    the same numbers, on rows with many tied keys (-0.0 beside 0.0 among them), keys
    above every test key, items left out, and up to every item a test item."""
    from phdlib.kernels import ranking as K

    rng = np.random.default_rng(17)
    n_rows, n_items = 40, 300
    key = rng.integers(-20, 20, size=(n_rows, n_items)).astype(dtype) / dtype(4)
    key[:, ::7] = rng.normal(size=(n_rows, len(range(0, n_items, 7))))
    key[key == 0] = -0.0
    key[:, 1] = 0.0
    keep = rng.random((n_rows, n_items)) < 0.8
    rows, ptr = [], [0]
    for b in range(n_rows):
        t = [1, 3, 30, 200, n_items][b % 5]
        items = np.sort(rng.choice(n_items, size=t, replace=False))
        keep[b, items] = True
        rows.append(items)
        ptr.append(ptr[-1] + t)
    titem = np.concatenate(rows).astype(np.int64)
    trel = rng.integers(1, 6, size=titem.size).astype(np.float64)
    tptr = np.asarray(ptr, dtype=np.int64)
    ks = np.asarray([1, 5, 10], dtype=np.int64)
    disc = metrics.discounts(10, "paper")
    outs = []
    for linear_max in (0, 8, K.LINEAR_MAX, 10**6):
        out = (np.empty((n_rows, 3)), np.empty(n_rows), np.empty(n_rows, dtype=np.int64))
        K.catalogue_expected(key, keep, tptr, titem, trel, ks, disc, *out, -1, linear_max)
        outs.append(out)
    for out in outs[1:]:
        for a, b in zip(outs[0], out):
            np.testing.assert_array_equal(a, b)
    assert (outs[0][2] == keep.sum(axis=1)).all()


class _PerUserScores(ItemScoreModel):
    """The same scores, without saying that every user shares them."""

    def shared_values(self):
        return None


@pytest.mark.parametrize("exclude", [("train", "valid"), ()])
def test_catalogue_of_shared_scores_counts_without_a_users_by_items_pass(monkeypatch, exclude):
    """One score per item: the counts come from the sorted scores less each user's rated
    items; the numbers are the per-row pass's and the sorting path's, exactly."""
    rng = np.random.default_rng(13)
    split = _split(rng, n_users=50, n_items=60)
    for scores in (rng.integers(0, 3, 60).astype(float), rng.normal(size=60), np.zeros(60)):
        for discount in ("paper", "released"):
            model = ItemScoreModel(0, {"item_scores": scores})
            per_row = E.evaluate_catalogue(_PerUserScores(0, {"item_scores": scores}), split,
                                           exclude=exclude, discount=discount, block=7)
            slow = E.evaluate_catalogue(model, split, exclude=exclude, discount=discount,
                                        sort=True)
            with monkeypatch.context() as mp:   # the shared path never builds a table
                mp.setattr(ItemScoreModel, "table", lambda *a: pytest.fail("table built"))
                shared = E.evaluate_catalogue(model, split, exclude=exclude, discount=discount)
            pd.testing.assert_frame_equal(shared, per_row, check_exact=True)
            pd.testing.assert_frame_equal(shared, slow, check_exact=True)
    bad = ItemScoreModel(0, {"item_scores": np.full(60, np.nan)})
    with pytest.raises(ValueError, match="NaN"):
        E.evaluate_catalogue(bad, split, exclude=exclude)
    # checked as the per-row path checks: too few items, a user the model does not know
    with pytest.raises(ValueError, match="item ids must lie in"):
        E.evaluate_catalogue(ItemScoreModel(0, {"item_scores": np.zeros(59)}), split)
    few = ItemScoreModel(0, {"item_scores": np.zeros(60)}, info={"n_users": 10})
    with pytest.raises(ValueError, match="user ids must lie in"):
        E.evaluate_catalogue(few, split)


def test_catalogue_of_shared_scores_reports_non_finite_scores_only_where_ranked():
    rng = np.random.default_rng(14)
    split = _split(rng, n_users=20, n_items=30)
    scores = rng.normal(size=30)
    rated = np.unique(np.concatenate([split.train.item, split.valid.item]))
    never = np.setdiff1d(np.arange(30), np.concatenate([rated, split.test.item]))
    if never.size:   # an item nobody rated is ranked for every user: NaN is an error
        s2 = scores.copy()
        s2[never[0]] = np.nan
        with pytest.raises(ValueError, match="NaN"):
            E.evaluate_catalogue(ItemScoreModel(0, {"item_scores": s2}), split)
    # NaN on an item every user rated in training: ranked for no one, as the per-row path
    split.train.item[:] = 0
    split.valid.item[:] = 0
    split.test.item[split.test.item == 0] = 1
    s3 = scores.copy()
    s3[0] = np.nan
    got = E.evaluate_catalogue(ItemScoreModel(0, {"item_scores": s3}), split)
    ref = E.evaluate_catalogue(_PerUserScores(0, {"item_scores": s3}), split)
    pd.testing.assert_frame_equal(got, ref, check_exact=True)


def test_catalogue_with_a_zero_rating_takes_the_sorting_path():
    """A test rating of 0 would make relevance-0 items top-rated for RR: the counting
    path does not apply, and the result is still the general path's."""
    rng = np.random.default_rng(12)
    split = _split(rng)
    split.test.rating[::7] = 0.0
    model = _codes(rng, split)[0]
    pd.testing.assert_frame_equal(E.evaluate_catalogue(model, split),
                                  E.evaluate_catalogue(model, split, sort=True), check_exact=True)


def test_catalogue_rejects_an_overlapping_split():
    rng = np.random.default_rng(5)
    split = _split(rng)
    split.train = split.test
    model, _, _ = _codes(rng, split)
    with pytest.raises(ValueError, match="overlaps"):
        E.evaluate_catalogue(model, split)


# --------------------------------------------------------------------------- fitted models


def _check_pairs_agree_with_table(model, n_users, n_items, rng):
    u = rng.integers(0, n_users, 200)
    i = rng.integers(0, n_items, 200)
    tab = model.table(np.arange(n_users), np.arange(n_items))
    assert tab.shape == (n_users, n_items)
    np.testing.assert_allclose(model.pairs(u, i), tab[u, i], rtol=1e-12)
    np.testing.assert_allclose(super(type(model), model).pairs(u, i, block=7), tab[u, i], rtol=1e-12)


@pytest.mark.parametrize("ranks_by", ["hamming", "phd"])
def test_code_model_table_and_pairs(ranks_by):
    rng = np.random.default_rng(6)
    split = _split(rng)
    model, uc, ic = _codes(rng, split, bits=70, ranks_by=ranks_by)
    U, I = C.unpack(uc, "01").astype(bool), C.unpack(ic, "01").astype(bool)
    want = (U[:, None, :] & ~I[None, :, :]).sum(2) if ranks_by == "phd" else \
        (U[:, None, :] != I[None, :, :]).sum(2)
    np.testing.assert_array_equal(model.table(np.arange(30), np.arange(40)), want)
    assert model.kind == "dissimilarity"
    _check_pairs_agree_with_table(model, 30, 40, rng)
    other = model.with_distance("phd" if ranks_by == "hamming" else "hamming")
    assert other.ranks_by != ranks_by and other.arrays is model.arrays
    with pytest.raises(ValueError, match="codes rank by"):
        CodeModel(8, model.arrays, "score")


def test_vector_and_item_score_models():
    rng = np.random.default_rng(7)
    P, Q = rng.standard_normal((30, 4)).astype(np.float32), rng.standard_normal((40, 4)).astype(np.float32)
    v = training.fitted(_run("mf", 4, {"user_vectors": P, "item_vectors": Q}))
    assert isinstance(v, VectorModel) and v.kind == "score"
    np.testing.assert_allclose(v.table(np.array([3]), np.arange(40))[0], P[3].astype(float) @ Q.T.astype(float),
                               rtol=1e-6)
    _check_pairs_agree_with_table(v, 30, 40, rng)
    s = rng.random(40)
    im = training.fitted(_run("item-mean", 0, {"item_scores": s}))
    assert isinstance(im, ItemScoreModel)
    tab = im.table(np.array([0, 1]), np.arange(40))
    np.testing.assert_array_equal(tab[0], s) and np.testing.assert_array_equal(tab[1], s)
    _check_pairs_agree_with_table(im, 30, 40, rng)


def test_block_model_is_weighted_sum_of_block_inner_products():
    rng = np.random.default_rng(8)
    u = rng.choice([-1, 1], size=(30, 32))
    i = rng.choice([-1, 1], size=(40, 32))
    wu, wi = rng.random((30, 2)), rng.random((40, 2))
    model = training.fitted(_run("cccf", 64, {"user_codes": C.pack(u).words, "item_codes": C.pack(i).words,
                                              "user_weights": wu, "item_weights": wi,
                                              "block_starts": np.array([0, 16, 32])}))
    assert isinstance(model, BlockCodeModel) and model.kind == "score"
    got = model.table(np.array([3, 7]), np.arange(40))
    ref = np.array([[wu[x, 0] * wi[y, 0] * (u[x, :16] @ i[y, :16]) + wu[x, 1] * wi[y, 1] * (u[x, 16:] @ i[y, 16:])
                     for y in range(40)] for x in (3, 7)])
    np.testing.assert_allclose(got, ref)
    _check_pairs_agree_with_table(model, 30, 40, rng)
    # the kernel's numbers are the NumPy form's, block by block, bit for bit (8 blocks)
    starts = np.arange(0, 33, 4)
    wu8, wi8 = rng.random((30, 8)), rng.random((40, 8))
    eight = BlockCodeModel(32, {"user_codes": C.pack(u).words, "item_codes": C.pack(i).words,
                                "user_weights": wu8, "item_weights": wi8,
                                "block_starts": starts})
    users, items = np.array([5, 0, 29, 5]), rng.permutation(40)
    numpy_form = np.zeros((len(users), len(items)))
    for b in range(8):
        s0, s1 = starts[b], starts[b + 1]
        ip = u[users, s0:s1].astype(np.float64) @ i[items, s0:s1].T.astype(np.float64)
        numpy_form += wu8[users, b][:, None] * wi8[items, b][None, :] * ip
    np.testing.assert_array_equal(eight.table(users, items), numpy_form)
    # codes over two words, a block across the word boundary, a whole-word block
    for starts in (np.array([0, 40, 70, 96]), np.array([0, 64, 96])):
        u2, i2 = rng.choice([-1, 1], size=(30, 96)), rng.choice([-1, 1], size=(40, 96))
        K = len(starts) - 1
        w_u, w_i = rng.random((30, K)), rng.random((40, K))
        two = BlockCodeModel(96, {"user_codes": C.pack(u2).words,
                                  "item_codes": C.pack(i2).words, "user_weights": w_u,
                                  "item_weights": w_i, "block_starts": starts})
        ref2 = np.zeros((30, 40))
        for b in range(K):
            s0, s1 = starts[b], starts[b + 1]
            ip = u2[:, s0:s1].astype(np.float64) @ i2[:, s0:s1].T.astype(np.float64)
            ref2 += w_u[:, b][:, None] * w_i[:, b][None, :] * ip
        np.testing.assert_array_equal(two.table(np.arange(30), np.arange(40)), ref2)
        _check_pairs_agree_with_table(two, 30, 40, rng)
    # one block without weights: the inner product of the codes, m - 2 * Hamming
    one = BlockCodeModel(32, {"user_codes": C.pack(u).words, "item_codes": C.pack(i).words})
    np.testing.assert_array_equal(one.table(np.arange(30), np.arange(40)), u @ i.T)
    bad = BlockCodeModel(64, dict(model.arrays, user_weights=wu[:, :1]))
    with pytest.raises(ValueError, match="2 blocks but weights"):
        bad.table(np.arange(2), np.arange(2))
    for starts in ([0, 40, 16], [4, 16, 32], [32]):
        unordered = BlockCodeModel(32, dict(model.arrays, block_starts=np.array(starts)))
        with pytest.raises(ValueError, match="block_starts must rise from 0"):
            unordered.table(np.arange(2), np.arange(2))


def test_fitted_needs_its_arrays_and_valid_ids():
    rng = np.random.default_rng(9)
    P = rng.standard_normal((30, 4))
    with pytest.raises(ValueError, match="needs arrays"):
        training.fitted(_run("cccf", 4, {"w": P}))
    with pytest.raises(ValueError, match="loaded without arrays"):
        training.fitted(_run("mf", 4, {}))
    v = VectorModel(4, {"user_vectors": P, "item_vectors": P})
    with pytest.raises(ValueError, match="item ids must lie"):
        v.pairs(np.array([0]), np.array([30]))
    with pytest.raises(ValueError, match="1-d integer"):
        v.table(np.array([0.5]), np.arange(3))
    with pytest.raises(ValueError, match="ranks_by"):
        VectorModel(4, {"user_vectors": P, "item_vectors": P}, "cosine")


# --------------------------------------------------------------------------- pair distances


def test_phd_items_are_stored_negated():
    uc = C.pack(np.array([[1, 0, 1, 1]], np.uint8), "01")
    ic = C.pack(np.array([[1, 1, 0, 0]], np.uint8), "01")
    assert C.item_store(ic, "phd").negated and not C.item_store(ic, "hamming").negated
    assert not C.item_store(ic.negate(), "hamming").negated
    assert C.pair_distances(uc, ic, [0], [0], "phd").tolist() == [2]
    assert C.pair_distances(uc, ic.negate(), [0], [0], "phd").tolist() == [2]
    assert C.pair_distances(uc, ic, [0], [0], "hamming").tolist() == [3]


@pytest.mark.parametrize("distance", ["hamming", "phd"])
def test_pair_distances_match_the_reference_in_any_order(distance):
    rng = np.random.default_rng(10)
    U = rng.integers(0, 2, (50, 100)).astype(np.uint8)
    V = rng.integers(0, 2, (20, 100)).astype(np.uint8)
    uc, ic = C.pack(U, "01"), C.pack(V, "01")
    u, i = rng.integers(0, 50, 300), rng.integers(0, 20, 300)
    ref = (C.phd_reference if distance == "phd" else C.hamming_reference)(C.unpack(uc), C.unpack(ic))
    d = C.pair_distances(uc, ic, u, i, distance)
    assert d.dtype == np.int32
    np.testing.assert_array_equal(d, ref[u, i])
    many = np.tile(u, 40), np.tile(i, 40)  # several chunks of the parallel kernel
    np.testing.assert_array_equal(C.pair_distances(uc, ic, *many, distance), ref[many])
    assert C.pair_distances(uc, ic, np.array([], int), np.array([], int), distance).shape == (0,)


def test_pair_distances_rejects_bad_ids():
    uc = C.pack(np.ones((2, 8), np.uint8), "01")
    with pytest.raises(ValueError, match="user ids"):
        C.pair_distances(uc, uc, [0, 2], [0, 0], "hamming")
    with pytest.raises(ValueError, match="item ids"):
        C.pair_distances(uc, uc, [0], [-1], "hamming")
    with pytest.raises(ValueError, match="one length"):
        C.pair_distances(uc, uc, [0, 1], [0], "hamming")
    with pytest.raises(ValueError, match="distance"):
        C.pair_distances(uc, uc, [0], [0], "cosine")


def test_evaluate_many_and_tie_rules_equal_one_evaluation_each(synthetic_split):
    from phdlib import methods
    from phdlib.experiments import training

    sp = synthetic_split
    run = training.run("popularity", sp, 8, 0, store=False, reuse=False, progress=False)
    model = training.fitted(run)
    many = E.evaluate_many(model, sp.test, ("expected", "input"), ("paper", "released"))
    for (t, d), frame in many.items():
        pd.testing.assert_frame_equal(frame, E.evaluate(model, sp.test, ties=t, discount=d))
    table = E.tie_rules(model, sp.test, ("expected", "optimistic"))
    assert list(table.index) == ["expected", "optimistic"]
    assert table.loc["expected", "ndcg@10"] == metrics.summarize(many["expected", "paper"])["ndcg@10"]
    assert methods.get("popularity").ranks_by == "score"
