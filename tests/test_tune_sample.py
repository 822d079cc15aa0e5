"""Grids chosen on a user sample (``tune_ratings``): the sample, the run path, the grid runner."""
from __future__ import annotations

import numpy as np
import pytest

from phdlib import data, experiments as E, results
from phdlib.experiments import runner, training

#: mf-als with a 2 x 2 grid (a second on the tiny split) chosen on at most CAP ratings.
CAP = 500
OV = {"tune_ratings": CAP, "reg_grid": [0.1, 1.0], "epochs_grid": [2, 3]}


def _users(r):
    return np.bincount(r.user)


def test_sample_keeps_whole_users_within_the_cap(synthetic_split):
    sp = synthetic_split
    s = data.sample_users(sp, CAP, seed=0)
    info = s.dataset.preprocessing["user_sample"]
    n = sum(len(p) for p in (s.train, s.valid, s.test))
    assert n == info["ratings"] <= CAP < info["of_ratings"] == sp.dataset.n_ratings
    assert s.dataset.n_ratings == n and s.dataset.n_items == sp.dataset.n_items
    assert s.fingerprint != sp.fingerprint and s.dataset.n_users == info["users"] < sp.dataset.n_users
    # every kept user has all the rows it had in each part, under its new id
    old = sp.dataset.user_ids
    for part in ("train", "valid", "test"):
        full, sub = getattr(sp, part), getattr(s, part)
        pos = {u: k for k, u in enumerate(old)}
        for new_u, orig in enumerate(s.dataset.user_ids):
            u = pos[orig]
            a = sorted(zip(full.item[full.user == u], full.rating[full.user == u]))
            b = sorted(zip(sub.item[sub.user == new_u], sub.rating[sub.user == new_u]))
            assert a == b
    # the next user of the draw would not have fitted: the sample is as large as allowed
    counts = sum(np.bincount(p.user, minlength=sp.dataset.n_users) for p in (sp.train, sp.valid, sp.test))
    order = np.random.default_rng(0).permutation(sp.dataset.n_users)
    assert n + counts[order[info["users"]]] > CAP


def test_sample_is_seeded_and_the_split_itself_when_it_fits(synthetic_split):
    sp = synthetic_split
    a, b, c = (data.sample_users(sp, CAP, seed=s) for s in (0, 0, 1))
    assert a.fingerprint == b.fingerprint and np.array_equal(a.train.user, b.train.user)
    assert c.fingerprint != a.fingerprint
    assert data.sample_users(sp, 10**9) is sp
    assert not data.needs_sample(sp, None) and data.needs_sample(sp, CAP)
    for bad in (0, -5, 2.5, True, "many"):
        with pytest.raises(ValueError, match="tune_ratings must be a positive integer"):
            data.sample_users(sp, bad)
        with pytest.raises(ValueError, match="tune_ratings must be a positive integer"):
            training.config_of("mf-als", sp, 16, {"tune_ratings": bad})


