"""phdlib.results.derived: per-run frames computed once, shared between chapters, never
served when corrupt."""
from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pandas as pd
import pytest

from phdlib.results import derived


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _run(created="2026-12-01T10:00:00Z", key="k1"):
    return NS(key=key, created=created, dataset="toy", method="vh")


SPLIT = NS(fingerprint="f" * 16)


def _frame(seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"user": np.arange(7, dtype=np.int32),
                         "n_test": rng.integers(1, 9, 7),
                         "ndcg@10": rng.random(7), "mrr": rng.random(7).astype(np.float32)})


class Counter:
    def __init__(self, df):
        self.df, self.calls = df, 0

    def __call__(self):
        self.calls += 1
        return self.df.copy()


def test_computed_once_then_read_back_exactly(cache):
    want = _frame()
    f = Counter(want)
    first = derived.frame(_run(), SPLIT, "catalogue", f)
    second = derived.frame(_run(), SPLIT, "catalogue", f)
    assert f.calls == 1
    assert first.equals(want) and second.equals(want)
    assert list(second.dtypes) == list(want.dtypes)
    assert list(cache.rglob("*.npz")) == [derived.path_of(_run(), SPLIT, "catalogue")]


@pytest.mark.parametrize("change", [
    dict(run=_run(key="k2")), dict(run=_run(created="2026-12-01T10:00:01Z")),
    dict(split=NS(fingerprint="e" * 16)), dict(what="test:phd:expected")])
def test_anything_that_moves_the_numbers_is_a_new_entry(cache, change):
    f = Counter(_frame())
    derived.frame(_run(), SPLIT, "catalogue", f)
    derived.frame(change.get("run", _run()), change.get("split", SPLIT),
                  change.get("what", "catalogue"), f)
    assert f.calls == 2


def test_a_run_never_stored_is_not_cached(cache):
    f = Counter(_frame())
    for _ in range(2):
        derived.frame(_run(created=""), SPLIT, "catalogue", f)
    assert f.calls == 2 and not cache.exists()


@pytest.mark.parametrize("odd", [
    _frame().set_index("user"), _frame().iloc[::-1], _frame().assign(name="x"),
    _frame().set_axis(["user", "n_test", 10, "mrr"], axis=1)])
def test_a_frame_that_cannot_be_kept_exactly_is_returned_uncached(cache, odd):
    f = Counter(odd)
    for _ in range(2):
        assert derived.frame(_run(), SPLIT, "catalogue", f).equals(odd)
    assert f.calls == 2 and not list(cache.rglob("*.npz"))


def test_attrs_are_not_lost(cache):
    df = _frame()
    df.attrs["note"] = "kept"
    f = Counter(df)
    for _ in range(2):
        assert derived.frame(_run(), SPLIT, "catalogue", f).attrs == {"note": "kept"}
    assert f.calls == 2


def test_a_corrupt_entry_is_reported_removed_and_computed_again(cache):
    want = _frame()
    f = Counter(want)
    derived.frame(_run(), SPLIT, "catalogue", f)
    path = derived.path_of(_run(), SPLIT, "catalogue")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match="is not used"):
        got = derived.frame(_run(), SPLIT, "catalogue", f)
    assert f.calls == 2 and got.equals(want)
    assert derived.frame(_run(), SPLIT, "catalogue", f).equals(want) and f.calls == 2


def test_the_catalogue_and_the_distance_ablation_read_what_was_computed(
        cache, synthetic_split, tmp_path, monkeypatch):
    """A stored run's catalogue and distance ablation are computed by the first caller; a
    second caller (the landing page) gets the same numbers without evaluating."""
    from phdlib import evaluation, results
    from phdlib.experiments import training
    from phdlib.report import catalogue as C
    from phdlib.studies import ablation

    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path / "store"))
    fresh = training.run("vh-phd", synthetic_split, 16, 0,
                         {"tune": False, "max_iterations": 200, "min_iterations": 0,
                          "eval_every": 100, "batch_size": 50},
                         store=True, reuse=False, progress=False)
    run = results.load(fresh.path if fresh.path else results.find(
        "vh-phd", fresh.dataset, 16, 0, fresh.config, fresh.fingerprint))
    assert run.created
    seed0 = {("vh-phd", 16): run}
    table, per_user = C.catalogue(seed0, synthetic_split, ["vh-phd"], [16])
    abl, abl_pu = ablation.distance_ablation(seed0, synthetic_split)

    def no(*a, **k):
        raise AssertionError("evaluated again")

    monkeypatch.setattr(evaluation, "evaluate_catalogue", no)
    monkeypatch.setattr(ablation, "evaluate", no)
    table2, per_user2 = C.catalogue(seed0, synthetic_split, ["vh-phd"], [16])
    abl2, abl_pu2 = ablation.distance_ablation(seed0, synthetic_split)
    assert table2.equals(table) and per_user2[("vh-phd", 16)].equals(per_user[("vh-phd", 16)])
    assert abl2.equals(abl)
    assert all(abl_pu2[k].equals(abl_pu[k]) for k in abl_pu)
