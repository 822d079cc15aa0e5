"""Small file helpers every store and cache of ``phdlib`` shares.

- :func:`atomic_write`: write a file through a temporary name in the same
  folder and rename it into place, so a reader sees the old file or the new
  one, never a partial one;
- :func:`clean_temporaries` / :func:`abandoned` / :func:`holding`: the
  temporaries of writers that were killed are removed by the next writer,
  never those of a live one (see "Leftovers" below);
- :func:`link_out`: the symbolic link, if any, that leads a path below a
  store's root out of it (the stores refuse to write through one);
- :func:`file_sha256`: the checksum the stores record;
- :func:`write_json` / :func:`canonical` / :func:`digest`: JSON that numpy
  values and paths survive, a canonical (sorted, compact) form, and a short
  sha256 of that form (the content keys of the stores).

Leftovers. A writer killed while it writes (even by SIGKILL) leaves its
temporary behind: ``.<name>.<random>.tmp`` beside a file, or a temporary
folder of a store. Every writer holds an exclusive ``flock`` on its
temporary (the file's own descriptor, or the folder's) from just after
creating it until it has renamed it into place or removed it; the kernel
drops that lock when the process ends, however it ends. A cleaner removes a
temporary only when it can take that lock at once (so its writer is gone)
and the temporary is older than :data:`GRACE_SECONDS` (the moment between
creating a temporary and locking it). Where the lock cannot be tested (no
``fcntl``, a file system without ``flock``, a temporary of another user),
the old age rule applies: older than :data:`STALE_SECONDS`. Temporaries this
process is writing are never removed by it, whatever the file system. Only
names of the writers' own pattern are ever touched.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: leftovers go by age alone
    fcntl = None

#: A temporary younger than this (seconds) is never removed, even when no one holds
#: its lock: its writer may have created it and not locked it yet.
GRACE_SECONDS = 5.0
#: A temporary whose lock cannot be tested is removed only when older than this (seconds).
STALE_SECONDS = 3600.0
#: The random part of a temporary's name (``tempfile``'s: 8 of ``[a-z0-9_]``).
RANDOM = r"[a-z0-9_]{8}"

# Temporaries this process is writing now (absolute paths): never removed by it,
# also where the lock of another open of the same file would not conflict (POSIX
# locks emulating flock on NFS belong to the process, not to the open file).
_LIVE: set[str] = set()


def _lock(fd: int) -> bool | None:
    """Take the exclusive flock on ``fd`` without waiting: True taken, False held
    by another open file, None cannot be tested here."""
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        return None  # EBADF (NFS wants a writable file), ENOLCK, EOPNOTSUPP, EINVAL ...


@contextmanager
def holding(path: Path | str, fd: int | None = None) -> Iterator[None]:
    """Mark the temporary ``path`` as being written for the duration of the block.

    Holds an exclusive flock on ``fd`` (the temporary's own open descriptor,
    kept open by the caller) or, without ``fd``, on a descriptor of ``path``
    opened here (a folder: the folder itself), and registers ``path`` as live
    in this process. Where flock is not available the block runs unlocked
    (cleaners then go by age, :data:`STALE_SECONDS`).
    """
    path = os.path.abspath(path)
    own = None
    if fd is None:
        flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if os.path.isdir(path) else 0)
        try:
            own = fd = os.open(path, flags)
        except OSError:
            fd = None
    if fd is not None:
        _lock(fd)
    _LIVE.add(path)
    try:
        yield
    finally:
        _LIVE.discard(path)
        if own is not None:
            os.close(own)  # drops the lock


def _lock_free(path: str, directory: bool) -> bool | None:
    """Whether no one holds the flock of the temporary ``path`` (None: cannot tell;
    ``FileNotFoundError`` when it is gone)."""
    if fcntl is None:
        return None
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    if directory:
        flags |= getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError:
        return None  # not ours to open (another user's): go by age
    try:
        got = _lock(fd)
        if got is None and not directory:  # NFS locks a file for writing only
            try:
                fd2 = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
            except OSError:
                return None
            os.close(fd)
            fd, got = fd2, _lock(fd2)
        return got
    finally:
        os.close(fd)  # (releases the lock taken for the test)


def abandoned(path: Path | str, directory: bool = False, grace: float | None = None,
              stale: float | None = None, now: float | None = None) -> bool:
    """Whether the temporary ``path`` (a file, or a folder if ``directory``) was left
    by a writer that is gone, so that it may be removed.

    True when it is older than ``grace`` (default :data:`GRACE_SECONDS`) and no
    one holds its lock (see the module docstring); where the lock cannot be
    tested, when it is older than ``stale`` (default :data:`STALE_SECONDS`).
    Never for a temporary this process is writing, a symbolic link, or
    something that is not a plain file (folder) as asked.
    """
    grace = GRACE_SECONDS if grace is None else grace
    stale = STALE_SECONDS if stale is None else stale
    path = os.path.abspath(path)
    if path in _LIVE:
        return False
    try:
        st = os.lstat(path)
        if not (stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)):
            return False
        age = (time.time() if now is None else now) - st.st_mtime
        if age <= grace:
            return False
        free = _lock_free(path, directory)
    except OSError:  # gone meanwhile (its writer finished), or cannot be looked at
        return False
    return bool(free) if free is not None else age > stale


def temporary_pattern(name: str) -> re.Pattern:
    """The names :func:`atomic_write` gives its temporaries for the file ``name``."""
    return re.compile(rf"\.{re.escape(name)}\.{RANDOM}\.tmp")


def clean_temporaries(folder: Path | str, pattern: re.Pattern | str, directory: bool = False,
                      grace: float | None = None, stale: float | None = None) -> list[Path]:
    """Remove the :func:`abandoned` temporaries in ``folder`` whose whole name matches
    ``pattern`` (files, or folders if ``directory``); returns the removed paths.

    Nothing else is touched: other names, live writers' temporaries, young ones.
    A folder that cannot be listed removes nothing.
    """
    import shutil

    pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
    removed = []
    try:
        names = [n for n in os.listdir(folder) if n.startswith(".") and pattern.fullmatch(n)]
    except OSError:
        return removed
    now = time.time()
    for n in names:
        p = Path(folder) / n
        if not abandoned(p, directory, grace, stale, now):
            continue
        try:
            if directory:
                shutil.rmtree(p)
            else:
                os.unlink(p)
            removed.append(p)
        except FileNotFoundError:
            continue  # another cleaner was first
        except OSError:
            if directory:
                shutil.rmtree(p, ignore_errors=True)
                if not os.path.lexists(p):
                    removed.append(p)
    return removed


def json_default(o: Any):
    """``json.dumps(default=...)`` for numpy scalars and arrays, paths, sets and tuples."""
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, (set, tuple)):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def canonical(obj: Any) -> str:
    """Compact JSON with sorted keys: equal inputs give equal strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=json_default)


