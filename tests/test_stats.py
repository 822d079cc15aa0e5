"""Paired t-test, corrections, effect size and the paper's significance marks."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from phdlib.evaluation import stats as S


def test_paired_ttest_matches_textbook_formula():
    rng = np.random.default_rng(0)
    a = rng.normal(0.7, 0.1, 300)
    b = a - 0.01 + rng.normal(0, 0.05, 300)
    r = S.paired_ttest(a, b)
    d = a - b
    t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    assert r.t == pytest.approx(t, rel=1e-12)
    assert r.p == pytest.approx(2 * st.t.sf(abs(t), len(d) - 1), rel=1e-9)
    assert r.d_z == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)
    half = st.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    assert (r.ci_low, r.ci_high) == pytest.approx((d.mean() - half, d.mean() + half))
    assert r.mean_diff == pytest.approx(d.mean())
    assert r.n == 300
    # two-tailed: swapping the sides flips t, keeps p
    r2 = S.paired_ttest(b, a)
    assert r2.t == pytest.approx(-r.t) and r2.p == pytest.approx(r.p)


def test_paired_ttest_constant_differences():
    a = np.array([0.5, 0.6, 0.7])
    assert S.paired_ttest(a, a).p == 1.0
    r = S.paired_ttest(a + 0.1, a)
    assert r.p == 0.0 and r.t == np.inf and r.d_z == np.inf
    assert S.effect_size(a, a) == 0.0


@pytest.mark.parametrize("call, match", [
    (lambda: S.paired_ttest([1, 2, 3], [1, 2]), "same users"),
    (lambda: S.paired_ttest([1.0], [2.0]), "at least 2"),
    (lambda: S.paired_ttest([1, np.nan], [1, 2]), r"a\[1\]"),
    (lambda: S.adjust([0.1, 1.5]), r"pvalues\[1\] = 1.5"),
    (lambda: S.adjust([0.1], "sidak"), "sidak"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_adjust_hand_examples():
    p = [0.01, 0.04, 0.03, 0.005]
    np.testing.assert_allclose(S.adjust(p, "bonferroni"), [0.04, 0.16, 0.12, 0.02])
    np.testing.assert_allclose(S.adjust(p, "holm"), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(S.adjust(p, "bh"), [0.02, 0.04, 0.04, 0.02])
    np.testing.assert_allclose(S.adjust(p, "none"), p)
    np.testing.assert_allclose(S.adjust([0.5, 0.9], "bonferroni"), [1.0, 1.0])
    assert S.adjust([], "bh").shape == (0,)


def test_bh_is_monotone_and_between_raw_and_bonferroni():
    rng = np.random.default_rng(1)
    for _ in range(100):
        p = rng.uniform(0, 0.2, int(rng.integers(1, 20)))
        bh = S.adjust(p, "bh")
        assert np.all(bh >= p - 1e-15)
        assert np.all(bh <= S.adjust(p, "bonferroni") + 1e-15)
        o = np.argsort(p)
        assert np.all(np.diff(bh[o]) >= -1e-15)


def _frame(users, values):
    return pd.DataFrame({"user": users, "n_test": 10, "ndcg@5": values, "ndcg@10": values,
                         "mrr": values})


def test_align_pairs_by_user_and_rejects_different_users():
    a = _frame([2, 0, 1], [0.2, 0.0, 0.1])
    b = _frame([0, 1, 2], [1.0, 1.1, 1.2])
    x, y = S.align(a, b, "mrr")
    np.testing.assert_allclose(x, [0.0, 0.1, 0.2])
    np.testing.assert_allclose(y, [1.0, 1.1, 1.2])
    with pytest.raises(ValueError, match=r"1 only in 'a' \(first \[3\]\)"):
        S.align(_frame([0, 1, 3], [0, 0, 0]), _frame([0, 1], [0, 0]), "mrr")
    with pytest.raises(ValueError, match="no column 'ndcg@3'"):
        S.align(a, b, "ndcg@3")


def _table(seed=0, n=500):
    rng = np.random.default_rng(seed)
    users = np.arange(n)
    base = rng.uniform(0.4, 0.9, n)
    return {
        "dcf": _frame(users, base + rng.normal(0, 0.05, n)),
        "vh": _frame(users, base + rng.normal(0, 0.05, n)),
        "vh-phd": _frame(users, base + 0.03 + rng.normal(0, 0.05, n)),   # clearly better
        "half": _frame(users, base + 0.0 + rng.normal(0, 0.05, n)),      # like the baselines
    }


def test_significance_marks_follow_the_papers_rule():
    pu = _table()
    marks = S.significance_marks(pu, methods=["vh-phd", "half", "vh"], against=["dcf", "vh"])
    assert marks.loc["vh-phd"].tolist() == ["*", "*", "*"]
    assert marks.loc["half"].tolist() == ["", "", ""]
    assert marks.loc["vh"].tolist() == ["", "", ""]   # compared with dcf only (never itself)
    cmp = S.compare(pu, ["vh-phd"], ["dcf", "vh"])
    assert len(cmp) == 6 and set(cmp["baseline"]) == {"dcf", "vh"}
    # Bonferroni over the column's comparisons
    for metric, g in cmp.groupby("metric"):
        np.testing.assert_allclose(g["p_adj"], np.minimum(1, g["p"] * len(g)))
    table = S.marked_table(pu, ["vh-phd"], ["dcf", "vh"])
    assert table.loc["vh-phd", "mrr"].endswith("*") and table.loc["vh-phd", "mrr"].startswith(".")
    assert not table.loc["dcf", "mrr"].endswith("*")
    assert table.loc["dcf", "mrr"] == f"{pu['dcf']['mrr'].mean():.4f}"[1:]


def test_correction_can_remove_a_mark():
    # one comparison with p between alpha / 2 and alpha: significant alone, not after Bonferroni x2
    rng = np.random.default_rng(0)
    n = 400
    users = np.arange(n)
    base = rng.uniform(0.4, 0.9, n)
    noise = rng.normal(0, 1, n)
    noise = (noise - noise.mean()) / noise.std(ddof=1)
    # mean diff chosen so that t = 2.1 (p ~ 0.036)
    diff = 0.05 * noise + 2.1 * 0.05 / np.sqrt(n)
    pu = {"x": _frame(users, base + diff), "b1": _frame(users, base), "b2": _frame(users, base - 0.2)}
    r = S.paired_ttest(base + diff, base)
    assert 0.025 < r.p < 0.05
    assert S.significance_marks(pu, ["x"], ["b1", "b2"], correction="none").loc["x", "mrr"] == "*"
    assert S.significance_marks(pu, ["x"], ["b1", "b2"], correction="bonferroni").loc["x", "mrr"] == ""
    # BH: p2 ~ 0 ranks first, p1 adjusted by 2/2 = 1: stays significant
    assert S.significance_marks(pu, ["x"], ["b1", "b2"], correction="bh").loc["x", "mrr"] == "*"
    # family="method" vs "column": adding a second marked method enlarges the column's family
    pu["y"] = _frame(users, base + 0.5)
    col = S.compare(pu, ["x", "y"], ["b1", "b2"], family="column")
    meth = S.compare(pu, ["x", "y"], ["b1", "b2"], family="method")
    p1 = col[(col.metric == "mrr") & (col.method == "x") & (col.baseline == "b1")]
    assert p1["p_adj"].iloc[0] == pytest.approx(min(1, 4 * r.p))
    p1 = meth[(meth.metric == "mrr") & (meth.method == "x") & (meth.baseline == "b1")]
    assert p1["p_adj"].iloc[0] == pytest.approx(min(1, 2 * r.p))
    # family="all": one comparison over the three metrics is one family of three tests
    one = S.compare(pu, ["x"], ["b1"], family="all")
    assert len(one) == 3
    p1 = one[one.metric == "mrr"]
    assert p1["p_adj"].iloc[0] == pytest.approx(min(1, 3 * r.p))
    with pytest.raises(ValueError, match="family='metric'"):
        S.compare(pu, ["x"], ["b1"], family="metric")


def test_compare_rejects_unknown_method():
    with pytest.raises(ValueError, match="no per-user results for method 'cccf'"):
        S.compare(_table(), ["vh-phd"], ["cccf"])


def test_mean_over_seeds_pairs_users_and_refuses_different_ones():
    from phdlib.evaluation import stats

    a = pd.DataFrame({"user": [2, 1], "ndcg@5": [0.2, 0.4], "ndcg@10": [0.3, 0.5], "mrr": [1, 0]})
    b = pd.DataFrame({"user": [1, 2], "ndcg@5": [0.6, 0.0], "ndcg@10": [0.7, 0.1], "mrr": [0, 1]})
    m = stats.mean_over_seeds([a, b]).set_index("user")
    assert m.loc[1, "ndcg@10"] == pytest.approx(0.6) and m.loc[2, "mrr"] == 1
    with pytest.raises(ValueError, match="different users"):
        stats.mean_over_seeds([a, b.assign(user=[1, 3])])
