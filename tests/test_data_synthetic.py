"""Synthetic data: seeded planted codes through PHD, ML-1M-like by default, always labelled."""
from __future__ import annotations

import json

import numpy as np
import pytest

from phdlib import data
from phdlib.data import synthetic  # noqa: F401  (data.synthetic below)
from phdlib.cli import main as phd_main

SMALL = dict(n_users=80, n_items=50, density=0.3)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    # one cache for this module: the ML-1M-sized default is generated once
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "synthetic-cache"))


def test_small_sizes_exact_and_labelled():
    s = data.load_split("synthetic", seed=0, **SMALL)
    ds = s.dataset
    assert ds.synthetic and "synthetic" in ds.name and "SYNTHETIC" in repr(ds)
    assert (ds.n_users, ds.n_items) == (80, 50)
    assert abs(ds.density - 0.3) < 0.05
    assert np.bincount(ds.ratings.user).min() >= 10 and np.bincount(ds.ratings.item).min() >= 10
    assert set(np.unique(ds.ratings.rating)) <= {1, 2, 3, 4, 5} and ds.rating_scale == (1.0, 5.0)
    assert len(s.train) + len(s.valid) + len(s.test) == ds.n_ratings
    assert data.stats(s)["synthetic"] is True
    # no repeated (user, item)
    key = ds.ratings.user.astype(np.int64) * ds.n_items + ds.ratings.item
    assert np.unique(key).size == key.size


def test_seeded_and_cached_identically():
    a = data.load_dataset("synthetic", data_seed=3, cache=False, **SMALL)
    b = data.load_dataset("synthetic", data_seed=3, **SMALL)
    c = data.load_dataset("synthetic", data_seed=3, **SMALL)  # from the cache
    d = data.load_dataset("synthetic", data_seed=4, **SMALL)
    for x in (b, c):
        np.testing.assert_array_equal(a.ratings.item, x.ratings.item)
        np.testing.assert_array_equal(a.ratings.rating, x.ratings.rating)
        np.testing.assert_array_equal(a.truth["user_codes"], x.truth["user_codes"])
        assert x.fingerprint == a.fingerprint and x.synthetic
    assert d.fingerprint != a.fingerprint
    assert data.load_split("synthetic", **SMALL).fingerprint != data.load_split("synthetic", noise=0.0, **SMALL).fingerprint


def test_ratings_come_from_phd_of_the_planted_codes():
    ds = data.load_dataset("synthetic", noise=0.0, bits=16, **SMALL)
    uc = ds.truth["user_codes"][:, 0][ds.ratings.user]
    ic = ds.truth["item_codes"][:, 0][ds.ratings.item]
    phd = np.bitwise_count(uc & ~ic).astype(float)
    pop = np.bitwise_count(uc).astype(float)
    expect = np.clip(np.rint(3.6 + (pop - 2 * phd) / np.sqrt(np.maximum(pop, 1))), 1, 5)
    np.testing.assert_array_equal(ds.ratings.rating, expect)
    noisy = data.load_dataset("synthetic", noise=0.5, bits=16, **SMALL)
    assert np.corrcoef(noisy.ratings.rating, expect)[0, 1] > 0.7
    assert ds.truth["bits"] == 16 and ds.truth["user_codes"].dtype == np.uint64


def test_default_is_ml1m_shaped():
    ds = data.load_dataset("synthetic")
    assert (ds.n_users, ds.n_items) == (6040, 3260)
    assert abs(100 * ds.density - 5.07) < 0.05
    per_user = np.bincount(ds.ratings.user)
    assert per_user.min() >= 10 and per_user.max() > 5 * np.median(per_user) / 2  # skewed like ML-1M
    r = ds.ratings.rating
    assert abs(r.mean() - 3.58) < 0.1 and abs(r.std() - 1.12) < 0.1  # ML-1M: 3.58, 1.12


def test_bad_parameters():
    with pytest.raises(ValueError, match="min_ratings"):
        data.load_dataset("synthetic", n_users=5, n_items=50, density=0.5)
    with pytest.raises(ValueError, match="bits"):
        data.load_dataset("synthetic", bits=65, **SMALL)
    with pytest.raises(ValueError, match="density"):
        data.load_dataset("synthetic", n_users=50, n_items=50, density=1.5)
    with pytest.raises(TypeError, match="unknown options"):
        data.load_dataset("synthetic", n_user=5)


def test_cli_labels_synthetic(capsys):
    assert phd_main(["data", "stats", "--dataset", "synthetic"]) == 0
    assert "SYNTHETIC" in capsys.readouterr().out
    assert phd_main(["data", "stats", "--dataset", "synthetic", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["synthetic"] is True and out["paper"] is None


def test_generator_output_is_pinned():
    """Same parameters, same data on every platform; a deliberate change must bump
    phdlib.data.synthetic.VERSION and this value."""
    ds = data.load_dataset("synthetic", cache=False, **SMALL)
    assert data.synthetic.VERSION == 5
    assert ds.fingerprint == "541291b0c256a03bf09d606b319152c549258a38d8295f05a2782c4ef0b55c29"


# ------------------------------------------------------------ the paper's shapes (issue 14)
def test_scale_shapes_are_named_synthetic_and_have_their_shape(monkeypatch, tmp_path):
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path))
    ds = data.load_dataset("synthetic-yelp")
    want = data.SCALE_SHAPES["synthetic-yelp"]
    assert ds.name == "synthetic-yelp" and ds.synthetic
    assert (ds.n_users, ds.n_items) == (want["n_users"], want["n_items"])
    assert abs(ds.n_ratings - want["ratings"]) / want["ratings"] < 0.1
    assert np.bincount(ds.ratings.user).min() >= 10 and np.bincount(ds.ratings.item).min() >= 10
    assert "synthetic-yelp" in data.names() and data.available("synthetic-yelp")
    assert data.load_dataset("synthetic-yelp").fingerprint == ds.fingerprint  # from the cache
    with pytest.raises(TypeError, match="fixed shape"):
        data.load_dataset("synthetic-yelp", n_users=5)


def test_generation_grows_with_ratings_not_users_times_items(monkeypatch):
    """A 10^6 x 10^6 catalogue with 10^6 ratings: per-pair work would need 10^12 steps."""
    from phdlib.data import synthetic as S

    u, i, r, _ = S.generate(n_users=100_000, n_items=1_000_000, density=1e-5, min_ratings=1)
    keys = u.astype(np.int64) * 1_000_000 + i
    assert 0.9e6 < u.size < 2e6 and np.unique(keys).size == u.size  # every item rated once
    assert np.bincount(i, minlength=1_000_000).min() >= 1


def test_count_shapes_are_fit_to_ml_1m():
    import os
    from pathlib import Path

    from phdlib.data import synthetic as S

    root = Path(os.environ.get("PHD_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))
    if not (root / "ml-1m" / "ratings.dat").is_file():
        pytest.skip("needs ML-1M")
    ds = data.load_dataset("ml-1m", data_dir=root)
    for rows, sigma in ((ds.ratings.user, S.USER_SIGMA), (ds.ratings.item, S.ITEM_SIGMA)):
        c = np.bincount(rows)
        assert np.log(c - 10 + 1).std() == pytest.approx(sigma, abs=0.001)
    u, i, _, _ = S.generate()  # the generator reproduces them (within sampling noise)
    assert np.log(np.bincount(u) - 10 + 1).std() == pytest.approx(S.USER_SIGMA, abs=0.05)
    assert np.log(np.bincount(i) - 10 + 1).std() == pytest.approx(S.ITEM_SIGMA, abs=0.1)