def file_sha256(path: Path | str) -> str:
    """sha256 (hex) of a file's bytes, read in 4 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def sources_sha256(folder: Path | str, pattern: str = "*.py") -> str:
    """sha256 (hex) over the files matching ``pattern`` under ``folder``: each one's path
    relative to ``folder``, then its bytes, in sorted order (a library's sources: any
    edit, added or removed file changes it)."""
    folder = Path(folder)
    h = hashlib.sha256()
    for f in sorted(folder.rglob(pattern)):
        h.update(str(f.relative_to(folder)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def digest(obj: Any, length: int = 16) -> str:
    """The first ``length`` hex digits of sha256 over :func:`canonical` of ``obj``."""
    return hashlib.sha256(canonical(obj).encode()).hexdigest()[:length]


def link_out(path: Path, root: Path, base: Path | None = None, memo: dict | None = None):
    """``(link, target)``: the first symbolic link from ``root`` down to ``path`` (itself
    included) that resolves outside the resolved ``root`` (``base``, when given), or
    None when there is none. ``root`` itself may be a link. ``memo``: a dict shared by
    calls for paths below one root (each folder is looked at once)."""
    base = Path(os.path.realpath(root)) if base is None else base
    try:
        parts = Path(path).relative_to(root).parts
    except ValueError:  # not below root as written: where it really is decides
        real = Path(os.path.realpath(path))
        return None if real == base or base in real.parents else (Path(path), real)
    cur = base
    for part in parts:
        cur = cur / part
        if memo is not None and cur in memo:
            found = memo[cur]
        else:
            found = None
            if os.path.islink(cur):
                target = Path(os.path.realpath(cur))
                if target != base and base not in target.parents:
                    found = (Path(root).joinpath(*cur.relative_to(base).parts), target)
            if memo is not None:
                memo[cur] = found
        if found is not None:
            return found
    return None


def not_a_file_target(path: Path | str) -> str | None:
    """Why writing ``path`` by renaming a new file onto it would be wrong, or None: an
    empty path, a folder, or something that is not a regular file (a FIFO, a device
    such as /dev/null, a socket), which the rename would silently replace."""
    if str(path) in ("", "."):
        return "an empty path; expected a file name"
    p = Path(path)
    if p.is_dir():
        return f"{p}: is a folder; expected a file path"
    if p.exists() and not stat.S_ISREG(os.stat(p).st_mode):  # a dangling link is replaced
        return (f"{p}: is not a regular file (a device, FIFO or socket), and writing would "
                    f"replace it; expected a file path")
    return None


@contextmanager
def atomic_write(path: Path | str, mode: str = "wb") -> Iterator[Any]:
    """Open a temporary file beside ``path``; on success rename it to ``path``.

    The temporary file is ``.<name>.<random>.tmp`` in the same folder (so the
    rename is atomic on one file system); on error it is removed and the old
    ``path``, if any, is left untouched. ``mode``: ``"wb"`` or ``"w"``. The
    writer holds the temporary's lock until it is renamed (see "Leftovers" in
    the module docstring), and first removes the temporaries of ``path`` left
    by killed writers (:func:`clean_temporaries`).
    """
    path = Path(path)
    problem = not_a_file_target(path)
    if problem:
        raise IsADirectoryError(problem) if path.is_dir() else OSError(problem)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_temporaries(path.parent, temporary_pattern(path.name))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OSError(f"cannot write {path}: no file can be made in {path.parent} "
                      f"({exc.strerror or exc})") from exc
    try:
        with os.fdopen(fd, mode) as fh, holding(tmp, fd):
            os.chmod(tmp, 0o644)  # mkstemp's 0600 would make the published file private
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
            os.replace(tmp, path)  # before the close: the lock is held until it is in place
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_text(path: Path | str, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write`)."""
    with atomic_write(path, "w") as fh:
        fh.write(text)
    return Path(path)


