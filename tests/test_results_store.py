"""The results store: keys, atomic writes, round trips (with the tuning grid), the index."""
import numpy as np
import pandas as pd
import pytest

from phdlib import results


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
    with pytest.raises(results.CorruptRun, match="meta.json: missing"):
        results.load(tmp_path)
    with pytest.raises(FileNotFoundError, match="not a run folder"):
        results.load(tmp_path / "absent")


def test_grid_and_extra_round_trip(tmp_path):
    grid = pd.DataFrame({"lr": [0.1, 0.2], "blocks": ["[8]", "[16]"], "train_seconds": [0.5, 0.25],
                         "valid_ndcg@10": [0.4, 0.6], "test_ndcg@10": [0.3, 0.5], "chosen": [False, True]})
    r = _run(grid=grid, extra={"chosen": {"lr": 0.2}, "label": "Toy", "anchors": [1, 2]})
    back = results.load(results.save(r, root=tmp_path))
    pd.testing.assert_frame_equal(back.grid, grid)
    assert back.extra == r.extra and back.key == r.key
    # a run without a grid or a log loads with None
    plain = results.load(results.save(_run(seed=3, log=None), root=tmp_path))
    assert plain.grid is None and plain.log is None
    # arrays are optional on loading
    assert results.load(plain.path, arrays=False).arrays == {}


def test_save_keeps_the_run_already_published(tmp_path):
    """The same key means the same inputs: a second writer's copy is discarded, nothing is left over."""
    results.save(_run(metrics={"ndcg@10": 0.1}), root=tmp_path)
    path = results.save(_run(metrics={"ndcg@10": 0.2}), root=tmp_path)
    assert results.load(path).metrics == {"ndcg@10": 0.1}
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_results_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path / "r"))
    assert results.results_dir() == (tmp_path / "r").resolve()
    r = _run()
    assert results.save(r) == (tmp_path / "r").resolve() / "synthetic" / "toy" / r.key
    assert results.find("toy", "synthetic", 8, 0, {"lr": 0.1}, "abc") is not None


def test_effective_config_applies_the_grid_choice():
    from phdlib.results.store import Run

    r = Run(method="m", dataset="d", bits=8, seed=0, config={"lr": 1, "tune": True, "x": 2},
            metrics={}, per_user=None, fingerprint="f", wall_seconds=0.0,
            extra={"chosen": {"lr": 3}})
    assert r.effective_config == {"lr": 3, "tune": True, "x": 2}
    r.extra = {}
    assert r.effective_config == r.config


def test_count_is_the_run_folders_and_not_temporary_ones(tmp_path):
    from phdlib import results

    assert results.count(tmp_path / "none") == 0
    for name in ("0123456789abcdef", ".0123456789abcdef.x1.tmp"):
        (tmp_path / "d" / "m" / name).mkdir(parents=True)
        (tmp_path / "d" / "m" / name / "meta.json").write_text("{}")
    assert results.count(tmp_path) == 1


def test_count_tries_again_when_a_listing_fails_and_then_says_so(tmp_path, monkeypatch):
    from pathlib import Path

    from phdlib import results

    (tmp_path / "d" / "m" / "0123456789abcdef").mkdir(parents=True)
    (tmp_path / "d" / "m" / "0123456789abcdef" / "meta.json").write_text("{}")
    real, fails = Path.glob, [1]

    def flaky(self, pattern):
        if fails[0]:
            fails[0] -= 1
            raise FileNotFoundError("a folder removed while it was listed")
        return real(self, pattern)

    monkeypatch.setattr(Path, "glob", flaky)
    assert results.count(tmp_path) == 1          # the second try
    fails[0] = 3
    with pytest.raises(OSError):
        results.count(tmp_path)                  # never a wrong count
