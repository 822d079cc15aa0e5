"""phdlib.io: atomic writes, and the cleaning of temporaries left by killed writers
(a live writer's never, a user's dot-files never)."""
from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from phdlib import io

fcntl = pytest.importorskip("fcntl")
OLD = time.time() - 7200  # older than the grace and than STALE_SECONDS


def _leftover(folder, name="codes.npz", rand="abcdefgh", when=OLD):
    p = folder / f".{name}.{rand}.tmp"
    p.write_bytes(b"half a file")
    os.utime(p, (when, when))
    return p


def _clean(folder, name="codes.npz", **kw):
    return io.clean_temporaries(folder, io.temporary_pattern(name), **kw)


def test_a_dead_writers_temporary_older_than_the_grace_is_removed(tmp_path):
    young = _leftover(tmp_path, rand="young___", when=time.time())
    dead = _leftover(tmp_path)
    assert io.abandoned(dead) and not io.abandoned(young)
    assert _clean(tmp_path) == [dead]
    assert young.exists()
    assert _clean(tmp_path, grace=0) == [young]  # the grace can be passed


def test_the_grace_is_a_module_constant(tmp_path, monkeypatch):
    p = _leftover(tmp_path, when=time.time() - 30)
    monkeypatch.setattr(io, "GRACE_SECONDS", 60.0)
    assert _clean(tmp_path) == [] and p.exists()
    monkeypatch.setattr(io, "GRACE_SECONDS", 10.0)
    assert _clean(tmp_path) == [p]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_temporary_locked_by_another_live_process_is_never_removed(tmp_path):
    p = _leftover(tmp_path)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: a live writer
        try:
            fd = os.open(p, os.O_RDWR)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(w, b"x")
            time.sleep(60)
        finally:
            os._exit(0)
    os.close(w)
    try:
        assert os.read(r, 1) == b"x"
        assert not io.abandoned(p, grace=0, stale=-1)  # even with no grace and no age limit
        assert _clean(tmp_path, grace=0, stale=-1) == [] and p.exists()
    finally:
        os.kill(pid, signal.SIGKILL)  # the kernel drops its lock
        os.waitpid(pid, 0)
        os.close(r)
    assert _clean(tmp_path, grace=0) == [p] and not p.exists()


def test_a_temporary_locked_in_this_process_is_never_removed(tmp_path):
    p = _leftover(tmp_path)
    fd = os.open(p, os.O_RDONLY)  # another open file description: its flock conflicts
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert _clean(tmp_path, grace=0, stale=-1) == [] and p.exists()
    finally:
        os.close(fd)
    assert _clean(tmp_path, grace=0) == [p]


def test_a_write_in_progress_survives_a_second_writer_of_the_same_file(tmp_path, monkeypatch):
    monkeypatch.setattr(io, "GRACE_SECONDS", 0.0)
    target = tmp_path / "codes.npz"
    with io.atomic_write(target) as outer:
        outer.write(b"outer")
        (tmp,) = tmp_path.glob(".codes.npz.*.tmp")
        os.utime(tmp, (OLD, OLD))
        with io.atomic_write(target) as inner:  # cleans first: the outer one is live
            inner.write(b"inner")
        assert tmp.exists()
    assert target.read_bytes() == b"outer"
    assert [p.name for p in tmp_path.iterdir()] == ["codes.npz"]


def test_only_our_own_names_are_touched(tmp_path):
    theirs = [".codes.npz", ".codes.npz.bak", ".codes.npz.abcdefgh.tmp.keep",
              ".codes.npz.ABCDEFGH.tmp", ".codes.npz.abc.tmp", ".other.npz.abcdefgh.tmp",
              ".DS_Store", "codes.npz.abcdefgh.tmp"]
    for n in theirs:
        (tmp_path / n).write_text("a user's")
        os.utime(tmp_path / n, (OLD, OLD))
    (tmp_path / ".git").mkdir()
    folder = tmp_path / ".codes.npz.folder__.tmp"  # our pattern, but a folder
    folder.mkdir()
    os.utime(folder, (OLD, OLD))
    outside = tmp_path / "elsewhere"
    outside.write_text("the target of a link")
    link = tmp_path / ".codes.npz.linked__.tmp"  # our pattern, but a link
    link.symlink_to(outside)
    dead = _leftover(tmp_path)
    io.write_text(tmp_path / "codes.npz", "new")
    assert not dead.exists()
    assert all((tmp_path / n).read_text() == "a user's" for n in theirs)
    assert folder.is_dir() and (tmp_path / ".git").is_dir()
    assert link.is_symlink() and outside.read_text() == "the target of a link"


