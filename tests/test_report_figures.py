"""Figures 1 to 5: smoothing, user features, the figures and their findings, on hand-made runs."""
from __future__ import annotations

import types

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from test_report_helpers import FIGURE, LEVELS, make_run, make_runs, stub_registry  # noqa: F401

from phdlib import experiments as E
from phdlib import report
from phdlib.report import convergence, sampling, users

pytestmark = pytest.mark.usefixtures("stub_registry")


def test_smooth_nearest_window():
    x = np.arange(10, dtype=float)
    s = report.smooth_nearest(x, 3)
    assert s[0] == pytest.approx(1.0) and s[5] == pytest.approx(5.0) and s[9] == pytest.approx(8.0)
    assert np.allclose(report.smooth_nearest(x, 100), x.mean())  # window larger than n
    assert np.allclose(report.smooth_nearest(x, 1), x)
    rng = np.random.default_rng(0)
    y = rng.random(1000)
    s = report.smooth_nearest(y, 500)
    assert s[600] == pytest.approx(y[600 - 249:600 + 251].mean())
    with pytest.raises(ValueError):
        report.smooth_nearest(x, 0)


def test_user_features_counts_and_popularity():
    R = lambda u, i: types.SimpleNamespace(user=np.array(u), item=np.array(i))  # noqa: E731
    split = types.SimpleNamespace(
        train=R([0, 0, 1], [0, 1, 0]), valid=R([2], [0]), test=R([0, 2], [2, 1]),
        dataset=types.SimpleNamespace(n_users=4, n_items=3))
    f = report.user_features(split)
    assert list(f["n_rated"]) == [3, 1, 2, 0]
    pop = np.array([3, 2, 1]) / 4  # item 0 rated by 3 of 4 users
    assert f.loc[0, "avg_popularity"] == pytest.approx(pop.mean())
    assert f.loc[2, "avg_popularity"] == pytest.approx((pop[0] + pop[1]) / 2)
    assert np.isnan(f.loc[3, "avg_popularity"])


def test_users_curves_and_figure():
    runs = make_runs({m: LEVELS[m] for m in FIGURE}, bits=(64,))
    g = report.by_method(runs, bits=64)
    curves = {m: report.per_user(g[m]) for m in FIGURE}
    frame = report.users_curves(curves, curves["mf"], window=50)
    assert list(frame["rank"]) == list(range(200)) and frame["key"].is_monotonic_increasing
    ax = report.plot_users(frame, "mf", "t")
    assert len(ax.lines) == 5
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["CCCF", "DCF", "VH", "VH_PHD", "MF"]
    lines = report.users_findings(frame, "mf")
    text = " ".join(lines)
    assert "VH_PHD" in text and "100.0%" in text and "(CCCF, DCF, VH)" in text
    assert lines[0].startswith("AGREES:") and "hardest fifth" in lines[-1]
    assert "above VH_PHD" in lines[1] and "closes" in lines[1]
    gaps = users.fifth_gaps(frame)
    assert list(gaps.index) == ["lowest fifth", "highest fifth"]
    assert list(gaps.columns) == ["CCCF", "DCF", "VH", "VH_PHD"] and (gaps["VH"] > 0).all()
    assert users.key_range(frame.assign(key=np.arange(200.0)), "n_rated").startswith(
        "The number of rated items per user runs from 0 to 199")
    frames = {"mf": frame, "n_rated": frame}
    summary = users.users_conclusion(frames)
    assert "100.0%, 100.0%" in summary and "MF is" in summary and "nan" not in summary.lower()
    assert users.users_tally(frames).startswith("Of the ")
    key = pd.Series(np.arange(200)[::-1], index=frame.index.sort_values())
    trend = report.users_findings(report.users_curves(curves, key, window=50), "n_rated")
    assert any("fifth of users" in s for s in trend)


def test_per_user_rejects_runs_over_different_users():
    a = make_run("vh", 64, 0, {"ndcg@10": .7}, n_users=10)
    b = make_run("vh", 64, 1, {"ndcg@10": .7}, n_users=12)
    with pytest.raises(ValueError, match="different users"):
        report.per_user([a, b])
    with pytest.raises(ValueError, match="at least one"):
        report.per_user([])


