"""Cost measurement per method and stage, in a fresh process."""
from __future__ import annotations

import numpy as np
import pytest

from phdlib.bench import machine
from phdlib.studies import scale


def test_measure_reports_every_stage_in_its_own_process():
    df = scale.measure("synthetic", "popularity", 16, profile="quick", timeout=300)
    # nothing tuned, no full-catalogue evaluation asked for
    assert list(df["stage"]) == [s for s in scale.STAGES if s not in ("tune", "catalogue")]
    assert (df["wall_s"] >= 0).all() and (df["cpu_s"] >= 0).all()
    assert df["peak_rss_mb"].is_monotonic_increasing and (df["peak_rss_mb"] > 50).all()
    assert df["users"].iloc[0] == 6040 and 0 < df["ndcg@10"].iloc[0] <= 1


def test_sweep_records_failures_as_rows():
    df = scale.sweep(["synthetic"], ["item-mean", "no-such-method"], bits=(8,), timeout=300)
    assert set(df.loc[df["method"] == "item-mean", "stage"]) == \
        set(scale.STAGES) - {"tune", "catalogue"}
    err = df.loc[df["method"] == "no-such-method", "error"].iloc[0]
    assert "no-such-method" in err


def test_provenance_names_commit_date_machine_and_command():
    p = scale.provenance("phd scale --dataset synthetic")
    assert p["command"] == "phd scale --dataset synthetic" and p["cpus"] >= 1
    assert set(p) >= {"commit", "date", "host", "platform", "phdlib"}
    assert p["cpu"] == machine.cpu_model() and p["cpu"]


def test_the_cpu_is_named_with_its_family_and_model_where_the_system_gives_them():
    info = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
            "model name\t: AMD EPYC 9454 48-Core Processor\nflags\t\t: fpu\n\n"
            "processor\t: 1\ncpu family\t: 99\nmodel name\t: another one\n")
    assert machine.cpu_model(info) == "AMD EPYC 9454 48-Core Processor (family 25, model 17)"
    # no numbers (another architecture): the name alone; no name: the platform's
    assert machine.cpu_model("processor : 0\nmodel name : Some CPU\n") == "Some CPU"
    assert machine.cpu_model("processor : 0\nBogoMIPS : 50.00\n")


def test_a_cell_that_runs_out_of_time_is_reported():
    with pytest.raises(RuntimeError, match="timed out"):
        scale.measure("synthetic", "mf-als", 64, profile="full", timeout=0.5)


def test_a_sweep_written_to_a_file_resumes_and_keeps_failed_cells_for_a_rerun(tmp_path, monkeypatch):
    out = tmp_path / "s.json"
    calls = []
    real = scale.measure

    def counting(d, m, b, *a, **k):
        calls.append((d, m, b))
        return real(d, m, b, *a, **k)

    monkeypatch.setattr(scale, "measure", counting)
    scale.sweep(["synthetic"], ["popularity", "no-such-method"], bits=(8,), out=out, timeout=300)
    rec = scale.load(out)
    assert rec["provenance"]["profile"] == "quick" and rec["provenance"]["commit"]
    assert len(scale.per_cell(rec["rows"])) == 1          # the failed cell is not a measurement
    calls.clear()
    df = scale.sweep(["synthetic"], ["popularity", "no-such-method"], bits=(8,), out=out,
                     timeout=300)
    assert calls == [("synthetic", "no-such-method", 8)]  # measured cells are kept, failed rerun
    assert set(df["method"]) == {"popularity", "no-such-method"}
    assert df["commit"].notna().all() and df["date"].notna().all()  # per-cell provenance
    assert (df["cpu"] == machine.cpu_model()).all()   # and the CPU each cell ran on
    calls.clear()
    with pytest.raises(ValueError, match="profile 'quick', not 'full'"):
        scale.sweep(["synthetic"], ["popularity"], bits=(8,), profile="full", out=out)
    assert calls == [] and len(scale.load(out)["rows"]) == len(df)  # nothing lost


def test_load_names_the_file_that_is_not_a_sweep(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"rows": []}')
    with pytest.raises(ValueError, match="bad.json.*phd-scale"):
        scale.load(bad)
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json: not a readable"):
        scale.load(bad)


