"""Experiment grids: expansion, resume from the store, parallel tuning points, failures,
provenance, joblib and Dask."""
from __future__ import annotations

import json
import shutil
import threading
import types

import numpy as np
import pytest

from phdlib import experiments as E
from phdlib import methods, results
from phdlib.bench.machine import cpu_model
from phdlib.experiments import runner, training
from phdlib.methods import ItemScoreModel, Method


# ----------------------------------------------------------------- a fake method on a fake split

CALLS: list[tuple] = []
_lock = threading.Lock()


def _ratings(n_users, n_items, seed):
    rng = np.random.default_rng(seed)
    user = np.repeat(np.arange(n_users), 4).astype(np.int32)
    item = np.concatenate([rng.permutation(n_items)[:4] for _ in range(n_users)]).astype(np.int32)
    return types.SimpleNamespace(user=user, item=item,
                                 rating=rng.integers(1, 6, user.size).astype(np.float32))


class _FakeSplit:
    def __init__(self, name, seed):
        self.dataset = types.SimpleNamespace(name=name, n_users=5, n_items=9)
        self.seed = seed
        self.fingerprint = f"fake-{name}-{seed}"
        self.train = _ratings(5, 9, 0)
        self.valid = _ratings(5, 9, 1)
        self.test = _ratings(5, 9, 2)


class _Fake(Method):
    """Random item scores; ``fail`` raises; ``tune`` runs one point per ``lr_grid`` value."""

    name = "fake"
    label = "Fake"
    model = ItemScoreModel

    def defaults(self, dataset, bits):
        return {"lr": 0.1, "max_iterations": 100, "train_sampling": "stochastic",
                "eval_sampling": "deterministic", "fail": False, "tune": False,
                "lr_grid": [0.1, 0.2, 0.3], "ties": "expected", "impl": 1}

    def grid(self, config, bits):
        return [{"lr": lr, "tune": False} for lr in config["lr_grid"]] if config["tune"] else []

    def fit(self, split, bits, seed, config, progress=False):
        with _lock:
            CALLS.append((split.dataset.name, bits, seed, tuple(sorted(config.items()))))
        if config["fail"]:
            raise RuntimeError("planned failure")
        rng = np.random.default_rng([seed, int(1000 * config["lr"])])
        return ItemScoreModel(bits, {"item_scores": rng.random(split.dataset.n_items)})


@pytest.fixture
def fake(monkeypatch, tmp_path):
    methods.register(_Fake())
    # where every cell's split is loaded (Cell.load_split), for status and the runner
    monkeypatch.setattr("phdlib.experiments.cells.load_split",
                        lambda ds, seed=0, data_dir=None: _FakeSplit(ds, seed))
    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path))
    CALLS.clear()
    yield tmp_path
    methods.unregister("fake")


def test_grid_expands_product_and_dedups():
    g = E.Grid(["a", "b"], [E.Block(["m1", "m2"], [32, 64], [0, 1]),
                            E.Block(["m1"], [32], [0])])
    cells = g.cells()
    assert len(cells) == 2 * 2 * 2 * 2
    assert len(set(cells)) == len(cells)
    assert cells[0] == E.Cell("a", "m1", 32, 0)


def test_plan_covers_every_part():
    g = E.plan("ml-1m", "full", seeds=2)
    cells = g.cells()
    methods_bits = {(c.method, c.bits) for c in cells}
    for m in methods.names():
        assert (m, 32) in methods_bits and (m, 64) in methods_bits
    assert {c.part for c in g.blocks} == set(E.PARTS) - {"protocol"}
    samp = [c for c in cells if "train_sampling" in c.overrides]
    assert len(samp) == 4 * 2 and {c.method for c in samp} == {"vh-phd"}
    assert {c.seed for c in cells} == {0, 1}
    vh_only = E.plan("ml-1m", "quick", parts=["vh"]).cells()
    assert {(c.method, c.bits) for c in vh_only} == {(m, b) for m in ("vh", "vh-phd", "vh-bias")
                                                     for b in (32, 64)}
    assert all(c.overrides["tune"] is False for c in vh_only)
    with pytest.raises(ValueError, match="unknown part"):
        E.plan("ml-1m", parts=["tabel1"])
    with pytest.raises(ValueError, match="unknown profile"):
        E.profile_overrides("fast", "vh")


