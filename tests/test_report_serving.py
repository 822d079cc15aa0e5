"""The chapter "Serving PHD codes" (phdlib.report.serving): checks, ties, tables, findings."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from phdlib import codes as C
from phdlib.report import served_ties as T
from phdlib.report import serving as S


def _rows():
    base = {"items": 1000, "queries": 10, "bits": 64, "k": 10}
    return pd.DataFrame([
        {**base, "engine": "binaryindex", "param": "", "value": np.nan, "recall": 1.0,
         "qps": 141759.5558, "memory_mb": 7.6, "build_s": 0.01},
        {**base, "engine": "faiss-flat", "param": "", "value": np.nan, "recall": 1.0,
         "qps": 90000.2, "memory_mb": 15.3, "build_s": 0.02},
        {**base, "engine": "faiss-hnsw", "param": "efSearch", "value": 16.0, "recall": 0.9,
         "qps": 9e6, "memory_mb": 200.0, "build_s": 3.0},
        {**base, "engine": "faiss-hnsw", "param": "efSearch", "value": 64.0, "recall": 0.97,
         "qps": 7e6, "memory_mb": 200.0, "build_s": 3.0},
        {**base, "engine": "faiss-ivf", "param": "nprobe", "value": 1.0, "recall": 0.5,
         "qps": 1e6, "memory_mb": 9.0, "build_s": 1.0},
    ])


def test_adjacent_ties_counts_pairs_and_all_zero_lists():
    d = np.array([[0, 0, 0], [1, 1, 2], [0, 1, 2], [3, 3, 3]])
    c = T.adjacent_ties(d)
    assert c == {"lists": 4, "k": 3, "pairs": 8, "tied pairs": 5, "tied share": 5 / 8,
                 "lists all tied": 2, "lists all zero": 1}
    line = T.ties_finding(c)
    assert "5 of 8 adjacent pairs (62.5%)" in line and "1 are all at distance 0" in line
    with pytest.raises(ValueError):
        T.adjacent_ties(np.zeros(3))


def test_served_ties_counts_ties_at_the_cut():
    rng = np.random.default_rng(1)
    u = C.pack(rng.random((30, 16)) < 0.5).words
    i = C.pack(rng.random((200, 16)) < 0.7).words
    c = T.served_ties(u, i, 16, k=10)
    assert c["lists"] == 30 and c["k"] == 10 and c["pairs"] == 270
    assert 0 <= c["lists tied at the cut"] <= 30 and c["tied pairs"] > 0
    assert "beyond the cut" in T.ties_finding(c)


def test_padding_check_holds_on_random_codes():
    rng = np.random.default_rng(0)
    u = C.pack(rng.random((40, 32)) < 0.5).words
    i = C.pack(rng.random((70, 32)) < 0.3).words
    assert S.padding_check(u, i, 32, block=16) == (40 * 70, 0)


def test_summary_table_and_findings_read_well():
    t = S.summary_table(_rows())
    assert t.loc[S.ENGINE_LABELS["binaryindex"], "setting"] == "exact"
    assert t["queries/s"].dtype.kind == "i"
    assert t.loc[S.ENGINE_LABELS["binaryindex"], "queries/s"] == 141760
    assert t.loc[S.ENGINE_LABELS["faiss-hnsw"], "setting"] == "efSearch=64"
    assert not t.loc[S.ENGINE_LABELS["faiss-ivf"], "≥ 0.95"]
    lines = S.findings(_rows())
    assert "49.4×" in lines[1]
    assert "does not reach recall 0.95" in lines[2]


def test_recorded_details_from_a_stored_benchmark(tmp_path):
    p = tmp_path / "b.json"
    p.write_text(json.dumps({"format": "phd-serving", "rows": _rows().to_dict("records"),
                             "provenance": {"commit": "0123456789abcdef", "date": "2026-01-01",
                                            "cpus": 2, "platform": "Linux", "command": "phd bench"}}))
    rec = S.load(p)
    d = S.recorded_details(rec, "b.json")
    assert d["recorded at commit"] == "0123456789" and d["recorded with"] == "phd bench"
    assert "Numba ?" in d["recorded on"]


def test_conclusion_from_engine_checks_and_benchmark():
    same = pd.DataFrame({"users": [6040, 6040], "same distances": [True, True],
                         "same ids (ties included)": [True, True]},
                        index=["faiss IndexBinaryFlat", "Milvus Lite BIN_FLAT"])
    lines = S.conclusion(same, _rows())
    assert lines[0].startswith("PHD is served exactly") and "6,040 users" in lines[0]
    assert "faiss IndexBinaryHNSW (padded) at efSearch=64" in lines[1]
    assert "49.4×" in lines[1] and "(26.3×)" in lines[1]
    same.loc["Milvus Lite BIN_FLAT", "same ids (ties included)"] = False
    assert S.conclusion(same, _rows())[0].startswith("Milvus Lite BIN_FLAT did not")


def _ivf_rows(ours_qps, ours_mb):
    import pandas as pd

    rows = [("binaryindex", "", float("nan"), 1.0, 300.0, 76.3)]
    rows += [("faiss-ivf", "nprobe", p, r, q, 229.0)
             for p, r, q in ((8, 0.97, 19000.0), (16, 0.990, 11000.0), (32, 0.995, 6000.0))]
    rows += [("phd-ivf", "nprobe", p, r, q, ours_mb)
             for (p, r), q in zip(((8, 0.97), (16, 0.991), (32, 0.996)), ours_qps)]
    return pd.DataFrame(rows, columns=["engine", "param", "value", "recall", "qps", "memory_mb"])


def test_native_ivf_against_padded_ivf_at_one_recall_is_computed():
    from phdlib.report import serving as rs

    cmp = rs.native_against_padded(_ivf_rows((30000.0, 14000.0, 9000.0), 114.0), 0.99)
    assert int(cmp["ours"]["value"]) == 16 and int(cmp["theirs"]["value"]) == 16
    assert cmp["speed"] == pytest.approx(14000 / 11000) and cmp["memory"] == pytest.approx(114 / 229)
    line = rs.native_finding(cmp)
    assert line.startswith("**Faster in half the memory.**") and "1.27 times" in line
    slow = rs.native_finding(rs.native_against_padded(_ivf_rows((3e4, 9e3, 5e3), 153.0), 0.99))
    assert slow.startswith("**Neither faster nor half the memory.**")
    never = rs.native_against_padded(_ivf_rows((3e4, 9e3, 5e3), 153.0), 0.999)
    assert never["ours"] is None and "did not reach recall 0.999" in rs.native_finding(never)
    assert rs.native_against_padded(_ivf_rows((1, 1, 1), 1).query("engine != 'phd-ivf'")) is None


def _rule_frame(base, bump, extra):
    import pandas as pd

    rows = [("expected", base, base - .02, np.nan), ("id", base + .001, base, 0.0),
            ("popularity", base + bump["popularity"], base, extra),
            ("mean-rating", base + bump["mean-rating"], base, extra),
            ("seeded:0", base - .001, base, extra), ("seeded:1", base + .001, base, extra)]
    f = pd.DataFrame(rows, columns=["rule", "ndcg@10", "mrr", "extra_seconds_per_query"])
    return f


def test_tie_rules_average_seeds_and_pick_the_default_from_the_numbers():
    from phdlib.report import served_ties as rs

    up = {"popularity": .002, "mean-rating": .006}
    frames = {(m, s): _rule_frame(.70 + .01 * s, up, 2e-6) for m in ("vh", "dcf") for s in (0, 1)}
    rules = rs.tie_rules(frames)
    row = rules[(rules.method == "vh") & (rules.rule == "seeded")].iloc[0]
    assert row["seeds"] == 2 and row["ndcg@10"] == pytest.approx(.705)   # seeded:0/1 averaged
    assert row["ndcg@10 std"] == pytest.approx(np.std([.70, .71], ddof=1))
    assert row["extra_us"] == pytest.approx(2.0)
    shown, bold = rs.tie_rule_table(rules)
    assert bold.loc[("vh", "mean rating"), "NDCG@10"] and not bold.loc[("vh", "item id"), "NDCG@10"]
    assert not bold.xs("expectation over ties (the book's metric)", level=1).any().any()
    lines = rs.tie_rule_findings(rules)
    assert lines[0].startswith("**Default: break ties by mean rating.**") and "+.0050" in lines[0]
    assert lines[1] == "It is the best served rule for every method."
    # flip one method's best rule: the sentence says they differ
    frames = {**frames, **{("dcf", s): _rule_frame(.70, {"popularity": .02, "mean-rating": 0},
                                                   2e-6) for s in (0, 1)}}
    lines = rs.tie_rule_findings(rs.tie_rules(frames))
    assert "differs by method" in lines[1] and "dcf, popularity" in lines[1]
