"""The distance ablation and the per-user bias arm (phdlib.studies.ablation) on tiny synthetic runs."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from phdlib.studies import ablation
from phdlib import evaluation, methods
from phdlib.experiments import training

TINY = {"tune": False, "max_iterations": 300, "min_iterations": 0, "eval_every": 100,
        "batch_size": 50}


@pytest.fixture(scope="module")
def runs(synthetic_split):
    out = {}
    for m in ("vh", "vh-bias", "vh-phd", "dcf", "item-mean"):
        ov = TINY if m.startswith("vh") else {"tune": False, "max_iterations": 2} if m == "dcf" else {}
        out[(m, 16)] = training.run(m, synthetic_split, 16, 0, ov, store=False, reuse=False,
                                    progress=False)
    return out


def test_distance_ablation_ranks_the_same_codes_both_ways(runs, synthetic_split):
    table, per_user = ablation.distance_ablation(runs, synthetic_split)
    assert table.attrs["skipped"] == [f"{methods.label('item-mean')} 16 bits"]
    assert set(table["ranked by"]) == {"hamming", "phd"} and len(table) == 8
    for _, row in table[table["stored"]].iterrows():  # how the method ranks: its stored metrics
        stored = runs[(row["method"], row["bits"])].metrics
        assert all(abs(row[k] - stored[k]) < 1e-12 for k in ("ndcg@5", "ndcg@10", "mrr"))
    # the PHD ranking of VH's codes is exactly PHD of those codes
    codes = training.fitted(runs[("vh", 16)])
    pu = evaluation.evaluate(codes.with_distance("phd"), synthetic_split.test)
    assert np.allclose(pu["ndcg@10"], per_user[("vh", 16, "phd")]["ndcg@10"])
    tests = ablation.distance_tests(per_user)
    assert len(tests) == 4 * 3 and set(tests["verdict"]) <= {
        "PHD better", "Hamming better", "no significant difference"}


def test_bias_gap_and_findings(runs, synthetic_split):
    g = ablation.bias_gap(runs, 16)
    row = g.set_index("metric").loc["ndcg@10"]
    expected = (row["vh-bias"] - row["vh"]) / (row["vh-phd"] - row["vh"])
    assert row["closed"] == pytest.approx(expected)
    assert 0 <= row["p vh-bias vs vh"] <= 1
    _, per_user = ablation.distance_ablation(runs, synthetic_split)
    lines = ablation.findings(ablation.distance_tests(per_user), {16: g})
    assert any(l.startswith("16 bits: VH+bias closes") for l in lines)
    assert any(methods.label("dcf") in l for l in lines)
    with pytest.raises(KeyError, match="missing"):
        ablation.bias_gap({k: v for k, v in runs.items() if k[0] != "vh-bias"}, 16)


@pytest.fixture(scope="module")
def two_seeds(synthetic_split, runs):
    """The three bias arms and DCF at 16 bits with a second model seed."""
    out = {k: [r] for k, r in runs.items() if k[0] in ("vh", "vh-bias", "vh-phd", "dcf")}
    for (m, b), lst in out.items():
        ov = TINY if m.startswith("vh") else {"tune": False, "max_iterations": 2}
        lst.append(training.run(m, synthetic_split, b, 1, ov, store=False, reuse=False,
                                progress=False))
    return out


def test_bias_gap_over_seeds_gives_the_spread_of_the_share(two_seeds):
    g = ablation.bias_gap(two_seeds, 16).set_index("metric")
    per_seed = []
    for s in (0, 1):
        x = {m: two_seeds[(m, 16)][s].metrics["ndcg@10"] for m in ablation.BIAS_ARMS}
        per_seed.append((x["vh-bias"] - x["vh"]) / (x["vh-phd"] - x["vh"]))
    row = g.loc["ndcg@10"]
    assert row["seeds"] == 2
    assert row["closed_min"] == pytest.approx(min(per_seed))
    assert row["closed_max"] == pytest.approx(max(per_seed))
    assert row["closed_std"] == pytest.approx(np.std(per_seed, ddof=1))
    means = {m: np.mean([r.metrics["ndcg@10"] for r in two_seeds[(m, 16)]])
             for m in ablation.BIAS_ARMS}
    assert row["vh-phd"] == pytest.approx(means["vh-phd"])
    assert row["closed"] == pytest.approx((means["vh-bias"] - means["vh"])
                                          / (means["vh-phd"] - means["vh"]))
    line = [l for l in ablation.findings(pd.DataFrame(columns=["method", "bits"]), {16: g.reset_index()})
            if l.startswith("16 bits")][0]
    assert "over 2 seeds" in line


def test_distance_ablation_averages_per_user_over_seeds(two_seeds, synthetic_split):
    table, per_user = ablation.distance_ablation(two_seeds, synthetic_split)
    assert set(table["seeds"]) == {2}
    pu = [evaluation.evaluate(training.fitted(r).with_distance("phd"), synthetic_split.test)
          .set_index("user")["ndcg@10"] for r in two_seeds[("dcf", 16)]]
    expected = (pu[0] + pu[1]) / 2
    got = per_user[("dcf", 16, "phd")].set_index("user")["ndcg@10"]
    assert np.allclose(got.loc[expected.index], expected)
    stored = table[table["stored"] & (table["method"] == "vh-phd")].iloc[0]
    assert stored["ndcg@10"] == pytest.approx(
        np.mean([r.metrics["ndcg@10"] for r in two_seeds[("vh-phd", 16)]]))
    reach = ablation.phd_reach(table)
    row = reach[reach["method"] == "dcf"].iloc[0]
    assert row["below_target"] == pytest.approx(stored["ndcg@10"] - row["phd"])


def test_the_chapter_summary_follows_the_numbers(two_seeds, synthetic_split):
    from phdlib.report import ablation as rablation

    table, per_user = ablation.distance_ablation(two_seeds, synthetic_split)
    tests = ablation.distance_tests(per_user)
    reach = ablation.phd_reach(table)
    gaps = {16: ablation.bias_gap(two_seeds, 16)}
    # the verdict words hold for the whole range over seeds, and move with it
    moved = gaps[16].copy()
    moved["vh-phd"], moved["vh"] = 0.8, 0.7  # a gain to close
    for lo, hi, words in [(0.6, 0.9, "more than half of"), (0.3, 0.45, "a quarter to half of"),
                          (0.05, 0.2, "less than a quarter of"), (0.3, 0.7, "30% to 70% of")]:
        moved["closed"], moved["closed_min"], moved["closed_max"] = (lo + hi) / 2, lo, hi
        lines = rablation.summary(tests, {16: moved}, reach)
        assert any(words in l and f"{100 * lo:.0f}% to {100 * hi:.0f}%" in l for l in lines), lines
        assert any(words in l for l in ablation.findings(tests, {16: moved}))
    # no gain, no sentence about closing it
    moved["vh-phd"] = 0.6
    assert not any("closes" in l for l in rablation.summary(tests, {16: moved}, reach))
    assert any("no gain to close" in l for l in ablation.findings(tests, {16: moved}))
    shown = rablation.gap_table(gaps[16])
    assert "nan" not in shown.to_string().lower()


def test_the_conclusion_states_the_distance_once_and_each_width_s_share(two_seeds, synthetic_split):
    from phdlib.report import ablation as rablation

    table, per_user = ablation.distance_ablation(two_seeds, synthetic_split)
    tests = ablation.distance_tests(per_user)
    gaps = {16: ablation.bias_gap(two_seeds, 16)}
    lines = rablation.conclusion(tests, gaps, ablation.phd_reach(table))
    assert lines[0].startswith("**Ranking by PHD alone")
    assert all(not l.startswith("DCF codes") for l in lines) and lines[-1].startswith("16 bits:")