def test_quick_profile_reports_unknown_keys(fake, monkeypatch):
    # the quick profile is the method's own declaration; QUICK is a view of it
    monkeypatch.setattr(methods.get("fake"), "quick", {"max_iterations": 7, "no_such_key": 1},
                        raising=False)
    assert E.QUICK["fake"] == {"max_iterations": 7, "no_such_key": 1}
    ov, missing = E.profile_overrides("quick", "fake")
    assert ov == {"max_iterations": 7} and missing == ["no_such_key"]
    assert E.profile_overrides("full", "fake") == ({}, [])
    note = E.profile_note("quick", ["fake"])
    assert "NOT the paper's settings" in note and "no_such_key" in note
    cells = E.Grid(["d"], [E.Block(["fake"], [8])], profile="quick").cells()
    assert cells[0].overrides == {"max_iterations": 7}


def test_quick_profile_of_an_undeclared_method_is_an_error(fake):
    """A method that declares no quick profile must not train at full strength in CI."""
    assert methods.get("fake").quick is methods.UNSET
    assert E.profile_overrides("full", "fake") == ({}, [])
    with pytest.raises(ValueError, match="method 'fake' declares no quick profile"):
        E.profile_overrides("quick", "fake")
    with pytest.raises(ValueError, match="'fake' declares no quick profile"):
        E.Grid(["d"], [E.Block(["fake"], [8])], profile="quick").cells()


def test_run_grid_runs_only_missing_cells_and_records_provenance(fake):
    g = E.Grid(["d"], [E.Block(["fake"], [8, 16], [0, 1], [{}, {"lr": 0.5}])])
    cells = g.cells()
    rep = E.run_grid(cells, jobs=1, progress=False, name="t")
    assert list(rep["status"]) == ["ran"] * 8 and len(CALLS) == 8
    assert results.index(fake).shape[0] == 8
    # second call: everything is found in the store, nothing is trained again
    rep2 = E.run_grid(cells, jobs=1, progress=False, name="t")
    assert list(rep2["status"]) == ["stored"] * 8 and len(CALLS) == 8
    assert np.allclose(rep2["ndcg@10"].to_numpy(), rep["ndcg@10"].to_numpy())
    # "interruption": remove two runs; only those two are recomputed
    for p in list(rep["path"])[:2]:
        shutil.rmtree(p)
    rep3 = E.run_grid(cells, jobs=1, progress=False, name="t")
    assert sorted(rep3["status"]) == ["ran"] * 2 + ["stored"] * 6 and len(CALLS) == 10
    manifests = sorted((fake / "_grids").glob("t-*.json"), key=lambda f: f.stat().st_mtime_ns)
    assert len(manifests) == 3
    m = json.loads(manifests[-1].read_text())
    assert m["phdlib"] and m["python"] and len(m["cells"]) == 8
    assert m["cpu"] == cpu_model() and m["cpus"] >= 1   # which machine, by name
    assert {c["status"] for c in m["cells"]} == {"ran", "stored"}
    assert all(c["key"] for c in m["cells"])
    # what each cell cost, as the worker measured it (a stored cell cost nothing here)
    assert rep3.attrs["manifest"] == str(manifests[-1])
    loaded = runner.load_manifest(manifests[-1])
    ran, kept = loaded["cells"][loaded["cells"]["status"] == "ran"], \
        loaded["cells"][loaded["cells"]["status"] == "stored"]
    assert (ran["peak_rss_mb"] > 0).all() and ran["peak_rss"].notna().all()
    assert (kept["cpu_seconds"] == 0).all() and kept["peak_rss_mb"].isna().all()
    assert kept["peak_rss"].isna().all()
    assert loaded["cpus"] >= 1 and loaded["client_peak_rss_mb"] > 0
    assert loaded["effective_jobs"] == 1 and loaded["load_average_start"] is not None
    assert (ran["peak_rss"] == "process").all()  # run in this process: its peak left whole
    run = results.load(rep3["path"].iloc[0])
    assert run.config["lr"] in (0.1, 0.5) and run.fingerprint == "fake-d-0" and run.version


def test_failures_are_reported_after_other_cells_ran(fake):
    cells = [E.Cell("d", "fake", 8, 0), E.Cell("d", "fake", 8, 1, (("fail", True),))]
    with pytest.raises(E.GridError, match="planned failure") as ei:
        E.run_grid(cells, jobs=1, progress=False)
    st = ei.value.report
    assert list(st["status"]) == ["ran", "failed"]
    rep = E.run_grid(cells, jobs=1, progress=False, errors="record")
    assert list(rep["status"]) == ["stored", "failed"]


