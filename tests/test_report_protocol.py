"""The chapter "What the protocol measures" (phdlib.report.protocol) on tiny synthetic runs."""
from __future__ import annotations

from types import SimpleNamespace as NS

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from phdlib import methods
from phdlib.experiments import training
from phdlib.report import protocol as P

TINY = {"tune": False, "max_iterations": 300, "min_iterations": 0, "eval_every": 100,
        "batch_size": 50}
NAMES = ("vh", "vh-phd", "dcf", "item-mean", "popularity", "random")


@pytest.fixture(scope="module")
def seed0(synthetic_split):
    out = {}
    for m in NAMES:
        ov = TINY if m.startswith("vh") else {"tune": False, "max_iterations": 2} if m == "dcf" else {}
        out[(m, 16)] = training.run(m, synthetic_split, 16, 0, ov, store=False, reuse=False,
                                    progress=False)
    return out


def _run(**metrics):
    return NS(metrics=metrics)


def test_item_mean_rank_counts_the_hashing_methods_below_it():
    seed0 = {("item-mean", 32): _run(**{"ndcg@5": .70, "ndcg@10": .72, "mrr": .60}),
             ("vh", 32): _run(**{"ndcg@5": .65, "ndcg@10": .73, "mrr": .55}),
             ("dcf", 32): _run(**{"ndcg@5": .69, "ndcg@10": .71, "mrr": .61}),
             ("mf", 32): _run(**{"ndcg@5": .99, "ndcg@10": .99, "mrr": .99})}
    rank = P.item_mean_rank(seed0, hashing=["vh", "dcf", "cccf"])
    assert list(rank.index) == [(32, "ndcg@5"), (32, "ndcg@10"), (32, "mrr")]
    assert rank["hashing methods"].tolist() == [2, 2, 2]  # cccf not stored, mf not hashing
    assert rank["beaten"].tolist() == [2, 1, 1]
    assert rank.loc[(32, "ndcg@10"), "below"] == "DCF"
    assert rank.loc[(32, "ndcg@10"), "best hashing"] == "vh"
    (line,) = P.item_mean_findings(rank)
    assert line.startswith("At 32 bits") and "2 of 2 hashing methods on NDCG@5 (.7000; above VH, DCF)" in line
    assert "nan" not in line.lower()
    lv = P.levels(seed0)
    assert lv.index.names == ["bits", "method"] and lv.index[0] == (32, "mf")
    assert lv.loc[(32, "vh"), "learns codes"] and not lv.loc[(32, "mf"), "learns codes"]


def test_tie_rule_table_bounds_and_findings(seed0, synthetic_split):
    test = synthetic_split.test
    values = P.pair_values(seed0, test, ["vh-phd", "vh"], [16])
    assert list(values) == [("vh-phd", 16), ("vh", 16)]
    prof = P.tie_profiles(values, test)
    assert (prof["distinct distances"] <= 17).all() and (prof["items tied (%)"] <= 100).all()
    tables = P.tie_rule_tables(values, test, random_draws=3)
    t = P.tie_rule_table(tables, seed0, dataset="ml-1m")
    assert t.index.names == ["method", "bits", "metric"] and len(t) == 4
    assert (t["pessimistic"] <= t["expected"] + 1e-12).all()
    assert (t["expected"] <= t["optimistic"] + 1e-12).all()
    assert np.allclose(t["optimistic − pessimistic"], t["optimistic"] - t["pessimistic"])
    assert t["paper"].isna().all()  # the paper has no 16-bit column
    # the stored test metric is the expectation under the paper's discount
    assert np.allclose(t.xs("ndcg@10", level="metric")["expected"],
                       t.xs("ndcg@10", level="metric")["stored"])
    lines = P.tie_rule_findings(t)
    pess = [s for s in lines if "under the pessimistic rule" in s]
    assert len(pess) == 2 and all(s.startswith("At 16 bits") for s in pess)
    d = t.loc[("vh-phd", 16, "ndcg@10"), "pessimistic"] - t.loc[("vh", 16, "ndcg@10"), "pessimistic"]
    ahead = "VH_PHD" if d > 0 else "VH"
    assert f"under the pessimistic rule {ahead} is ahead on NDCG@10" in pess[0]
    lead = P.leaders(t)
    assert list(lead.index) == [(16, "ndcg@10"), (16, "mrr")]
    assert np.isclose(lead.loc[(16, "ndcg@10"), "pessimistic"], d)
    assert lead.loc[(16, "ndcg@10"), "pessimistic leader"] == ahead
    assert np.isnan(lead["paper"]).all()
    assert not any("nan" in s.lower() for s in lines)
    fig = P.plot_tie_rules(t)
    assert len(fig.axes) == 2
    tests = P.rule_tests(values, test)
    assert tests.index.names == ["bits", "ties", "metric"] and len(tests) == 4 * 2
    assert len(P.rule_test_findings(tests)) == 2
    disc = P.discount_table(values, test)
    assert list(disc.columns)[-1] == "ndcg@10 released − paper"