def test_growth_recovers_a_planted_power_law():
    import numpy as np
    import pandas as pd

    n = np.array([1e5, 1e6, 1e7])
    cells = pd.concat([
        pd.DataFrame({"dataset": ["a", "b", "c"], "method": "lin", "bits": 64, "ratings": n,
                      "wall_s": 3e-5 * n}),
        pd.DataFrame({"dataset": ["a", "b", "c"], "method": "quad", "bits": 64, "ratings": n,
                      "wall_s": 1e-9 * n**2}),
        pd.DataFrame({"dataset": ["a"], "method": "one", "bits": 64, "ratings": n[:1],
                      "wall_s": [1.0]}),
    ])
    k = scale.growth(cells).set_index("method")["exponent"]
    assert k["lin"] == pytest.approx(1.0) and k["quad"] == pytest.approx(2.0)
    assert np.isnan(k["one"])


def test_the_widths_of_a_method_share_a_store_and_the_tuning_width_runs_first(monkeypatch):
    # VH tunes its grid at 64 bits (tune_bits): inside a reproduction the 32-bit
    # run reuses that grid, so a sweep measures 64 first, through one store
    assert scale._tuning_width_first("vh-phd", "synthetic", (32, 64), "full") == [64, 32]
    assert scale._tuning_width_first("dcf", "synthetic", (32, 64), "full") == [32, 64]
    seen = []
    monkeypatch.setattr(scale, "measure",
                        lambda d, m, b, *a, root=None, **k: seen.append((m, b, root)) or
                        __import__("pandas").DataFrame([{"dataset": d, "method": m, "bits": b}]))
    scale.sweep(["synthetic"], ["vh", "dcf"], bits=(32, 64), profile="full")
    assert [(m, b) for m, b, _ in seen] == [("vh", 64), ("vh", 32), ("dcf", 32), ("dcf", 64)]
    assert seen[0][2] == seen[1][2] != seen[2][2] == seen[3][2]


def test_a_tuned_cell_times_its_grid_as_the_tune_stage(tmp_path):
    from phdlib import data, experiments
    from phdlib.experiments import training

    split = data.load_split("ml-100k")
    overrides, _ = experiments.profile_overrides("full", "mf", "ml-100k", 32)
    _, points, tune_bits = training.config_of("mf", split, 32, overrides)
    assert points and tune_bits == 32      # MF tunes at every width: the cell is the anchor
    df = scale.measure("ml-100k", "mf", 32, profile="full", timeout=600, root=tmp_path,
                       catalogue=True)
    assert list(df["stage"]) == list(scale.STAGES)
    trained = dict(zip(df["stage"], df["trained"]))
    # every grid point and the tuned run were trained in `tune`; `train` read them back
    assert trained["tune"] == len(points) + 1 and trained["train"] == 0
    again = scale.measure("ml-100k", "mf", 32, profile="full", timeout=600, root=tmp_path)
    assert list(again["stage"]) == [s for s in scale.STAGES if s != "catalogue"]
    assert (again["trained"] == 0).all()   # all of it read back: nothing trained twice
    # a cell's cost leaves the full-catalogue evaluation out unless asked
    c = scale.per_cell(df.assign(error=None))
    assert c["wall_s"].iloc[0] == pytest.approx(
        df.loc[df["stage"] != "catalogue", "wall_s"].sum())
    assert scale.per_cell(df, stages=("catalogue",))["wall_s"].iloc[0] == pytest.approx(
        df.loc[df["stage"] == "catalogue", "wall_s"].iloc[0])


def test_another_seed_reads_its_choice_from_the_anchor_run_in_its_tune_stage(tmp_path):
    from phdlib import data, experiments
    from phdlib.experiments import training

    split = data.load_split("ml-100k")
    overrides, _ = experiments.profile_overrides("full", "mf", "ml-100k", 32)
    _, points, _ = training.config_of("mf", split, 32, overrides)
    df = scale.measure("ml-100k", "mf", 32, profile="full", seed=1, timeout=600,
                       root=tmp_path)
    trained = dict(zip(df["stage"], df["trained"]))
    # the anchor (seed 0: its grid) in `tune`; in `train` this seed's one fit, stored
    # as the chosen point's run and as the cell's run that records the choice
    assert trained["tune"] == len(points) + 1 and trained["train"] == 2


