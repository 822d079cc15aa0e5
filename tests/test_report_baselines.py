"""phdlib.report.baselines: the tables and sentences of the baselines chapters, on hand-made runs."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_report_helpers import make_run, stub_registry  # noqa: F401

from phdlib import paper, report
from phdlib.report import baselines as bl
from phdlib.report import baselines_dcf as bd
from phdlib.report import page

pytestmark = pytest.mark.usefixtures("stub_registry")

WIDTHS = (32, 64)


def _runs(names=("mf", "mf-als", "mf-mean", "mf-median", "item-mean", "popularity", "random")):
    level = {"mf": .74, "mf-als": .78, "mf-mean": .57, "mf-median": .57, "item-mean": .745,
             "popularity": .67, "random": .525, "dcf": .70, "cccf": .69}
    out = {}
    for m in names:
        for b in WIDTHS:
            mu = level[m]
            r = make_run(m, b, 0, {"ndcg@5": mu, "ndcg@10": mu + .02, "mrr": mu - .01})
            r.metrics["valid_ndcg@10"] = mu + .05
            r.config = {"reg": 1.0, "epochs": 200, "scope": "joint"}
            out[(m, b)] = r
    return out


def test_comparison_shown_has_labels_one_line_values_and_no_nan():
    runs = _runs()
    cmp = report.comparison(runs, "ml-1m", paper_names={"mf-als": None})
    shown = bl.comparison_shown(cmp)
    assert shown.index[0] == ("MF", "32 bits")
    assert list(shown.columns.get_level_values(0).unique()) == ["NDCG@5", "NDCG@10", "MRR"]
    assert ("NDCG@10", "Δ") in shown.columns
    assert shown.loc[("MF", "32 bits"), ("NDCG@5", "ours")] == page.num(runs[("mf", 32)].metrics["ndcg@5"])
    assert np.isnan(shown.loc[("MF (ALS, ours)", "32 bits"), ("MRR", "paper")])
    html = page.table(shown, "c", formats=bl.diff_formats(shown)).data
    assert "nan" not in html.lower() and "n/a" in html and ("+." in html or "−." in html)
    no_paper = bl.comparison_shown(report.comparison(runs, "ml-100k"))
    assert [c[1] for c in no_paper.columns] == ["ours"] * 3


def test_tolerance_lines_and_conclusion():
    runs = _runs()
    cmp = report.comparison({k: v for k, v in runs.items() if k[0] == "mf"}, "ml-1m")
    lines = bl.tolerance_lines(cmp, 0.05)
    assert len(lines) == 1 and lines[0].startswith("AGREES: MF lies within .050")
    assert "at 32 and 64 bits" in lines[0]
    off = bl.tolerance_lines(cmp, 0.0)
    assert len(off) == 1 and off[0].startswith("DISAGREES: MF differs") and "32 bits (." in off[0]
    text = bl.baselines_conclusion(runs, WIDTHS, "ml-1m", 0.05)
    assert "MFmean" in text and "above the paper's MF procedure" in text
    assert "nan" not in text.lower()
    assert "MFmean" not in bl.baselines_conclusion(runs, WIDTHS, "ml-100k")
    im = bl.item_mean_lines(runs, WIDTHS, "ml-1m")
    assert len(im) == 1 and "VH_PHD" in im[0] and im[0].startswith("At 32 and 64 bits")
    assert bl.item_mean_lines(runs, WIDTHS, "ml-100k") == []
    als = bl.als_lines(runs, WIDTHS, "ml-1m")
    assert als[0].startswith("32 dimensions: ALS (λ = 1, 200 epochs)") and "MF row" in als[0]


def test_grid_and_settings():
    grid = pd.DataFrame([[.70, .72], [.75, .71]], index=[0.01, 1.0], columns=[10, 20])
    shown, bold = bl.grid_shown(grid)
    assert list(shown.index) == ["0.01", "1"] and shown.index.name == "λ"
    assert list(shown.columns) == ["10", "20"] and bold.to_numpy().sum() == 1 and bold.iloc[1, 0]
    assert bl.setting({"reg": 0.1, "epochs": 200, "x": 1}, ("reg", "epochs", "y")) == "λ = 0.1, 200 passes"
    assert bl.setting({"blocks": (16, 16), "alpha": 0.001}, ("blocks", "alpha")) == "blocks [16, 16], α = 0.001"
    runs = _runs()
    t = bl.chosen_table(runs, ["mf-mean"], WIDTHS)
    assert list(t["method"]) == ["MFmean", "MFmean"] and (t["chosen by"] == "fixed by the profile").all()
    assert t.iloc[0]["setting"] == "λ = 1, 200 passes, joint thresholds"
    s = bl.sanity_table(runs, WIDTHS)
    assert s.index[0] == ("random (all tied)", "32 bits") and list(s.columns) == ["NDCG@5", "NDCG@10", "MRR"]


def test_tuning_grid_and_tie_tables():
    assert bl.blocks_text(np.array([16, 16])) == "[16, 16]" == bl.blocks_text("[16, 16]")
    assert bl.blocks_text(64) == "[64]"
    g = pd.DataFrame({"blocks": [np.array([16, 16]), np.array([64])], "alpha": [0.001, 0.1], "beta": [0.001, 0.1],
                      "valid_ndcg@10": [.8, .81], "test_ndcg@10": [.7, .71],
                      "train_seconds": [1.0, 2.0], "chosen": [False, True]})
    shown, bold = bd.tuning_grid_shown(g)
    assert ("setting", "blocks") in shown.columns and shown.iloc[0][("setting", "blocks")] == "[16, 16]"
    assert shown.iloc[1][("setting", "α")] == "0.1" and bold.iloc[1].all() and not bold.iloc[0].any()
    assert bd.time_formats(shown) == {("training", "wall s"): "{:,.1f}"}
    f = pd.DataFrame({"ndcg@5": [.6, .7, .5], "ndcg@10": [.65, .75, .55], "mrr": [.5, .6, .4]},
                     index=["expected", "optimistic", "pessimistic"])
    t = bl.tie_table({32: f})
    assert t.index[1] == ("32 bits", "best order") and list(t.columns) == ["NDCG@5", "NDCG@10", "MRR"]
    t2 = bl.tie_table({("mf-mean", 64): f})
    assert t2.index[0] == ("MFmean", "64 bits", "expected (random ties)")
    line = bd.tie_spread_lines({32: f})[0]
    assert ".5500 (worst order) to .7500 (best order), a spread of .2000" in line


def test_dcf_tables_and_lines():
    runs = _runs(("dcf", "cccf"))
    for b in WIDTHS:
        runs[("dcf", b)].metrics.update(init_iterations=50, iterations=10, converged=False,
                                        train_seconds=3.0, train_cpu_seconds=5.0)
        runs[("cccf", b)].metrics.update(train_seconds=1.0, train_cpu_seconds=2.0)
        runs[("cccf", b)].config = {"blocks": [b], "alpha": 0.001}
        runs[("dcf", b)].config = {"alpha": 0.1}
    t = bd.dcf_runs_table(runs, WIDTHS)
    assert list(t.index) == ["32 bits", "64 bits"] and t.iloc[0]["stopped because"] == "iteration cap"
    c = bd.cost_table(runs)
    assert c.iloc[2]["configuration"] == "blocks [32], α = 0.001 (fixed)"
    cmp = report.comparison(runs, "ml-1m")
    text = bd.dcf_conclusion(cmp, runs, WIDTHS, 0.05)
    assert "single block at every width" in text and "DCF minus CCCF" in text
    lay = bd.layouts_table([64], lambda b: [[64], [16, 16]], lambda l: sum(l) + 16 * (len(l) > 1))
    assert lay.iloc[0]["layouts (block sizes, cost in bits)"] == "[64] (64); [16, 16] (48)"
    ref = paper.table1("ml-1m", 32)["dcf"]
    diffs = bd.defaults_rows({(32, "tuned"): runs[("dcf", 32)], (32, "defaults"): runs[("cccf", 32)]},
                             "ml-1m")
    assert diffs.loc[("32 bits", "tuned"), "MRR"] == pytest.approx(runs[("dcf", 32)].metrics["mrr"] - ref["mrr"])
    assert bd.defaults_lines(diffs, 0.05)[0].startswith("32 bits: the run closest")
    w = pd.DataFrame({"weights / init": ["a", "b"], "users": [.52, .5], "items": [.53, .5],
                      "valid NDCG@10": [.80, .81]})
    line = bd.weights_lines(w, .85, "[64]")[0]
    assert "b, validates at NDCG@10 .8100, below the chosen layout [64] (.8500)" in line
    assert bd.weights_lines(w.iloc[:0], .85, "[64]") == []
