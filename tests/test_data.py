"""phdlib.data: the paper's numbers on ML-1M, ML-100K, the split rule, determinism, cache keys."""
from __future__ import annotations

import hashlib
import math
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from phdlib import data
from phdlib.data import split as split_mod

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PHD_DATA_DIR") or ROOT.parent / "shared" / "data")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    # one cache for the whole module run, outside the user's cache
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "phd-cache"))


def need(name, rel):
    if not (SHARED / rel).is_file():
        pytest.skip(f"{name} not present at {SHARED / rel} (set PHD_DATA_DIR)")
    return SHARED


# ---------------------------------------------------------------- real data
@pytest.fixture(scope="module")
def ml1m():
    return data.load_dataset("ml-1m", data_dir=need("ml-1m", "ml-1m/ratings.dat"), cache=False)


def test_ml1m_matches_the_paper(ml1m):
    assert (ml1m.n_users, ml1m.n_items, ml1m.n_ratings) == (6040, 3260, 998_539)
    assert round(100 * ml1m.density, 2) == 5.07
    assert ml1m.fingerprint == data.SOURCES["ml-1m"].fingerprint
    assert ml1m.raw_rows == 1_000_209 and ml1m.rating_scale == (1.0, 5.0)
    # re-indexing: contiguous ids, mapping back to the original ids
    assert ml1m.ratings.user.min() == 0 and ml1m.ratings.user.max() == 6039
    assert np.all(np.diff(ml1m.user_ids) > 0) and np.all(np.diff(ml1m.item_ids) > 0)


def test_ml1m_against_an_independent_pandas_implementation(ml1m):
    df = _read_dat_pandas()
    df = df.drop_duplicates(["u", "i"], keep="first")
    df = df[df.groupby("i")["u"].transform("size") >= 10]
    df = df[df.groupby("u")["i"].transform("size") >= 10]
    assert len(df) == ml1m.n_ratings
    got = pd.DataFrame({"u": ml1m.user_ids[ml1m.ratings.user], "i": ml1m.item_ids[ml1m.ratings.item],
                        "r": ml1m.ratings.rating.astype(int)})
    pd.testing.assert_frame_equal(got.reset_index(drop=True), df.reset_index(drop=True), check_dtype=False)


def _read_dat_pandas():
    # pandas' C parser on '::' turned into tabs: independent of phdlib's pyarrow reader
    import io

    text = (SHARED / "ml-1m/ratings.dat").read_bytes().replace(b"::", b"\t")
    return pd.read_csv(io.BytesIO(text), sep="\t", header=None, usecols=[0, 1, 2], names=["u", "i", "r"])


def test_ml1m_filtering_once_equals_until_stable(ml1m):
    other = data.load_dataset("ml-1m", data_dir=SHARED, filtering="until_stable", cache=False)
    np.testing.assert_array_equal(other.ratings.user, ml1m.ratings.user)
    np.testing.assert_array_equal(other.ratings.item, ml1m.ratings.item)


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_ml1m_split_sizes_are_the_released_codes_for_any_seed(ml1m, seed):
    s = data.split_dataset(ml1m, seed=seed)
    assert s.sizes == {"train": 420_336, "valid": 77_436, "test": 500_767}


def test_ml1m_cached_split(ml1m):
    s = data.load_split("ml-1m", seed=0, data_dir=SHARED)
    s2 = data.load_split("ml-1m", seed=0, data_dir=SHARED)  # from the cache
    assert s2.sizes == s.sizes == {"train": 420_336, "valid": 77_436, "test": 500_767}
    for part in ("train", "valid", "test"):
        a, b = getattr(s, part), getattr(s2, part)
        np.testing.assert_array_equal(a.user, b.user)
        np.testing.assert_array_equal(a.item, b.item)
        np.testing.assert_array_equal(a.rating, b.rating)
    assert s.fingerprint == s2.fingerprint


def test_ml100k_statistics():
    d = need("ml-100k", "ml-100k/u.data")
    ds = data.load_dataset("ml-100k", data_dir=d, cache=False)
    assert ds.fingerprint == data.SOURCES["ml-100k"].fingerprint
    assert ds.raw_rows == 100_000
    # 1,682 items before filtering; 530 have fewer than 10 ratings (computed independently below)
    assert (ds.n_users, ds.n_items, ds.n_ratings) == (943, 1152, 97_953)
    raw = pd.read_csv(d / "ml-100k/u.data", sep="\t", names=["u", "i", "r", "t"])
    keep = raw[raw.groupby("i")["u"].transform("size") >= 10]
    keep = keep[keep.groupby("u")["i"].transform("size") >= 10]
    assert (keep.u.nunique(), keep.i.nunique(), len(keep)) == (943, 1152, 97_953)
    assert data.histogram(ds) == {str(k): int(v) for k, v in keep.r.value_counts().sort_index().items()}
    s = data.split_dataset(ds, seed=0)
    n = np.bincount(ds.ratings.user)
    tr, va, te = data.split_sizes(n)
    assert s.sizes == {"train": int(tr.sum()), "valid": int(va.sum()), "test": int(te.sum())}
    assert s.sizes == {"train": 41_009, "valid": 7_735, "test": 49_209}