def test_a_cell_measured_through_a_store_leaves_its_run_there(tmp_path):
    from phdlib import results

    scale.measure("synthetic", "popularity", 16, profile="quick", timeout=300, root=tmp_path)
    assert len(results.index(root=tmp_path)) == 1


def _cells(rows):
    import pandas as pd

    df = pd.DataFrame(rows, columns=["dataset", "method", "bits", "ratings", "wall_s"])
    return df.assign(cpu_s=df["wall_s"], peak_rss_mb=100.0, users=1, items=1)


def test_full_profile_projection_scales_quick_cost_by_the_ratio_at_the_largest_shared_size():
    import pandas as pd

    from phdlib.report import scale as rscale

    quick = _cells([("a", "vh", 64, 10, 1.0), ("b", "vh", 64, 100, 4.0),
                    ("c", "vh", 64, 1000, 30.0), ("c", "dcf", 64, 1000, 60.0)])
    full = _cells([("a", "vh", 64, 10, 5.0), ("b", "vh", 64, 100, 40.0)])
    r = rscale.full_over_quick(full, quick)
    assert r.to_dict("records")[0] == {"method": "vh", "bits": 64, "at": "b", "ratings": 100,
                                       "wall_ratio": 10.0, "cpu_ratio": 10.0}
    p = rscale.projected(full, quick).set_index("method")
    assert p.loc["vh", "projected_minutes"] == pytest.approx(30.0 * 10 / 60)
    assert np.isnan(p.loc["dcf", "projected_minutes"])   # no full measurement: no guess
    d = rscale.projected_by_dataset(full, quick)
    assert list(d.index) == ["c"] and np.isnan(d.loc["c", "projected_minutes"])
    # no full cell there, one projection unknown: the bound is the known cell's
    assert d.loc["c", "longest"] == "VH 64b" and d.loc["c", "longest_minutes"] == 5.0
    assert d.loc["c", "quick_minutes"] == pytest.approx(1.5)
    # a dataset measured in part: its measured cells count as measured, the
    # others are projected, and the one-seed sum adds the two
    part = pd.concat([full, _cells([("c", "dcf", 64, 1000, 120.0)])], ignore_index=True)
    p = rscale.projected(part, quick)
    assert list(zip(p["dataset"], p["method"])) == [("c", "vh")]
    d = rscale.projected_by_dataset(part, quick).loc["c"]
    assert (d["measured"], d["projected"]) == (1, 1)
    assert d["measured_minutes"] == pytest.approx(2.0)
    assert d["one_seed_minutes"] == pytest.approx(2.0 + 5.0) and d["within 60 min"]
    # the wall time is bounded below by the longest cell, measured or projected
    assert d["longest"] == "VH 64b" and d["longest_minutes"] == pytest.approx(5.0)
    assert d["jobs"] == 2 and d["jobs_at_least"] == pytest.approx(5.0)
    assert rscale.projected_by_dataset(part, quick, jobs=1).loc["c", "jobs_at_least"] == \
        pytest.approx(7.0)
    # a dataset the full sweep measured whole is not projected at all
    whole = pd.concat([part, _cells([("c", "vh", 64, 1000, 60.0)])], ignore_index=True)
    assert rscale.projected_by_dataset(whole, quick).empty
    # frames joined without ignore_index (repeated labels) give the same table
    again = pd.concat([full, _cells([("c", "dcf", 64, 1000, 120.0)])])
    assert not again.index.is_unique
    pd.testing.assert_frame_equal(rscale.projected_by_dataset(again, quick),
                                  rscale.projected_by_dataset(part, quick))
    assert pd.isna(rscale.projected_by_dataset(part, quick, jobs=None).loc["c", "jobs"])


