"""Does the gain travel? (phdlib.studies.travel, phdlib.report.travel) on tiny synthetic runs."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from phdlib import methods
from phdlib.evaluation import stats
from phdlib.experiments import training
from phdlib.report import travel as rtravel
from phdlib.studies import ablation, travel

TINY_VH = {"tune": False, "max_iterations": 200, "min_iterations": 0, "eval_every": 100,
           "batch_size": 50}
TINY_DCF = {"tune": False, "max_iterations": 3, "init_max_iterations": 3}


@pytest.fixture(scope="module")
def runs(synthetic_split):
    """``{(dataset, method, 16): [two seeds]}`` of every arm of both learners."""
    ds = synthetic_split.dataset.name
    out = {}
    for arms in travel.ARMS.values():
        for m in arms:
            ov = TINY_VH if m.startswith("vh") else TINY_DCF
            out[(ds, m, 16)] = [training.run(m, synthetic_split, 16, s, ov, store=False,
                                             reuse=False, progress=False) for s in (0, 1)]
    return out


def test_every_arm_is_registered_and_ranks_by_its_distance():
    assert travel.learners() == travel.ARMS
    for ham, off, phd in travel.ARMS.values():
        assert [methods.get(m).ranks_by for m in (ham, off, phd)] == ["hamming", "hamming", "phd"]


def test_learner_table_is_the_mean_and_std_of_the_stored_metrics(runs):
    t = travel.learner_table(runs)
    assert len(t) == 6 and set(t["arm"]) == {"hamming", "offset", "phd"}
    assert list(t["method"]) == ["dcf", "dcf-bias", "dcf-phd", "vh", "vh-bias", "vh-phd"]
    for _, r in t.iterrows():
        v = [x.metrics["ndcg@10"] for x in runs[(r["dataset"], r["method"], 16)]]
        assert r["ndcg@10"] == pytest.approx(np.mean(v)) and r["seeds"] == 2
        assert r["ndcg@10 std"] == pytest.approx(np.std(v, ddof=1))


def test_gain_tests_are_paired_tests_of_the_seed_averaged_users(runs):
    tests = travel.gain_tests(runs)
    assert len(tests) == 2 * 3 and set(tests["learner"]) == {"vh", "dcf"}
    ds = next(iter(runs))[0]
    row = tests[(tests["learner"] == "dcf") & (tests["metric"] == "ndcg@10")].iloc[0]
    pu = {m: stats.mean_over_seeds([r.per_user for r in runs[(ds, m, 16)]])
          for m in ("dcf", "dcf-phd")}
    a, b = stats.align(pu["dcf-phd"], pu["dcf"], "ndcg@10")
    t = stats.paired_ttest(a, b)
    assert row["mean_diff"] == pytest.approx(float(np.mean(a - b)))
    assert row["p_adj"] == pytest.approx(min(1.0, 3 * t.p))
    assert row["rel"] == pytest.approx(row["mean_diff"] / row["hamming"])
    # a missing arm leaves its learner out, never fails
    part = {k: v for k, v in runs.items() if k[1] != "dcf-phd"}
    assert set(travel.gain_tests(part)["learner"]) == {"vh"}


def test_offset_gaps_and_distance_tests_use_each_learners_arms(runs, synthetic_split):
    ds = synthetic_split.dataset.name
    gaps = travel.offset_gaps(runs)
    assert set(gaps) == {(ds, 16, "vh"), (ds, 16, "dcf")}
    g = gaps[(ds, 16, "dcf")].set_index("metric").loc["ndcg@10"]
    assert gaps[(ds, 16, "dcf")].attrs["arms"] == ("dcf", "dcf-bias", "dcf-phd")
    if g["dcf-phd"] != g["dcf"]:
        assert g["closed"] == pytest.approx((g["dcf-bias"] - g["dcf"]) / (g["dcf-phd"] - g["dcf"]))
    assert 0 <= g["p dcf-bias vs dcf"] <= 1 and 0 <= g["p dcf-phd vs dcf-bias"] <= 1
    # VH's gap is the ablation chapter's
    vh = ablation.bias_gap({(m, 16): runs[(ds, m, 16)] for m in ablation.BIAS_ARMS}, 16)
    pd.testing.assert_frame_equal(gaps[(ds, 16, "vh")], vh)
    table, tests = travel.distance_tests(runs, {ds: synthetic_split})
    assert set(table["method"]) == {"vh", "vh-phd", "dcf", "dcf-phd"}  # the offset arms rank as
    assert (table["dataset"] == ds).all() and len(tests) == 4 * 3      # their base: not asked


def test_sweep_cost_reads_the_discrete_rounds_of_the_logs(runs):
    cost = travel.sweep_cost(runs).set_index("method")
    assert set(cost.index) == {"dcf", "dcf-phd"}
    assert cost.loc["dcf", "ratio"] == pytest.approx(1.0)
    n = sum(int((r.log["phase"] == "discrete").sum() - 1) for r in runs[(next(iter(runs))[0],
                                                                         "dcf-phd", 16)])
    assert cost.loc["dcf-phd", "rounds"] == n


def test_report_tables_and_findings_say_what_the_numbers_say(runs, synthetic_split):
    ds = synthetic_split.dataset.name
    tests = travel.gain_tests(runs)
    gaps = travel.offset_gaps(runs)
    dtable, dtests = travel.distance_tests(runs, {ds: synthetic_split})
    shown, bold = rtravel.arms_table(travel.learner_table(runs), ds)
    assert shown.shape == (6, 3) and "±" in shown.iloc[0, 0]
    # per width and learner exactly one of the Hamming/PHD arms is bold (unless tied); never the offset
    assert not bold.loc[(16, methods.label("dcf-bias"))].any()
    for col in bold.columns:
        assert bold.loc[[(16, methods.label("dcf")), (16, methods.label("dcf-phd"))], col].sum() >= 1
    assert rtravel.gains_table(tests).shape[0] == 6
    assert rtravel.offset_table(gaps).shape[0] == 2
    assert rtravel.distance_table(dtable, dtests, ds).shape[0] == 4
    lines = rtravel.conclusion(tests, gaps, dtests)
    better, n = rtravel.travels(tests, "dcf")
    assert n == 1
    head = lines[0]
    assert head.startswith("**The gain travels.**" if better == n else
                           "**The gain does not travel.**")
    fl = rtravel.findings(tests, gaps, dtests)
    assert any(l.startswith("**DCF_PHD") for l in fl) and any(l.startswith("**VH_PHD") for l in fl)


def test_conclusion_follows_made_up_verdicts():
    """The lead sentence is computed: flip the verdicts and it flips."""
    rows = [{"dataset": "d", "bits": b, "learner": ln, "metric": "ndcg@10", "hamming": .5,
             "phd": .6, "mean_diff": .1, "rel": .2, "ci_low": .05, "ci_high": .15, "p_adj": .001,
             "seeds": 5, "verdict": v} for ln, b, v in [("vh", 32, "PHD better"),
                                                        ("dcf", 32, "PHD better"),
                                                        ("dcf", 64, "no significant difference")]]
    tests = pd.DataFrame(rows)
    empty = pd.DataFrame(columns=["method", "bits", "metric", "mean_diff", "verdict"])
    assert rtravel.conclusion(tests, {}, empty)[0].startswith("**The gain travels in part.**")
    head = rtravel.headline(tests)
    assert head.startswith("**The gain travels to a second learner at some widths.**")
    assert "+.1000 (+20.0%, p = 0.001) at 32 bits" in head and "{doc}`travel`" in head
    assert rtravel.headline(tests[tests["learner"] == "vh"]) is None
    tests["verdict"] = ["PHD better", "no significant difference", "Hamming better"]
    head = rtravel.conclusion(tests, {}, empty)[0]
    assert head.startswith("**The gain does not travel.**") and "in 1 of 1" in head
    line = rtravel.findings(tests, {}, empty)[1]
    assert line.startswith("**DCF_PHD never beats DCF significantly.**") and "64 bits" in line
