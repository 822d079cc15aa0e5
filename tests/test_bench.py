"""The ``phdlib.bench`` package: timing helpers, configuration, a tiny run, its tables and JSON."""
from __future__ import annotations

import json

import numpy as np
import pytest

from phdlib import bench


def test_paired_ratio_of_trivial_rounds():
    r = bench.paired_ratio(np.array([2.0, 4.0, 6.0, 8.0]), np.array([1.0, 2.0, 2.0, 2.0]))
    assert r == {"median": 2.5, "q25": 2.0, "q75": 3.25, "rounds": 4}


def test_interleaved_times_every_function_every_round():
    calls = {"a": 0, "b": 0}

    def a():
        calls["a"] += 1
        return 1

    def b():
        calls["b"] += 1
        return (np.arange(3), 2.0)

    times, vals = bench.interleaved({"a": a, "b": b}, repeats=5, seed=1)
    assert set(times) == {"a", "b"} and all(t.shape == (5,) and (t >= 0).all() for t in times.values())
    assert vals["a"] == 1 and np.array_equal(vals["b"][0], np.arange(3))
    assert calls == {"a": 6, "b": 6}  # one warm-up call, then one per round
    # alternate: for two methods, round r starts with method r % 2
    order = []
    bench.interleaved({"x": lambda: order.append("x"), "y": lambda: order.append("y")},
                      repeats=4, alternate=True)
    assert order[2:] == ["x", "y", "y", "x", "x", "y", "y", "x"]
    # min_seconds: short calls are repeated within a sample
    n = {"c": 0}
    bench.interleaved({"c": lambda: n.__setitem__("c", n["c"] + 1)}, repeats=2, min_seconds=1e-2)
    assert n["c"] > 1 + 3 + 2


def test_interleaved_rejects_a_changing_value():
    it = iter(range(100))
    with pytest.raises(RuntimeError, match="returned"):
        bench.interleaved({"f": lambda: next(it)}, repeats=2)


def test_config_from_profile_applies_overrides_and_caps():
    cfg = bench.BenchConfig.from_profile("quick", threads=1, n=1000, n_topk=None, ks=(5,),
                                         sweep=(10, 10**9))
    assert cfg.n == 1000 and cfg.n_topk == 1000 and cfg.ip_n == 1000
    assert cfg.threads == (1,) and cfg.ks == (5,) and cfg.sweep == (10,)
    assert cfg.repeats == bench.PROFILES["quick"]["repeats"]
    assert cfg.pairs >= 2 * bench.ACCEPT["min_rounds"] + 1
    d = cfg.to_dict()
    assert d["threads"] == [1] and d["sweep"] == [10] and d["code_bits"] == 64
    with pytest.raises(ValueError, match="profile"):
        bench.BenchConfig.from_profile("huge")
    with pytest.raises(ValueError, match="n must be positive"):
        bench.BenchConfig.from_profile("quick", n=0)
    with pytest.raises(ValueError, match="threads must be in"):
        bench.BenchConfig.from_profile("quick", threads=10_000)


def test_tiny_run_result_tables_and_json(tmp_path):
    res = bench.run(profile="quick", n=30_000, n_topk=20_000, ip_n=5_000, repeats=2,
                    sweep=(10_000, 30_000), threads=1, ks=(1, 10), batch_queries=4,
                    batch_repeats=2, min_seconds=0.0, topk_min_seconds=0.0,
                    sweep_min_seconds=0.0, log=lambda *a: None)
    assert isinstance(res, bench.BenchResult)
    assert res.config["n"] == 30_000 and res.config["threads"] == [1]
    for name in ("read", "hamming", "phd", "phd_xor_and", "ip_numba", "ip_blas",
                 "topk_read", "topk_scan", "topk1", "topk10_phd"):
        assert res.methods[name]["threads"][1]["seconds"] > 0, name
    assert res.bandwidth[1] > 0 and res.config["bandwidth_topk_gb_per_s"][1] > 0
    assert res.checks["phd_forms_agree"] and res.checks["ip_agree@1"]
    assert set(res.sweep["N"]) == {10_000, 30_000}
    assert set(res.topk["queries"]) == {1, 4}
    for tab in (res.table(1), bench.table2(res), bench.acceptance(res), bench.topk_table(res),
                bench.batch_table(res)):
        assert not tab.empty
    text = bench.report(res)
    assert "Table 2 beside the paper's" in text and "Acceptance:" in text
    saved = json.loads(res.save(tmp_path / "r" / "bench.json").read_text())
    assert {"hamming", "phd", "topk10", "_run"} <= set(saved)
    assert {"config", "machine", "ratios", "checks", "sweep", "topk"} <= set(saved["_run"])