def test_catalogue_cost_sets_the_catalogue_stage_beside_the_rest_of_the_cell():
    import pandas as pd

    from phdlib.report import scale as rscale

    stages = [("load", 1.0), ("train", 10.0), ("evaluate", 1.0), ("catalogue", 50.0)]
    rows = pd.DataFrame(
        [{"dataset": "d", "method": "vh-phd", "bits": 64, "stage": s, "wall_s": w,
          "cpu_s": w / 2, "peak_rss_mb": 1.0, "users": 1000, "items": 500, "ratings": 9}
         for s, w in stages]
        + [{"dataset": "d", "method": "mf", "bits": 64, "stage": s, "wall_s": w, "cpu_s": w,
            "peak_rss_mb": 1.0, "users": 1000, "items": 500, "ratings": 9}
           for s, w in stages[:3]])          # a cell measured without --catalogue
    t = rscale.catalogue_cost(rows)
    assert list(t["method"]) == ["VH_PHD"]
    r = t.iloc[0]
    assert r["catalogue_wall_s"] == 50.0 and r["rest_wall_s"] == 12.0
    assert r["evaluate_wall_s"] == 1.0
    assert r["pairs_g"] == pytest.approx(5e-4) and r["ns_per_pair"] == pytest.approx(25e9 / 5e5)


def test_least_wall_time_is_the_longest_cell_or_the_even_share_whichever_is_larger():
    from phdlib.report import reproduction as rscale

    assert rscale.least_wall_minutes([20.0, 20.0, 20.0, 20.0], 2) == 40.0   # the even share
    assert rscale.least_wall_minutes([50.0, 10.0, 10.0], 2) == 50.0         # one long cell
    assert rscale.least_wall_minutes([50.0, 10.0, 10.0]) == 50.0            # any workers
    assert rscale.least_wall_minutes([30.0, 30.0], 1) == 60.0
    assert rscale.least_wall_minutes([]) == 0.0
    # a cell of unknown time counts as none: still a lower bound
    assert rscale.least_wall_minutes([5.0, float("nan")], 2) == 5.0
    assert rscale.least_wall_minutes([float("nan")], 2) == 0.0
    for bad in (0, -1):
        with pytest.raises(ValueError, match="jobs: at least 1"):
            rscale.least_wall_minutes([1.0, 2.0], bad)


def test_by_dataset_does_not_call_a_partial_sweep_within_the_target():
    import pandas as pd

    from phdlib.report import scale as rscale

    cells = pd.DataFrame({"dataset": ["a", "a", "b", "b"], "method": ["x", "y", "x", "y"],
                          "bits": 64, "wall_s": [60.0, 60.0, 60.0, 5000.0], "cpu_s": 1.0,
                          "peak_rss_mb": 100.0, "users": 1, "items": 1,
                          "ratings": [10, 10, 20, 20]})
    whole = rscale.by_dataset(cells)
    assert list(whole["within 60 min"]) == [True, False]
    part = rscale.by_dataset(cells.iloc[[0, 2, 3]], expected=2)
    assert part.loc["a", "within 60 min"] is pd.NA          # 1 of 2 cells, under the target
    assert part.loc["b", "within 60 min"] == False  # noqa: E712 - already over it


def _fake_measure(calls):
    import time

    import pandas as pd

    def measure(d, m, b, *a, **k):
        calls.append((d, m, b))
        time.sleep(0.02)  # the two sweeps below interleave their writes
        return pd.DataFrame([{"dataset": d, "method": m, "bits": b, "stage": s, "wall_s": 1.0,
                              "cpu_s": 1.0, "peak_rss_mb": 100.0, "users": 10, "items": 5,
                              "ratings": 50} for s in scale.STAGES])

    return measure


def test_two_sweeps_writing_one_file_at_once_keep_every_cell(tmp_path, monkeypatch):
    import threading
    import time

    out, calls = tmp_path / "s.json", []
    monkeypatch.setattr(scale, "measure", _fake_measure(calls))
    real_load = scale.load

    def slow_load(path):  # widen the read-merge-write window: without the lock, cells are lost
        rec = real_load(path)
        time.sleep(0.05)
        return rec

    monkeypatch.setattr(scale, "load", slow_load)
    monkeypatch.setattr(scale, "_tuning_width_first", lambda m, d, bits, p: list(bits))
    sweeps = [threading.Thread(target=scale.sweep, args=(["x"], names),
                               kwargs={"bits": (8, 16, 32), "out": out})
              for names in (["a", "b"], ["c", "d"])]
    for t in sweeps:
        t.start()
    for t in sweeps:
        t.join()
    cells = scale.per_cell(scale.load(out)["rows"])
    assert len(calls) == 12 and len(cells) == 12  # no sweep overwrote the other's cells


