"""The chapter "Variational hashing": the variant study, its table, chance level, paired tests."""
from __future__ import annotations

import sys
import types
from types import SimpleNamespace as NS

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

import phdlib
from phdlib import methods, report
from phdlib.studies import variants


def test_variant_overrides_budget_and_quick():
    m, ov = variants.variant_overrides("lr 0.001")
    assert m == "vh" and ov == {"lr": 0.001, "train_sampling": "stochastic", "tune": False}
    # a variant under the budget rule is a point of VH's tuning grid: the same run
    from phdlib import methods

    cfg = methods.resolve_config("vh", "ml-1m", 64)
    points = [{**cfg, **p} for p in methods.get("vh").grid(cfg, 64)]
    assert methods.resolve_config("vh", "ml-1m", 64, ov) in points
    m, ov = variants.variant_overrides("released")
    assert ov["min_iterations"] == 0 and "max_iterations" not in ov
    _, ov = variants.variant_overrides("VH_PHD (default)")
    assert ov == {"tune": False}
    _, ov = variants.variant_overrides("lr 0.001", "quick")
    assert ov["max_iterations"] == ov["min_iterations"] == variants.QUICK_ITERATIONS
    with pytest.raises(KeyError, match="unknown variant"):
        variants.variant_overrides("nope")
    with pytest.raises(ValueError, match="profile"):
        variants.variant_overrides("released", "slow")


def test_run_variants_runs_one_grid_through_the_store(monkeypatch, tmp_path):
    from phdlib.experiments import runner

    calls = []

    def run_grid(cells, jobs=None, progress=False, name=""):
        calls.append((list(cells), jobs))
        return pd.DataFrame({"cell": list(cells), "path": [str(tmp_path / c.method) for c in cells]})

    monkeypatch.setattr(runner, "run_grid", run_grid)
    monkeypatch.setattr(variants_results(), "load", lambda path, arrays=False: NS(path=path))
    out = variants.run_variants("ml-1m", bits=32, seed=3, profile="quick", jobs=2,
                                names=["released", "VH_PHD lr 0.001"])
    assert list(out) == ["released", "VH_PHD lr 0.001"]
    assert out["VH_PHD lr 0.001"].path.endswith("vh-phd")
    (cells, jobs), = calls
    assert jobs == 2 and [c.method for c in cells] == ["vh", "vh-phd"]
    assert cells[0].seed == 3 and cells[0].bits == 32
    assert cells[1].overrides == {"lr": 0.001, "tune": False,
                                  "max_iterations": variants.QUICK_ITERATIONS,
                                  "min_iterations": variants.QUICK_ITERATIONS}


def variants_results():
    from phdlib import results

    return results


def test_variant_overrides_are_config_keys_of_their_method():
    try:
        configs = {m: methods.resolve_config(m, "ml-1m", 64) for m in ("vh", "vh-phd")}
    except Exception as exc:  # the VH module does not import yet
        pytest.skip(f"VH is not available: {exc}")
    for name in variants.VARIANTS:
        for profile in ("full", "quick"):
            m, ov = variants.variant_overrides(name, profile)
            assert set(ov) <= set(configs[m]), (name, profile, set(ov) - set(configs[m]))


def _run(method, seed, values, users=50, shift=0.0):
    rng = np.random.default_rng(seed)
    pu = pd.DataFrame({"user": np.arange(users), "n_test": 10,
                       "ndcg@5": np.clip(rng.uniform(0.5, 0.9, users) + shift, 0, 1),
                       "ndcg@10": np.clip(rng.uniform(0.5, 0.9, users) + shift, 0, 1),
                       "mrr": np.clip(rng.uniform(0.3, 0.9, users) + shift, 0, 1)})
    metrics = dict(zip(("ndcg@5", "ndcg@10", "mrr"), values))
    metrics.update({"released:ndcg@5": values[0] + 0.001, "released:ndcg@10": values[1] + 0.001})
    return NS(method=method, seed=seed, metrics=metrics, per_user=pu)


def test_comparison_of_the_vh_chapter():
    runs = {("vh-phd", 64): [_run("vh-phd", 0, (.7267, .7459, .7136)), _run("vh-phd", 1, (.7367, .7559, .7236))],
            ("vh", 32): [_run("vh", 0, (.60, .65, .55))]}
    t = report.comparison(runs, "ml-1m")
    row = t.loc[("vh-phd", 64)]
    assert row[("ndcg@5", "ours")] == pytest.approx(.7317) and row[("ndcg@5", "paper")] == .7267
    assert row[("ndcg@5", "diff")] == pytest.approx(.005) and row[("ndcg@5", "n")] == 2
    assert row[("mrr", "std")] == pytest.approx(np.std([.7136, .7236], ddof=1))
    ok = report.within(t)
    assert bool(ok[("vh-phd", 64)]) and not bool(ok[("vh", 32)])
    rel = report.comparison(runs, "ml-1m", discount_prefix="released:")
    assert rel.loc[("vh", 32), ("ndcg@10", "ours")] == pytest.approx(.651)


