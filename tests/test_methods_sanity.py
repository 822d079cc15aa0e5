"""Sanity baselines on hand-made data: the exact metrics by hand, through ``training.run``."""
import math

import numpy as np
import pytest

from phdlib.experiments import training
from phdlib.methods import ItemScoreModel, sanity
from phdlib.data.tables import Dataset, Ratings, Split


def _split():
    # train (user, item, rating): item 0 rated 5 and 4 (mean 4.5, 2 ratings);
    # item 1 rated 1 (1 rating); item 2 rated 3, 3, 3 (mean 3, the most
    # popular); item 3 has no training rating (gets the global mean 19/6).
    train = Ratings(np.array([1, 2, 1, 1, 2, 3]), np.array([0, 0, 1, 2, 2, 2]),
                    np.array([5, 4, 1, 3, 3, 3], np.float32))
    test = Ratings(np.array([0, 0, 0]), np.array([0, 1, 2]), np.array([5, 1, 3], np.float32))
    valid = Ratings(np.array([1, 1]), np.array([1, 3]), np.array([2, 4], np.float32))
    allr = Ratings(np.r_[train.user, valid.user, test.user], np.r_[train.item, valid.item, test.item],
                   np.r_[train.rating, valid.rating, test.rating])
    ds = Dataset("hand", allr, n_users=4, n_items=4, rating_scale=(1.0, 5.0),
                 user_ids=np.arange(4), item_ids=np.arange(4), fingerprint="hand", synthetic=True)
    return Split(ds, train, valid, test, seed=0, fingerprint="handsplit")


def test_item_scores_by_hand():
    sp = _split()
    np.testing.assert_allclose(sanity.item_scores(sp.train, 4, "item-mean"), [4.5, 1, 3, 19 / 6],
                               rtol=1e-12)
    np.testing.assert_array_equal(sanity.item_scores(sp.train, 4, "popularity"), [2, 1, 3, 0])
    np.testing.assert_array_equal(sanity.item_scores(sp.train, 4, "random"), np.zeros(4))


def _dcg(gains, disc):
    return sum(g * d for g, d in zip(gains, disc))


DISC = [1 / math.log2(i + 2) for i in range(5)]
IDCG = _dcg([31, 7, 1], DISC)


def _run(name):
    return training.run(name, _split(), 64, 0, store=False, reuse=False, progress=False)


def test_item_mean_ranks_by_training_mean():
    r = _run("item-mean")
    # order 0 (4.5), 2 (3), 1 (1): ratings 5, 3, 1, the ideal order
    assert r.metrics["ndcg@5"] == pytest.approx(1.0)
    assert r.metrics["mrr"] == pytest.approx(1.0)
    assert r.arrays["item_scores"].shape == (4,)
    assert r.method == "item-mean" and r.fingerprint == "handsplit"
    assert r.config == {"ties": "expected", "impl": sanity.IMPL} and r.grid is None


def test_popularity_ranks_by_training_count():
    r = _run("popularity")
    # counts: item 2 (3), item 0 (2), item 1 (1): ratings 3, 5, 1
    assert r.metrics["ndcg@5"] == pytest.approx(_dcg([7, 31, 1], DISC) / IDCG)
    assert r.metrics["mrr"] == pytest.approx(0.5)


def test_random_is_the_exact_chance_level():
    r = _run("random")
    # all three tied: every item's expected discount is the mean of the three
    assert r.metrics["ndcg@5"] == pytest.approx((31 + 7 + 1) / 3 * sum(DISC[:3]) / IDCG)
    # the 5 lands at position 1, 2, 3 with probability 1/3 each
    assert r.metrics["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)


def test_bad_kind_and_ids_are_named():
    sp = _split()
    with pytest.raises(ValueError, match="kind must be one of"):
        sanity.item_scores(sp.train, 4, "median")
    with pytest.raises(ValueError, match="train.item holds id 2"):
        sanity.item_scores(sp.train, 2, "popularity")


def test_fit_returns_item_scores_for_every_user():
    sp = _split()
    m = sanity.ITEM_MEAN.fit(sp, 64, 0, sanity.ITEM_MEAN.defaults("hand", 64))
    assert isinstance(m, ItemScoreModel) and m.kind == "score" and m.n_users == 4
    np.testing.assert_allclose(m.table([0, 3], [0, 1, 2, 3]), [[4.5, 1, 3, 19 / 6]] * 2, rtol=1e-12)
    np.testing.assert_allclose(m.pairs(np.array([2, 0]), np.array([2, 0])), [3, 4.5])
    with pytest.raises(ValueError, match="user ids"):
        m.pairs(np.array([4]), np.array([0]))
    with pytest.raises(ValueError, match="unknown sanity baseline"):
        sanity.SanityBaseline("median", "x", "y")