def test_without_a_lock_test_the_age_rule_decides(tmp_path, monkeypatch):
    monkeypatch.setattr(io, "fcntl", None)  # as where fcntl is missing
    recent = _leftover(tmp_path, rand="recent__", when=time.time() - 60)
    old = _leftover(tmp_path)
    assert _clean(tmp_path, grace=0) == [old]
    assert recent.exists()
    io.write_text(tmp_path / "x.txt", "still written")  # and writing works without a lock
    assert (tmp_path / "x.txt").read_text() == "still written"


def test_a_file_system_without_flock_falls_back_to_the_age_rule(tmp_path, monkeypatch):
    class NoFlock:
        LOCK_EX, LOCK_NB = fcntl.LOCK_EX, fcntl.LOCK_NB

        @staticmethod
        def flock(fd, op):
            raise OSError(37, "No locks available")  # ENOLCK

    monkeypatch.setattr(io, "fcntl", NoFlock)
    recent = _leftover(tmp_path, rand="recent__", when=time.time() - 60)
    old = _leftover(tmp_path)
    assert _clean(tmp_path, grace=0) == [old] and recent.exists()


def test_a_failed_write_leaves_nothing_and_the_old_file(tmp_path):
    io.write_text(tmp_path / "a.txt", "old")
    with pytest.raises(RuntimeError):
        with io.atomic_write(tmp_path / "a.txt", "w") as fh:
            fh.write("half")
            raise RuntimeError("the writer failed")
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]
    assert (tmp_path / "a.txt").read_text() == "old"
    assert oct((tmp_path / "a.txt").stat().st_mode & 0o777) == "0o644"


def test_link_out_names_the_link_and_its_target(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a").mkdir(parents=True)
    outside.mkdir()
    (root / "in").symlink_to(root / "a")
    (root / "out").symlink_to(outside)
    assert io.link_out(root / "a" / "x" / "y", root) is None        # not there yet: fine
    assert io.link_out(root / "in" / "x", root) is None             # a link inside the root
    assert io.link_out(root / "out" / "x", root) == (root / "out", outside)
    (root / "a" / "deep").symlink_to(outside)
    assert io.link_out(root / "in" / "deep" / "k", root) == (root / "in" / "deep", outside)
    alias = tmp_path / "alias"
    alias.symlink_to(root)  # the root itself a link: resolved, fine
    assert io.link_out(alias / "a" / "x", alias) is None
    assert io.link_out(alias / "out", alias) == (alias / "out", outside)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX")
def test_importing_without_fcntl_works(tmp_path):
    import subprocess

    code = ("import sys; sys.modules['fcntl'] = None\n"
            "from phdlib import io\n"
            "assert io.fcntl is None\n"
            f"io.write_text({str(tmp_path / 'f.txt')!r}, 'ok')\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert (tmp_path / "f.txt").read_text() == "ok"


def test_sources_sha256_changes_with_any_edit_added_or_renamed_file(tmp_path):
    import hashlib

    lib = tmp_path / "lib"
    (lib / "sub").mkdir(parents=True)
    (lib / "a.py").write_text("x = 1\n")
    (lib / "sub" / "b.py").write_text("y = 2\n")
    (lib / "notes.txt").write_text("not a source")
    first = io.sources_sha256(lib)
    # the book driver's chapter-cache hash before it called this: path, then bytes, sorted
    h = hashlib.sha256()
    for f in sorted(lib.rglob("*.py")):
        h.update(str(f.relative_to(lib)).encode())
        h.update(f.read_bytes())
    assert first == h.hexdigest()
    (lib / "notes.txt").write_text("edited")
    assert io.sources_sha256(lib) == first  # not a source
    seen = {first}
    for change in (lambda: (lib / "a.py").write_text("x = 2\n"),
                   lambda: (lib / "c.py").write_text(""),
                   lambda: (lib / "c.py").rename(lib / "sub" / "c.py")):
        change()
        seen.add(io.sources_sha256(lib))
    assert len(seen) == 4