def test_unknown_override_and_unknown_method(fake):
    with pytest.raises(KeyError, match="no config key"):
        E.run_grid([E.Cell("d", "fake", 8, 0, (("nope", 1),))], progress=False)
    with pytest.raises(methods.MethodNotAvailable, match="ghost"):
        E.run_grid([E.Cell("d", "ghost", 8)], progress=False)


def test_threads_backend_runs_cells_in_parallel(fake):
    import joblib

    cells = E.Grid(["d"], [E.Block(["fake"], [8], list(range(6)))]).cells()
    with joblib.parallel_config(backend="threading"):
        rep = E.run_grid(cells, jobs=2, progress=False)
    assert (rep["status"] == "ran").all() and len(CALLS) == 6


def test_dask_backend_local_cluster(fake):
    distributed = pytest.importorskip("distributed")
    import joblib

    cells = E.Grid(["d"], [E.Block(["fake"], [8, 16], [0, 1])]).cells()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with joblib.parallel_config(backend="dask"):
            rep = E.run_grid(cells, progress=False, name="dask")
        assert client.status == "running"
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
    assert (rep["status"] == "ran").all() and len(CALLS) == 4
    m = json.loads(next((fake / "_grids").glob("dask-*.json")).read_text())
    assert "Dask" in m["backend"]
    # the same cells are now in the store for any backend
    rep2 = E.run_grid(cells, jobs=1, progress=False)
    assert (rep2["status"] == "stored").all() and len(CALLS) == 4


def test_select_and_load_runs(fake):
    cells = [E.Cell("d", "fake", 8, 0), E.Cell("d", "fake", 8, 0, (("train_sampling", "deterministic"),))]
    E.run_grid(cells, progress=False)
    runs = E.load_runs(cells)
    assert len(runs) == 2
    plain = E.select(runs, method="fake", bits=8, train_sampling=None)
    assert list(plain) == [cells[0]]
    det = E.select(runs, train_sampling="deterministic")
    assert list(det) == [cells[1]]
    with pytest.raises(LookupError, match="no stored run"):
        E.load_runs([E.Cell("d", "fake", 16, 0)])


def test_cells_with_the_same_resolved_config_train_once(fake):
    # an explicit option equal to the default resolves to the same run
    cells = [E.Cell("d", "fake", 8, 0), E.Cell("d", "fake", 8, 0, (("train_sampling", "stochastic"),))]
    rep = E.run_grid(cells, progress=False)
    assert len(CALLS) == 1 and sorted(rep["status"]) == ["ran", "stored"]
    assert rep["key"].nunique() == 1 and rep["path"].nunique() == 1


def test_ensure_runs_the_plan_and_loads_runs(fake):
    runs, rep = E.ensure("d", "full", ["table1"], seeds=2, jobs=1, progress=False, methods_only=["fake"])
    assert sorted(rep["status"]) == ["ran"] * 4
    assert {(c.bits, c.seed) for c in runs} == {(32, 0), (32, 1), (64, 0), (64, 1)}
    assert all(r.method == "fake" for r in runs.values())
    runs2, rep2 = E.ensure("d", "full", ["table1"], seeds=2, progress=False, methods_only=["fake"])
    assert sorted(rep2["status"]) == ["stored"] * 4 and len(CALLS) == 4


# ----------------------------------------------------------------- tuning points as cells


def test_grid_cells_expand_tunable_cells_into_their_points(fake):
    cell = E.Cell("d", "fake", 8, 3, E.freeze({"tune": True, "lr_grid": [0.1, 0.4]}))
    pts = runner.grid_cells([cell, E.Cell("d", "fake", 8)])  # the untuned cell has no points
    assert [c.overrides["lr"] for c in pts] == [0.1, 0.4]
    assert all(c.seed == training.TUNE_SEED and c.bits == 8 and c.overrides["tune"] is False for c in pts)
    assert pts[0].overrides["lr_grid"] == (0.1, 0.4)  # lists are frozen to tuples
    # real methods: VH tunes at tune_bits; MF's points share fits, so they stay whole
    vh = runner.grid_cells([E.Cell("synthetic", "vh", 32)])
    assert len(vh) == 4 and {c.bits for c in vh} == {64}
    assert len(runner.grid_cells([E.Cell("synthetic", "dcf", 32)])) == 5
    assert runner.grid_cells([E.Cell("synthetic", "mf", 32)]) == []


