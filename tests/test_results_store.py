"""The results store and the method registry: keys, atomic writes, reuse."""
import sys
import types

import numpy as np
import pandas as pd
import pytest

from phdlib import methods, results


def _run(**kw):
    base = dict(method="toy", dataset="synthetic", bits=8, seed=0, config={"lr": 0.1},
                metrics={"ndcg@10": 0.5}, per_user=pd.DataFrame({"user": [0, 1], "ndcg@10": [0.4, 0.6]}),
                fingerprint="abc", wall_seconds=1.5,
                arrays={"user_codes": np.arange(4, dtype=np.uint64)},
                log=pd.DataFrame({"iteration": [750], "valid_ndcg@10": [0.5]}))
    base.update(kw)
    return results.Run(**base)


def test_key_changes_with_every_input():
    r = _run()
    keys = {r.key}
    for change in ({"seed": 1}, {"bits": 16}, {"config": {"lr": 0.2}}, {"fingerprint": "abd"},
                   {"dataset": "ml-1m"}, {"method": "toy2"}):
        keys.add(_run(**change).key)
    assert len(keys) == 7
    assert _run().key == r.key  # deterministic


def test_save_load_roundtrip_and_find(tmp_path):
    r = _run()
    path = results.save(r, root=tmp_path)
    assert path == tmp_path / "synthetic" / "toy" / r.key
    back = results.load(path)
    assert back.metrics == r.metrics and back.config == r.config and back.version == r.version
    assert back.fingerprint == "abc" and back.seed == 0
    pd.testing.assert_frame_equal(back.per_user, r.per_user)
    pd.testing.assert_frame_equal(back.log, r.log)
    assert np.array_equal(back.arrays["user_codes"], r.arrays["user_codes"])
    assert results.find("toy", "synthetic", 8, 0, {"lr": 0.1}, "abc", root=tmp_path) is not None
    assert results.find("toy", "synthetic", 8, 1, {"lr": 0.1}, "abc", root=tmp_path) is None
    idx = results.index(tmp_path)
    assert idx.loc[0, "metric:ndcg@10"] == 0.5 and len(idx) == 1
    # no temporary folders are left behind
    assert [p.name for p in (tmp_path / "synthetic" / "toy").iterdir()] == [r.key]


def test_failed_save_leaves_nothing(tmp_path):
    bad = _run(per_user=pd.DataFrame({"user": [object()]}))
    with pytest.raises(Exception):
        results.save(bad, root=tmp_path)
    assert list((tmp_path / "synthetic" / "toy").iterdir()) == []


def test_load_rejects_a_folder_without_meta(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a run folder"):
        results.load(tmp_path)


@pytest.fixture
def toy_method(monkeypatch):
    calls = []

    class Toy:
        name = "toy"

        def defaults(self, dataset, bits):
            return {"lr": 0.1, "epochs": 2}

        def train(self, split, bits, seed, config, progress):
            calls.append(config)
            return _run(config=config, seed=seed, bits=bits, fingerprint=split.fingerprint)

    mod = types.ModuleType("phd_toy_method")
    mod.TOY = Toy()
    monkeypatch.setitem(sys.modules, "phd_toy_method", mod)
    monkeypatch.setitem(methods.REGISTRY, "toy", "phd_toy_method:TOY")
    return calls


def test_methods_run_reuses_the_store(tmp_path, toy_method):
    split = types.SimpleNamespace(dataset=types.SimpleNamespace(name="synthetic"), fingerprint="abc")
    a = methods.run("toy", split, 8, seed=0, root=tmp_path, progress=False)
    b = methods.run("toy", split, 8, seed=0, root=tmp_path, progress=False)
    assert len(toy_method) == 1 and a.key == b.key
    methods.run("toy", split, 8, seed=0, overrides={"lr": 0.2}, root=tmp_path, progress=False)
    assert len(toy_method) == 2 and toy_method[-1] == {"lr": 0.2, "epochs": 2}
    with pytest.raises(KeyError, match="has no config key 'momentum'"):
        methods.run("toy", split, 8, overrides={"momentum": 0.9}, root=tmp_path)


def test_unknown_or_missing_methods_are_named():
    with pytest.raises(methods.MethodNotAvailable, match="unknown method 'nope'"):
        methods.get("nope")
