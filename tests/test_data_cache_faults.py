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


# ------------------------------------------------ leftovers and links (issue 27)
def test_a_cache_write_removes_killed_writers_temporaries_never_live_ones(tmp_path, monkeypatch):
    import fcntl
    import time

    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path))
    folder = C.processed_dir() / "toy"
    folder.mkdir(parents=True)
    old = time.time() - 7200
    names = {"dead": ".0123456789abcdef.npz.deadxxxx.tmp", "live": ".raw-00ff.json.livexxxx.tmp",
             "young": ".fedcba9876543210.npz.youngxxx.tmp", "users": ".notes",
             "user tmp": ".notes.txt.abcdefgh.tmp"}
    for what, n in names.items():
        (folder / n).write_bytes(b"half")
        if what != "young":
            os.utime(folder / n, (old, old))
    fd = os.open(folder / names["live"], os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a writer still at work
    try:
        C.save_npz(folder / "a.npz", x=np.arange(3))  # another file of the same folder
    finally:
        os.close(fd)
    left = {p.name for p in folder.iterdir()}
    assert names["dead"] not in left
    assert {names[k] for k in ("live", "young", "users", "user tmp")} | {"a.npz"} == left
    assert C.load_npz(folder / "a.npz")["x"].tolist() == [0, 1, 2]


def test_the_cache_does_not_write_through_a_link_out_of_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path / "cache"))
    outside = tmp_path / "outside"
    outside.mkdir()
    C.processed_dir().mkdir(parents=True)
    (C.processed_dir() / "toy").symlink_to(outside)
    with pytest.warns(RuntimeWarning, match="symbolic link") as got:
        C.save_npz(C.processed_dir() / "toy" / "a.npz", x=np.arange(3))
    msg = str(got[0].message)
    assert str(outside) in msg and str(C.processed_dir() / "toy") in msg
    assert list(outside.iterdir()) == []
    alias = tmp_path / "alias"  # the cache folder itself a link: fine
    alias.symlink_to(tmp_path / "cache")
    monkeypatch.setenv("PHD_CACHE_DIR", str(alias))
    C.save_json(C.processed_dir() / "m.json", {"a": 1})
    assert C.load_json(tmp_path / "cache" / "processed" / "m.json") == {"a": 1}
