"""The chapter "Measuring rankings": tie statistics and sentences of phdlib.report.ranking."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from phdlib.evaluation import ties
from phdlib.report import ranking


def _case():
    user = np.repeat(np.arange(3, dtype=np.int32), 12)
    rng = np.random.default_rng(0)
    rating = rng.integers(1, 6, user.size).astype(np.float32)
    values = rng.integers(0, 4, user.size).astype(np.int32)  # many ties
    return user, rating, values


def test_tie_summary_counts_ties():
    user = np.array([0, 0, 0, 1, 1], dtype=np.int32)
    values = np.array([1, 1, 2, 0, 3], dtype=np.int32)
    rating = np.array([5, 3, 1, 5, 4], dtype=np.float32)
    s = ranking.tie_summary(user, values, rating, k=1)
    assert s["users"] == 2 and s["items"] == 5
    assert s["tied_share"] == pytest.approx(2 / 5)
    assert s["straddle_share"] == pytest.approx(0.5)   # user 0: positions 1 and 2 tie
    assert s["mrr_tied_share"] == pytest.approx(0.5)


def test_rule_spread_findings_and_conclusion():
    user, rating, values = _case()
    rules = ties.compare_tie_rules(user, rating, values, random_seeds=range(3))
    spread = ranking.rule_spread(rules)
    assert list(spread.index) == [ranking.RULE_LABELS[t] for t in
                                  ("pessimistic", "expected", "optimistic", "input")] + [
        "random (mean of 3 orders)"]
    assert list(spread.columns) == ["NDCG@5", "NDCG@10", "MRR"]
    p, o = spread.loc["pessimistic"], spread.loc["optimistic"]
    assert (p <= spread.loc[ranking.RULE_LABELS["expected"]] + 1e-12).all() and (p <= o).all()
    lines = ranking.tie_findings(ranking.tie_summary(user, values, rating), rules, "ML-1M", 2)
    assert lines[0].startswith("With random 2-bit codes on ML-1M") and "NDCG@10 from ." in lines[1]
    text = ranking.conclusion(spread)
    assert "in MRR" in text and "of its expected value" in text


def test_one_user_and_draws_findings():
    rules = pd.DataFrame({"NDCG@5": [0.7, 0.75, 0.8], "RR": [1.0, 1.0, 1.0]},
                         index=["pessimistic", "expected", "optimistic"])
    lines = ranking.one_user_findings(rules)
    assert lines == ["NDCG@5 lies between .7000 (pessimistic) and .8000 (optimistic); "
                     "its expected value is .7500.",
                     "RR is 1.0000 under every rule: no tie decides it for this user."]
    lines = ranking.draws_findings([0.5, 1.0], [0.51, 1.0], [0.005, 0.0], 100, ["NDCG@10", "RR"])
    assert "2.0 standard errors" in lines[0] and lines[1].startswith("RR: every one of the 100")


def test_benchmark_table():
    b = pd.DataFrame({"ties": ["expected"], "users": [3], "ratings": [36], "seconds": [0.5],
                      "seconds_median": [0.6], "ratings_per_s": [72.0]})
    t = ranking.benchmark_table(b)
    assert list(t.index) == ["expected (exact)"] and t.iloc[0]["million ratings/s"] == pytest.approx(72e-6)
