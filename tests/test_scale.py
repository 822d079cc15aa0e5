"""Cost measurement per method and stage, in a fresh process."""
from __future__ import annotations

import pytest

from phdlib import scale


def test_measure_reports_every_stage_in_its_own_process():
    df = scale.measure("synthetic", "popularity", 16, profile="quick", timeout=300)
    assert list(df["stage"]) == list(scale.STAGES)
    assert (df["wall_s"] >= 0).all() and (df["cpu_s"] >= 0).all()
    assert df["peak_rss_mb"].is_monotonic_increasing and (df["peak_rss_mb"] > 50).all()
    assert df["users"].iloc[0] == 6040 and 0 < df["ndcg@10"].iloc[0] <= 1


def test_sweep_records_failures_as_rows():
    df = scale.sweep(["synthetic"], ["item-mean", "no-such-method"], bits=(8,), timeout=300)
    assert set(df.loc[df["method"] == "item-mean", "stage"]) == set(scale.STAGES)
    err = df.loc[df["method"] == "no-such-method", "error"].iloc[0]
    assert "no-such-method" in err


def test_provenance_names_commit_date_machine_and_command():
    p = scale.provenance("phd scale --dataset synthetic")
    assert p["command"] == "phd scale --dataset synthetic" and p["cpus"] >= 1
    assert set(p) >= {"commit", "date", "host", "platform", "phdlib"}


def test_a_cell_that_runs_out_of_time_is_reported():
    with pytest.raises(RuntimeError, match="timed out"):
        scale.measure("synthetic", "mf-als", 64, profile="full", timeout=0.5)
