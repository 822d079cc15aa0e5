"""Table 1 builder, smoothing, user features, and the figures, on hand-made runs."""
from __future__ import annotations

import types

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from phdlib import experiments as E
from phdlib import paper, plots, results


def _run(method, bits, seed, per_user_means, n_users=200, rng=None):
    rng = rng or np.random.default_rng(hash((method, bits, seed)) % 2**32)
    cols = {"user": np.arange(n_users)}
    for met, mu in per_user_means.items():
        cols[met] = np.clip(mu + 0.05 * rng.standard_normal(n_users), 0, 1)
    pu = pd.DataFrame(cols)
    return results.Run(method=method, dataset="ml-1m", bits=bits, seed=seed, config={},
                       metrics={m: float(pu[m].mean()) for m in per_user_means},
                       per_user=pu, fingerprint="f", wall_seconds=1.0)


def _runs(level: dict, seeds=(0, 1), bits=(32, 64)):
    out = {}
    for m, mu in level.items():
        for b in bits:
            for s in seeds:
                out[E.Cell("ml-1m", m, b, s)] = _run(m, b, s, {"ndcg@5": mu, "ndcg@10": mu + .02,
                                                               "mrr": mu - .01})
    return out


LEVELS = {"cccf": .68, "dcf": .69, "mf-mean": .56, "mf-median": .56, "vh": .70,
          "vh-phd": .75, "mf": .80, "mf-als": .82, "item-mean": .74, "popularity": .70,
          "random": .52}


def test_table1_values_delta_and_marks():
    t = plots.table1(_runs(LEVELS), "ml-1m", 64)
    v = t.values
    ours = v.loc["vh-phd", ("ndcg@5", "ours")]
    assert ours == pytest.approx(.75, abs=0.01)
    assert v.loc["vh-phd", ("ndcg@5", "paper")] == paper.TABLE1["ml-1m"][64]["vh-phd"][0]
    assert v.loc["vh-phd", ("ndcg@5", "diff")] == pytest.approx(ours - .7267)
    assert v.loc["vh-phd", ("ndcg@5", "n")] == 2 and v.loc["vh-phd", ("ndcg@5", "std")] >= 0
    best_ham = max(v.loc[m, ("mrr", "ours")] for m in E.HAMMING_METHODS)
    assert t.delta["ours"]["mrr"] == pytest.approx(100 * (v.loc["vh-phd", ("mrr", "ours")] - best_ham) / best_ham)
    assert t.delta["paper"]["ndcg@5"] == pytest.approx(paper.TABLE1_DELTA["ml-1m"][64][0], abs=0.05)
    assert (t.marks.loc["vh-phd"] == "*").all() and (t.marks.loc["mf"] == "*").all()
    assert (t.marks.loc["vh"] == "").all()
    assert not t.missing
    f = plots.format_table1(t)
    assert f.shape[1] == 9 and any("additions" in i for i in f.index)
    assert f.loc["VH_PHD"].iloc[0].endswith("*") and "±" in f.loc["VH_PHD"].iloc[0]
    text = " ".join(plots.table1_findings(t))
    assert "AGREES (finding 1)" in text and "AGREES (finding 4)" in text


def test_table1_delta_paper_row_matches_printed_row_everywhere():
    for ds, by_bits in paper.TABLE1.items():
        for bits, block in by_bits.items():
            ham = [block[m] for m in E.HAMMING_METHODS if m in block]
            for j in range(3):
                best = max(h[j] for h in ham)
                d = 100 * (block["vh-phd"][j] - best) / best
                assert d == pytest.approx(paper.TABLE1_DELTA[ds][bits][j], abs=0.1), (ds, bits, j)  # the paper rounds from unrounded values


def test_table1_reports_disagreement_and_missing_methods():
    lv = dict(LEVELS, vh=.80)  # a Hamming method above VH_PHD
    del lv["cccf"]
    t = plots.table1(_runs(lv, seeds=(0,)), "ml-1m", 32)
    assert "cccf" in t.missing
    assert (t.marks.loc["vh-phd"] == "").all()
    text = " ".join(plots.table1_findings(t))
    assert "DISAGREES (finding 1)" in text and "NOT RUN" in text and "CCCF" in text
    assert np.isnan(t.values.loc["vh-phd", ("ndcg@5", "std")])  # one seed: no std


def test_table1_without_paper_numbers():
    runs = {E.Cell("ml-100k", c.method, c.bits, c.seed): r for c, r in _runs(LEVELS, seeds=(0,)).items()}
    t = plots.table1(runs, "ml-100k", 64)
    assert np.isnan(t.values.loc["vh", ("ndcg@10", "paper")])
    assert t.delta["paper"] == {}