def records(df) -> list[dict]:
    """A DataFrame's rows as JSON-ready dicts: NaN (missing) values become ``None``."""
    return [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in df.to_dict(orient="records")]


def write_json(path: Path | str, obj: Any, indent: int | None = 1) -> Path:
    """Write ``obj`` as JSON to ``path`` atomically (numpy values allowed)."""
    return write_text(path, json.dumps(obj, indent=indent, default=json_default))


def read_recorded(path: Path | str, fmt: str, what: str, short: str, writer: str,
                  need=()) -> dict:
    """A recorded measurement written as ``{"format": fmt, "provenance": {...}, "rows": [...]}``.

    Returns ``{"provenance": dict, "rows": DataFrame}``; ``ValueError`` naming the
    file when it cannot be read (``what``: e.g. "scale sweep"), is not of format
    ``fmt`` (written by ``writer``), or its rows lack a column of ``need``.
    """
    import pandas as pd

    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable {what} ({exc})") from None
    if not isinstance(obj, dict) or obj.get("format") != fmt or \
            not isinstance(obj.get("rows"), list) or not isinstance(obj.get("provenance"), dict):
        raise ValueError(f"{path}: not a {short} written by {writer} "
                         f"(expected format {fmt!r} with 'provenance' and 'rows')")
    rows = pd.DataFrame(obj["rows"])
    if len(rows) and not set(need) <= set(rows):
        raise ValueError(f"{path}: rows lack {sorted(set(need) - set(rows))}")
    return {"provenance": obj["provenance"], "rows": rows}