def test_grid_chosen_on_the_sample_and_point_trained_on_all(synthetic_split, tmp_path, monkeypatch):
    sp = synthetic_split
    fits = []
    from phdlib.methods import mf_methods

    real = mf_methods._MFBase.fit_grid

    def spy(self, split, bits, seed, configs, progress=False):
        configs = list(configs)
        fits.append((split.fingerprint, seed, len(configs)))
        yield from real(self, split, bits, seed, configs, progress)

    monkeypatch.setattr(mf_methods._MFBase, "fit_grid", spy)
    r0 = training.run("mf-als", sp, 16, 0, overrides=OV, root=tmp_path, progress=False)
    sample = training.tune_split(sp, r0.config)
    at = r0.extra["tuned_at"]["sample"]
    assert at["fingerprint"] == sample.fingerprint and at["ratings"] <= CAP
    assert at["of_ratings"] == sp.dataset.n_ratings
    assert len(r0.grid) == 4 and r0.grid["chosen"].sum() == 1
    # the grid ran on the sample, the chosen point once on all the data
    assert fits[0] == (sample.fingerprint, 0, 4)
    assert fits[1] == (sp.fingerprint, 0, 1)
    assert r0.fingerprint == sp.fingerprint
    assert len(r0.per_user) > at["users"]  # evaluated on every user, not the sample's
    # the tuned model is the chosen point's fit on the full split; the anchor's key
    # holds the cap (it drew a sample), the point's does not (it draws none)
    assert r0.config["tune_ratings"] == CAP
    cfg = training.config_of("mf-als", sp, 16, {**OV, **r0.extra["chosen"], "tune": False})[0]
    assert "tune_ratings" not in cfg
    point = results.find("mf-als", sp.dataset.name, 16, 0, cfg, sp.fingerprint, root=tmp_path)
    assert point is not None and point.metrics["ndcg@10"] == r0.metrics["ndcg@10"]
    # another seed reuses the choice: one more fit, on the full split, no grid
    r1 = training.run("mf-als", sp, 16, 1, overrides=OV, root=tmp_path, progress=False)
    assert fits[2:] == [(sp.fingerprint, 1, 1)]
    assert r1.extra["chosen"] == r0.extra["chosen"] and r1.extra["tuned_at"]["sample"] == at
    # above the cap nothing changes: the grid is chosen on the split itself; its point
    # chosen on the sample is the same run as above (reused), the other three are fitted
    r2 = training.run("mf-als", sp, 16, 0, overrides={**OV, "tune_ratings": 10**6},
                      root=tmp_path, progress=False)
    assert "tuned_at" not in r2.extra and fits[3] == (sp.fingerprint, 0, 3)
    assert "tune_ratings" not in r2.config and len(r2.grid) == 4
    # a cap that draws no sample is the same run as no cap at all
    r3 = training.run("mf-als", sp, 16, 0, overrides={**OV, "tune_ratings": None},
                      root=tmp_path, progress=False)
    assert r3.key == r2.key and len(fits) == 4


def test_run_grid_tunes_a_sampled_grid_once_for_every_seed(synthetic_split, tmp_path,
                                                           monkeypatch):
    """Seeds 0, 1 and 2 asked for together: the anchor (seed 0) runs first, the others
    reuse its choice; the sample's grid is fitted once."""
    from phdlib.methods import mf_methods

    sp = synthetic_split
    real = mf_methods._MFBase.fit_grid
    calls = []

    def spy(self, split, bits, seed, configs, progress=False):
        configs = list(configs)
        calls.append((split.fingerprint, seed, len(configs)))
        yield from real(self, split, bits, seed, configs, progress)

    monkeypatch.setattr(mf_methods._MFBase, "fit_grid", spy)
    monkeypatch.setattr("phdlib.experiments.cells.load_split", lambda ds, seed=0, data_dir=None: sp)
    cells = [E.Cell("synthetic", "mf-als", 16, s, E.freeze(OV)) for s in (0, 1, 2)]
    import joblib

    with joblib.parallel_config(backend="threading"):  # three at once, the spy visible
        rep = E.run_grid(cells, jobs=3, root=tmp_path, progress=False, name="sampled")
    assert list(rep["status"]) == ["ran", "ran", "ran"]
    sample = training.tune_split(sp, {"tune_ratings": CAP})
    assert [c for c in calls if c[0] == sample.fingerprint] == [(sample.fingerprint, 0, 4)]
    assert sorted(c[1] for c in calls if c[0] == sp.fingerprint) == [0, 1, 2]


def test_runner_keeps_a_sampled_grid_whole():
    """Points of a grid chosen on a sample are runs on the sample, not cells of the
    dataset: the runner does not expand them (VH's grid expands without a sample)."""
    assert data.load_split("synthetic").dataset.n_ratings > CAP
    opts = E.freeze({"tune_ratings": CAP})
    cell = E.Cell("synthetic", "vh", 32, seed=1, options=opts)
    assert runner.grid_cells([cell]) == [E.Cell("synthetic", "vh", 64, 0, opts)]
    unsampled = runner.grid_cells([E.Cell("synthetic", "vh", 32, seed=1)])
    assert len(unsampled) == 4 and all(c.bits == 64 and c.seed == 0 for c in unsampled)