def test_fingerprint_mismatch_is_an_error_unless_verify_false(tmp_path):
    (tmp_path / "ml-1m").mkdir()
    (tmp_path / "ml-1m/ratings.dat").write_text("".join(f"{u}::{i}::3\n" for u in range(1, 12) for i in range(1, 12)))
    with pytest.raises(data.FingerprintMismatch, match="verify=False"):
        data.load_dataset("ml-1m", data_dir=tmp_path)
    assert data.load_dataset("ml-1m", data_dir=tmp_path, verify=False).n_ratings == 121
    # the cached path verifies too
    with pytest.raises(data.FingerprintMismatch):
        data.load_dataset("ml-1m", data_dir=tmp_path)


def test_source_resolution_order(tmp_path, monkeypatch):
    def put(root, rating):
        (root / "ml-1m").mkdir(parents=True)
        (root / "ml-1m/ratings.dat").write_text("".join(f"{u}::{i}::{rating}\n" for u in range(1, 4) for i in range(1, 4)))

    a, env, cache = tmp_path / "a", tmp_path / "env", tmp_path / "cache"
    put(a, 1)
    put(env, 2)
    put(cache / "raw", 3)
    monkeypatch.setenv("PHD_CACHE_DIR", str(cache))
    monkeypatch.setenv("PHD_DATA_DIR", str(env))
    kw = dict(verify=False, min_ratings=1, cache=False)
    assert data.load_dataset("ml-1m", data_dir=a, **kw).ratings.rating[0] == 1
    assert data.load_dataset("ml-1m", **kw).ratings.rating[0] == 2
    monkeypatch.delenv("PHD_DATA_DIR")
    assert data.load_dataset("ml-1m", **kw).ratings.rating[0] == 3
    # an explicit data_dir without the file falls through to the next place
    assert data.load_dataset("ml-1m", data_dir=tmp_path / "nothing", **kw).ratings.rating[0] == 3


# ---------------------------------------------------------------- preprocessing
def test_filter_once_vs_until_stable_on_a_hand_made_case(tmp_path):
    # item 100 has 10 ratings, but its raters 1..9 have too few ratings once
    # items 200..208 (single ratings) are removed; user 10 keeps 10+ ratings.
    lines = [f"{u}::100::4" for u in range(1, 11)]
    lines += [f"{u}::{200 + u}::3" for u in range(1, 10)]
    lines += [f"10::{300 + k}::5" for k in range(12)]
    lines += [f"{20 + j}::{300 + k}::2" for j in range(10) for k in range(12)]
    (tmp_path / "ml-1m").mkdir()
    (tmp_path / "ml-1m/ratings.dat").write_text("\n".join(lines) + "\n")
    once = data.load_dataset("ml-1m", data_dir=tmp_path, verify=False, cache=False)
    stable = data.load_dataset("ml-1m", data_dir=tmp_path, verify=False, filtering="until_stable", cache=False)
    # once: items then users. Items 201..209 go; users 1..9 keep only item 100 (1 rating) and go;
    # item 100 is left with 1 rating (user 10): one pass keeps it, until_stable removes it.
    assert 100 in once.item_ids and 100 not in stable.item_ids
    assert once.n_ratings == stable.n_ratings + 1
    assert np.bincount(stable.ratings.item).min() >= 10 and np.bincount(stable.ratings.user).min() >= 10
    with pytest.raises(ValueError, match="filtering="):
        data.load_dataset("ml-1m", data_dir=tmp_path, verify=False, filtering="twice")


def test_min_ratings_configurable(tmp_path):
    (tmp_path / "ml-1m").mkdir()
    (tmp_path / "ml-1m/ratings.dat").write_text("1::1::5\n1::2::4\n2::1::3\n2::2::1\n3::1::2\n")
    kw = dict(data_dir=tmp_path, verify=False, cache=False)
    assert data.load_dataset("ml-1m", min_ratings=1, **kw).n_ratings == 5
    assert data.load_dataset("ml-1m", min_ratings=2, **kw).n_ratings == 4  # user 3 goes
    with pytest.raises(data.DataError, match="no ratings left"):
        data.load_dataset("ml-1m", min_ratings=10, **kw)