def test_smooth_nearest_window():
    x = np.arange(10, dtype=float)
    s = plots.smooth_nearest(x, 3)
    assert s[0] == pytest.approx(1.0) and s[5] == pytest.approx(5.0) and s[9] == pytest.approx(8.0)
    assert np.allclose(plots.smooth_nearest(x, 100), x.mean())  # window larger than n
    assert np.allclose(plots.smooth_nearest(x, 1), x)
    rng = np.random.default_rng(0)
    y = rng.random(1000)
    s = plots.smooth_nearest(y, 500)
    assert s[600] == pytest.approx(y[600 - 249:600 + 251].mean())
    with pytest.raises(ValueError):
        plots.smooth_nearest(x, 0)


def test_user_features_counts_and_popularity():
    R = lambda u, i: types.SimpleNamespace(user=np.array(u), item=np.array(i))  # noqa: E731
    split = types.SimpleNamespace(
        train=R([0, 0, 1], [0, 1, 0]), valid=R([2], [0]), test=R([0, 2], [2, 1]),
        dataset=types.SimpleNamespace(n_users=4, n_items=3))
    f = plots.user_features(split)
    assert list(f["n_rated"]) == [3, 1, 2, 0]
    pop = np.array([3, 2, 1]) / 4  # item 0 rated by 3 of 4 users
    assert f.loc[0, "avg_popularity"] == pytest.approx(pop.mean())
    assert f.loc[2, "avg_popularity"] == pytest.approx((pop[0] + pop[1]) / 2)
    assert np.isnan(f.loc[3, "avg_popularity"])


def test_users_curves_and_figure():
    runs = _runs({m: LEVELS[m] for m in E.FIGURE_METHODS}, bits=(64,))
    g = plots.by_method(runs, bits=64)
    curves = {m: plots.per_user(g[m]) for m in E.FIGURE_METHODS}
    frame = plots.users_curves(curves, curves["mf"], window=50)
    assert list(frame["rank"]) == list(range(200)) and frame["key"].is_monotonic_increasing
    ax = plots.plot_users(frame, "mf", "t")
    assert len(ax.lines) == 5
    text = " ".join(plots.users_findings(frame, "mf"))
    assert "VH_PHD" in text and "100.0%" in text


def test_by_method_separates_sampling_variants():
    c0 = E.Cell("ml-1m", "vh-phd", 64, 0)
    c1 = E.Cell("ml-1m", "vh-phd", 64, 0, (("eval_sampling", "stochastic"), ("train_sampling", "stochastic")))
    runs = {c0: _run("vh-phd", 64, 0, {"ndcg@10": .7}), c1: _run("vh-phd", 64, 0, {"ndcg@10": .5})}
    assert len(plots.by_method(runs)["vh-phd"]) == 1


def test_sampling_table_figure_and_findings():
    runs = {}
    for (t, e), mu in zip(E.SAMPLINGS, (.75, .74, .70, .65)):
        c = E.Cell("ml-1m", "vh-phd", 64, 0, (("eval_sampling", e), ("train_sampling", t)))
        runs[c] = _run("vh-phd", 64, 0, {"ndcg@10": mu})
    tab = plots.sampling_table(runs)
    assert len(tab) == 4 and tab.iloc[0]["train"] == "stochastic" and tab.iloc[0]["eval"] == "deterministic"
    ax = plots.plot_sampling(tab)
    assert len(ax.patches) == 4
    assert all(s.startswith("AGREES") for s in plots.sampling_findings(tab))


def test_convergence_figure_and_summary():
    it = np.arange(750, 15001, 750)
    logs = {"vh-phd": [pd.DataFrame({"iteration": it, "seconds": it / 1000,
                                     "valid_ndcg@10": 0.75 - 0.2 * np.exp(-it / 1500)})],
            "vh": [pd.DataFrame({"iteration": it, "seconds": it / 900,
                                 "valid_ndcg@10": 0.73 - 0.2 * np.exp(-it / 6000)})]}
    axes = plots.plot_convergence(logs)
    assert len(axes[0].lines) == 2 and len(axes[1].lines) == 2
    s = plots.convergence_summary(logs, fractions=(0.5, 0.99))
    assert len(s) == 4
    target = logs["vh"][0]["valid_ndcg@10"].max()
    start = min(logs["vh"][0]["valid_ndcg@10"].iloc[0], logs["vh-phd"][0]["valid_ndcg@10"].iloc[0])
    assert s["level"].max() == pytest.approx(start + 0.99 * (target - start))
    r = s.set_index(["fraction", "method"])
    assert r.loc[(0.5, "vh-phd"), "iterations"] < r.loc[(0.5, "vh"), "iterations"]
    assert all(x.startswith("AGREES") for x in plots.convergence_findings(s))
    with pytest.raises(ValueError, match="lacks"):
        plots.plot_convergence({"vh": [pd.DataFrame({"iteration": [1]})]})