def test_paired_tests_find_a_clear_difference():
    phd = [_run("vh-phd", 0, (0, 0, 0), shift=0.1)]
    ham = [_run("vh", 0, (0, 0, 0))]
    t = report.paired_tests(phd, ham)
    assert list(t["metric"]) == ["ndcg@5", "ndcg@10", "mrr"]
    assert (t["n"] == 50).all() and t["better"].all()
    same = report.paired_tests(ham, ham)
    assert (same["p"].isna() | ~same["better"]).all()


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
    assert t.loc["lr 0.001", "tests"] == variants.VARIANTS["lr 0.001"][3]
    lines = report.variants_findings(t)
    assert any("never rose" in s for s in lines) and lines[-1].endswith("lr 0.001.")


def test_reached_cap_reads_the_stop_reason_or_else_the_iterations():
    from phdlib.methods.loop import EarlyStopping

    stop = EarlyStopping(patience=5, max_iterations=1500)
    for it, score in ((750, 0.5), (1500, 0.6)):
        stop.update(it, score)
    assert stop.stop

    def run(reason, iterations):
        extra = {"stop_reason": reason} if reason is not None else {}
        return NS(extra=extra, effective_config={"max_iterations": 1500},
                  metrics={"iterations": iterations})

    assert report.reached_cap(run(stop.reason, 1500))
    assert not report.reached_cap(run("no improvement of the validation score in 5 "
                                      "evaluations (best 0.6 at iteration 750)", 4500))
    assert report.reached_cap(run(None, 1500)) and not report.reached_cap(run(None, 750))


def test_chance_level_is_the_all_tied_ranking():
    r = NS(user=np.array([0, 0, 1, 1]), rating=np.array([5.0, 1.0, 3.0, 3.0]))
    # user 0: expected DCG of a random order of gains 31 and 1; user 1: a perfect tie = 1
    d = 1 / np.log2(3)
    u0 = (0.5 * (31 + 1) + 0.5 * (31 + 1) * d) / (31 + d)
    assert report.chance_level(r) == pytest.approx((u0 + 1.0) / 2)


def test_plot_curves():
    log = pd.DataFrame({"iteration": [750, 1500], "seconds": [1.0, 2.0], "valid_ndcg@10": [0.6, 0.7]})
    ax = report.plot_curves({"a": log, "b": log}, x="seconds", title="t")
    assert len(ax.lines) == 2 and ax.get_xlabel() == "seconds" and ax.get_title() == "t"


# --------------------------------------------------------------------------- for reading

from phdlib.report import vh as rvh  # noqa: E402


def _vt():
    log = pd.DataFrame({"iteration": [750, 1500, 2250], "valid_ndcg@10": [0.70, 0.705, 0.75],
                        "user_ones": 0.5, "item_ones": 0.5, "user_const_bits": 0.0})
    metrics = {"iterations": 2250, "best_iteration": 2250, "valid_ndcg@5": 0.7,
               "valid_ndcg@10": 0.75, "valid_mrr": 0.6}
    flat = log.assign(**{"valid_ndcg@10": 0.70})
    runs = {"released": NS(method="vh", log=flat, metrics={**metrics, "valid_ndcg@10": 0.70}),
            "lr 0.001": NS(method="vh", log=flat, metrics={**metrics, "valid_ndcg@10": 0.70}),
            "lr 0.005": NS(method="vh", log=log, metrics=metrics),
            "lr 0.005, no noise": NS(method="vh", log=log, metrics=metrics),
            "lr 0.005, deterministic training": NS(method="vh", log=log,
                                                   metrics={**metrics, "valid_ndcg@10": 0.76}),
            "VH_PHD (default)": NS(method="vh-phd", log=log, metrics=metrics),
            "VH_PHD lr 0.001": NS(method="vh-phd", log=log, metrics=metrics)}
    return report.variants_table(runs, chance=0.70), runs


def test_p_text():
    assert [rvh.p_text(p) for p in (0.0, 0.0004, 0.0042, 0.034, 0.5, 1.0)] == [
        "p < 0.001", "p < 0.001", "p = 0.004", "p = 0.034", "p = 0.5", "p = 1"]
    assert rvh.p_text(np.nan) == "n/a"