# ---------------------------------------------------------------- split rule
EXPECTED = {  # n: (train, valid, test), by hand from test = ceil(n/2), train = floor(0.85 (n - test))
    1: (0, 0, 1), 2: (0, 1, 1), 3: (0, 1, 2), 4: (1, 1, 2), 5: (1, 1, 3), 6: (2, 1, 3), 7: (2, 1, 4),
    8: (3, 1, 4), 9: (3, 1, 5), 10: (4, 1, 5), 11: (4, 1, 6), 12: (5, 1, 6), 13: (5, 1, 7),
    14: (5, 2, 7), 15: (5, 2, 8), 16: (6, 2, 8), 17: (6, 2, 9), 18: (7, 2, 9), 19: (7, 2, 10),
    20: (8, 2, 10), 21: (8, 2, 11), 22: (9, 2, 11), 23: (9, 2, 12), 24: (10, 2, 12),
    25: (10, 2, 13),
}


def test_split_sizes_formula_by_hand():
    for n, exp in EXPECTED.items():
        test = math.ceil(n / 2)
        r = n - test
        train = math.floor(Fraction(85, 100) * r)
        assert (train, r - train, test) == exp, n
    tr, va, te = data.split_sizes(np.arange(1, 26))
    assert list(zip(tr.tolist(), va.tolist(), te.tolist())) == [EXPECTED[n] for n in range(1, 26)]


def _hand_made_dataset():
    # user k (k = 1..25) rates k items; users interleaved in file order
    rng = np.random.default_rng(7)
    rows = [(u, i) for u in range(1, 26) for i in range(u)]
    rows = [rows[k] for k in rng.permutation(len(rows))]
    u = np.array([r[0] - 1 for r in rows], dtype=np.int32)
    i = np.array([r[1] for r in rows], dtype=np.int32)
    r = rng.integers(1, 6, len(rows)).astype(np.float32)
    return data.Dataset(name="hand-made", ratings=data.Ratings(u, i, r), n_users=25, n_items=25,
                        rating_scale=(1.0, 5.0), user_ids=np.arange(1, 26), item_ids=np.arange(25),
                        fingerprint="hand-made", synthetic=True, preprocessing={"min_ratings": 1})


@pytest.mark.parametrize("seed", [0, 1, 2, 99])
def test_split_rule_on_users_with_1_to_25_ratings(seed):
    ds = _hand_made_dataset()
    s = data.split_dataset(ds, seed=seed)
    for u in range(25):
        n = u + 1
        got = tuple(int((part.user == u).sum()) for part in (s.train, s.valid, s.test))
        assert got == EXPECTED[n], (n, got)
        items = np.concatenate([p.item[p.user == u] for p in (s.train, s.valid, s.test)])
        assert sorted(items.tolist()) == list(range(n))  # disjoint, and together all of the user's
    assert len(s.train) + len(s.valid) + len(s.test) == ds.n_ratings


def test_split_is_deterministic_and_seed_dependent():
    ds = _hand_made_dataset()
    a, b, c = data.split_dataset(ds, 3), data.split_dataset(ds, 3), data.split_dataset(ds, 4)
    for part in ("train", "valid", "test"):
        np.testing.assert_array_equal(getattr(a, part).item, getattr(b, part).item)
        np.testing.assert_array_equal(getattr(a, part).user, getattr(b, part).user)
    assert not np.array_equal(a.test.item, c.test.item)
    assert a.fingerprint == b.fingerprint != c.fingerprint


def test_split_is_the_same_on_every_platform():
    """The assignment depends only on PCG64's stream: pinned to the value computed when written."""
    user = np.repeat(np.arange(50, dtype=np.int32), np.arange(1, 51))
    part = split_mod.assign(user, 50, seed=2021)
    assert hashlib.sha256(part.tobytes()).hexdigest()[:16] == "0bd9f5aa64145a34"


def test_split_per_user_order_is_a_uniform_permutation():
    """Over many seeds, each of a user's 4 ratings lands in test about half the time."""
    user = np.zeros(4, dtype=np.int32)
    hits = np.zeros(4)
    for seed in range(2000):
        hits += split_mod.assign(user, 1, seed) == split_mod.TEST
    assert np.all(np.abs(hits / 2000 - 0.5) < 0.05)


# ---------------------------------------------------------------- cache and fingerprints
def _tiny(root, text):
    (root / "ml-1m").mkdir(parents=True, exist_ok=True)
    (root / "ml-1m/ratings.dat").write_text(text)


def _tiny_text(rating=3):
    return "".join(f"{u}::{i}::{rating if (u + i) % 3 else 5}\n" for u in range(1, 13) for i in range(1, 13))


