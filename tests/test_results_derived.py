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


def _run(seed=1, path="stored", method="vh", bits=16):
    return NS(path=path, dataset="toy", method=method, bits=bits,
              arrays={"user_codes": np.random.default_rng(seed).integers(0, 9, (5, 2))})


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
    dict(run=_run(seed=2)), dict(run=_run(method="vh-phd")), dict(run=_run(bits=32)),
    dict(split=NS(fingerprint="e" * 16)), dict(what={"frame": "catalogue", "ties": "optimistic"}),
    dict(version=True), dict(library=True)])
def test_anything_that_moves_the_numbers_is_a_new_entry(cache, change, monkeypatch):
    f = Counter(_frame())
    derived.frame(_run(), SPLIT, {"frame": "catalogue"}, f)
    if change.get("version"):
        monkeypatch.setattr(derived, "VERSION", derived.VERSION + 1)
    if change.get("library"):
        monkeypatch.setattr(derived, "_CODE", {**derived._CODE, "phdlib": "edited"})
    derived.frame(change.get("run", _run()), change.get("split", SPLIT),
                  change.get("what", {"frame": "catalogue"}), f)
    assert f.calls == 2
    derived.frame(_run(), SPLIT, {"frame": "catalogue"}, f)  # each entry stays and is read
    assert f.calls == 2


@pytest.mark.parametrize("run", [_run(path=None), NS(path="stored", dataset="toy", method="vh",
                                                    bits=16, arrays={})])
def test_a_run_never_stored_or_without_arrays_is_not_cached(cache, run):
    f = Counter(_frame())
    for _ in range(2):
        derived.frame(run, SPLIT, "catalogue", f)
    assert f.calls == 2 and not cache.exists()


@pytest.mark.parametrize("odd", [
    _frame().set_index("user"), _frame().iloc[::-1], _frame().assign(name="x"),
    _frame().set_axis(["user", "n_test", 10, "mrr"], axis=1),
    _frame().set_axis(["user", "n_test", "mrr", "mrr"], axis=1),
    _frame().rename_axis(columns="metric"), _frame()[[]],
    _frame().astype({"n_test": "Int64"}), _frame().astype({"mrr": "Float32"}),
    _frame().assign(flag=pd.array([True] * 7, dtype="boolean")),
    _frame().astype({"n_test": "category"})])
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


def test_a_plain_bool_column_round_trips(cache):
    want = _frame().assign(flag=np.arange(7) % 2 == 0)
    f = Counter(want)
    for _ in range(2):
        got = derived.frame(_run(), SPLIT, "catalogue", f)
        assert got.equals(want) and list(got.dtypes) == list(want.dtypes)
    assert f.calls == 1


def _rewrite(path, change):
    """Rewrite an entry with ``change`` applied to its arrays, keeping its old checksum."""
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


@pytest.mark.parametrize("damage", [
    "bytes",  # the file is unreadable
    "value",  # a well-formed file whose numbers no longer match its checksum
    "checksum",  # no checksum at all
])
def test_a_corrupt_entry_is_reported_removed_and_computed_again(cache, damage):
    want = _frame()
    f = Counter(want)
    derived.frame(_run(), SPLIT, "catalogue", f)
    path = derived.path_of(_run(), SPLIT, "catalogue")
    if damage == "bytes":  # a flipped byte inside one column's numbers: the zip's CRC fails
        data = bytearray(path.read_bytes())
        at = bytes(data).find(want["ndcg@10"].to_numpy().tobytes())
        assert at > 0
        data[at + 3] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "value":
        _rewrite(path, lambda a: a.__setitem__("c2", a["c2"] + 0.5))
    else:
        _rewrite(path, lambda a: a.pop("__sha256__"))
    with pytest.warns(RuntimeWarning, match="is not used"):
        got = derived.frame(_run(), SPLIT, "catalogue", f)
    assert f.calls == 2 and got.equals(want)
    assert derived.frame(_run(), SPLIT, "catalogue", f).equals(want) and f.calls == 2


def test_a_folder_linked_out_of_the_cache_is_not_written(cache, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (cache / "derived").mkdir(parents=True)
    (cache / "derived" / "toy").symlink_to(outside)
    f = Counter(_frame())
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        derived.frame(_run(), SPLIT, "catalogue", f)
    assert not list(outside.rglob("*"))


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
    run = results.load(fresh.path)
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
    with pytest.raises(AssertionError, match="evaluated again"):  # another tie rule: new frames
        ablation.distance_ablation(seed0, synthetic_split, ties="optimistic")