def test_file_order_reproduces_the_stored_metrics(seed0, synthetic_split):
    by_rule = P.file_order(seed0, synthetic_split)
    assert P.file_order_gap(by_rule) < 1e-12
    assert len(by_rule) == len(NAMES)
    lines = P.file_order_findings(by_rule)
    assert len(lines) == 2 and "every item tied" in lines[1]


def test_catalogue_table_tests_and_findings(seed0, synthetic_split):
    names = ["vh", "vh-phd", "dcf", "popularity"]
    table, per_user = P.catalogue(seed0, synthetic_split, names, [16])
    assert table.index.names == ["bits", "method"] and len(table) == 4
    assert set(per_user) == {(m, 16) for m in names}
    for (m, b), pu in per_user.items():
        assert np.isclose(table.loc[(b, m), "ndcg@10"], pu["ndcg@10"].mean())
    assert (table["items ranked"] > 0).all()
    tests = P.catalogue_tests(per_user, table, hamming=["vh", "dcf"])
    roles = tests.xs("ndcg@10", level="metric")["role"].tolist()
    assert roles == ["Hamming twin", "best Hamming code", "popularity"]
    assert set(tests["verdict"]) <= {"better", "worse", "no significant difference"}
    assert (tests["p"] <= 1).all()
    lines = P.catalogue_findings(tests, seed0)
    assert len(lines) == 3
    assert lines[1].startswith(("AGREES", "DISAGREES"))
    assert "under the paper's protocol" in lines[0]
    assert not any("nan" in s.lower() or "e-0" in s for s in lines)
    bold = P.best_per_width(table, ["ndcg@10"])
    assert bold["ndcg@10"].sum() >= 1 and not bold["mrr"].any()
    values = P.pair_values(seed0, synthetic_split.test, ["vh-phd", "vh"], [16])
    rule_tab = P.tie_rule_table(P.tie_rule_tables(values, synthetic_split.test, 2), seed0)
    rank = P.item_mean_rank(seed0)
    summ = P.summary(rank, rule_tab, P.file_order(seed0, synthetic_split), tests)
    assert summ[0].startswith("Ranking each user's test items")
    assert any(s.startswith(("AGREES", "DISAGREES")) for s in summ)
    assert any("pessimistic rule" in s for s in summ)
    concl = P.conclusion(rank, rule_tab, tests, profile="quick")
    assert len(concl) == 4 and "'quick' profile" in concl[-1]
    assert not any("nan" in s.lower() for s in summ + concl)


def test_p_text_and_shown():
    assert P.p_text(1e-9) == "p < 0.001" and P.p_text(0.034) == "p = 0.034"
    assert P.p_text(0.004) == "p = 0.004"
    df = pd.DataFrame({"ndcg@10": [.5], "ndcg@5 paper": [.4]}, index=pd.MultiIndex.from_tuples([(32, "vh-phd")],
                                                                         names=["bits", "method"]))
    s = P.shown(df)
    assert list(s.columns) == ["NDCG@10", "NDCG@5 paper"] and s.index[0] == (32, methods.label("vh-phd"))