def test_compare_sets_sample_grids_beside_the_full_grid(synthetic_split, tmp_path, monkeypatch):
    from phdlib import methods
    from phdlib.studies import sample_tuning

    assert "mf-als" in sample_tuning.tunable("synthetic")
    assert "item-mean" not in sample_tuning.tunable("synthetic")
    small = {"reg_grid": [0.1, 1.0], "epochs_grid": [2, 3]}
    real = methods.get("mf-als").defaults

    def defaults(dataset, bits):  # a grid small enough for a unit test
        return {**real(dataset, bits), **small}

    with monkeypatch.context() as mp:
        mp.setattr(methods.get("mf-als"), "defaults", defaults)
        df = sample_tuning.compare(synthetic_split, [CAP, 800], names=["mf-als"], bits=16,
                                   root=tmp_path, progress=False)
    assert list(df["cap"]) == [CAP, 800] and (df["sample_ratings"] <= df["cap"]).all()
    assert (df["of_ratings"] == synthetic_split.dataset.n_ratings).all()
    full = training.run("mf-als", synthetic_split, 16, 0, overrides=small, root=tmp_path,
                        progress=False)
    assert "tuned_at" not in full.extra  # the all-data grid: the default config, not sampled
    assert (df["test_ndcg@10_all"] == full.metrics["ndcg@10"]).all()
    assert np.allclose(df["difference"], df["test_ndcg@10_sample"] - df["test_ndcg@10_all"])
    assert set(df["same"]) <= {True, False}
    out = sample_tuning.save(tmp_path / "c.json", df, "synthetic", synthetic_split.fingerprint,
                             command="test")
    back = sample_tuning.load(out)
    assert back["provenance"]["split_fingerprint"] == synthetic_split.fingerprint
    assert back["rows"]["chosen_sample"].tolist() == df["chosen_sample"].tolist()
    (tmp_path / "bad.json").write_text('{"format": "phd-scale", "rows": [], "provenance": {}}')
    with pytest.raises(ValueError, match="bad.json: not a comparison"):
        sample_tuning.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="not smaller than"):
        sample_tuning.compare(synthetic_split, [10**7], names=["mf-als"])


def test_tune_sample_report_reads_the_comparison():
    import pandas as pd

    from phdlib.report import sample_tuning as rtune

    rows = pd.DataFrame({
        "method": ["mf", "dcf", "mf", "dcf"], "bits": 64, "cap": [100, 100, 200, 200],
        "of_ratings": 1000, "sample_users": [9, 9, 19, 19], "sample_ratings": [98, 98, 197, 197],
        "chosen_all": "reg=1", "chosen_sample": ["reg=1", "reg=0.1", "reg=1", "reg=1"],
        "same": [True, False, True, True], "test_ndcg@10_all": [0.5, 0.4, 0.5, 0.4],
        "test_ndcg@10_sample": [0.5, 0.38, 0.5, 0.4], "difference": [0.0, -0.02, 0.0, 0.0],
        "grid_s_all": [60.0, 60.0, 60.0, 60.0], "grid_s_sample": [6.0, 6.0, 12.0, 12.0]})
    first, second = rtune.tune_sample_findings(rows)
    assert "at most 100 ratings (1/10 of the data)" in first
    assert "1 of 2 methods" in first and "-0.0200 to +0.0000" in first
    assert "more than 0.01 for DCF (-0.0200)" in first and "0.01 for no method" in second
    assert "0.2 min against 2.0 min" in first
    assert "2 of 2 methods" in second
    t = rtune.tune_sample_table(rows)
    assert list(t["sample"])[:1] == ["98 (9 users)"] and "chosen on the sample" in t
