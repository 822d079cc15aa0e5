"""Runs stored by the code before the package re-cut are found again, under the same keys.

``tests/fixtures/store-77892c9/`` is a results store written by commit
``77892c9`` (the last one with the flat module layout) with
``tests/fixtures/make_old_store.py``: one run of every registered method on a
small synthetic dataset (300 users x 200 items, no real rating data), plus a
tuned MF run and its grid points. ``runs.json`` beside the runs lists each
run with the overrides that asked for it.

For every run this checks, with the current code, that

- :func:`phdlib.results.load` verifies and reads it;
- :func:`phdlib.experiments.training.run` with the same method, bits, seed and
  overrides finds it: it returns the stored run (same key, folder and creation
  time) and trains nothing (no new run folder);
- its stored metrics equal, to every digit, a re-evaluation of its stored
  model by :func:`phdlib.evaluation.evaluate` on the same split.

A change to a method's resolved config (a default, a renamed key) or to the
run key changes the key, and the run is then not found: the guard of the rule
that the run key of an unchanged method never changes.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from phdlib import data, evaluation, names, results
from phdlib.experiments import training

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "store-77892c9"
INDEX = json.loads((FIXTURE / "runs.json").read_text())
RUNS = INDEX["runs"]
#: Test metrics that are a mean over users of the per-user frame's column.
MEANS = ("ndcg@5", "ndcg@10", "mrr")


def _run_dirs(root: Path) -> list[str]:
    """Every run folder under ``root`` (``dataset/method/key``), sorted."""
    return sorted(str(p.parent.relative_to(root)) for p in root.glob("*/*/*/meta.json"))


@pytest.fixture(scope="module")
def split():
    """The synthetic split the fixture's runs were trained on (checked by its fingerprint)."""
    s = data.load_split(INDEX["dataset"], INDEX["split_seed"], **INDEX["data"])
    assert s.fingerprint == INDEX["fingerprint"], (
        f"the synthetic split {INDEX['data']} now has fingerprint {s.fingerprint!r}, the old "
        f"code's was {INDEX['fingerprint']!r}: the generator or the split changed")
    return s


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A private copy of the fixture store (the test must not write into the fixture)."""
    root = tmp_path_factory.mktemp("old-store") / "store"
    shutil.copytree(FIXTURE, root)
    return root


def _id(entry: dict) -> str:
    return f"{entry['method']}-{entry['key']}"


def test_fixture_lists_every_run_and_every_method():
    """runs.json covers each run folder of the store, each method of 77892c9 has a run, and
    each is still registered."""
    listed = sorted({e["path"] for e in RUNS})
    assert listed == _run_dirs(FIXTURE), (
        f"runs.json lists {listed}, the fixture store holds {_run_dirs(FIXTURE)}")
    # every method of the old code has a run (a method added since has none to keep)
    stored = {e["method"] for e in RUNS}
    assert len(stored) == 12 and stored <= set(names.METHODS), sorted(stored - set(names.METHODS))
    tuned = [e for e in RUNS if e["overrides"].get("tune", True) and e["method"] == "mf"]
    assert tuned, "the fixture has no tuned run (mf with its grid)"


@pytest.mark.parametrize("entry", RUNS, ids=_id)
def test_old_run_loads_and_verifies(entry):
    path = FIXTURE / entry["path"]
    assert results.verify(path) is None, f"{path}: {results.verify(path)}"
    run = results.load(path)
    got = (run.method, run.bits, run.seed, run.key)
    want = (entry["method"], entry["bits"], entry["seed"], entry["key"])
    assert got == want, f"{path} loads as (method, bits, seed, key) {got}, expected {want}"
    assert path.name == run.key, f"{path} holds a run whose key is {run.key!r}"


#: Methods whose implementation revision (``impl``) was raised after 77892c9 on purpose
#: (DCF's relaxed start: Gram polar factor and dual-form short rows; CCCF carries DCF's
#: revision). Their old runs must NOT be found: they are trained again, beside the old ones.
REVISED = {"dcf", "cccf"}


@pytest.mark.parametrize("entry", RUNS, ids=_id)
def test_old_run_is_found_under_its_key(entry, split, store):
    before = _run_dirs(store)
    run = training.run(entry["method"], split, entry["bits"], entry["seed"],
                       overrides=entry["overrides"], root=store, progress=False)
    if entry["method"] in REVISED:
        assert run.key != entry["key"] and int(run.config["impl"]) > 2, run.config
        after = _run_dirs(store)
        assert set(before) < set(after), "a revised method reused its old run"
        assert results.load(store / entry["path"], arrays=False).key == entry["key"]
        return
    assert run.key == entry["key"], (
        f"{entry['method']} with overrides {entry['overrides']} now has run key {run.key!r}; "
        f"the old code stored it under {entry['key']!r} (its resolved config changed?)")
    assert run.path is not None and Path(run.path) == store / entry["path"], (
        f"{entry['method']}: training.run returned the run at {run.path}, expected the stored "
        f"one at {store / entry['path']}")
    stored = results.load(store / entry["path"], arrays=False)
    assert run.created == stored.created and run.wall_seconds == stored.wall_seconds, (
        f"{entry['method']}: training.run returned a run created {run.created!r} in "
        f"{run.wall_seconds} s, not the stored one (created {stored.created!r} in "
        f"{stored.wall_seconds} s): it trained again instead of reusing it")
    after = _run_dirs(store)
    assert after == before, (
        f"{entry['method']}: training.run trained and stored {sorted(set(after) - set(before))} "
        f"instead of reusing {entry['path']}")
    found = results.find(entry["method"], split.dataset.name, entry["bits"], entry["seed"],
                         run.config, split.fingerprint, root=store)
    assert found is not None and found.key == entry["key"], (
        f"results.find with the run's own config finds {found and found.key!r}, "
        f"expected {entry['key']!r}")


@pytest.mark.parametrize("entry", RUNS, ids=_id)
def test_old_metrics_equal_a_reevaluation(entry, split):
    run = results.load(FIXTURE / entry["path"])
    model = training.fitted(run)
    ties, discount = run.config["ties"], run.config.get("discount", "paper")
    other = "released" if discount == "paper" else "paper"
    test = evaluation.evaluate(model, split.test, ties=ties, discount=discount)
    pd.testing.assert_frame_equal(test.reset_index(drop=True),
                                  run.per_user.reset_index(drop=True), check_exact=True,
                                  obj=f"{entry['method']} per-user test metrics")
    alt = evaluation.evaluate(model, split.test, ties=ties, discount=other)
    valid = evaluation.evaluate(model, split.valid, ties=ties, discount=discount)
    want = {"users": len(test)}
    for k in MEANS:
        want[k] = float(test[k].mean())
        want[f"valid_{k}"] = float(valid[k].mean())
        if k.startswith("ndcg@"):
            want[f"{other}:{k}"] = float(alt[k].mean())
    got = {k: run.metrics.get(k) for k in want}
    bad = {k: (got[k], want[k]) for k in want
           if got[k] is None or not np.float64(got[k]) == np.float64(want[k])}
    assert not bad, (f"{entry['method']} ({entry['path']}): stored metric != re-evaluated, "
                     f"as (stored, recomputed): {bad}")