def test_sampling_table_figure_and_findings():
    runs = {}
    for (t, e), mu in zip(E.SAMPLINGS, (.75, .74, .70, .65)):
        c = E.Cell("ml-1m", "vh-phd", 64, 0, (("eval_sampling", e), ("train_sampling", t)))
        runs[c] = make_run("vh-phd", 64, 0, {"ndcg@10": mu})
    tab = report.sampling_table(runs)
    assert len(tab) == 4 and tab.iloc[0]["train"] == "stochastic" and tab.iloc[0]["eval"] == "deterministic"
    assert list(tab.columns) == ["train", "eval", "mean", "std", "seeds"] and (tab["seeds"] == 1).all()
    ax = report.plot_sampling(tab)
    assert len(ax.patches) == 4
    assert all(s.startswith("AGREES") for s in report.sampling_findings(tab))
    assert "Only 3" in report.sampling_findings(tab.iloc[:3])[0]
    shown, bold = sampling.sampling_shown(tab)
    assert list(shown.columns) == ["training", "evaluation", "NDCG@10", "below the best", "seeds"]
    top = tab.iloc[0]["mean"]
    assert shown.iloc[0]["NDCG@10"] == f"{top:.4f}"[1:] and "±" not in shown.iloc[0]["NDCG@10"]
    d = top - tab.iloc[1]["mean"]
    assert shown.iloc[1]["below the best"] == f"−{d:.4f}"[:1] + f"{d:.4f}"[1:]
    assert shown.iloc[0]["below the best"] == "–" and bold.iloc[0]["NDCG@10"]
    assert bold.to_numpy().sum() == 1
    text = sampling.sampling_conclusion(tab)
    assert "All four" in text and "one seed" in text and "nan" not in text.lower()
    worse = tab.assign(mean=[.70, .74, .75, .65])  # stochastic evaluation on top
    lines = sampling.sampling_findings(worse)
    assert lines[0].startswith("DISAGREES") and "does not cost" in sampling.sampling_conclusion(worse)


def test_convergence_figure_and_summary():
    it = np.arange(750, 15001, 750)
    logs = {"vh-phd": [pd.DataFrame({"iteration": it, "seconds": it / 1000,
                                     "valid_ndcg@10": 0.75 - 0.2 * np.exp(-it / 1500)})],
            "vh": [pd.DataFrame({"iteration": it, "seconds": it / 900,
                                 "valid_ndcg@10": 0.73 - 0.2 * np.exp(-it / 6000)})]}
    axes = report.plot_convergence(logs)
    assert len(axes[0].lines) == 2 and len(axes[1].lines) == 2
    s = report.convergence_summary(logs, fractions=(0.5, 0.99))
    assert len(s) == 4
    target = logs["vh"][0]["valid_ndcg@10"].max()
    start = min(logs["vh"][0]["valid_ndcg@10"].iloc[0], logs["vh-phd"][0]["valid_ndcg@10"].iloc[0])
    assert s["level"].max() == pytest.approx(start + 0.99 * (target - start))
    r = s.set_index(["fraction", "method"])
    assert r.loc[(0.5, "vh-phd"), "iterations"] < r.loc[(0.5, "vh"), "iterations"]
    assert all(x.startswith("AGREES") for x in report.convergence_findings(s))
    shown = convergence.convergence_shown(s)
    assert list(shown.index) == ["50%", "99%"] and shown.index.name == "share of the way"
    assert shown.iloc[0][("iterations", "ratio")].endswith("×")
    assert "converges faster" in convergence.convergence_conclusion(s)
    rev = s.assign(method=s["method"].map({"vh": "vh-phd", "vh-phd": "vh"}))
    assert all(x.startswith("DISAGREES") for x in report.convergence_findings(rev))
    assert "does not converge faster" in convergence.convergence_conclusion(rev)
    assert convergence.convergence_shown(s[s.method == "vh"]).empty
    run = make_run("vh", 64, 0, {"ndcg@10": .7})
    run.metrics.update(iterations=15000, best_iteration=9000, train_seconds=12.5)
    run.log = logs["vh"][0]
    t = convergence.convergence_runs({"vh": [run]})
    assert t.iloc[0]["method"] == "VH" and t.iloc[0]["best iteration"] == 9000
    assert t.iloc[0]["best validation NDCG@10"] == pytest.approx(run.log["valid_ndcg@10"].max())
    assert report.convergence_summary({}).empty
    with pytest.raises(ValueError, match="lacks"):
        report.plot_convergence({"vh": [pd.DataFrame({"iteration": [1]})]})
