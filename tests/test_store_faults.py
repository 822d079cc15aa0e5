"""Fault injection on the results store: concurrent writers, killed writers, corrupt files.

Counts of this suite (saves, kills, corruptions tried) are printed with ``-s``.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import signal
import time
import warnings

import numpy as np
import pandas as pd
import pytest

from phdlib.results import store as results

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _run(seed=0, value=0.5, **kw):
    base = dict(method="toy", dataset="synthetic", bits=8, seed=seed, config={"lr": 0.1},
                metrics={"ndcg@10": value},
                per_user=pd.DataFrame({"user": np.arange(50), "ndcg@10": np.full(50, value)}),
                fingerprint="abc", wall_seconds=1.5,
                arrays={"user_codes": np.arange(4000, dtype=np.uint64)},
                log=pd.DataFrame({"iteration": [750], "valid_ndcg@10": [value]}),
                grid=pd.DataFrame({"lr": [0.1, 0.2], "chosen": [True, False]}))
    base.update(kw)
    return results.Run(**base)


def _dirs(root):
    return sorted(p.name for p in (root / "synthetic" / "toy").iterdir())


def _writer(root, worker, n, out):
    rng = random.Random(worker)
    bad = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(n):
            seed = rng.randrange(3)
            results.save(_run(seed, 0.1 * (seed + 1)), root=root)
            got = results.find("toy", "synthetic", 8, rng.randrange(3), {"lr": 0.1}, "abc",
                               root=root)
            if got is not None and (results.verify(got.path) is not None
                                    or got.metrics["ndcg@10"] != 0.1 * (got.seed + 1)):
                bad += 1
    out.put((worker, bad))


def test_many_processes_saving_and_reading_the_same_keys(tmp_path):
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(tmp_path, w, 75, out)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    bad = sum(out.get()[1] for _ in procs)
    print(f"\nconcurrency: 4 processes, 300 saves and 300 reads of 3 keys; corrupt reads {bad}")
    assert bad == 0
    idx = results.index(tmp_path)
    assert sorted(idx["seed"]) == [0, 1, 2]
    assert all(not n.startswith(".") for n in _dirs(tmp_path))  # nothing left behind


def _save_forever(root, seed):
    while True:
        results.save(_run(seed, 0.7), root=root)


def test_a_writer_killed_at_random_points_loses_nothing(tmp_path):
    """Before each kill the key holds a valid run, nothing, or a corrupt copy."""
    import shutil

    rng = random.Random(0)
    kept = results.save(_run(1, 0.3), root=tmp_path)  # an old complete run of another key
    dst = results.run_path("toy", "synthetic", _run(0).key, tmp_path)
    trials, outcomes = 150, {}
    for trial in range(trials):
        mode = ("valid", "absent", "corrupt")[trial % 3]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if mode != "valid":
                shutil.rmtree(dst, ignore_errors=True)
            if mode != "absent":
                results.save(_run(0, 0.7), root=tmp_path)
            if mode == "corrupt":
                (dst / "per_user.parquet").write_bytes(b"garbage")
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _save_forever(tmp_path, 0)
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.0, 0.02))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        assert results.verify(kept) is None
        problem = results.verify(dst) if dst.exists() else "absent"
        state = "valid" if problem is None else "absent" if problem == "absent" else "corrupt"
        outcomes[(mode, state)] = outcomes.get((mode, state), 0) + 1
        assert state == "valid" or (mode, state) in (("absent", "absent"), ("corrupt", "absent"),
                                                     ("corrupt", "corrupt")), (mode, problem)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert set(results.index(tmp_path)["seed"]) <= {0, 1}  # leftovers never listed
            got = results.find("toy", "synthetic", 8, 0, {"lr": 0.1}, "abc", root=tmp_path)
            assert got is None or got.metrics["ndcg@10"] == 0.7
            assert results.verify(results.save(_run(0, 0.7), root=tmp_path)) is None
    print(f"\nkills: {trials} SIGKILLs during saves; (state before, after): {outcomes}")
    results.clean(tmp_path / "synthetic" / "toy", older_than=-1, grace=0)  # the killed ones
    assert all(not n.startswith(".") for n in _dirs(tmp_path))
    assert sorted(results.index(tmp_path)["seed"]) == [0, 1]


def _flip(p):
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0x01
    p.write_bytes(bytes(b))


def _edit_metric(p):
    m = json.loads(p.read_text())
    m["metrics"]["ndcg@10"] = -39181.86
    p.write_text(json.dumps(m))


CORRUPTIONS = {
    "flip a byte": _flip,
    "truncate": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "empty": lambda p: p.write_bytes(b""),
    "delete": lambda p: p.unlink(),
}
FILES = ("meta.json",) + results.FILES


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("kind", list(CORRUPTIONS) + ["edit a metric"])
def test_every_corruption_is_reported_never_served_and_recomputed(tmp_path, name, kind):
    if kind == "edit a metric" and name != "meta.json":
        pytest.skip("only meta.json holds metrics")
    path = results.save(_run(), root=tmp_path)
    (_edit_metric if kind == "edit a metric" else CORRUPTIONS[kind])(path / name)
    problem = results.verify(path)
    assert problem is not None and problem.startswith(name), problem
    with pytest.raises(results.CorruptRun, match=name):
        results.load(path)
    with pytest.warns(RuntimeWarning, match=name):
        assert results.find("toy", "synthetic", 8, 0, {"lr": 0.1}, "abc", root=tmp_path) is None
    if (path / "meta.json").exists():
        with pytest.warns(RuntimeWarning):
            assert results.index(tmp_path).empty
    else:
        assert results.index(tmp_path).empty
    with pytest.warns(RuntimeWarning, match="replaced the stored run"):
        results.save(_run(), root=tmp_path)
    back = results.find("toy", "synthetic", 8, 0, {"lr": 0.1}, "abc", root=tmp_path)
    assert back is not None and back.metrics["ndcg@10"] == 0.5
    assert back.per_user["ndcg@10"].eq(0.5).all()


def test_a_run_survives_a_copy_to_another_store(tmp_path):
    import shutil

    path = results.save(_run(), root=tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    back = results.find("toy", "synthetic", 8, 0, {"lr": 0.1}, "abc", root=tmp_path / "b")
    assert back is not None and results.verify(back.path) is None
    assert back.path != path and back.metrics == {"ndcg@10": 0.5}


def test_runs_without_checksums_are_not_served(tmp_path):
    path = results.save(_run(), root=tmp_path)
    meta = json.loads((path / "meta.json").read_text())
    del meta["files"], meta["integrity"]
    (path / "meta.json").write_text(json.dumps(meta))
    with pytest.warns(RuntimeWarning, match="no checksums"):
        assert results.find("toy", "synthetic", 8, 0, {"lr": 0.1}, "abc", root=tmp_path) is None


@pytest.mark.parametrize("bad", ["../escaped", "a/b", "..", ".hidden", "", "x\\y", "n\x00ul"])
def test_names_that_would_leave_the_store_are_refused(tmp_path, bad):
    with pytest.raises(ValueError, match="plain name"):
        results.save(_run(dataset=bad), root=tmp_path / "store")
    with pytest.raises(ValueError, match="plain name"):
        results.save(_run(method=bad), root=tmp_path / "store")
    assert not any(p.name != "store" for p in tmp_path.iterdir())


def test_an_unwritable_store_returns_the_result_with_a_warning(tmp_path, monkeypatch):
    from phdlib import data
    from phdlib.experiments import training

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")  # the store root is a file: nothing can be written under it
    split = data.load_split("synthetic", 0)
    with pytest.warns(RuntimeWarning, match="could not be stored"):
        r = training.run("item-mean", split, 32, root=blocker, progress=False)
    assert 0 < r.metrics["ndcg@10"] <= 1


def test_a_full_disk_during_a_save_leaves_nothing(tmp_path, monkeypatch):
    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results.np, "savez", full)
    with pytest.raises(OSError, match="No space"):
        results.save(_run(), root=tmp_path)
    assert _dirs(tmp_path) == []


# ----------------------------------------------------------------- API inputs (issue 12)
def test_packed_codes_refuse_set_padding_bits():
    from phdlib import codes as C

    w = np.array([[np.uint64(0b101) | (np.uint64(1) << np.uint64(63))]], dtype=np.uint64)
    with pytest.raises(ValueError, match="padding bits above m=3"):
        C.PackedCodes(w, 3)
    ok = C.PackedCodes(np.array([[0b101]], dtype=np.uint64), 3)
    assert int(C.popcount(ok)[0]) == 2
    neg = ok.negate()  # negated codes carry ones above m: accepted as such
    assert C.PackedCodes(neg.words, 3, negated=True).negated


def test_search_refuses_a_k_whose_answer_cannot_fit():
    from phdlib import codes as C
    from phdlib.serving import search as S

    idx = S.BinaryIndex(8, "phd")
    idx.add(C.PackedCodes(np.arange(10, dtype=np.uint64)[:, None], 8))
    with pytest.raises(ValueError, match="k=1099511627776"):
        idx.search(C.PackedCodes(np.array([[3]], dtype=np.uint64), 8), 2**40)
    d, i = idx.search(C.PackedCodes(np.array([[3]], dtype=np.uint64), 8), 12)
    assert (i[0, 10:] == -1).all()  # k beyond n: padded, as faiss does


def test_a_permission_error_on_a_data_file_is_one_line(capsys, monkeypatch, tmp_path):
    from phdlib.cli import main
    from phdlib.data import formats

    (tmp_path / "ml-1m").mkdir()
    (tmp_path / "ml-1m" / "ratings.dat").write_text("1::2::3::4\n")

    def denied(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(formats, "_open_check", denied)
    code = main(["data", "stats", "--dataset", "ml-1m", "--data-dir", str(tmp_path),
                 "--no-verify"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("phd: error: ") and "Permission denied" in err
    assert "ratings.dat" in err and "\n" not in err


@pytest.mark.parametrize("bits,seed", [(-3, 0), (0, 0), (100_000_000, 0), (8, -1), (8, 2**64),
                                       (True, 0), (8.0, 0)])
def test_training_refuses_bits_and_seeds_out_of_range(tmp_path, bits, seed):
    from phdlib import data
    from phdlib.experiments import training

    split = data.load_split("synthetic", 0)
    with pytest.raises(ValueError, match="bits must be|seed must be"):
        training.run("popularity", split, bits, seed=seed, root=tmp_path)
    assert not any(tmp_path.iterdir())


def test_cli_and_library_bit_limits_agree():
    from phdlib.experiments import training
    from phdlib.cli import options

    assert options.MAX_BITS == training.MAX_BITS


# ------------------------------------------------ leftovers and links (issue 27)
def test_clean_removes_a_killed_saves_folder_never_a_live_one_nor_a_users(tmp_path):
    import fcntl

    folder = tmp_path / "synthetic" / "toy"
    old = time.time() - 7200
    names = {"dead": f".{_run(5).key}.deadxxxx.tmp", "live": f".{_run(6).key}.livexxxx.tmp",
             "aside": f".{_run(7).key}.corrupt-asidexxx",
             "young aside": f".{_run(8).key}.corrupt-youngxxx",
             "users": ".git", "user tmp": ".notakey.abcdefgh.tmp"}
    for what, n in names.items():
        (folder / n).mkdir(parents=True)
        (folder / n / "meta.json").write_text("{}")
        if what != "young aside":
            os.utime(folder / n, (old, old))
    fd = os.open(folder / names["live"], os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a save in progress holds its folder's lock
    try:
        results.save(_run(), root=tmp_path)  # the next writer of the folder cleans
        left = _dirs(tmp_path)
        assert names["dead"] not in left and names["aside"] not in left
        assert {names[k] for k in ("live", "young aside", "users", "user tmp")} <= set(left)
        results.clean(folder, older_than=1e9, grace=0)
        assert names["live"] in _dirs(tmp_path)  # whatever the age: its writer is alive
    finally:
        os.close(fd)
    results.clean(folder, grace=0)
    assert names["live"] not in _dirs(tmp_path)  # its writer gone, the lock is free
    assert {names["young aside"], names["users"], names["user tmp"]} <= set(_dirs(tmp_path))


def test_a_save_holds_its_folders_lock_until_published(tmp_path, monkeypatch):
    import fcntl

    seen = []
    real = results._publish

    def publish(tmp, dst):
        fd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append(tmp.name)
        finally:
            os.close(fd)
        os.utime(tmp, (0, 0))
        assert results.clean(dst.parent, older_than=-1, grace=0) == []  # not a live one's
        real(tmp, dst)

    monkeypatch.setattr(results, "_publish", publish)
    path = results.save(_run(), root=tmp_path)
    assert seen and results.verify(path) is None and _dirs(tmp_path) == [path.name]


@pytest.mark.parametrize("level", ["dataset", "method", "run"])
def test_a_link_out_of_the_store_is_refused_and_nothing_is_written_outside(tmp_path, level):
    root, outside = tmp_path / "store", tmp_path / "outside"
    outside.mkdir()
    run = _run()
    dst = results.run_path("toy", "synthetic", run.key, root)
    link = {"dataset": dst.parent.parent, "method": dst.parent, "run": dst}[level]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    with pytest.raises(results.LinkOutsideStore) as err:
        results.save(run, root=root)
    assert isinstance(err.value, OSError)
    msg = str(err.value)
    assert str(link) in msg and str(outside) in msg and "outside the results store" in msg
    assert "expected a folder inside the store" in msg
    assert list(outside.iterdir()) == []  # nothing written through the link


def test_a_run_behind_a_link_out_of_the_store_is_not_read(tmp_path):
    root, other = tmp_path / "store", tmp_path / "other"
    results.save(_run(), root=other)  # a complete run in another store
    root.mkdir()
    (root / "synthetic").symlink_to(other / "synthetic")
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        assert results.find("toy", "synthetic", 8, 0, {"lr": 0.1}, "abc", root=root) is None
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        assert results.index(root).empty
    assert results.count(root) == 0 and results.count(other) == 1
    path = results.run_path("toy", "synthetic", _run().key, root)
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        assert not results.stored(path, root=root)
    assert results.stored(path)  # without its root: the folder as given


def test_links_inside_the_store_and_a_linked_root_are_fine(tmp_path):
    real = tmp_path / "real"
    (real / "synthetic-data").mkdir(parents=True)
    (real / "synthetic").symlink_to(real / "synthetic-data")  # stays inside the root
    alias = tmp_path / "alias"
    alias.symlink_to(real)  # the root itself a link
    path = results.save(_run(), root=alias)
    assert path == alias / "synthetic" / "toy" / _run().key
    assert (real / "synthetic-data" / "toy" / _run().key / "meta.json").is_file()
    assert results.find("toy", "synthetic", 8, 0, {"lr": 0.1}, "abc", root=alias) is not None
    assert set(results.index(alias)["key"]) == {_run().key}  # (seen under both names)


def test_training_into_a_linked_out_store_returns_the_result_with_a_warning(tmp_path):
    from phdlib import data
    from phdlib.experiments import training

    (tmp_path / "outside").mkdir()
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "synthetic").symlink_to(tmp_path / "outside")
    split = data.load_split("synthetic", 0)
    with pytest.warns(RuntimeWarning) as got:
        r = training.run("item-mean", split, 32, root=tmp_path / "store", progress=False)
    said = [str(w.message) for w in got]
    assert any("cannot read the run" in m and "symbolic link" in m for m in said), said
    assert any("could not be stored" in m and "symbolic link" in m for m in said), said
    assert 0 < r.metrics["ndcg@10"] <= 1
    assert list((tmp_path / "outside").iterdir()) == []


def _reseal(path):
    """Record the run's files as they are now (a forgery only the content checks catch)."""
    from phdlib.io import file_sha256

    meta = json.loads((path / "meta.json").read_text())
    meta["files"] = {n: file_sha256(path / n) for n in results.FILES if (path / n).is_file()}
    meta.pop("integrity")
    meta["integrity"] = results._meta_digest(meta)
    (path / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("forge", ["object array", "no seed", "garbage parquet"])
def test_a_resealed_run_that_cannot_be_read_names_its_folder(tmp_path, capsys, forge):
    """A run whose checksums were recomputed over unreadable content: one error naming
    the run (an object array used to give a message without any path)."""
    from phdlib.cli import main

    path = results.save(_run(), root=tmp_path)
    if forge == "object array":
        np.savez(path / "arrays.npz", user_codes=np.array([1, "a", None], dtype=object))
    elif forge == "no seed":
        meta = json.loads((path / "meta.json").read_text())
        del meta["seed"]
        (path / "meta.json").write_text(json.dumps(meta))
    else:
        (path / "per_user.parquet").write_bytes(b"PAR1 not really")
    _reseal(path)
    assert results.verify(path) is None
    with pytest.raises(results.CorruptRun, match=f"stored run {path} cannot be used: unreadable"):
        results.load(path)
    code = main(["export", "--run", str(path), "--out", str(tmp_path / "c.npz")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"stored run {path}" in err
