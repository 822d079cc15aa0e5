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
                      "step 'turbo'"),
                     ({"format": train_bench.FORMAT, "rows": rows + rows[:1]},
                      "row 4 repeats row 0 \\(shape 'amazon', 64 bits, method 'vh-phd', step "
                      "'dense', threads 1\\): each is timed once")]:
        bad.write_text(json.dumps(obj))
        with pytest.raises(ValueError, match=msg):
            train_bench.load(bad)
    bad.write_text("{")
    with pytest.raises(ValueError, match="not a readable training benchmark"):
        train_bench.load(bad)



def _machine(rows_ms, bw=None, prov=None, run=None, parts=True):
    """A benchmark record: ``rows_ms`` {(shape, step, threads): (median ms, best ms, median
    ratio, over limit)}; the dense step's limit set by traffic, the exact one's by
    arithmetic (``parts``: the file has the two parts); ``bw`` bandwidth per thread."""
    rows = []
    for (shape, step, t), (ms, best, vs, over) in rows_ms.items():
        r = _row(shape, step, t, ms, vs, limit=ms / over)
        r.update(ms_best=best, over_limit=over)
        if parts:
            traffic, arith = (ms, ms / 2) if step == "dense" else (ms / 100, ms / 1.2)
            r.update(limit_traffic_ms=traffic, limit_arithmetic_ms=arith)
        if bw:
            r["bandwidth_gbs"] = bw[t]
        rows.append(r)
    return {"provenance": prov or {}, "rows": pd.DataFrame(rows), "run": run or {}}


AMAZON_ABOVE = {("amazon", "dense", 1): (8.0, 8.0, 1.0, .9),
                ("amazon", "dense", 2): (7.0, 5.6, 1.0, .9),
                ("amazon", "exact", 1): (2.0, 2.0, 4.0, 1.1),
                ("amazon", "exact", 2): (1.4, 1.4, 5.0, 1.3)}
AMAZON_THERE = {("amazon", "dense", 1): (20.0, 18.0, 1.0, 1.2),
                ("amazon", "dense", 2): (10.0, 10.0, 1.0, 1.2),
                ("amazon", "exact", 1): (4.0, 3.0, 5.0, 1.5),
                ("amazon", "exact", 2): (2.5, 2.0, 4.0, 1.4)}