def test_redo_measures_the_cells_asked_for_again_and_keeps_the_others(tmp_path, monkeypatch):
    out, calls = tmp_path / "s.json", []
    monkeypatch.setattr(scale, "measure", _fake_measure(calls))
    monkeypatch.setattr(scale, "_tuning_width_first", lambda m, d, bits, p: list(bits))
    scale.sweep(["x"], ["a", "b"], bits=(8,), out=out)
    first = scale.load(out)["rows"]
    calls.clear()
    scale.sweep(["x"], ["a"], bits=(8,), out=out)
    assert calls == []                                 # resumed: nothing to do
    df = scale.sweep(["x"], ["a"], bits=(8,), out=out, redo=True)
    assert calls == [("x", "a", 8)]
    rows = scale.load(out)["rows"]
    assert len(rows) == len(first) == len(df) and set(rows["method"]) == {"a", "b"}


def test_commits_says_which_cells_each_commit_measured():
    import pandas as pd

    from phdlib.report import scale as R

    rows = pd.DataFrame([
        {"dataset": "d", "method": "vh", "bits": b, "stage": s, "commit": c, "date": t,
         "error": None}
        for b, c, t in ((32, "a" * 40, "2026-01-02"), (64, "b" * 40, "2026-01-03"))
        for s in scale.STAGES] + [{"dataset": "d", "method": "mf", "bits": 8, "stage": None,
                                   "commit": "c" * 40, "date": "2026-01-04", "error": "boom"}])
    t = R.commits(rows)
    assert list(t["commit"]) == ["a" * 10, "b" * 10]  # a failed cell measured nothing
    assert list(t["cells"]) == [1, 1] and t["methods"].iloc[0] == "VH"


def test_a_file_keeps_every_failed_cell_and_a_failure_does_not_replace_a_measurement(
        tmp_path, monkeypatch):
    out, calls = tmp_path / "s.json", []
    fake = _fake_measure(calls)

    def measure(d, m, b, *a, **k):
        if m.startswith("bad"):
            raise RuntimeError(f"{d}/{m}/{b}b: timed out")
        return fake(d, m, b, *a, **k)

    monkeypatch.setattr(scale, "measure", measure)
    monkeypatch.setattr(scale, "_tuning_width_first", lambda m, d, bits, p: list(bits))
    df = scale.sweep(["x"], ["bad1", "ok", "bad2"], bits=(8,), out=out)
    rows = scale.load(out)["rows"]
    assert set(rows.loc[rows["error"].notna(), "method"]) == {"bad1", "bad2"}
    assert set(df.loc[df["error"].notna(), "method"]) == {"bad1", "bad2"}
    monkeypatch.setattr(scale, "measure", lambda d, m, b, *a, **k: measure(d, "bad", b))
    df = scale.sweep(["x"], ["ok"], bits=(8,), out=out, redo=True)
    assert df["error"].notna().any()  # this run's failure is reported...
    kept = scale.per_cell(scale.load(out)["rows"])
    assert list(kept["method"]) == ["ok"]  # ...and the measurement kept
    df = scale.sweep(["x"], ["ok"], bits=(8,), out=out)
    assert "error" not in df or df["error"].isna().all()  # others' failures are not this run's