def test_run_grid_trains_tuning_points_as_cells_then_assembles(fake):
    over = E.freeze({"tune": True})
    cells = [E.Cell("d", "fake", 8, 0, over), E.Cell("d", "fake", 8, 1, over)]
    rep = E.run_grid(cells, jobs=1, progress=False, name="tuned")
    # the report lists the cells asked for; the points ran before them
    assert list(rep["cell"]) == cells and list(rep["status"]) == ["ran", "ran"]
    assert len(CALLS) == 3 + 1  # three points at seed 0, the chosen point at seed 1
    tuned = results.load(rep["path"][0])
    assert len(tuned.grid) == 3 and tuned.grid["chosen"].sum() == 1
    other = results.load(rep["path"][1])
    assert other.extra["tuned_at"] == {"bits": 8, "seed": training.TUNE_SEED}
    assert other.extra["chosen"] == tuned.extra["chosen"]
    m = json.loads(next((fake / "_grids").glob("tuned-*.json")).read_text())
    assert len(m["cells"]) == 2 + 3  # the manifest records the points too
    assert len(results.index(fake)) == 3 + 1 + 1 + 1  # points, tuned, chosen point at seed 1, its run
    rep2 = E.run_grid(cells, jobs=1, progress=False, name="tuned")
    assert list(rep2["status"]) == ["stored", "stored"] and len(CALLS) == 4


# ----------------------------------------------------------------- the real thing, small and fast

def test_real_sanity_baselines_on_synthetic_data_in_processes(tmp_path, monkeypatch):
    """Real methods, real (synthetic) data, loky worker processes, then the CLI resumes."""
    from phdlib.cli import main

    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path))
    cells = [E.Cell("synthetic", m, b, 0) for m in ("item-mean", "popularity", "random") for b in (32, 64)]
    rep = E.run_grid(cells, jobs=2, progress=False, name="real")
    assert (rep["status"] == "ran").all(), rep[["method", "status", "error"]]
    m = runner.load_manifest(next((tmp_path / "_grids").glob("real-*.json")))
    assert len(m["workers"]) >= 1 and m["git_commit"] is not None and 1 <= m["effective_jobs"] <= 2
    # each cell's peak is its own where the OS lets a process reset its peak
    from phdlib.studies import scale

    if scale.usage_start()["reset"]:
        assert (m["cells"]["peak_rss"] == "since start").all()
    assert (m["cells"]["peak_rss_mb"] > 0).all() and (m["cells"]["cpu_seconds"] > 0).all()
    runs = E.load_runs(cells)
    split = E.load_split("synthetic")
    for c, r in runs.items():
        assert r.fingerprint == split.fingerprint and r.dataset == "synthetic"
        assert 0 <= r.metrics["ndcg@10"] <= 1 and len(r.per_user) == split.dataset.n_users
    rnd = [r for c, r in runs.items() if c.method == "random"][0]
    im = [r for c, r in runs.items() if c.method == "item-mean"][0]
    assert im.metrics["ndcg@10"] > rnd.metrics["ndcg@10"]
    copy = tmp_path / "copy.json"
    code = main(["reproduce", "--dataset", "synthetic", "--profile", "quick", "--part", "table1",
                 "--method", "item-mean", "--method", "popularity", "--method", "random", "--json",
                 "--manifest", str(copy)])
    assert code == 0
    written = [f for f in (tmp_path / "_grids").glob("reproduce-*.json")]
    assert len(written) == 1 and copy.read_text() == written[0].read_text()
    assert runner.load_manifest(copy)["command"].startswith("phd reproduce --dataset synthetic")
    rep2 = E.run_grid(cells, jobs=1, progress=False)
    assert (rep2["status"] == "stored").all()


def test_grid_cells_tune_mf_once_before_its_other_seeds():
    """MF's points share one fit, so its grid is one cell (seed 0), run before the seed-1 cell."""
    c1 = E.Cell("ml-1m", "mf", 32, seed=1)
    assert runner.grid_cells([c1]) == [E.Cell("ml-1m", "mf", 32, seed=0)]
    assert runner.grid_cells([E.Cell("ml-1m", "mf", 32, seed=0)]) == []
    # VH tunes at 64 bits, seed 0: a 32-bit cell expands into the 64-bit points
    pts = runner.grid_cells([E.Cell("ml-1m", "vh", 32, seed=2)])
    assert {(c.bits, c.seed) for c in pts} == {(64, 0)} and len(pts) == 4
    assert all(c.overrides["tune"] is False for c in pts)


