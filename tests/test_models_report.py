"""Helpers of the chapter "Variational hashing": variants, the comparison table, paired tests."""
from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pandas as pd
import pytest

from phdlib.models import report


def test_variant_overrides_fixed_budget_and_quick():
    m, ov = report.variant_overrides("lr 0.001")
    assert m == "vh" and ov["lr"] == 0.001
    assert ov["min_iterations"] == ov["max_iterations"] == report.VARIANT_ITERATIONS
    m, ov = report.variant_overrides("released")
    assert ov["min_iterations"] == 0 and "max_iterations" not in ov
    _, ov = report.variant_overrides("VH_PHD (default)")
    assert ov == {}
    _, ov = report.variant_overrides("lr 0.001", "quick")
    assert ov["max_iterations"] == ov["min_iterations"] == report.QUICK_ITERATIONS
    with pytest.raises(KeyError, match="unknown variant"):
        report.variant_overrides("nope")
    with pytest.raises(ValueError, match="profile"):
        report.variant_overrides("released", "slow")


def _run(method, seed, values, users=50, shift=0.0):
    rng = np.random.default_rng(seed)
    pu = pd.DataFrame({"user": np.arange(users), "n_test": 10,
                       "ndcg@5": np.clip(rng.uniform(0.5, 0.9, users) + shift, 0, 1),
                       "ndcg@10": np.clip(rng.uniform(0.5, 0.9, users) + shift, 0, 1),
                       "mrr": np.clip(rng.uniform(0.3, 0.9, users) + shift, 0, 1)})
    metrics = dict(zip(("ndcg@5", "ndcg@10", "mrr"), values))
    metrics.update({"released:ndcg@5": values[0] + 0.001, "released:ndcg@10": values[1] + 0.001})
    return NS(method=method, seed=seed, metrics=metrics, per_user=pu)


def test_comparison_against_paper_values():
    runs = {("vh-phd", 64): [_run("vh-phd", 0, (.7267, .7459, .7136)), _run("vh-phd", 1, (.7367, .7559, .7236))],
            ("vh", 32): [_run("vh", 0, (.60, .65, .55))]}
    t = report.comparison(runs, "ml-1m")
    row = t.loc[("vh-phd", 64)]
    assert row["ndcg@5"] == pytest.approx(.7317) and row["ndcg@5 paper"] == .7267
    assert row["ndcg@5 diff"] == pytest.approx(.005) and row["seeds"] == 2
    assert row["mrr std"] == pytest.approx(np.std([.7136, .7236], ddof=1))
    ok = report.within(t)
    assert bool(ok[("vh-phd", 64)]) and not bool(ok[("vh", 32)])
    rel = report.comparison(runs, "ml-1m", discount_prefix="released:")
    assert rel.loc[("vh", 32), "ndcg@10"] == pytest.approx(.651)


def test_paired_tests_find_a_clear_difference():
    phd = [_run("vh-phd", 0, (0, 0, 0), shift=0.1)]
    ham = [_run("vh", 0, (0, 0, 0))]
    t = report.paired_tests(phd, ham)
    assert list(t["metric"]) == ["ndcg@5", "ndcg@10", "mrr"]
    assert (t["n"] == 50).all() and t["better"].all()
    assert (report.paired_tests(ham, ham)["p"].isna() | ~report.paired_tests(ham, ham)["better"]).all()


def test_variants_table_and_findings():
    log = pd.DataFrame({"iteration": [750, 1500, 2250], "valid_ndcg@10": [0.70, 0.705, 0.75],
                        "user_ones": 0.5, "item_ones": 0.5, "user_const_bits": 0.0})
    metrics = {"iterations": 2250, "best_iteration": 2250, "valid_ndcg@5": 0.7,
               "valid_ndcg@10": 0.75, "valid_mrr": 0.6}
    runs = {"lr 0.001": NS(method="vh", log=log, metrics=metrics),
            "released": NS(method="vh", log=log.iloc[:2], metrics={**metrics, "valid_ndcg@10": 0.705})}
    t = report.variants_table(runs, chance=0.70)
    assert t.loc["lr 0.001", "leaves plateau at"] == 2250
    assert t.loc["released", "leaves plateau at"] is None or pd.isna(t.loc["released", "leaves plateau at"])
    lines = report.variants_findings(t)
    assert any("never rose" in s for s in lines) and lines[-1].endswith("lr 0.001.")


def test_chance_level_is_the_all_tied_ranking():
    r = NS(user=np.array([0, 0, 1, 1]), rating=np.array([5.0, 1.0, 3.0, 3.0]))
    # user 0: expected DCG of a random order of gains 31 and 1; user 1: a perfect tie = 1
    d = 1 / np.log2(3)
    u0 = (0.5 * (31 + 1) + 0.5 * (31 + 1) * d) / (31 + d)
    assert report.chance_level(r) == pytest.approx((u0 + 1.0) / 2)