def test_variants_view_reading_and_headline():
    vt, runs = _vt()
    view = rvh.variants_view(vt)
    assert view.loc["released", "leaves plateau at"] == "never"
    assert view.loc["lr 0.005", "leaves plateau at"] == "2,250"
    assert "validation NDCG@10" in view.columns and "method" not in view.columns
    lines = rvh.variants_reading(vt)
    assert lines[0].startswith("Noise: without noise injection VH leaves the plateau at iteration 2,250")
    assert "no bit is shared by 99% of users" in lines[1] and "50% of the users'" in lines[1]
    assert "at 0.001 VH never leaves the plateau" in lines[2]
    assert lines[-1].startswith("VH_PHD leaves the plateau by iteration 2,250 in all 2")
    t = report.paired_tests([_run("vh-phd", 0, (0, 0, 0), shift=0.1)], [_run("vh", 0, (0, 0, 0))])
    tests = {(64, "seed 0"): t}
    head = rvh.headline_findings(vt, 0.70, None, tests, 0.015)
    assert head[0].startswith("Trained exactly as released, VH never rises 0.01 above")
    assert "'lr 0.005, deterministic training'" in head[1]
    assert head[2].startswith("AGREES (VH_PHD beats VH): 64 bits, seed 0")
    text = rvh.conclusion(vt, 0.70, tests, None, 0.015)
    assert "it stops at chance" in text and "in 1 of 1 comparisons" in text
    view = rvh.paired_view(t)
    assert list(view.index) == ["NDCG@5", "NDCG@10", "MRR"] and (view["adjusted p"] == "p < 0.001").all()


def test_comparison_view_and_paper_findings():
    runs = {("vh-phd", 64): [_run("vh-phd", 0, (.7267, .7459, .7136)),
                             _run("vh-phd", 1, (.7367, .7559, .7236))],
            ("vh", 64): [_run("vh", 0, (.60, .65, .55))]}
    t = report.comparison(runs, "ml-1m")
    view = rvh.comparison_view(t)
    assert view.loc[("VH_PHD", 64), ("NDCG@5", "ours")].startswith(".7317\u00a0±\u00a0.0071")
    assert view.loc[("VH", 64), ("NDCG@5", "ours")] == ".6000"
    lines = rvh.paper_findings(t, 0.015)
    assert any(s.startswith("AGREES (Table 1): VH_PHD, 64 bits") for s in lines)
    assert any(s.startswith("DISAGREES (Table 1): VH, 64 bits") for s in lines)


def test_runs_cap_budget_and_caption():
    log = pd.DataFrame({"iteration": [750, 1500, 21000], "valid_ndcg@10": [0.7, 0.8, 0.81]})
    run = NS(method="vh", bits=64, seed=0, log=log, extra={},
             effective_config={"lr": 0.005, "train_sampling": "deterministic",
                               "max_iterations": 30000},
             metrics={"iterations": 21000, "best_iteration": 21000, "seconds_to_best": 3.0,
                      "train_seconds": 3.5, "ms_per_iteration": 0.2, "valid_ndcg@10": 0.81})
    runs = {("vh", 64): [run]}
    t = rvh.runs_table(runs)
    assert t.index[0] == ("VH", 64, 0) and t.iloc[0]["iterations"] == 21000
    assert rvh.cap_finding([run], "full").startswith("All 1 runs were ended by early stopping")
    assert "fixed 30,000" in rvh.cap_finding([run], "quick")
    (line,) = rvh.budget_findings(runs, 20000)
    assert ".8000 by iteration 20,000, .8100 overall (at iteration 21,000 of 21,000)" in line
    assert "VH 64 bits seed 0 at 1,500" in rvh.curves_caption(runs, 0.75, [64])


def test_step_and_grid_tables():
    steps = pd.DataFrame({"method": ["vh"], "step": ["fused"], "threads": [1],
                          "ms_per_iteration": [0.5], "speedup": [2.35], "limit_ms": [0.3],
                          "over_limit": [1.6], "bandwidth_gbs": [40.0], "subnormal_ms": [1.6],
                          "flushed_ms": [0.4]})
    t = rvh.step_table(steps)
    assert t.index[0] == ("VH", "fused", 1) and t.iloc[0]["speedup"] == "2.4×"
    grid = pd.DataFrame({"lr": [0.005, 0.001], "train_sampling": ["stochastic"] * 2,
                         "valid_ndcg@10": [0.8, 0.7], "valid_mrr": [0.6, 0.5],
                         "test_ndcg@10": [0.7, 0.6], "test_mrr": [0.5, 0.4],
                         "train_seconds": [10.0, 11.0], "chosen": [True, False]})
    g = rvh.grid_table(grid)
    assert list(g["chosen"]) == ["chosen", ""] and g.index.names == ["learning rate", "training sampling"]
