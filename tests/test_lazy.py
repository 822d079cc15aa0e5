"""The lazy-Adam comparison (studies.lazy, report.lazy) and the training-step report, on
hand-made runs and rows; the recorded training-benchmark file's checks."""
from __future__ import annotations

import json
from types import SimpleNamespace as NS

import numpy as np
import pandas as pd
import pytest
from test_report_helpers import make_run

from phdlib.bench import train as train_bench
from phdlib.report import lazy as rlazy
from phdlib.report import train_steps as rsteps
from phdlib.studies import lazy

LEVELS = {"vh": .70, "vh-lazy": .66, "vh-phd": .75, "vh-phd-lazy": .75}


def _runs(levels=LEVELS, seeds=(0, 1, 2)):
    out = {}
    for m, mu in levels.items():
        for b in (32, 64):
            out[(m, b)] = [make_run(m, b, s, {"ndcg@5": mu, "ndcg@10": mu + .02, "mrr": mu - .01})
                           for s in seeds]
    return out


def test_arms_and_tests_find_a_loss_for_vh_and_none_for_vh_phd():
    runs = _runs()
    t = lazy.arms_table(runs)
    assert len(t) == 8 and set(t["adam"]) == {"dense", "lazy"}
    assert list(t[t.bits == 32]["method"]) == ["vh", "vh-lazy", "vh-phd", "vh-phd-lazy"]
    tests = lazy.lazy_tests(runs)
    nd = tests[tests.metric == "ndcg@10"].set_index(["bits", "method"])
    assert (nd.loc[(32, "vh"), "verdict"] == "dense better") and nd.loc[(32, "vh"), "mean_diff"] < -.03
    assert nd.loc[(64, "vh-phd"), "verdict"] == "no significant difference"
    g = lazy.gain_table(t)
    assert set(g["adam"]) == {"dense", "lazy"}
    np.testing.assert_allclose(g["gain"], g["vh-phd"] - g["vh"])
    lines = rlazy.findings(tests, g, pd.DataFrame())
    assert lines[0].startswith("Lazy Adam makes it worse for VH:")
    assert lines[1].startswith("Lazy Adam does not change it significantly for VH_PHD")
    assert "so lazy Adam is the default nowhere" in rlazy.default_line(tests)
    same = lazy.lazy_tests(_runs({"vh": .7, "vh-lazy": .7}))
    assert "eligible" in rlazy.default_line(same)
    shown, bold = rlazy.arms_frame(t)
    assert bold.loc[(32, "VH")].all() and not bold.loc[(32, "VH, lazy Adam (ours)")].any()
    assert len(rlazy.tests_frame(tests)) == 12
    with pytest.raises(ValueError, match="no runs of VH"):
        lazy.arms_table({("dcf", 32): runs[("vh", 32)]})


def test_by_activity_splits_users_into_quartiles_of_training_ratings():
    runs = _runs()
    n_users = len(runs[("vh", 32)][0].per_user)
    counts = np.arange(1, n_users + 1)
    train = NS(user=np.repeat(np.arange(n_users), counts))
    act = lazy.by_activity(runs, train)
    assert len(act) == 2 * 2 * 4 and set(act["quartile"]) == {1, 2, 3, 4}
    a = act[(act.bits == 32) & (act.method == "vh")]
    assert a["users"].sum() == n_users and a.iloc[0]["ratings"] == f"1-{n_users // 4}"
    assert (a["diff"] < 0).all()
    line = rlazy.findings(lazy.lazy_tests(runs), pd.DataFrame(), act)[-1]
    assert line.startswith("Lazy Adam costs most among") and "of the 4 comparisons" in line
    assert rlazy.activity_frame(act).shape == (4, 4)


def _row(shape, step, threads, ms, vs, **kw):
    return {"shape": shape, "rows": {"ml-1m": 9300, "amazon": 287589}[shape], "bits": 64,
            "method": "vh-phd", "step": step, "threads": threads, "ms_per_iteration": ms,
            "vs_dense": vs, "limit_ms": kw.get("limit", ms / 1.5), "over_limit": 1.5,
            "full_rows_per_step": kw.get("full", 0.0), "touched_rows_per_step": kw.get("touched", 0.0)}


def test_train_steps_findings_and_the_recorded_files_checks(tmp_path):
    rows = [_row("amazon", "dense", 1, 17.0, 1.0), _row("amazon", "exact", 1, 5.0, 3.4,
                                                        full=100_000, touched=800),
            _row("amazon", "lazy", 1, 0.9, 19.0, touched=800), _row("ml-1m", "dense", 1, .6, 1.0)]
    lines = rsteps.findings(rows)
    assert "runs at 3.40× on 1 thread at the Amazon shape the dense step's speed" in lines[0]
    assert "the arithmetic of 100,000 row-steps per step, about 125" in lines[1]
    # dense 17 ms over (the exact limit 5 / 1.5 + the lazy step's 0.9 - 0.6 beyond its own)
    assert "its own limit, 0.30 ms), it would run at most 4.7 times as fast" in lines[2]
    assert lines[3].startswith("Lazy Adam, which moves the touched rows only, runs 19.0 times")
    no_lazy = rsteps.findings([r for r in rows if r["step"] != "lazy"])
    assert not any("at most" in line for line in no_lazy)
    slow = rsteps.findings(rows + [_row("ml-1m", "exact", 1, .7, .86)])
    assert "(ML-1M), replaying the missed steps costs more" in slow[1]
    assert rsteps.steps_frame(rows).shape == (4, 5)
    one = rsteps.steps_frame(rows, method="vh-phd", bits=64)
    assert one.index.names == ["shape", "step", "threads"] and len(one) == 4
    good = tmp_path / "steps.json"
    good.write_text(json.dumps({"format": train_bench.FORMAT, "provenance": {"command": "x"},
                                "rows": rows, "_run": {"repeats": 3}}))
    rec = train_bench.load(good)
    assert len(rec["rows"]) == 4 and rec["run"]["repeats"] == 3
    bad = tmp_path / "bad.json"
    for obj, msg in [({"format": "other"}, "not written by phd bench --train"),
                     ({"format": train_bench.FORMAT, "rows": []}, "non-empty list"),
                     ({"format": train_bench.FORMAT, "rows": [{"shape": "amazon"}]}, "row 0 lacks"),
                     ({"format": train_bench.FORMAT, "rows": [dict(rows[0], step="turbo")]},
                      "step 'turbo'")]:
        bad.write_text(json.dumps(obj))
        with pytest.raises(ValueError, match=msg):
            train_bench.load(bad)
    bad.write_text("{")
    with pytest.raises(ValueError, match="not a readable training benchmark"):
        train_bench.load(bad)


