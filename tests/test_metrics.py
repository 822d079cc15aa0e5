"""NDCG@k and MRR: brute force over tie orderings, hand examples, sklearn, edge cases."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from phdlib.evaluation import metrics as M
from phdlib.evaluation import ties as T

L3 = math.log2(3)


# --------------------------------------------------------------------------- brute force


def brute_force(ratings, dissim, k, discount):
    """Mean NDCG@k and RR over every ordering of the tied items (itertools)."""
    r = np.asarray(ratings, dtype=float)
    d = np.asarray(dissim, dtype=float)
    levels = sorted(set(d.tolist()))
    groups = [[i for i in range(len(r)) if d[i] == lv] for lv in levels]
    n = len(r)
    m = min(k, n)
    disc = [1 / math.log2(i + 2) if discount == "paper" else 1 / math.log2(max(i + 1, 2))
            for i in range(m)]
    ideal = sorted(r, reverse=True)
    idcg = sum((2 ** ideal[i] - 1) * disc[i] for i in range(m))
    nd, rr, count = 0.0, 0.0, 0
    for perms in itertools.product(*[itertools.permutations(g) for g in groups]):
        order = [i for p in perms for i in p]
        dcg = sum((2 ** r[order[i]] - 1) * disc[i] for i in range(m))
        nd += dcg / idcg
        rank = next(i for i, j in enumerate(order) if r[j] == r.max()) + 1
        rr += 1 / rank
        count += 1
    return nd / count, rr / count


def small_cases(n_cases, seed, max_n=7, levels=3, max_rating=5):
    rng = np.random.default_rng(seed)
    for _ in range(n_cases):
        n = int(rng.integers(1, max_n + 1))
        ratings = rng.integers(1, max_rating + 1, n)
        dissim = rng.integers(0, levels, n)
        k = int(rng.integers(1, 8))
        yield ratings, dissim, k


@pytest.mark.parametrize("discount", M.DISCOUNTS)
def test_expected_equals_brute_force_over_all_orderings(discount):
    n_checked = 0
    for ratings, dissim, k in small_cases(300, seed=11):
        want_ndcg, want_rr = brute_force(ratings, dissim, k, discount)
        assert M.ndcg(ratings, dissim, k, discount=discount) == pytest.approx(want_ndcg, abs=1e-12)
        assert M.mrr(ratings, dissim) == pytest.approx(want_rr, abs=1e-12)
        # the same through the all-users kernel
        row = M.evaluate(np.zeros(len(ratings), dtype=np.int32), ratings, dissim, ks=(k,),
                         discount=discount).iloc[0]
        assert row[f"ndcg@{k}"] == pytest.approx(want_ndcg, abs=1e-12)
        assert row["mrr"] == pytest.approx(want_rr, abs=1e-12)
        n_checked += 1
    assert n_checked == 300


def test_expected_mrr_brute_force_with_many_top_items_in_large_ties():
    # groups of up to 8 tied items, several of them top-rated: 8! orderings at most
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(5, 9))
        ratings = rng.integers(4, 6, n)
        dissim = rng.integers(0, 2, n)
        _, want = brute_force(ratings, dissim, 10, "paper")
        assert M.mrr(ratings, dissim) == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("discount", M.DISCOUNTS)
def test_optimistic_expected_pessimistic_order(discount):
    for ratings, dissim, k in small_cases(400, seed=3, max_n=30, levels=4):
        vals = {t: M.ndcg(ratings, dissim, k, ties=t, discount=discount)
                for t in ("optimistic", "expected", "pessimistic", "input", "random")}
        assert vals["optimistic"] >= vals["expected"] - 1e-12
        assert vals["expected"] >= vals["pessimistic"] - 1e-12
        for t in ("input", "random"):
            assert vals["pessimistic"] - 1e-12 <= vals[t] <= vals["optimistic"] + 1e-12
        rr = {t: M.mrr(ratings, dissim, ties=t) for t in M.TIES}
        assert rr["optimistic"] >= rr["expected"] - 1e-12 >= rr["pessimistic"] - 2e-12
        for t in ("input", "random"):
            assert rr["pessimistic"] <= rr[t] <= rr["optimistic"]


def test_mean_of_random_draws_approaches_expected():
    ratings = np.array([5, 4, 4, 3, 1, 5, 2, 1, 3, 4])
    dissim = np.array([0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    draws = [M.ndcg(ratings, dissim, 5, ties="random", seed=s) for s in range(4000)]
    rr = [M.mrr(ratings, dissim, ties="random", seed=s) for s in range(4000)]
    assert np.mean(draws) == pytest.approx(M.ndcg(ratings, dissim, 5), abs=3e-3)
    assert np.mean(rr) == pytest.approx(M.mrr(ratings, dissim), abs=1e-2)


def test_random_is_seeded():
    ratings = np.arange(1, 21) % 5 + 1
    dissim = np.zeros(20)
    a = [M.ndcg(ratings, dissim, 5, ties="random", seed=s) for s in range(5)]
    b = [M.ndcg(ratings, dissim, 5, ties="random", seed=s) for s in range(5)]
    assert a == b
    assert len(set(a)) > 1


# --------------------------------------------------------------------------- hand-computed


def test_hand_example_without_ties_both_discounts():
    ratings = [3, 1, 2]
    dissim = [0, 1, 2]  # ranked: 3, 1, 2; ideal: 3, 2, 1
    # paper: d = 1, 1/log2 3, 1/2
    dcg = 7 + 1 / L3 + 3 / 2
    idcg = 7 + 3 / L3 + 1 / 2
    assert M.ndcg(ratings, dissim, 3) == pytest.approx(dcg / idcg, abs=1e-15)
    assert M.ndcg(ratings, dissim, 2) == pytest.approx((7 + 1 / L3) / (7 + 3 / L3), abs=1e-15)
    # released: d = 1, 1, 1/log2 3
    dcg_r = 7 + 1 + 3 / L3
    idcg_r = 7 + 3 + 1 / L3
    assert M.ndcg(ratings, dissim, 3, discount="released") == pytest.approx(dcg_r / idcg_r, abs=1e-15)
    assert M.ndcg(ratings, dissim, 2, discount="released") == pytest.approx(8 / 10, abs=1e-15)
    assert M.ndcg(ratings, dissim, 1) == 1.0
    assert M.mrr(ratings, dissim) == 1.0
    assert M.mrr([1, 3, 2], [0, 1, 2]) == 0.5
    assert M.mrr([1, 2, 3], [0, 1, 2]) == pytest.approx(1 / 3)


def test_discounts():
    np.testing.assert_allclose(M.discounts(4, "paper"), [1, 1 / L3, 1 / 2, 1 / math.log2(5)])
    np.testing.assert_allclose(M.discounts(4, "released"), [1, 1, 1 / L3, 1 / 2])


def test_hand_example_with_ties():
    # ratings 5 and 1 tied at the top: each item's expected discount is (1 + 1/log2 3) / 2
    ed = (1 + 1 / L3) / 2
    assert M.ndcg([5, 1], [3, 3], 2) == pytest.approx((31 + 1) * ed / (31 + 1 / L3), abs=1e-15)
    # at k = 1 only position 1 counts: each item's expected discount is 1/2
    assert M.ndcg([5, 1], [3, 3], 1) == pytest.approx(32 / 2 / 31, abs=1e-15)
    # released: positions 1 and 2 both weigh 1, so a tie over them costs nothing
    assert M.ndcg([5, 1], [3, 3], 2, discount="released") == 1.0
    assert M.mrr([5, 1], [3, 3]) == pytest.approx(0.75)
    # one top item among 3 tied: (1 + 1/2 + 1/3) / 3
    assert M.mrr([5, 1, 2], [0, 0, 0]) == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    # two top items among 3 tied: first at offset 0 w.p. 2/3, offset 1 w.p. 1/3
    assert M.mrr([5, 5, 2], [0, 0, 0]) == pytest.approx(2 / 3 + 1 / 3 / 2)
    # a tie group without the top rating in front: positions 3, 4 hold {5, 1}
    assert M.mrr([2, 3, 5, 1], [0, 0, 1, 1]) == pytest.approx((1 / 3 + 1 / 4) / 2)
    # optimistic / pessimistic / input on the first example
    assert M.mrr([1, 5], [3, 3], ties="optimistic") == 1.0
    assert M.mrr([5, 1], [3, 3], ties="pessimistic") == 0.5
    assert M.mrr([1, 5], [3, 3], ties="input") == 0.5
    assert M.mrr([5, 1], [3, 3], ties="input") == 1.0


def test_kind_score_is_negated_dissimilarity():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(1, 15))
        r = rng.integers(1, 6, n)
        s = rng.integers(-3, 4, n).astype(float)
        for t in M.TIES:
            assert M.ndcg(r, s, 5, ties=t, kind="score", seed=1) == M.ndcg(r, -s, 5, ties=t, seed=1)
            assert M.mrr(r, s, ties=t, kind="score", seed=1) == M.mrr(r, -s, ties=t, seed=1)
    # larger scores first
    assert M.mrr([1, 5], [0.1, 0.9], kind="score") == 1.0
    assert M.mrr([1, 5], [0.1, 0.9], kind="dissimilarity") == 0.5


# --------------------------------------------------------------------------- sklearn


def test_matches_sklearn_ndcg_score_where_definitions_coincide():
    """sklearn uses linear gains y_true and 1/log2(i + 1), and averages ties exactly
    as McSherry & Najork (ignore_ties=False): feed it 2^r - 1 as the relevance."""
    from sklearn.metrics import ndcg_score

    rng = np.random.default_rng(2)
    for _ in range(200):
        n = int(rng.integers(2, 40))
        r = rng.integers(1, 6, n)
        dissim = rng.integers(0, 6, n)
        k = int(rng.integers(1, 12))
        want = ndcg_score([2.0 ** r - 1], [-dissim.astype(float)], k=k)
        assert M.ndcg(r, dissim, k) == pytest.approx(want, abs=1e-12)
        # distinct values: every tie rule gives the same ranking
        distinct = rng.permutation(n).astype(float)
        want = ndcg_score([2.0 ** r - 1], [distinct], k=k, ignore_ties=True)
        for t in M.TIES:
            assert M.ndcg(r, distinct, k, ties=t, kind="score") == pytest.approx(want, abs=1e-12)


# --------------------------------------------------------------------------- properties and edges


def test_values_in_unit_interval_and_ideal_order_scores_one():
    rng = np.random.default_rng(4)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        r = rng.integers(1, 6, n).astype(float)
        d = rng.integers(0, 33, n)
        for t in M.TIES:
            for disc in M.DISCOUNTS:
                for k in (1, 5, 10):
                    v = M.ndcg(r, d, k, ties=t, discount=disc, seed=2)
                    assert 0.0 <= v <= 1.0 + 1e-12
            rr = M.mrr(r, d, ties=t, seed=2)
            assert 0.0 < rr <= 1.0
        # ideal order: dissimilarity decreasing in the rating, ties only among equal ratings
        for t in M.TIES:
            for disc in M.DISCOUNTS:
                assert M.ndcg(r, -r, 10, ties=t, discount=disc) == pytest.approx(1.0, abs=1e-12)
            assert M.mrr(r, -r, ties=t) == 1.0


@pytest.mark.parametrize("k", [5, 10])
@pytest.mark.parametrize("n_offset", ["1", "2", "k-1", "k", "k+1"])
def test_users_with_few_items(k, n_offset):
    n = {"1": 1, "2": 2, "k-1": k - 1, "k": k, "k+1": k + 1}[n_offset]
    rng = np.random.default_rng(n * 100 + k)
    r = rng.integers(1, 6, n)
    d = rng.integers(0, 3, n)
    want_nd, want_rr = brute_force(r, d, k, "paper")
    assert M.ndcg(r, d, k) == pytest.approx(want_nd, abs=1e-12)
    assert M.mrr(r, d) == pytest.approx(want_rr, abs=1e-12)
    if n == 1:
        assert M.ndcg(r, d, k) == 1.0 and M.mrr(r, d) == 1.0
    if n <= k:
        # over the n items the user has: NDCG@k equals NDCG@n
        assert M.ndcg(r, d, k) == pytest.approx(M.ndcg(r, d, n), abs=1e-15)
    # worst order of 2 items: 1 / rank = 1/2 and DCG over both positions
    if n == 2:
        assert M.ndcg([1, 5], [0, 1], k) == pytest.approx((1 + 31 / L3) / (31 + 1 / L3))
        assert M.mrr([1, 5], [0, 1]) == 0.5


def test_all_equal_ratings_score_one():
    for t in M.TIES:
        for disc in M.DISCOUNTS:
            assert M.ndcg([4, 4, 4, 4, 4, 4], [3, 1, 2, 2, 0, 7], 5, ties=t, discount=disc) == pytest.approx(1.0)
        assert M.mrr([4, 4, 4], [3, 1, 2], ties=t) == 1.0


def test_all_equal_scores():
    r = np.array([5, 3, 1, 4, 2, 5, 1])
    d = np.zeros(7)
    want_nd, want_rr = brute_force(r, d, 5, "paper")
    assert M.ndcg(r, d, 5) == pytest.approx(want_nd, abs=1e-12)
    assert M.mrr(r, d) == pytest.approx(want_rr, abs=1e-12)
    # closed form: every item's expected discount is sum_{i<=5} d(i) / 7
    closed = np.sum(2.0 ** r - 1) * M.discounts(5).sum() / 7 / np.sum((2.0 ** np.sort(r)[::-1][:5] - 1) * M.discounts(5))
    assert M.ndcg(r, d, 5) == pytest.approx(closed, abs=1e-12)
    assert M.ndcg(r, d, 5, ties="optimistic") == pytest.approx(1.0)
    assert M.ndcg(r, d, 5, ties="input") == pytest.approx(M.ndcg(r, -np.arange(7.0), 5, kind="score"))


def test_all_zero_ratings_give_zero_like_sklearn():
    assert M.ndcg([0, 0, 0], [0, 1, 2], 5) == 0.0
    assert M.mrr([0, 0, 0], [0, 1, 2]) == 1.0


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("call, match", [
    (lambda: M.ndcg([1, 2], [0], 5), "same length"),
    (lambda: M.ndcg([1, np.nan], [0, 1], 5), r"ratings\[1\]"),
    (lambda: M.ndcg([1, 2], [0, np.inf], 5), r"values\[1\]"),
    (lambda: M.ndcg([1, -2], [0, 1], 5), r"ratings\[1\] = -2.0 is negative"),
    (lambda: M.ndcg([1, 2], [0, 1], 0), "k=0"),
    (lambda: M.ndcg([1, 2], [0, 1], 2.5), "k=2.5"),
    (lambda: M.ndcg([], [], 5), "no test items"),
    (lambda: M.ndcg([1, 2], [0, 1], 5, ties="first"), "ties='first'"),
    (lambda: M.ndcg([1, 2], [0, 1], 5, discount="log"), "discount='log'"),
    (lambda: M.mrr([1, 2], [0, 1], kind="distance"), "kind='distance'"),
    (lambda: M.ranked_ratings([1, 2], [0, 1], ties="expected"), "expectation"),
    (lambda: M.evaluate([0, 1], [1, 2], [0]), "same length"),
    (lambda: M.evaluate([0.5, 1], [1, 2], [0, 1]), "integer"),
    (lambda: M.evaluate([0, 1], [1, 2], [0, 1], ks=()), "ks is empty"),
    (lambda: M.evaluate([0, 1], [1, -1], [0, 1]), r"rating\[1\]"),
])
def test_bad_input_raises_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------- all users


def _flat(seed, n_users=150, n=4000, levels=9):
    rng = np.random.default_rng(seed)
    user = rng.integers(0, n_users, n).astype(np.int32)
    rating = rng.integers(1, 6, n).astype(np.float32)
    values = rng.integers(0, levels, n).astype(np.int32)
    return user, rating, values


@pytest.mark.parametrize("ties", M.TIES)
@pytest.mark.parametrize("discount", M.DISCOUNTS)
@pytest.mark.parametrize("kind", M.KINDS)
def test_evaluate_equals_per_user_functions(ties, discount, kind):
    user, rating, values = _flat(7)
    ks = (1, 5, 10)
    df = M.evaluate(user, rating, values, ks=ks, ties=ties, discount=discount, kind=kind, seed=9)
    assert list(df.columns) == ["user", "n_test", "ndcg@1", "ndcg@5", "ndcg@10", "mrr"]
    assert df["user"].tolist() == sorted(set(user.tolist()))
    if ties == "random":  # one permutation of the flat arrays, then ties in that order
        perm = np.random.default_rng(9).permutation(len(user))
        user, rating, values, ties = user[perm], rating[perm], values[perm], "input"
    for row in df.itertuples(index=False):
        m = user == row.user
        assert row.n_test == m.sum()
        for j, k in enumerate(ks):
            want = M.ndcg(rating[m], values[m], k, ties=ties, discount=discount, kind=kind)
            assert row[2 + j] == pytest.approx(want, abs=1e-12)
        assert row.mrr == pytest.approx(M.mrr(rating[m], values[m], ties=ties, kind=kind), abs=1e-12)


@pytest.mark.parametrize("ties", M.TIES)
@pytest.mark.parametrize("kind", M.KINDS)
@pytest.mark.parametrize("levels,n_users", [(9, 150), (3, 20)])
def test_evaluate_orders_whole_and_other_keys_alike(ties, kind, levels, n_users):
    """A segment's keys that are whole numbers over a short span are placed by counting,
    other keys merge-sorted; ties of up to 32 items are sorted by insertion, larger ones
    by ``np.sort``. Shifting every key by a half, or spreading them over a wide span,
    keeps the order and the ties, so the numbers must not change at all; with three
    levels and 200 items a user, ties hold 60 items or more."""
    user, rating, values = _flat(8, n_users=n_users, levels=levels)
    rating = rating / 2 + 0.5          # half stars, as ML-10M
    base = M.evaluate(user, rating, values, ks=(1, 5, 10), ties=ties, kind=kind, seed=3)
    for other in (values + 0.5, values.astype(np.float64) * 2.0 ** 20 - 7.0):
        got = M.evaluate(user, rating, other, ks=(1, 5, 10), ties=ties, kind=kind, seed=3)
        pd.testing.assert_frame_equal(got, base, check_exact=True)
    if ties == "random":
        return
    for row in base.itertuples(index=False):   # and they are the per-user functions'
        m = user == row.user
        want = M.ndcg(rating[m], values[m], 10, ties=ties, kind=kind)
        assert row[4] == pytest.approx(want, abs=1e-12)
        assert row.mrr == pytest.approx(M.mrr(rating[m], values[m], ties=ties, kind=kind),
                                        abs=1e-12)


def test_evaluate_does_not_depend_on_row_order_except_input_ties():
    user, rating, values = _flat(8)
    perm = np.random.default_rng(0).permutation(len(user))
    for t in ("expected", "optimistic", "pessimistic"):
        a = M.evaluate(user, rating, values, ties=t)
        b = M.evaluate(user[perm], rating[perm], values[perm], ties=t)
        pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=0, atol=1e-12)
    # random: seeded and reproducible
    a = M.evaluate(user, rating, values, ties="random", seed=1)
    b = M.evaluate(user, rating, values, ties="random", seed=1)
    c = M.evaluate(user, rating, values, ties="random", seed=2)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["ndcg@10"], c["ndcg@10"])


@pytest.mark.parametrize("kind", ["dissimilarity", "score"])
def test_random_ties_are_the_input_order_of_the_permuted_pairs(kind):
    """``ties="random"`` orders each tie by the pairs' places in one seeded permutation
    without permuting and grouping the pairs again: exactly what permuting them and
    keeping ties in input order gives, for pairs grouped by user or not."""
    user, rating, values = _flat(8)            # 9 levels for ~27 items a user: many ties
    grouped = np.argsort(user, kind="stable")
    for u, r, v in ((user, rating, values), (user, rating, values + 0.25),   # counted, sorted
                    tuple(x[grouped] for x in (user, rating, values))):
        for seed in (0, 1, 7):
            perm = np.random.default_rng(seed).permutation(len(u))
            want = M.evaluate(u[perm], r[perm], v[perm], ties="input", kind=kind)
            got = M.evaluate(u, r, v, ties="random", seed=seed, kind=kind)
            pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_evaluate_users_with_few_items_are_kept():
    user = np.array([0, 1, 1, 2, 2, 2, 2], dtype=np.int32)
    rating = np.array([3, 5, 1, 1, 2, 3, 4])
    values = np.array([0, 1, 0, 0, 0, 0, 0])
    df = M.evaluate(user, rating, values)
    assert df["n_test"].tolist() == [1, 2, 4]
    assert df.loc[0, "ndcg@5"] == 1.0 and df.loc[0, "mrr"] == 1.0
    assert df.loc[1, "mrr"] == 0.5
    assert df.loc[2, "mrr"] == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)


def test_summarize_means_over_users():
    user, rating, values = _flat(3)
    df = M.evaluate(user, rating, values)
    s = M.summarize(df)
    assert set(s) == {"ndcg@5", "ndcg@10", "mrr", "users"}
    assert s["users"] == df.shape[0]
    assert s["ndcg@10"] == pytest.approx(df["ndcg@10"].mean())
    assert s["mrr"] == pytest.approx(np.mean([M.mrr(rating[user == u], values[user == u])
                                              for u in np.unique(user)]))
    with pytest.raises(ValueError, match="mrr"):
        M.summarize(df.drop(columns="mrr"))


# --------------------------------------------------------------------------- tie profile


def test_tie_profile_against_per_user_counts():
    user, rating, values = _flat(12, n_users=80, n=1500, levels=6)
    tp = T.tie_profile(user, values, ks=(1, 5, 10), rating=rating)
    assert tp["user"].tolist() == sorted(set(user.tolist()))
    for row in tp.itertuples(index=False):
        m = user == row.user
        v = np.sort(values[m])
        _, counts = np.unique(v, return_counts=True)
        assert row.n_test == m.sum()
        assert row.n_distinct == len(counts)
        assert row.tied_items == counts[counts > 1].sum()
        assert row.largest_tie == counts.max()
        for k in (1, 5, 10):
            straddles = len(v) > k and v[k - 1] == v[k]
            assert getattr(row, f"_{ {1: 5, 5: 6, 10: 7}[k]}") == straddles
            # no straddling tie: the tie rule cannot change which ratings enter the top k
            if not straddles:
                best = M.ranked_ratings(rating[m], values[m], ties="optimistic")[:k]
                worst = M.ranked_ratings(rating[m], values[m], ties="pessimistic")[:k]
                np.testing.assert_array_equal(np.sort(best), np.sort(worst))
        top = rating[m].max()
        first_level = values[m][rating[m] == top].min()
        assert row.top_tie == np.sum(values[m] == first_level)
        if row.top_tie == 1:
            assert M.mrr(rating[m], values[m], ties="optimistic") == M.mrr(rating[m], values[m], ties="pessimistic")


def test_compare_tie_rules_table():
    user, rating, values = _flat(13, n_users=60, n=1200, levels=5)
    t = T.compare_tie_rules(user, rating, values, random_seeds=[0, 1, 2])
    assert len(t) == len(M.DISCOUNTS) * len(M.TIES)
    for disc, g in t.groupby("discount"):
        g = g.set_index("ties")
        for c in ("ndcg@5", "ndcg@10", "mrr"):
            assert g.loc["optimistic", c] >= g.loc["expected", c] >= g.loc["pessimistic", c]
            want = np.mean([M.summarize(M.evaluate(user, rating, values, ties="random", seed=s,
                                                   discount=disc))[c] for s in (0, 1, 2)])
            assert g.loc["random", c] == pytest.approx(want, abs=1e-12)
            assert g.loc["random", c + "_sd"] > 0 and g.loc["input", c + "_sd"] == 0
        assert g.loc["random", "draws"] == 3


def test_rule_table_lays_out_every_rule_beside_the_references():
    user, rating, values = _flat(13, n_users=60, n=1200, levels=5)
    t = T.compare_tie_rules(user, rating, values, random_seeds=[0, 1])
    tab = T.rule_table({("m", 8): t}, "mrr", "MRR", paper={("m", 8): 0.5}, stored={})
    p = t[t.discount == "paper"].set_index("ties")
    row = tab.loc[("m", 8)]
    assert [f"MRR {r}" for r in T.RULES] == list(tab.columns[:len(T.RULES)])
    assert all(row[f"MRR {r}"] == p.loc[r, "mrr"] for r in T.RULES)
    assert row["MRR random sd"] == p.loc["random", "mrr_sd"] and row["MRR paper's"] == 0.5
    assert np.isnan(row["MRR stored run"])
    assert "MRR paper's" not in T.rule_table({("m", 8): t}, "mrr", "MRR").columns


def test_one_user_helpers():
    user = np.array([0, 0, 1, 1, 1, 2, 2, 2, 2])
    rating = np.array([5, 3, 4, 4, 1, 2, 5, 3, 1], dtype=float)
    values = np.array([1, 2, 0, 0, 3, 1, 1, 2, 2])
    u0, r0, v0 = T.median_user(user, rating, values)
    assert u0 == 1 and list(r0) == [4, 4, 1] and list(v0) == [0, 0, 3]
    g = T.tie_groups(r0, v0)
    assert list(g.index) == [0, 3] and list(g["items"]) == [2, 1] and g.loc[0, "ratings"] == "4 4"
    t = T.one_user_rules(r0, v0)
    assert list(t.index) == list(M.TIES)
    assert t.loc["expected", "RR"] == M.mrr(r0, v0) and t.loc["input", "NDCG@5"] == M.ndcg(
        r0, v0, 5, ties="input")


def test_large_tie_groups_kernel_equals_per_user():
    # one user, 300 items over 3 distances: the kernel's running-ratio RR and the
    # per-user binomial formula agree on big groups
    rng = np.random.default_rng(21)
    r = rng.integers(1, 6, 300)
    d = rng.integers(0, 3, 300)
    row = M.evaluate(np.zeros(300, dtype=np.int64), r, d, ks=(5, 10, 100)).iloc[0]
    assert row["mrr"] == pytest.approx(M.mrr(r, d), abs=1e-12)
    for k in (5, 10, 100):
        assert row[f"ndcg@{k}"] == pytest.approx(M.ndcg(r, d, k), abs=1e-12)
    from phdlib.kernels.ranking import expected_reciprocal_rank
    for a, g, hits in [(0, 50, 7), (10, 200, 1), (3, 40, 40), (0, 1, 1)]:
        want = sum(math.comb(g - 1 - x, hits - 1) / math.comb(g, hits) / (a + 1 + x)
                   for x in range(g - hits + 1))
        assert expected_reciprocal_rank(a, g, hits) == pytest.approx(want, rel=1e-12)


def test_benchmark_returns_one_row_per_rule():
    user, rating, values = _flat(1, n_users=20, n=300)
    b = T.benchmark(user, rating, values, ties=("expected", "input"), repeats=1)
    assert b["ties"].tolist() == ["expected", "input"]
    assert (b["users"] == 20).all() and (b["ratings"] == 300).all()
    assert (b["seconds"] > 0).all()


def test_group_stable_is_the_stable_argsort_and_evaluate_groups_either_way():
    from phdlib.kernels import ranking as K

    rng = np.random.default_rng(3)
    for lo, hi, n in ((0, 9, 1), (0, 50, 500), (-7, 12, 300), (1000, 1003, 40)):
        user = rng.integers(lo, hi + 1, n)
        np.testing.assert_array_equal(K.group_stable(user, int(user.min()), int(user.max())),
                                      np.argsort(user, kind="stable"))
    # unsigned ids, unsorted, are grouped as the signed ones
    user = rng.integers(0, 30, 300)
    rating = rng.integers(0, 6, 300).astype(float)
    values = rng.integers(0, 5, 300).astype(float)
    pd.testing.assert_frame_equal(M.evaluate(user.astype(np.uint64), rating, values),
                                  M.evaluate(user, rating, values), check_dtype=False)
    # ids spread far wider than their number are sorted instead: the same groups
    user = rng.integers(0, 40, 400) * 10**9
    rating = rng.integers(0, 6, 400).astype(float)
    values = rng.integers(0, 5, 400).astype(float)
    dense = np.unique(user, return_inverse=True)[1]
    for ties in ("expected", "random", "input", "optimistic"):
        a = M.evaluate(user, rating, values, ties=ties, seed=2)
        b = M.evaluate(dense, rating, values, ties=ties, seed=2)
        pd.testing.assert_frame_equal(a.drop(columns="user"), b.drop(columns="user"))


def test_evaluate_gives_the_same_numbers_on_one_thread_and_on_several():
    import numba

    rng = np.random.default_rng(5)
    user = np.sort(rng.integers(0, 500, 20000))
    rating = rng.integers(0, 6, 20000).astype(float)
    values = rng.integers(0, 9, 20000).astype(float)  # many ties
    before = numba.get_num_threads()
    try:
        out = {}
        for n in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(n)
            out[n] = [M.evaluate(user, rating, values, ties=t, seed=1)
                      for t in ("expected", "random", "input", "optimistic", "pessimistic")]
    finally:
        numba.set_num_threads(before)
    for frames in out.values():
        for a, b in zip(frames, out[1]):
            pd.testing.assert_frame_equal(a, b, check_exact=True)