def test_split_fingerprint_changes_with_data_preprocessing_and_seed(tmp_path, monkeypatch):
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path / "cache"))
    _tiny(tmp_path, _tiny_text())
    kw = dict(data_dir=tmp_path, verify=False)
    base = data.load_split("ml-1m", seed=0, **kw)
    assert data.load_split("ml-1m", seed=0, **kw).fingerprint == base.fingerprint
    assert data.load_split("ml-1m", seed=1, **kw).fingerprint != base.fingerprint
    assert data.load_split("ml-1m", seed=0, min_ratings=5, **kw).fingerprint != base.fingerprint
    assert data.load_split("ml-1m", seed=0, filtering="until_stable", **kw).fingerprint != base.fingerprint
    _tiny(tmp_path, _tiny_text(rating=4))  # new data
    changed = data.load_split("ml-1m", seed=0, **kw)
    assert changed.fingerprint != base.fingerprint
    assert changed.dataset.fingerprint != base.dataset.fingerprint
    assert float(changed.dataset.ratings.rating.max()) == 5.0 and 4.0 in changed.dataset.ratings.rating


def test_cache_is_used_and_rebuilt_when_the_key_changes(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("PHD_CACHE_DIR", str(cache))
    _tiny(tmp_path, _tiny_text())
    kw = dict(data_dir=tmp_path, verify=False)
    first = data.load_split("ml-1m", seed=0, **kw)
    files = sorted(p.name for p in (cache / "processed" / "ml-1m").iterdir())
    assert len(files) == 2  # the dataset and the split
    # a cached load neither parses nor splits
    calls = []
    monkeypatch.setattr(data.loading, "read_ratings", lambda *a, **k: calls.append("parse"))
    monkeypatch.setattr(split_mod, "assign", lambda *a, **k: calls.append("split"))
    again = data.load_split("ml-1m", seed=0, **kw)
    assert calls == [] and again.fingerprint == first.fingerprint
    np.testing.assert_array_equal(again.test.item, first.test.item)
    monkeypatch.undo()
    monkeypatch.setenv("PHD_CACHE_DIR", str(cache))
    # a new seed adds a split file; new preprocessing adds a dataset file
    data.load_split("ml-1m", seed=5, **kw)
    data.load_split("ml-1m", seed=0, min_ratings=3, **kw)
    assert len(list((cache / "processed" / "ml-1m").glob("*.npz"))) == 5
    # no temporary files left behind (atomic writes)
    assert not [p for p in cache.rglob("*.tmp")]


def test_corrupt_cache_entry_is_rebuilt(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("PHD_CACHE_DIR", str(cache))
    _tiny(tmp_path, _tiny_text())
    first = data.load_split("ml-1m", seed=0, data_dir=tmp_path, verify=False)
    for p in (cache / "processed" / "ml-1m").glob("*.npz"):
        p.write_bytes(b"garbage")
    again = data.load_split("ml-1m", seed=0, data_dir=tmp_path, verify=False)
    np.testing.assert_array_equal(again.train.item, first.train.item)


def test_ratings_contract_types():
    ds = _hand_made_dataset()
    s = data.split_dataset(ds)
    for part in (s.train, s.valid, s.test):
        assert part.user.dtype == np.int32 and part.item.dtype == np.int32 and part.rating.dtype == np.float32
    with pytest.raises(ValueError, match="one length"):
        data.Ratings(np.zeros(3), np.zeros(2), np.zeros(3))


def test_unwritable_cache_warns_and_still_loads(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("PHD_CACHE_DIR", str(blocker))
    _tiny(tmp_path, _tiny_text())
    with pytest.warns(RuntimeWarning, match="cache not written"):
        s = data.load_split("ml-1m", seed=0, data_dir=tmp_path, verify=False)
    assert len(s.train) + len(s.valid) + len(s.test) == s.dataset.n_ratings


@pytest.mark.parametrize("name,options", [
    ("ml-100k", {"min_ratings": 5}),
    ("synthetic", {"n_users": 300, "n_items": 200, "density": 0.05, "data_seed": 3}),
    ("synthetic", {"min_ratings": 2, "n_users": 200, "n_items": 100}),
])
def test_a_split_is_found_again_from_what_a_run_records(name, options):
    """The dataset registry, not its callers, turns recorded preprocessing back into
    loading options (export used to special-case synthetic data)."""
    from phdlib.experiments import training

    split = data.load_split(name, seed=4, data_dir=os.environ.get("PHD_DATA_DIR"), **options)
    info = training._data_info(split)
    again = data.reload_split(name, info, data_dir=os.environ.get("PHD_DATA_DIR"))
    assert again.fingerprint == split.fingerprint and again.seed == 4


def test_a_users_own_file_cannot_be_found_again_by_name(tmp_path):
    (tmp_path / "r.csv").write_text("u,i,r\n" + "".join(f"{u},{i},3\n" for u in range(5)
                                                        for i in range(5)))
    ds = data.load_file(tmp_path / "r.csv", "user=u,item=i,rating=r", "1,5", min_ratings=1)
    with pytest.raises(ValueError, match="was read from a file"):
        data.reload_split(ds.name, {"preprocessing": ds.preprocessing, "split_seed": 0})
