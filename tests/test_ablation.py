"""The distance ablation and the per-user bias arm (phdlib.ablation) on tiny synthetic runs."""
from __future__ import annotations

import numpy as np
import pytest

from phdlib import ablation, evaluation, methods, training

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
    assert table.attrs["skipped"] == ["item-mean 16 bits"]
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
