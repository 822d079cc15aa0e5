"""A Dask grid as separate machines would run it: workers with their own folders, none shared.

Two worker processes on 127.0.0.1, each with its own results, cache and data
folders (empty: they hold no data); the client's store is the only store.
One worker is killed in the middle of the grid.
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from phdlib import experiments as E
from phdlib import results

distributed = pytest.importorskip("distributed")


def _cluster(tmp_path):
    from distributed import Nanny, Scheduler, SpecCluster

    workers = {}
    for w in ("a", "b"):
        env = {k: str(tmp_path / w / k.split("_")[1].lower())
               for k in ("PHD_RESULTS_DIR", "PHD_CACHE_DIR", "PHD_DATA_DIR")}
        env["NUMBA_NUM_THREADS"] = "1"
        workers[w] = {"cls": Nanny, "options": {"nthreads": 1, "env": env, "host": "127.0.0.1"}}
    return SpecCluster(workers=workers, scheduler={
        "cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard_address": None}},
        silence_logs=40)


def _files(folder: Path) -> list:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def test_a_grid_on_workers_without_shared_disk_lands_in_the_client_store(tmp_path, monkeypatch):
    client_store = tmp_path / "client-results"
    monkeypatch.setenv("PHD_RESULTS_DIR", str(client_store))
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path / "client-cache"))
    # tuned methods: MF's grid (one anchor run, reused by seed 1) and CCCF's parallel points;
    # MF-ALS's grid chosen on a user sample (the anchor tunes on the sample on a worker)
    sampled = {"tune_ratings": 300_000}
    cells = E.Grid(["synthetic"], [E.Block(["mf-mean", "cccf"], [8], [0, 1]),
                                   E.Block(["mf-als"], [8], [0, 1], [sampled]),
                                   E.Block(["item-mean", "popularity"], [8], [0, 1])],
                   profile="full").cells()
    # the sampled grid's points already in the client's store (an interrupted run):
    # they are shipped to the worker that tunes the anchor, not fitted again
    from phdlib import data
    from phdlib.experiments import training

    split = data.load_split("synthetic", 0)
    sample = training.tune_split(split, training.config_of("mf-als", split, 8, sampled)[0])
    training.run("mf-als", sample, 8, 0, overrides=sampled, progress=False)
    came_back = []
    real_store = training.store_run
    monkeypatch.setattr(training, "store_run",
                        lambda r, root=None: came_back.append(r.fingerprint) or real_store(r, root))
    with _cluster(tmp_path) as cluster, distributed.Client(cluster) as client:
        addrs = sorted(client.scheduler_info()["workers"])
        assert len(addrs) == 2
        victim = client.run(os.getpid, workers=[addrs[-1]])[addrs[-1]]
        done = []

        def kill_one(*_):  # the second outcome: kill a worker while others still run
            done.append(1)
            if len(done) == 2:
                os.kill(victim, signal.SIGKILL)

        monkeypatch.setattr("phdlib.experiments.cluster.record", _spy(kill_one))
        rep = E.run_grid(cells, dask=client, progress=False, name="cluster")
    assert len(done) >= 2  # the kill happened mid-grid
    assert (rep["status"] == "ran").all(), rep[["method", "bits", "seed", "status", "error"]]
    idx = results.index(client_store)
    assert not idx["key"].duplicated().any()
    for c, key in zip(rep["cell"], rep["key"]):
        assert results.verify(results.run_path(c.method, c.dataset, key, client_store)) is None
    for w in ("a", "b"):  # nothing written on the workers' own folders
        assert _files(tmp_path / w / "results") == [], w
    assert not any(p.name.startswith(".") for p in client_store.rglob("*") if p.is_dir())
    als = [results.load(p) for c, p in zip(rep["cell"], rep["path"]) if c.method == "mf-als"]
    assert len(als) == 2 and als[0].extra["chosen"] == als[1].extra["chosen"]
    assert all(r.extra["tuned_at"]["sample"]["ratings"] <= 300_000 for r in als)
    sample_fp = als[0].extra["tuned_at"]["sample"]["fingerprint"]
    fps = [results.load(p).fingerprint for p in idx.loc[idx["method"] == "mf-als", "path"]]
    assert fps.count(sample_fp) == len(als[0].grid) + 1  # the grid's points, its tuned run
    assert sample_fp == sample.fingerprint and sample_fp not in came_back  # none refitted
    # the client has everything: a second call trains nothing
    rep2 = E.run_grid(cells, jobs=1, progress=False)
    assert (rep2["status"] == "stored").all()


def _spy(hook):
    from phdlib.experiments import cluster

    real = cluster.record

    def record(*args):
        real(*args)
        hook()

    return record