def test_ensure_point_trains_one_seed_in_parallel_and_run_profiled_reuses_it(fake):
    import joblib

    with joblib.parallel_config(backend="threading"):  # the fake split lives in this process
        runs = E.ensure_point("d", "full", ["fake"], [8, 16], seed=3, split_seed=1, jobs=2)
    assert set(runs) == {("fake", 8), ("fake", 16)}
    assert {r.seed for r in runs.values()} == {3}
    n = len(CALLS)
    again = E.run_profiled("fake", _FakeSplit("d", 1), 16, "full", seed=3)
    assert len(CALLS) == n                      # the same stored run, not trained again
    assert again.key == runs[("fake", 16)].key


def test_load_manifest_names_the_file_it_rejects(tmp_path):
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"format": "phd-grid", "version": 99, "started": "",
                               "finished": "", "wall_seconds": 1.0, "jobs": 1, "cells": []}))
    with pytest.raises(ValueError, match="m.json: grid manifest version 99"):
        runner.load_manifest(bad)
    bad.write_text(json.dumps({"name": "t", "cells": []}))  # no format, no timings
    with pytest.raises(ValueError, match="m.json: not a grid manifest"):
        runner.load_manifest(bad)
    bad.write_text("{")
    with pytest.raises(ValueError, match="m.json: not a readable grid manifest"):
        runner.load_manifest(bad)


def test_a_cell_that_needs_no_tuning_runs_beside_the_tuning_points(fake):
    """Only the cells that reuse a tuned point wait for the points (no idle workers before)."""
    tuned = E.Cell("d", "fake", 8, 1, E.freeze({"tune": True}))
    free = E.Cell("d", "fake", 16, 0)
    points = runner.grid_cells([tuned, free])
    first, later = runner._phases([tuned, free, *points], points, None)  # all missing
    assert free in first and tuned in later and tuned not in first
    assert len(first) == 3 + 1  # the three points and the free cell
    rep = E.run_grid([tuned, free], jobs=1, progress=False)
    assert list(rep["status"]) == ["ran", "ran"]
    order = [(b, s) for _, b, s, _ in CALLS]
    assert order.index((16, 0)) < order.index((8, 1)), order


def test_a_cell_that_shares_work_with_a_waiting_cell_waits_with_it(fake, monkeypatch):
    """Cells that share work run as one task: a cell that needs no tuning but shares work
    with one that waits for its tuning points waits too (DCF beside DCF_PHD), and a cell
    that shares nothing with a waiting one does not."""
    tuned = E.Cell("d", "fake", 8, 1, E.freeze({"tune": True}))
    partner = E.Cell("d", "fake", 8, 1)  # same width and seed: the same shared work
    alone = E.Cell("d", "fake", 16, 1)
    monkeypatch.setattr(runner, "_shared_work", lambda c: ("work", c.bits, c.seed))
    points = runner.grid_cells([tuned, partner, alone])
    first, later = runner._phases([tuned, partner, alone, *points], points, None)
    assert tuned in later and partner in later and partner not in first
    assert alone in first and alone not in later
    assert set(points) <= first and not set(points) & later, "a tuning point was held back"
    assert len(runner.tasks([tuned, partner])) == 1, "the two waiting cells are not one task"
    first, later = runner._phases([tuned, partner, alone, *points], points, None, share=False)
    assert partner in first and tuned in later, "cells that share nothing need not wait"
    # a tuned cell of the points' own seed: the points share its work, and still never wait
    tuned0 = E.Cell("d", "fake", 8, 0, E.freeze({"tune": True}))
    points0 = runner.grid_cells([tuned0])
    assert {runner._shared_work(c) for c in points0} == {runner._shared_work(tuned0)}
    first, later = runner._phases([tuned0, *points0], points0, None)
    assert set(points0) <= first and not set(points0) & later, "a tuning point was held back"


def test_a_cell_whose_tuning_points_are_stored_does_not_wait(fake):
    tuned = E.Cell("d", "fake", 8, 1, E.freeze({"tune": True}))
    points = runner.grid_cells([tuned])
    E.run_grid(points, jobs=1, progress=False)  # the points are stored now
    first, later = runner._phases([tuned], points, None)
    assert tuned in first and not later
