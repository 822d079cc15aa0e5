"""The one comparison of our numbers with the paper's Table 1, and its acceptance band."""
from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pandas as pd
import pytest

from phdlib import paper, report
from phdlib.report import compare


def _r(values, prefix_shift=0.001):
    m = dict(zip(("ndcg@5", "ndcg@10", "mrr"), values))
    m.update({"released:ndcg@5": values[0] + prefix_shift, "released:ndcg@10": values[1] + prefix_shift})
    return NS(metrics=m)


def test_comparison_of_several_seeds_and_within():
    runs = {("vh-phd", 64): [_r((.7267, .7459, .7136)), _r((.7367, .7559, .7236))],
            ("vh", 32): [_r((.60, .65, .55))]}
    t = report.comparison(runs, "ml-1m")
    assert list(t.index) == [("vh", 32), ("vh-phd", 64)]  # by width, then input order
    assert t.index.names == ["method", "bits"] and t.columns.names == ["metric", "field"]
    assert list(t.columns.get_level_values("metric").unique()) == ["ndcg@5", "ndcg@10", "mrr"]
    assert list(t["mrr"].columns) == list(compare.FIELDS) == ["ours", "std", "n", "paper", "diff"]
    row = t.loc[("vh-phd", 64)]
    assert row[("ndcg@5", "ours")] == pytest.approx(.7317)
    assert row[("ndcg@5", "paper")] == paper.TABLE1["ml-1m"][64]["vh-phd"][0]
    assert row[("ndcg@5", "diff")] == pytest.approx(.005)
    assert row[("mrr", "std")] == pytest.approx(np.std([.7136, .7236], ddof=1))
    assert (t.xs("n", axis=1, level="field").loc[("vh-phd", 64)] == 2).all()
    assert t[("ndcg@10", "n")].dtype == np.int64
    assert np.isnan(t.loc[("vh", 32), ("ndcg@5", "std")])  # one seed: no std
    ok = report.within(t)
    assert ok.dtype == bool and bool(ok[("vh-phd", 64)]) and not bool(ok[("vh", 32)])
    assert report.TOLERANCE == 0.015
    assert bool(report.within(t, tol=0.1)[("vh", 32)])
    assert report.max_abs_diff(t)[("vh", 32)] == pytest.approx(paper.TABLE1["ml-1m"][32]["vh"][2] - .55)
    rel = report.comparison(runs, "ml-1m", discount_prefix="released:")
    assert rel.loc[("vh", 32), ("ndcg@10", "ours")] == pytest.approx(.651)
    assert rel.loc[("vh", 32), ("mrr", "ours")] == pytest.approx(.55)  # MRR has no discount


def test_comparison_of_single_runs_equals_lists_of_one():
    single = {("mf", 32): _r((.70, .72, .71)), ("mf", 64): _r((.74, .75, .74))}
    t = report.comparison(single, "ml-1m")
    pd.testing.assert_frame_equal(t, report.comparison({k: [v] for k, v in single.items()}, "ml-1m"))
    assert t.loc[("mf", 64), ("ndcg@10", "ours")] == pytest.approx(.75)
    assert t.loc[("mf", 64), ("ndcg@10", "n")] == 1
    assert t.loc[("mf", 64), ("ndcg@10", "paper")] == paper.TABLE1["ml-1m"][64]["mf"][1]


def test_comparison_paper_names_missing_runs_and_unknown_dataset():
    runs = {("mf-als", 64): _r((.76, .77, .76)), ("item-mean", 64): _r((.6, .6, .6)), ("dcf", 64): []}
    t = report.comparison(runs, "ml-1m", paper_names={"mf-als": "mf", "item-mean": None})
    assert t.loc[("mf-als", 64), ("mrr", "paper")] == paper.TABLE1["ml-1m"][64]["mf"][2]
    assert t.xs("paper", axis=1, level="field").loc[("item-mean", 64)].isna().all()
    assert t.loc[("dcf", 64), ("ndcg@5", "n")] == 0 and np.isnan(t.loc[("dcf", 64), ("ndcg@5", "ours")])
    assert t.loc[("dcf", 64), ("ndcg@5", "paper")] == paper.TABLE1["ml-1m"][64]["dcf"][0]
    assert not report.within(t).any()  # NaN differences are never within
    none = report.comparison({("vh", 64): _r((.5, .5, .5))}, "ml-100k")
    assert none.xs("diff", axis=1, level="field").isna().all().all()
    assert np.isnan(report.max_abs_diff(none)[("vh", 64)])
    empty = report.comparison({}, "ml-1m")
    assert empty.empty and list(empty.columns) == list(t.columns)


def test_mean_std():
    assert report.mean_std([1.0, 3.0]) == (2.0, pytest.approx(np.sqrt(2)), 2)
    m, s, n = report.mean_std([])
    assert np.isnan(m) and np.isnan(s) and n == 0
