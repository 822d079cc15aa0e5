"""The shared training path: ``training.run`` (store, reuse, overrides), ``make_run``,
``tune`` (resume, ties, shared fits), ``transfer`` of a choice to other seeds and widths."""
from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from phdlib import data, methods, results
from phdlib.experiments import training
from phdlib.methods import ItemScoreModel, Method


class Shuffle(Method):
    """Items scored by a seeded random draw; ``offset`` picks another draw, ``flat`` ties them all."""

    name = "test-shuffle"
    label = "Shuffle (test)"
    ranks_by = "score"
    model = ItemScoreModel

    def __init__(self):
        self.fits: list[dict] = []
        self.grids: list[list[dict]] = []

    def defaults(self, dataset, bits):
        return {"offset": 0, "flat": False, "tune": False, "offset_grid": [0, 1, 2],
                "ties": "expected", "impl": 1}

    def grid(self, config, bits):
        if not config["tune"]:
            return []
        return [{"offset": int(o), "tune": False} for o in config["offset_grid"]]

    def fit_grid(self, split, bits, seed, configs, progress=False):
        configs = list(configs)
        self.grids.append(configs)
        return super().fit_grid(split, bits, seed, configs, progress)

    def fit(self, split, bits, seed, config, progress=False):
        self.fits.append(dict(config, _seed=seed, _bits=bits))
        n = split.dataset.n_items
        s = np.zeros(n) if config["flat"] else np.random.default_rng([seed, bits, config["offset"]]).random(n)
        return ItemScoreModel(bits, {"item_scores": s}, "score", pd.DataFrame({"step": [0]}),
                              {"train_seconds": 0.001, "n_users": split.dataset.n_users,
                               "note": "a string goes to extra", "count": np.int64(3)})


@pytest.fixture
def shuffle():
    m = methods.register(Shuffle())
    yield m
    methods.unregister(m.name)


def test_run_stores_reuses_and_keys_by_config(shuffle, synthetic_split, tmp_path):
    sp = synthetic_split
    a = training.run(shuffle.name, sp, 8, 0, root=tmp_path, progress=False)
    b = training.run(shuffle.name, sp, 8, 0, root=tmp_path, progress=False)
    assert len(shuffle.fits) == 1 and a.key == b.key and b.path == a.path
    pd.testing.assert_frame_equal(a.per_user, b.per_user)
    training.run(shuffle.name, sp, 8, 0, {"offset": 5}, root=tmp_path, progress=False)
    assert len(shuffle.fits) == 2 and shuffle.fits[-1]["offset"] == 5
    training.run(shuffle.name, sp, 8, 1, root=tmp_path, progress=False)  # another seed: a new run
    assert len(shuffle.fits) == 3 and len(results.index(tmp_path)) == 3
    c = training.run(shuffle.name, sp, 8, 0, root=tmp_path, reuse=False, progress=False)
    assert len(shuffle.fits) == 4 and c.metrics["ndcg@10"] == a.metrics["ndcg@10"]
    d = training.run(shuffle.name, sp, 8, 0, {"offset": 9}, store=False, root=tmp_path, progress=False)
    assert d.path is None and len(results.index(tmp_path)) == 3
    with pytest.raises(KeyError, match="has no config key 'momentum'"):
        training.run(shuffle.name, sp, 8, overrides={"momentum": 0.9}, root=tmp_path)
    with pytest.raises(methods.MethodNotAvailable, match="unknown method 'nope'"):
        training.run("nope", sp, 8, root=tmp_path)


def test_make_run_splits_info_into_metrics_and_extra(shuffle, synthetic_split):
    sp = synthetic_split
    cfg = methods.resolve_config(shuffle.name, sp.dataset.name, 8)
    model = shuffle.fit(sp, 8, 0, cfg)
    r = training.make_run(shuffle, sp, 8, 0, cfg, model, 1.5)
    for k in ("ndcg@5", "ndcg@10", "mrr", "users", "released:ndcg@5", "released:ndcg@10",
              "valid_ndcg@5", "valid_ndcg@10", "valid_mrr", "train_seconds", "count"):
        assert k in r.metrics, k
    assert r.metrics["count"] == 3 and type(r.metrics["count"]) is int
    # the model's shape (its user count) is not a training result: it goes to extra
    assert "n_users" not in r.metrics and r.extra.pop("n_users") == sp.dataset.n_users
    # where the data came from: enough to find the dataset (and its ids) again
    where = r.extra.pop("data")
    assert where == data.provenance(sp)
    assert (where["split_seed"], where["dataset_fingerprint"], where["split_fingerprint"],
            where["preprocessing"]) == (sp.seed, sp.dataset.fingerprint, sp.fingerprint,
                                        sp.dataset.preprocessing)
    assert r.extra == {"label": shuffle.label, "ranks_by": "score", "note": "a string goes to extra"}
    assert r.wall_seconds == 1.5 and r.fingerprint == sp.fingerprint and r.dataset == sp.dataset.name
    assert r.metrics["users"] == len(r.per_user) == np.unique(sp.test.user).size
    # the summary is the mean of the per-user metrics, on the test split
    assert r.metrics["ndcg@10"] == pytest.approx(r.per_user["ndcg@10"].mean(), abs=1e-15)
    # the released discount as the main one: the paper's becomes the alternative
    per_user, summary = training.evaluate_fitted(model, sp, "expected", "released")
    assert summary["ndcg@10"] == pytest.approx(r.metrics["released:ndcg@10"])
    assert summary["paper:ndcg@10"] == pytest.approx(r.metrics["ndcg@10"])