def test_the_step_benchmark_on_another_machine_is_compared_from_its_numbers():
    base = _machine(AMAZON_ABOVE, {1: 44.0, 2: 52.0},
                    run={"machine": {"cpu": "AMD EPYC", "cores": 2}})
    other = _machine(AMAZON_THERE | {("ml-1m", "exact", 1): (.9, .8, .99, 1.7)},
                     {1: 25.0, 2: 46.0}, prov={"cpus": 2, "cpu": "Intel Xeon"})
    base["rows"] = pd.concat([base["rows"], _machine(
        {("ml-1m", "exact", 1): (.5, .5, .87, 2.0)}, {1: 80.0})["rows"]], ignore_index=True)
    assert rsteps.machine_text(base) == "2 cores of an AMD EPYC"
    assert rsteps.machine_text(other) == "2 cores of an Intel Xeon"
    assert rsteps.machine_text({"provenance": {}}) == "a machine the file does not name"
    lines = rsteps.machines_findings(base, other, "machine A")
    # best-round ratios: there 18/3 = 6.00 and 10/2 = 5.00; above 8/2 = 4.00, 5.6/1.4 = 4.00
    assert lines[0] == (
        "At the Amazon shape, the exact sparse step of VH_PHD at 64 bits runs 5.00 times as "
        "fast as the dense step on 1 thread and 4.00 times on 2 threads on machine A (2 cores "
        "of an Intel Xeon), and 4.00 and 5.00 times above (2 cores of an AMD EPYC); each "
        "figure is the median of the rounds' ratios of the two steps (best rounds: 6.00 and "
        "5.00 there, 4.00 and 4.00 above).")
    # no dense step timed at ML-1M: no best-round ratios to give
    assert lines[1] == "At the ML-1M shape, 0.99 times on 1 thread there and 0.87 times above."
    # 20/8, 10/7, 4/2, 2.5/1.4, .9/.5
    assert lines[2] == ("The dense and exact steps take 1.4 to 2.5 times as long there as "
                        "above (5 medians, at the Amazon and ML-1M shapes).")
    assert lines[3] == (
        "At the Amazon shape, the dense Adam step's limit is set by its memory traffic on both "
        "machines. A second thread makes it 2.00 times as fast there and 1.14 times above "
        "(best rounds: 1.80 there, 1.43 above), while the bandwidth of the traffic probe, "
        "measured in the same runs, goes from 25.0 to 46.0 GB/s there and from 44.0 to 52.0 "
        "GB/s above.")
    assert lines[4].startswith("The exact sparse Adam step's limit is set by its arithmetic "
                               "on both machines. A second thread makes it 1.60 times")
    assert lines[5] == ("On one thread the exact step takes 1.50 times the time of its own "
                        "limit there and 1.10 times above (best rounds: 1.12 there, 1.10 "
                        "above).")
    # 1 thread: 5.00 > 4.00 and 6.00 > 4.00 agree; 2 threads: 4.00 < 5.00 but 5.00 > 4.00
    assert lines[6] == ("So at the Amazon shape the exact step gains more there than above on "
                        "1 thread, by the medians of the rounds and by their best rounds "
                        "alike. On 2 threads the medians and the best rounds disagree on which "
                        "machine it gains more on, so this run cannot tell.")
    slower = _machine({("amazon", "dense", 1): (20.0, 20.0, 1.0, 1.0),
                       ("amazon", "exact", 1): (8.0, 8.0, 2.5, 1.0)}, parts=False)
    last = rsteps.machines_findings(base, slower, "machine B")
    assert last[-1] == ("So at the Amazon shape the exact step gains less there than above on "
                        "1 thread, by the medians of the rounds and by their best rounds alike.")
    assert not any("second thread" in line or "limit is set" in line for line in last)
    differ = _machine({k: v for k, v in AMAZON_THERE.items()}, {1: 25.0, 2: 46.0})
    differ["rows"].loc[differ["rows"]["step"] == "dense", "limit_arithmetic_ms"] = 99.0
    assert ("At the Amazon shape, the dense Adam step's limit is set by its arithmetic there "
            "and by its memory traffic above. A second thread makes it 2.00 times as fast there "
            "and 1.14 times above (best rounds: 1.80 there, 1.43 above).") in \
        rsteps.machines_findings(base, differ, "machine C")   # no probe bandwidth: not said
    none = _machine({("amazon", "dense", 1): (20.0, 20.0, 1.0, 1.0)})
    assert rsteps.machines_findings(base, none, "machine D") == [
        "Machine D (a machine the file does not name) measured no exact step of VH_PHD at 64 "
        "bits at a shape measured above."]
    frame = rsteps.machines_frame(base, [other, slower])
    assert frame.index.names == ["shape", "step", "threads"] and len(frame) == 5
    assert list(frame.columns[:2]) == ["ms, above", "dense ÷ this, above"]
    assert "ms, machine B" in frame.columns and "ms, machine A" in frame.columns
    np.testing.assert_allclose(frame["time, machine A ÷ above"],
                               [2.5, 10 / 7, 2.0, 2.5 / 1.4, 1.8])
    assert np.isnan(frame.loc[("Amazon", "exact sparse Adam", 2), "ms, machine B"])
    assert frame.loc[("Amazon", "exact sparse Adam", 2), "dense ÷ this, machine B"] == "n/a"
    twice = _machine(AMAZON_THERE)
    twice["rows"] = pd.concat([twice["rows"], twice["rows"].iloc[:1]], ignore_index=True)
    with pytest.raises(ValueError, match="twice for shape 'amazon', step 'dense', 1 thread"):
        rsteps.machines_findings(base, twice, "machine E")
