"""Experiment grids: expansion, resume from the store, failures, provenance, joblib and Dask."""
from __future__ import annotations

import json
import threading

import numpy as np
import pandas as pd
import pytest

from phdlib import experiments as E
from phdlib import methods, results


# ----------------------------------------------------------------- a fake method on a fake split

CALLS: list[tuple] = []
_lock = threading.Lock()


class _FakeDataset:
    def __init__(self, name):
        self.name = name


class _FakeSplit:
    def __init__(self, name, seed):
        self.dataset = _FakeDataset(name)
        self.seed = seed
        self.fingerprint = f"fake-{name}-{seed}"


class _Fake:
    name = "fake"

    def defaults(self, dataset, bits):
        return {"lr": 0.1, "max_iterations": 100, "train_sampling": "stochastic",
                "eval_sampling": "deterministic", "fail": False}

    def train(self, split, bits, seed, config, progress):
        with _lock:
            CALLS.append((split.dataset.name, bits, seed, tuple(sorted(config.items()))))
        if config["fail"]:
            raise RuntimeError("planned failure")
        rng = np.random.default_rng(seed)
        per_user = pd.DataFrame({"user": np.arange(5), "ndcg@10": rng.random(5)})
        return results.Run(method="fake", dataset=split.dataset.name, bits=bits, seed=seed,
                           config=config, metrics={"ndcg@10": float(per_user["ndcg@10"].mean())},
                           per_user=per_user, fingerprint=split.fingerprint, wall_seconds=0.01)


FAKE = _Fake()


@pytest.fixture
def fake(monkeypatch, tmp_path):
    monkeypatch.setitem(methods.REGISTRY, "fake", f"{__name__}:FAKE")
    monkeypatch.setattr(E, "load_split", lambda ds, seed=0, data_dir=None: _FakeSplit(ds, seed))
    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path))
    CALLS.clear()
    return tmp_path


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
    for m in E.PAPER_METHODS + E.ADDITIONS:
        assert (m, 32) in methods_bits and (m, 64) in methods_bits
    samp = [c for c in cells if "train_sampling" in c.overrides]
    assert len(samp) == 4 * 2 and {c.method for c in samp} == {"vh-phd"}
    assert {c.seed for c in cells} == {0, 1}
    with pytest.raises(ValueError, match="unknown part"):
        E.plan("ml-1m", parts=["tabel1"])
    with pytest.raises(ValueError, match="unknown profile"):
        E.profile_overrides("fast", "vh")


def test_quick_profile_reports_unknown_keys(fake, monkeypatch):
    monkeypatch.setitem(E.QUICK, "fake", {"max_iterations": 7, "no_such_key": 1})
    ov, missing = E.profile_overrides("quick", "fake")
    assert ov == {"max_iterations": 7} and missing == ["no_such_key"]
    assert E.profile_overrides("full", "fake") == ({}, [])
    note = E.profile_note("quick", ["fake"])
    assert "NOT the paper's settings" in note and "no_such_key" in note
    cells = E.Grid(["d"], [E.Block(["fake"], [8])], profile="quick").cells()
    assert cells[0].overrides == {"max_iterations": 7}


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
        import shutil
        shutil.rmtree(p)
    rep3 = E.run_grid(cells, jobs=1, progress=False, name="t")
    assert sorted(rep3["status"]) == ["ran"] * 2 + ["stored"] * 6 and len(CALLS) == 10
    manifests = sorted((fake / "_grids").glob("t-*.json"), key=lambda f: f.stat().st_mtime_ns)
    assert len(manifests) == 3
    m = json.loads(manifests[-1].read_text())
    assert m["phdlib"] and m["python"] and len(m["cells"]) == 8
    assert {c["status"] for c in m["cells"]} == {"ran", "stored"}
    assert all(c["key"] for c in m["cells"])
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


def test_unknown_override_and_unavailable_method(fake, monkeypatch):
    with pytest.raises(KeyError, match="no config key"):
        E.run_grid([E.Cell("d", "fake", 8, 0, (("nope", 1),))], progress=False)
    monkeypatch.setitem(methods.REGISTRY, "ghost", "phdlib.no_such_module:X")
    with pytest.raises(methods.MethodNotAvailable, match="ghost"):
        E.run_grid([E.Cell("d", "ghost", 8)], progress=False)
    rep = E.run_grid([E.Cell("d", "ghost", 8), E.Cell("d", "fake", 8)], progress=False,
                     skip_unavailable=True)
    assert list(rep["status"]) == ["unavailable", "ran"]


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


def test_ensure_runs_the_plan_and_loads_runs(fake, monkeypatch):
    monkeypatch.setattr(E, "PAPER_METHODS", ["fake"])
    monkeypatch.setattr(E, "ADDITIONS", ["ghost"])
    monkeypatch.setitem(methods.REGISTRY, "ghost", "phdlib.no_such_module:X")
    runs, rep = E.ensure("d", "full", ["table1"], seeds=2, jobs=1, progress=False)
    assert sorted(rep["status"]) == ["ran"] * 4 + ["unavailable"] * 4
    assert {(c.bits, c.seed) for c in runs} == {(32, 0), (32, 1), (64, 0), (64, 1)}
    assert all(r.method == "fake" for r in runs.values())


# ----------------------------------------------------------------- the real thing, small and fast

def test_real_sanity_baselines_on_synthetic_data_in_processes(tmp_path, monkeypatch):
    """Real methods, real (synthetic) data, loky worker processes, then the CLI resumes."""
    from phdlib.cli import main

    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path))
    cells = [E.Cell("synthetic", m, b, 0) for m in ("item-mean", "popularity", "random") for b in (32, 64)]
    rep = E.run_grid(cells, jobs=2, progress=False, name="real")
    assert (rep["status"] == "ran").all(), rep[["method", "status", "error"]]
    m = json.loads(next((tmp_path / "_grids").glob("real-*.json")).read_text())
    assert len(m["workers"]) >= 1 and m["git_commit"] is not None
    runs = E.load_runs(cells)
    split = E.load_split("synthetic")
    for c, r in runs.items():
        assert r.fingerprint == split.fingerprint and r.dataset == "synthetic"
        assert 0 <= r.metrics["ndcg@10"] <= 1 and len(r.per_user) == split.dataset.n_users
    rnd = [r for c, r in runs.items() if c.method == "random"][0]
    im = [r for c, r in runs.items() if c.method == "item-mean"][0]
    assert im.metrics["ndcg@10"] > rnd.metrics["ndcg@10"]
    code = main(["reproduce", "--dataset", "synthetic", "--profile", "quick", "--part", "table1",
                 "--method", "item-mean", "--method", "popularity", "--method", "random", "--json"])
    assert code == 0
    rep2 = E.run_grid(cells, jobs=1, progress=False)
    assert (rep2["status"] == "stored").all()