def test_tune_resumes_from_the_stored_points(shuffle, synthetic_split, tmp_path):
    sp = synthetic_split
    first = training.run(shuffle.name, sp, 8, 0, {"tune": True}, root=tmp_path, progress=False)
    assert len(shuffle.fits) == 3 and len(shuffle.grids) == 1 and len(shuffle.grids[0]) == 3
    assert len(results.index(tmp_path)) == 4
    # lose one point (an interrupted grid): only that one is fitted again
    cfg = methods.resolve_config(shuffle.name, sp.dataset.name, 8, {"tune": True})
    points = shuffle.grid(cfg, 8)
    lost = results.find(shuffle.name, sp.dataset.name, 8, 0, {**cfg, **points[1]}, sp.fingerprint, root=tmp_path)
    shutil.rmtree(lost.path)
    again = training.tune(shuffle, sp, 8, 0, cfg, points, root=tmp_path)
    assert len(shuffle.fits) == 4 and shuffle.fits[-1]["offset"] == 1
    assert [c["offset"] for c in shuffle.grids[-1]] == [1]
    cols = [c for c in first.grid.columns if c != "train_seconds"]
    pd.testing.assert_frame_equal(again.grid[cols], first.grid[cols])
    assert again.extra["chosen"] == first.extra["chosen"] and again.key == first.key
    # nothing lost: nothing fitted, fit_grid gets no config
    training.tune(shuffle, sp, 8, 0, cfg, points, root=tmp_path)
    assert len(shuffle.fits) == 4 and shuffle.grids[-1] == []
    # reuse=False refits every point
    training.tune(shuffle, sp, 8, 0, cfg, points, reuse=False, store=False, root=tmp_path)
    assert len(shuffle.fits) == 7


def test_tune_breaks_ties_by_grid_order(shuffle, synthetic_split, tmp_path):
    run = training.run(shuffle.name, synthetic_split, 8, 0,
                       {"tune": True, "flat": True, "offset_grid": [7, 3, 5]}, root=tmp_path, progress=False)
    assert run.grid["valid_ndcg@10"].nunique() == 1
    assert run.grid["chosen"].tolist() == [True, False, False] and run.extra["chosen"] == {"offset": 7}
    assert run.metrics["grid_points"] == 3 and run.metrics["grid_seconds"] >= 0
    assert "ties=expected" in run.extra["chosen_on"]


def test_other_seeds_and_widths_reuse_the_choice_of_the_tuning_seed(shuffle, synthetic_split, tmp_path):
    sp = synthetic_split
    over = {"tune": True, "offset_grid": [0, 1, 2, 3]}
    tuned = training.run(shuffle.name, sp, 8, training.TUNE_SEED, over, root=tmp_path, progress=False)
    n = len(shuffle.fits)
    other = training.run(shuffle.name, sp, 8, 1, over, root=tmp_path, progress=False)
    assert len(shuffle.fits) == n + 1  # the chosen point only, at seed 1
    assert shuffle.fits[-1]["offset"] == tuned.extra["chosen"]["offset"] and shuffle.fits[-1]["_seed"] == 1
    assert other.extra["tuned_at"] == {"bits": 8, "seed": training.TUNE_SEED}
    assert other.extra["chosen"] == tuned.extra["chosen"] and other.seed == 1
    assert other.config == methods.resolve_config(shuffle.name, sp.dataset.name, 8, over)
    pd.testing.assert_frame_equal(other.grid, tuned.grid)
    # its metrics are those of the chosen point fitted at seed 1, stored as a run of its own
    point = results.load(tmp_path / sp.dataset.name / shuffle.name / other.extra["chosen_key"])
    assert point.seed == 1 and point.config["tune"] is False
    assert other.metrics == point.metrics
    # stored under the tuning config, found again without fitting
    again = training.run(shuffle.name, sp, 8, 1, over, root=tmp_path, progress=False)
    assert len(shuffle.fits) == n + 1 and again.key == other.key


def test_grid_table_pivots_a_tuned_run(shuffle, synthetic_split, tmp_path):
    run = training.run(shuffle.name, synthetic_split, 8, 0, {"tune": True}, root=tmp_path, progress=False)
    t = training.grid_table(run, rows="offset", columns="chosen")
    assert list(t.index) == [0, 1, 2] and t.notna().sum().sum() == 3
    plain = training.run(shuffle.name, synthetic_split, 8, 0, root=tmp_path, progress=False)
    with pytest.raises(ValueError, match="was not tuned"):
        training.grid_table(plain)


def test_phd_train_runs_a_method_through_the_store(tmp_path, monkeypatch, capsys):
    import json

    from phdlib.cli import main

    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path))
    args = ["train", "--method", "item-mean", "--dataset", "synthetic", "--bits", "8", "--json"]
    assert main(args + ["--set", "ties=input"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "item-mean" and out["config"]["ties"] == "input"
    back = results.load(out["path"])
    assert back.metrics == out["metrics"] and back.config == out["config"]
    assert main(args + ["--set", "momentum=0.9"]) == 2
    assert "has no config key 'momentum'" in capsys.readouterr().err


def test_an_override_of_a_tuned_key_is_refused(synthetic_split):
    """With tune=True the grid sets lr and train_sampling: an override of either would be lost."""
    with pytest.raises(ValueError, match="train_sampling is chosen by the tuning grid"):
        training.run("vh-phd", synthetic_split, 8, 0, {"train_sampling": "deterministic"},
                     store=False, reuse=False, progress=False)
    # the same override with tune=False is a single configuration, and is allowed
    cfg = methods.resolve_config("vh-phd", synthetic_split.dataset.name, 8,
                                 {"train_sampling": "deterministic", "tune": False})
    assert methods.get("vh-phd").grid(cfg, 8) == []