def _machine(rows_ms, bw, prov=None, run=None):
    """A benchmark record at the Amazon shape: ``rows_ms`` {(step, threads): (ms, vs)};
    the dense step bound by traffic, the exact one by arithmetic; ``bw`` per thread."""
    rows = []
    for (step, t), (ms, vs) in rows_ms.items():
        r = _row("amazon", step, t, ms, vs)
        traffic, arith = (ms, ms / 2) if step == "dense" else (ms / 100, ms / 1.2)
        r.update(limit_traffic_ms=traffic, limit_arithmetic_ms=arith, bandwidth_gbs=bw[t])
        rows.append(r)
    return {"provenance": prov or {}, "rows": pd.DataFrame(rows), "run": run or {}}


def test_the_step_benchmark_on_another_machine_is_compared_from_its_numbers():
    base = _machine({("dense", 1): (8.0, 1.0), ("dense", 2): (7.0, 1.0),
                     ("exact", 1): (2.0, 4.0), ("exact", 2): (1.4, 5.0)}, {1: 44.0, 2: 52.0},
                    run={"machine": {"cpu": "AMD EPYC", "cores": 2}})
    other = _machine({("dense", 1): (20.0, 1.0), ("dense", 2): (10.0, 1.0),
                      ("exact", 1): (4.0, 5.0), ("exact", 2): (2.5, 4.0)}, {1: 25.0, 2: 46.0},
                     prov={"cpus": 2, "cpu": "Intel Xeon"})
    assert rsteps.machine_text(base) == "2 cores of an AMD EPYC"
    assert rsteps.machine_text(other) == "2 cores of an Intel Xeon"
    assert rsteps.machine_text({"provenance": {}}) == "a machine the file does not name"
    lines = rsteps.machines_findings(base, other, "machine 1")
    assert lines[0].startswith("On machine 1 (2 cores of an Intel Xeon), the same benchmark "
                               "finds the exact sparse step of VH_PHD at 64 bits 5.00 times "
                               "as fast as the dense step on 1 thread and 4.00 times on 2 "
                               "threads at the Amazon shape, against 4.00 and 5.00 times above")
    assert lines[1] == ("Each of these steps, dense and exact, takes 1.4 to 2.5 times as long "
                        "there as above (4 timings, at the Amazon shape).")
    assert ("dense Adam step is bound by its memory traffic on both machines: a second thread "
            "makes it 2.00 times as fast there and 1.14 times above, as the memory bandwidth "
            "of its pass, measured in the same runs, goes from 25.0 to 46.0 GB/s there and "
            "from 44.0 to 52.0 GB/s above.") in lines[2]
    assert lines[3].startswith("The exact sparse Adam step is bound by its arithmetic on both")
    assert "1.60 times as fast there and 1.43 times above" in lines[3]
    assert lines[4] == ("On one thread the exact step runs at 1.50 times its own limit there "
                        "and 1.50 times above.")
    assert lines[5].startswith("So the exact step gains more over the dense one there on 1 "
                               "thread and less on 2 threads at the Amazon shape")
    slower = _machine({("dense", 1): (20.0, 1.0), ("exact", 1): (8.0, 2.5)}, {1: 25.0})
    last = rsteps.machines_findings(base, slower, "machine 2")
    assert last[-1] == ("So the exact step gains less over the dense one there than above on "
                        "every thread count measured at the Amazon shape.")
    assert not any("second thread" in line for line in last)
    none = _machine({("dense", 1): (20.0, 1.0)}, {1: 25.0})
    assert rsteps.machines_findings(base, none, "machine 3")[0].startswith(
        "Machine 3 (a machine the file does not name) measured no exact step")
    frame = rsteps.machines_frame(base, [other, slower])
    assert frame.index.names == ["shape", "step", "threads"] and len(frame) == 4
    assert list(frame.columns[:2]) == ["ms, above", "dense ÷ this, above"]
    np.testing.assert_allclose(frame["time, machine 1 ÷ above"], [2.5, 10 / 7, 2.0, 2.5 / 1.4])
    assert np.isnan(frame.loc[("Amazon", "exact sparse Adam", 2), "ms, machine 2"])
    assert frame.loc[("Amazon", "exact sparse Adam", 2), "dense ÷ this, machine 2"] == ""
