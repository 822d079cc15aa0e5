"""Writers killed by SIGKILL at random moments (issue 27): the results store, ``phd export``'s
writer (:func:`phdlib.serving.codes_file.save_codes`, through :func:`phdlib.io.atomic_write`) and the
data cache (:func:`phdlib.data.cache.save_npz`).

Each test forks one writer that writes in a loop and reports every write that returned
on a pipe, kills it after a seeded random delay (so the kill falls anywhere in the loop,
often inside a write), and starts it again, :data:`KILLS` times (more, up to three times
as many, while no kill has left a temporary yet); the children are forks of this
process, so phdlib is imported once. Then: everything stored reads back and
verifies, every write that returned is there exactly once, and one more write (with the
grace period set to 0, as the last kill is younger than it) leaves no temporaries, while
a user's own dot-files stay. Counts are printed with ``-s``.
"""
from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from phdlib.serving import codes_file
from phdlib import results
from phdlib import io as phd_io

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32",
                                reason="needs fork and SIGKILL")

KILLS = 20
SEED = 27
#: Longest random delay before a kill (seconds): several writes of the loop.
MAX_DELAY = 0.05


def _killed_loop(work, start: int, rng: random.Random) -> list[int]:
    """Fork a child running ``work(i)`` for ``i = start, start + 1, ...``; SIGKILL it after a
    random delay; the ``i`` whose ``work`` returned before the kill."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            os.close(r)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                i = start
                while True:
                    work(i)
                    os.write(w, b"%d\n" % i)
                    i += 1
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            os.write(w, f"error {type(exc).__name__}: {exc}\n".encode()[:4000])
            code = 3
        finally:
            os._exit(code)
    os.close(w)
    time.sleep(rng.uniform(0.0, MAX_DELAY))
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    out = b""
    while chunk := os.read(r, 1 << 16):
        out += chunk
    os.close(r)
    text = out.decode()
    assert "error" not in text, text  # the writer failed on its own
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    return [int(x) for x in text.split()]


def _kill_many(work, folder, ours=lambda name: True) -> tuple[set[int], int, int]:
    """:data:`KILLS` killed loops, each starting again at the write the last one cut short,
    and more (up to three times as many) while no kill has yet left a temporary in
    ``folder`` (a name starting with "." for which ``ours`` holds), so that the test always
    tests something. Returns the writes that returned, the last index started and the
    number of kills."""
    rng, done, start, kills = random.Random(SEED), set(), 0, 0
    while kills < KILLS or (kills < 3 * KILLS and not [n for n in _dot(folder) if ours(n)]):
        got = _killed_loop(work, start, rng)
        kills += 1
        done.update(got)
        if got:
            start = max(got) + 1
    return done, start, kills


def _dot(folder) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.startswith(".")) if folder.is_dir() else []


# ------------------------------------------------------------------- the results store
def _run(i: int) -> results.Run:
    return results.Run(
        method="toy", dataset="synthetic", bits=8, seed=i, config={"lr": 0.1},
        metrics={"ndcg@10": i / 1000}, fingerprint="kill", wall_seconds=0.1,
        per_user=pd.DataFrame({"user": np.arange(5), "ndcg@10": np.full(5, i / 1000)}),
        arrays={"user_codes": np.arange(2000, dtype=np.uint64) + np.uint64(i)},
        log=pd.DataFrame({"iteration": [1], "valid_ndcg@10": [i / 1000]}))


def test_saves_killed_at_random_moments(tmp_path, monkeypatch):
    root = tmp_path / "store"
    results.save(_run(10**6), root=tmp_path / "warm-up")  # lazy imports paid here, not per child
    folder = root / "synthetic" / "toy"
    done, last, kills = _kill_many(lambda i: results.save(_run(i), root=root), folder)
    (folder / ".user-notes").write_text("a user's own dot-file")  # never ours to remove
    left = [n for n in _dot(folder) if n != ".user-notes"]
    assert left, "no kill fell inside a save: the test did not test anything"

    runs = [p for p in folder.iterdir() if not p.name.startswith(".")]
    assert all(results.verify(p) is None for p in runs), [results.verify(p) for p in runs]
    by_key = Counter(json.loads(m.read_text())["key"] for m in root.rglob("meta.json")
                     if not any(s.startswith(".") for s in m.relative_to(root).parts))
    assert set(by_key.values()) == {1}                       # every run once
    assert {_run(i).key for i in done} <= set(by_key)        # every completed save is there
    assert set(by_key) <= {_run(i).key for i in range(last + 1)}  # and nothing else
    assert sorted(p.name for p in runs) == sorted(by_key)

    monkeypatch.setattr(phd_io, "GRACE_SECONDS", 0.0, raising=False)  # the last kill is young
    results.save(_run(last + 1), root=root)  # the next writer of the folder
    assert _dot(folder) == [".user-notes"]
    assert len(results.index(root)) == len(by_key) + (_run(last + 1).key not in by_key)
    print(f"\nkilled saves: {kills} kills, {len(done)} saves returned, {len(by_key)} runs "
          f"stored, {len(left)} leftovers removed by the next save")


# ---------------------------------------------------------------- phd export's writer
def _codes(i: int) -> codes_file.Codes:
    n = 4000
    rng = np.random.default_rng(i)
    return codes_file.Codes(np.arange(n), np.arange(n), rng.integers(0, 256, (n, 1)).astype(np.uint64),
                        rng.integers(0, 256, (n, 1)).astype(np.uint64), 8, "phd", {"i": i})


def test_exports_killed_at_random_moments(tmp_path, monkeypatch):
    out = tmp_path / "out" / "codes.npz"
    out.parent.mkdir()
    mine = [".codes.npz.bak", ".codes.npz.12345678.tmp.keep", ".other.npz.abcdefgh.tmp"]
    for n in mine:  # a user's dot-files, even ones that look like ours
        (out.parent / n).write_text("keep me")
        os.utime(out.parent / n, (0, 0))
    codes = {i: _codes(i) for i in range(3)}
    codes_file.save_codes(codes[0], tmp_path / "warm-up.npz")
    done, last, kills = _kill_many(lambda i: codes_file.save_codes(codes[i % 3], out), out.parent,
                                   lambda n: n not in mine)
    left = [n for n in _dot(out.parent) if n not in mine]
    assert left, "no kill fell inside an export: the test did not test anything"
    assert done and out.is_file()
    got = codes_file.load_codes(out)  # complete, its checksum holds
    assert got.provenance["i"] in {i % 3 for i in range(max(done), last + 1)}
    assert np.array_equal(got.user_codes, codes[got.provenance["i"]].user_codes)

    monkeypatch.setattr(phd_io, "GRACE_SECONDS", 0.0, raising=False)
    codes_file.save_codes(codes[0], out)  # the next export to the same file
    assert _dot(out.parent) == sorted(mine)
    assert all((out.parent / n).read_text() == "keep me" for n in mine)
    assert codes_file.load_codes(out).provenance["i"] == 0
    print(f"\nkilled exports: {kills} kills, {len(done)} exports returned, {len(left)} "
          f"leftovers removed by the next export")


# ------------------------------------------------------------------ the data cache
def test_cache_writes_killed_at_random_moments(tmp_path, monkeypatch):
    """The cache's writer (``_atomic``, under ``save_npz``/``save_json``) writing checksummed
    files made beforehand, and syncing them, so that the kills fall mostly inside a write
    (``save_npz`` spends most of its time hashing, before it opens its temporary, and a
    kill during the rename leaves nothing)."""
    from phdlib.data import cache as C

    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path))
    folder = C.processed_dir() / "toy"
    arrays = {i: np.arange(20_000) * (i + 1) for i in range(4)}
    blobs = {}
    for i in range(4):
        C.save_npz(tmp_path / f"{i}.npz", x=arrays[i])  # a valid file: its bytes
        blobs[i] = (tmp_path / f"{i}.npz").read_bytes()

    def write(i):
        def to(tmp):
            with open(tmp, "wb") as f:
                f.write(blobs[i % 4])
                f.flush()
                os.fsync(f.fileno())
        C._atomic(folder / f"{i % 4:016x}.npz", to)

    done, last, kills = _kill_many(write, folder)
    left = _dot(folder)
    assert left, "no kill fell inside a cache write: the test did not test anything"
    files = sorted(folder.glob("*.npz"))
    names = {int(p.stem, 16) for p in files}
    assert {i % 4 for i in done} <= names <= {i % 4 for i in range(last + 1)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a corrupt entry would be reported: none is
        for p in files:
            assert np.array_equal(C.load_npz(p)["x"], arrays[int(p.stem, 16)])

    monkeypatch.setattr(phd_io, "GRACE_SECONDS", 0.0, raising=False)
    C.save_json(folder / "other.json", {"a": 1})  # the next write into the folder
    assert _dot(folder) == []
    print(f"\nkilled cache writes: {kills} kills, {len(done)} writes returned, {len(left)} "
          f"leftovers removed by the next write")
