"""Table 1: values, the Delta% row, significance marks, formatting and findings, on hand-made runs."""
from __future__ import annotations

import numpy as np
import pytest
from test_report_helpers import ADDITIONS, HAMMING, LEVELS, PAPER, make_run, make_runs, stub_registry  # noqa: F401

from phdlib import experiments as E
from phdlib import paper, report

pytestmark = pytest.mark.usefixtures("stub_registry")


def test_table1_values_delta_and_marks():
    t = report.table1(make_runs(LEVELS), "ml-1m", 64)
    assert t.paper_methods == PAPER and t.additions == ADDITIONS and t.hamming == HAMMING
    v = t.values
    assert list(v.index) == PAPER + ADDITIONS
    ours = v.loc["vh-phd", ("ndcg@5", "ours")]
    assert ours == pytest.approx(.75, abs=0.01)
    assert v.loc["vh-phd", ("ndcg@5", "paper")] == paper.TABLE1["ml-1m"][64]["vh-phd"][0]
    assert v.loc["vh-phd", ("ndcg@5", "diff")] == pytest.approx(ours - .7267)
    assert v.loc["vh-phd", ("ndcg@5", "n")] == 2 and v.loc["vh-phd", ("ndcg@5", "std")] >= 0
    best_ham = max(v.loc[m, ("mrr", "ours")] for m in HAMMING)
    assert t.delta["ours"]["mrr"] == pytest.approx(100 * (v.loc["vh-phd", ("mrr", "ours")] - best_ham) / best_ham)
    assert t.delta["paper"]["ndcg@5"] == pytest.approx(paper.TABLE1_DELTA["ml-1m"][64][0], abs=0.05)
    assert (t.marks.loc["vh-phd"] == "*").all() and (t.marks.loc["mf"] == "*").all()
    assert (t.marks.loc["vh"] == "").all()
    assert not t.missing
    f = report.format_table1(t)
    assert f.shape[1] == 9 and any("additions" in i for i in f.index)
    # the mark sits on the mean, and mean ± std stays on one line (no-break spaces)
    assert "*\u00a0±\u00a0" in f.loc["VH_PHD"].iloc[0]
    text = " ".join(report.table1_findings(t))
    assert "AGREES (finding 1)" in text and "AGREES (finding 4)" in text


def test_table1_values_are_the_comparison_at_that_width():
    runs = make_runs(LEVELS)
    t = report.table1(runs, "ml-1m", 32)
    g = report.by_method(runs, bits=32)
    cmp = report.comparison({(m, 32): g[m] for m in PAPER}, "ml-1m").xs(32, level="bits")
    assert t.values.loc[PAPER].equals(cmp)


def test_table1_delta_paper_row_matches_printed_row_everywhere():
    for ds, by_bits in paper.TABLE1.items():
        for bits, block in by_bits.items():
            ham = [block[m] for m in HAMMING if m in block]
            for j in range(3):
                best = max(h[j] for h in ham)
                d = 100 * (block["vh-phd"][j] - best) / best
                assert d == pytest.approx(paper.TABLE1_DELTA[ds][bits][j], abs=0.1), (ds, bits, j)  # the paper rounds from unrounded values


def test_table1_reports_disagreement_and_missing_methods():
    lv = dict(LEVELS, vh=.80)  # a Hamming method above VH_PHD
    del lv["cccf"]
    t = report.table1(make_runs(lv, seeds=(0,)), "ml-1m", 32)
    assert "cccf" in t.missing
    assert (t.marks.loc["vh-phd"] == "").all()
    text = " ".join(report.table1_findings(t))
    assert "DISAGREES (finding 1)" in text and "NOT RUN" in text and "CCCF" in text
    assert np.isnan(t.values.loc["vh-phd", ("ndcg@5", "std")])  # one seed: no std
    assert "CCCF (not run)" in report.format_table1(t).index


def test_table1_without_paper_numbers():
    t = report.table1(make_runs(LEVELS, seeds=(0,), dataset="ml-100k"), "ml-100k", 64)
    assert np.isnan(t.values.loc["vh", ("ndcg@10", "paper")])
    assert t.delta["paper"] == {}
    assert any("reports no numbers for ml-100k" in s for s in report.table1_findings(t))


def test_table1_keyword_overrides_and_tolerance():
    runs = make_runs(LEVELS, seeds=(0,))
    t = report.table1(runs, "ml-1m", 64, paper_methods=["dcf", "vh", "vh-phd"], additions=[],
                      hamming=["dcf", "vh"])
    assert list(t.values.index) == ["dcf", "vh", "vh-phd"] and t.hamming == ["dcf", "vh"]
    assert len(report.format_table1(t)) == 3 + 2  # methods, the Delta% row, the (empty) additions header
    loose = " ".join(report.table1_findings(t, tolerance=1.0))
    assert "Within 1.0 of the paper: 9 of 9 values." in loose
    assert "against DCF, VH" in loose


def test_by_method_separates_sampling_variants():
    c0 = E.Cell("ml-1m", "vh-phd", 64, 0)
    c1 = E.Cell("ml-1m", "vh-phd", 64, 0, (("eval_sampling", "stochastic"), ("train_sampling", "stochastic")))
    runs = {c0: make_run("vh-phd", 64, 0, {"ndcg@10": .7}), c1: make_run("vh-phd", 64, 0, {"ndcg@10": .5})}
    assert len(report.by_method(runs)["vh-phd"]) == 1
    assert len(report.by_method(runs, plain=False)["vh-phd"]) == 1  # one run per seed
    assert report.by_method(runs, bits=32) == {}


def test_seed_spread_bands_and_findings():
    t = report.table1(make_runs(LEVELS), "ml-1m", 64)
    spread = report.seed_spread(t)
    assert list(spread.columns) == ["n", "ndcg@5", "ndcg@10", "mrr"]
    assert (spread["n"] == 2).all()
    v = t.values
    for m in spread.index:
        assert spread.loc[m, "ndcg@10"] == v.loc[m, ("ndcg@10", "std")]
    b = report.noise_bands(spread)
    moving = spread[spread["ndcg@10"] > 0]
    s = np.sqrt((moving["ndcg@10"] ** 2).mean())
    assert b["pooled_std"] == pytest.approx(s) and b["n"] == 2
    assert b["single"] == pytest.approx(report.Z95 * np.sqrt(2) * s)
    assert b["means"] == pytest.approx(report.Z95 * s)
    assert b["vs_single"] == pytest.approx(report.Z95 * np.sqrt(1.5) * s)
    text = " ".join(report.seed_findings(t))
    assert "pooled" in text and f"{b['single']:.4f}" in text and "of our NDCG@10 values" in text


def test_seed_spread_without_repeated_seeds():
    runs = {c: r for c, r in make_runs(LEVELS).items() if c.seed == 0}
    t = report.table1(runs, "ml-1m", 64)
    assert report.seed_spread(t)["ndcg@10"].isna().all()
    assert np.isnan(report.noise_bands(report.seed_spread(t))["pooled_std"])
    assert "seed spread is unknown" in report.seed_findings(t)[0]
