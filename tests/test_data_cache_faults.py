"""The processed-data cache: every corruption is reported, never served, and rebuilt."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from phdlib import data
from phdlib.data import cache as C

ML100K = Path(os.environ.get("PHD_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))
needs_data = pytest.mark.skipif(not (ML100K / "ml-100k" / "u.data").is_file(),
                                reason="needs ml-100k in PHD_DATA_DIR")


def _flip(p):
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0xFF
    p.write_bytes(bytes(b))


def _all_fives(p):
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["rating"] = np.full_like(arrays["rating"], 5)
    np.savez(p, **arrays)  # the old checksum kept, the content changed


def _no_checksum(p):
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files if k != "__sha256__"}
    np.savez(p, **arrays)


CORRUPTIONS = {"flip": _flip, "truncate": lambda p: p.write_bytes(p.read_bytes()[:1000]),
               "empty": lambda p: p.write_bytes(b""), "all ratings 5": _all_fives,
               "no checksum": _no_checksum}


@needs_data
@pytest.mark.parametrize("kind", list(CORRUPTIONS))
def test_a_corrupt_processed_dataset_is_rebuilt_from_the_raw_file(tmp_path, monkeypatch, kind):
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path))
    good = data.load_dataset("ml-100k", data_dir=ML100K)
    (npz,) = [p for p in (tmp_path / "processed" / "ml-100k").glob("*.npz")]
    CORRUPTIONS[kind](npz)
    with pytest.warns(RuntimeWarning, match=str(npz.name)):
        back = data.load_dataset("ml-100k", data_dir=ML100K)
    assert back.fingerprint == good.fingerprint
    assert np.array_equal(back.ratings.rating, good.ratings.rating)
    assert C.load_npz(npz) is not None  # rebuilt, and valid again


@needs_data
@pytest.mark.parametrize("kind", ["flip", "truncate", "no checksum"])
def test_a_corrupt_split_cache_is_rebuilt(tmp_path, monkeypatch, kind):
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path))
    good = data.load_split("ml-100k", 0, data_dir=ML100K)
    (npz,) = [p for p in (tmp_path / "processed" / "ml-100k").glob("*-split-*.npz")]
    CORRUPTIONS[kind](npz)
    with pytest.warns(RuntimeWarning, match="rebuilt"):
        back = data.load_split("ml-100k", 0, data_dir=ML100K)
    assert np.array_equal(back.test.user, good.test.user)


@needs_data
@pytest.mark.parametrize("edit", ["fingerprint", "garbage"])
def test_an_edited_raw_memo_is_not_trusted(tmp_path, monkeypatch, edit):
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path))
    good = data.load_dataset("ml-100k", data_dir=ML100K)
    (memo,) = (tmp_path / "processed").glob("raw-*.json")
    if edit == "garbage":
        memo.write_text("{not json")
    else:
        body = json.loads(memo.read_text())
        body["fingerprint"] = "0" * 64
        memo.write_text(json.dumps(body))
    with pytest.warns(RuntimeWarning, match=memo.name):
        back = data.load_dataset("ml-100k", data_dir=ML100K)
    assert back.fingerprint == good.fingerprint


def test_npz_and_json_round_trips_and_the_reserved_name(tmp_path):
    C.save_npz(tmp_path / "a.npz", x=np.arange(5), y=np.array(["u", "v"]))
    got = C.load_npz(tmp_path / "a.npz")
    assert set(got) == {"x", "y"} and got["x"].tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="reserved"):
        C.save_npz(tmp_path / "b.npz", __sha256__=np.arange(2))
    C.save_json(tmp_path / "m.json", {"a": 1})
    assert C.load_json(tmp_path / "m.json") == {"a": 1}
    assert C.load_npz(tmp_path / "absent.npz") is None and C.load_json(tmp_path / "no.json") is None