def test_a_reproduction_manifest_is_summed_per_method_and_against_the_targets():
    import pandas as pd

    from phdlib.report import reproduction as R

    cells = pd.DataFrame([
        # VH at 64 bits: its grid's point and the cell; at 32 bits reused (stored)
        {"label": "p", "method": "vh", "bits": 64, "status": "ran", "seconds": 600.0,
         "cpu_seconds": 590.0, "peak_rss_mb": 2048.0, "peak_rss": "since start"},
        {"label": "c", "method": "vh", "bits": 64, "status": "ran", "seconds": 1200.0,
         "cpu_seconds": 1190.0, "peak_rss_mb": 1024.0, "peak_rss": "since start"},
        {"label": "s", "method": "vh", "bits": 32, "status": "stored", "seconds": 0.0,
         "cpu_seconds": 0.0, "peak_rss_mb": None, "peak_rss": None},
        {"label": "m", "method": "mf", "bits": 32, "status": "ran", "seconds": 1200.0,
         "cpu_seconds": 1100.0, "peak_rss_mb": 512.0, "peak_rss": "process"}])
    rep = {"wall_seconds": 1800.0, "jobs": 2, "effective_jobs": 2, "client_peak_rss_mb": 1024.0,
           "cells": cells}
    t = R.reproduction(rep)
    assert list(t["method"]) == ["VH", "MF"]  # the costlier first
    assert list(t["cells"]) == [2, 1] and list(t["minutes"]) == [30.0, 20.0]
    assert list(t["peak_gib"]) == [2.0, 0.5] and list(t["peak_is"]) == ["own", "bound"]
    s = R.reproduction_summary(rep)
    assert s["cells"] == 3 and s["cell_minutes"] == 50.0 and s["wall_minutes"] == 30.0
    assert s["busy"] == pytest.approx(50 / 60) and s["peak_gib"] == 2.0
    assert s["least_minutes"] == pytest.approx(25.0)   # 50 min of cells on 2 jobs
    assert s["memory_bound_gib"] == pytest.approx((1024 + 2 * 2048) / 1024)
    assert s["within 60 min"] is True and s["within 8 GiB"] is True
    # a failed cell, an hour and more, or a bound over 8 GiB is not within
    failed = cells.assign(status=["ran", "ran", "failed", "ran"])
    assert R.reproduction_summary({**rep, "cells": failed})["within 60 min"] is False
    assert R.reproduction_summary({**rep, "wall_seconds": 3601.0})["within 60 min"] is False
    big = cells.assign(peak_rss_mb=[4000.0, 1.0, None, 1.0])   # 1 + 2 x 3.9 GiB
    assert R.reproduction_summary({**rep, "cells": big})["within 8 GiB"] is False
    # one job when the number is not known; cells run in the client count once
    assert R.reproduction_summary({**rep, "effective_jobs": None})["busy"] == \
        pytest.approx(50 / 30)
    inside = R.reproduction_summary({**rep, "host": "h", "client_pid": 7, "workers": ["h:7"]})
    assert inside["memory_bound_gib"] == inside["peak_gib"] == 2.0
    # a run that trained nothing measured nothing: no verdict
    none = R.reproduction_summary({**rep, "cells": cells[cells["status"] == "stored"],
                                   "client_peak_rss_mb": None})
    assert none["within 60 min"] is pd.NA and none["within 8 GiB"] is pd.NA


