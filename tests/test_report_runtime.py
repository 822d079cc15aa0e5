"""The chapter "Runtime" (phdlib.report.runtime): readable tables and findings of one run."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from phdlib import bench
from phdlib.report import runtime as R


@pytest.fixture(scope="module")
def res():
    return bench.run(profile="quick", n=30_000, n_topk=20_000, ip_n=5_000, repeats=2,
                     sweep=(10_000, 30_000), threads=1, ks=(1, 10), batch_queries=4,
                     batch_repeats=2, min_seconds=0.0, topk_min_seconds=0.0,
                     sweep_min_seconds=0.0, log=lambda *a: None)


def test_number_formats():
    assert R.ratio(63.696) == "63.7×" and R.ratio(1.0021) == "1.002×"
    assert R.ratio(float("nan")) == "n/a"
    assert R.ms(0.07401) == "74.01" and R.ms(4.71414) == "4,714"
    assert R.ms(2.0279e-5) == "0.0203" and R.ms(1e-9) == "< 0.0001"


def test_tables_read_well(res):
    t2 = R.table2(res)
    assert t2.loc["Inner product, 64-d float32 (Numba loop)", "paper: time / Hamming"] == "63.7×"
    assert t2.loc["Hamming distance", "ours: time / Hamming"] == "1.000×"
    assert t2["N measured"].dtype.kind == "i"
    assert np.isnan(t2.loc["PHD, XOR-AND form (items not negated)", "paper (s)"])
    th = R.throughput(res)
    assert "Hamming (Numba)" in th.index and not th.index.str.startswith("topk").any()
    assert not th["ms"].str.contains("e-").any()
    tk = R.topk(res)
    assert tk.index.names == ["threads", "k"] and tk["faiss / ours"].str.endswith("×").all()
    assert not R.batch(res).empty
    acc = R.acceptance(res)
    assert acc["met"].dtype == bool and acc["measured"].str.match(r"^[\d.,]+[×%]$").all()
    assert acc.index[0] == "PHD / Hamming, 1 thread(s)" and acc["target"].iloc[0].startswith("0.98 to 1.02")
    assert not acc.index.str.contains("N=").any()


def test_findings_summary_details(res):
    lines = R.findings(res) + R.summary(res)
    assert lines[0].startswith("PHD / Hamming time at one thread") and "the paper: 1.000×" in lines[0]
    assert any("63.7×" in s for s in lines)
    assert not any("%" in s and "+6269" in s for s in lines)
    assert not any("e-0" in s or "nan" in s.lower() for s in lines)
    d = R.details(res)
    assert d["CPU"] and "GB/s" in d["read bandwidth"]


def test_same_answers_and_sweep(res):
    t = R.same_answers(n=3_000, queries=4, ks=(1, 10))
    assert t.all().all() and t.index.names == ["metric", "threads", "k"]
    fig = R.plot_sweep(res)
    assert fig.axes[0].get_xlabel().startswith("N")