def test_expectations_take_each_datasets_cells_from_its_own_reproduction():
    """A dataset with a ``phd reproduce`` manifest is answered by it (its cells, its wall
    time, nothing projected); a dataset without one by the sweeps, missing cells
    projected from the quick profile and the wall time bounded."""
    import pandas as pd

    from phdlib.report import reproduction as R
    from phdlib.report import scale as S

    def cell(d, m, b, wall, peak=100.0, ratings=10):
        return {"dataset": d, "method": m, "bits": b, "wall_s": wall, "cpu_s": wall,
                "peak_rss_mb": peak, "users": 1, "items": 1, "ratings": ratings}

    quick = pd.DataFrame([cell("a", "mf", 32, 60.0), cell("a", "vh", 32, 60.0),
                          cell("b", "mf", 32, 60.0, ratings=20),
                          cell("b", "vh", 32, 60.0, ratings=20)])
    full = pd.DataFrame([cell("a", "mf", 32, 600.0), cell("b", "mf", 32, 600.0, ratings=20),
                         cell("b", "vh", 32, 6000.0, ratings=20)])
    man = {"wall_seconds": 2400.0, "effective_jobs": 2, "client_peak_rss_mb": 1024.0,
           "cells": pd.DataFrame([
               {"label": x, "dataset": "b", "method": m, "bits": 32, "status": "ran",
                "seconds": sec, "cpu_seconds": sec, "peak_rss_mb": 2048.0,
                "peak_rss": "since start"}
               for x, m, sec in (("p", "vh", 600.0), ("c", "vh", 1800.0),
                                 ("m", "mf", 300.0))])}
    costs = R.cell_costs(man)
    assert list(costs["method"]) == ["vh", "mf"] and list(costs["wall_s"]) == [2400.0, 300.0]
    e = S.expectations(quick, full, [man])
    assert list(e.index) == ["a", "b"]
    a, b = e.loc["a"], e.loc["b"]
    # "a": VH projected from the quick profile by "b"'s sweep ratio (6000 / 60 = 100)
    assert a["projected"] == 1 and a["full_minutes"] == pytest.approx(10 + 100)
    assert not a["jobs_measured"] and a["jobs_minutes"] == pytest.approx(100)
    # "b": the manifest's cells (not the sweep's 6,000 s VH), its wall time, its peak
    assert b["projected"] == 0 and b["full_minutes"] == pytest.approx(45.0)
    assert b["jobs_measured"] and b["jobs_minutes"] == pytest.approx(40.0)
    assert b["longest"] == "VH 32b" and b["longest_minutes"] == pytest.approx(40.0)
    assert b["peak_gib"] == pytest.approx(2.0)
    assert S.expectations(quick, full)["jobs_measured"].sum() == 0   # no manifest: bounds
    # the sentences: "a"'s projected VH cell is over the hour, "b"'s run within it
    (line,) = S.longest_findings(e)
    assert line.startswith("**Over the hour") and "(VH 32b, projected) takes 100 min" in line
    assert line.count("whose longest cell") == 1   # "b" is within the hour
    (line,) = S.longest_findings(e.drop(index="a"))
    assert line.startswith("**No cell is over the hour") and "40 min" in line
    text = R.summary_sentence(man, "B")
    assert "3 cells ran" in text and "40.0 min" in text and "(within the hour)" in text
    assert "at most 5.00 GiB at once (within 8 GiB)" in text   # 1 GiB + 2 jobs x 2 GiB


def test_expectations_name_the_table1_methods_no_file_measured():
    """A dataset whose files lack one of today's Table 1 methods says so, in the table and
    once in each finding about it (naming the datasets a sentence covers), instead of
    passing its minutes off as all of Table 1; in every branch of the findings."""
    import pandas as pd

    from phdlib.report import scale as S

    def cell(d, m, wall, ratings):
        return {"dataset": d, "method": m, "bits": 32, "wall_s": wall, "cpu_s": wall,
                "peak_rss_mb": 100.0, "users": 1, "items": 1, "ratings": ratings}

    # a, a2: within the hour, without dcf-phd; c: two 40-min cells, 40 to 80 min with
    # 2 jobs (about the hour), without dcf-phd; b: over the hour, every method measured
    quick = pd.DataFrame([cell("a", "mf", 60.0, 10), cell("a2", "mf", 60.0, 12),
                          cell("c", "mf", 60.0, 15), cell("c", "vh", 60.0, 15),
                          cell("b", "mf", 60.0, 20), cell("b", "dcf-phd", 60.0, 20)])
    full = pd.DataFrame([cell("a", "mf", 600.0, 10), cell("a2", "mf", 900.0, 12),
                         cell("c", "mf", 2400.0, 15), cell("c", "vh", 2400.0, 15),
                         cell("b", "mf", 600.0, 20), cell("b", "dcf-phd", 9000.0, 20)])
    e = S.expectations(quick, full, methods=["mf", "dcf-phd"])
    assert e.loc["a", "unmeasured"] == ("dcf-phd",) and e.loc["b", "unmeasured"] == ()
    assert e.loc["c", "jobs_minutes"] == pytest.approx(40) and e.loc["c", "jobs_upper_minutes"] == 80
    shown = S.expectations_display(e)
    assert list(shown["Table 1 methods not measured"]) == [S.label("dcf-phd")] * 3 + ["none"]
    lines = S.expectation_findings(e)
    dcf_phd = S.label("dcf-phd")
    (fit,) = [x for x in lines if x.startswith("**Within the hour")]
    assert fit.startswith("**Within the hour:** one seed of every measured method"), fit
    assert fit.count(dcf_phd) == 1, fit
    assert (f"No recorded file measured {dcf_phd} on a and a2: the minutes there and the "
            f"bound on the seeds are those of Table 1's other methods.") in fit, fit
    (about,) = [x for x in lines if x.startswith("**c: about the hour.**")]
    assert "takes 40 to 80 min with 2 jobs" in about, about
    assert about.endswith(f"No recorded file measured {dcf_phd} on c: the minutes there are "
                          "those of Table 1's other methods."), about
    assert "The measured methods' 5 seeds take at most" in fit and "respectively" in fit, fit
    (one,) = [x for x in S.expectation_findings(e.drop(index="a2"))
              if x.startswith("**Within the hour")]
    assert "respectively" not in one and f"measured {dcf_phd} on a:" in one, one
    (over,) = [x for x in lines if x.startswith(f"**{S.dataset_label('b')}: hours")]
    assert "measured" not in over.replace("measured end to end", ""), over
    # not checked when no method list is given: no column, no qualification
    plain = S.expectations(quick, full)
    assert "Table 1 methods not measured" not in S.expectations_display(plain)
    assert not any("No recorded file" in x or "every measured" in x
                   for x in S.expectation_findings(plain))


def test_a_resumed_sweep_asked_for_the_catalogue_measures_cells_held_without_it(
        tmp_path, monkeypatch):
    import pandas as pd

    def fake(d, m, b, *a, catalogue=False, **k):
        calls.append((m, b, catalogue))
        stages = ["load", "train"] + (["catalogue"] if catalogue else [])
        return pd.DataFrame([{"dataset": d, "method": m, "bits": b, "stage": s, "wall_s": 1.0,
                              "cpu_s": 1.0, "peak_rss_mb": 1.0, "users": 1, "items": 1,
                              "ratings": 1} for s in stages])

    calls: list = []
    monkeypatch.setattr(scale, "measure", fake)
    out = tmp_path / "s.json"
    scale.sweep(["synthetic"], ["popularity"], bits=(8, 16), out=out, progress=False)
    calls.clear()
    df = scale.sweep(["synthetic"], ["popularity"], bits=(8, 16), out=out, progress=False,
                     catalogue=True)
    assert calls == [("popularity", 8, True), ("popularity", 16, True)]
    assert (df["stage"] == "catalogue").sum() == 2
    calls.clear()   # now held with their catalogue stage: kept
    scale.sweep(["synthetic"], ["popularity"], bits=(8, 16), out=out, progress=False,
                catalogue=True)
    assert calls == []


def test_per_cell_of_a_sweep_where_every_cell_failed_is_an_empty_table():
    import pandas as pd

    rows = pd.DataFrame([{"dataset": "d", "method": "vh", "bits": 8, "error": "timed out"}])
    t = scale.per_cell(rows)
    assert t.empty and {"wall_s", "peak_rss_mb", "ratings"} <= set(t.columns)


def test_phd_scale_where_every_cell_fails_prints_each_reason_once(capsys):
    from phdlib.cli import main

    rc = main(["scale", "--dataset", "synthetic", "--method", "popularity", "--bits", "8",
               "--timeout", "0.001"])
    out = capsys.readouterr().out
    assert rc == 1 and "no cell was measured" in out
    assert out.count("synthetic/popularity/8b") == 1 and "timed out" in out


def test_a_cell_killed_on_time_leaves_no_temporary_store(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)   # TMPDIR is read again
    # long enough for the child to start and be well into the cell (its grid
    # takes minutes) when it is killed
    with pytest.raises(RuntimeError, match="timed out"):
        scale.measure("synthetic", "mf-als", 64, profile="full", timeout=6)
    assert not list(tmp_path.glob("phd-scale-cell-*"))
