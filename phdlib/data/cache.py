"""The on-disk cache of processed datasets and splits (``.npz``, atomic writes).

Layout under ``<cache_dir()>/processed`` (``PHD_CACHE_DIR`` or the platformdirs
user cache):

- ``raw-<sha256 of the raw file>.json``: the file's content fingerprint and
  row count, so a cached load needs one fast file hash instead of a parse;
- ``<name>/<dataset key>.npz``: the processed :class:`Dataset`; the key hashes
  the content fingerprint, the preprocessing parameters and
  :data:`CACHE_VERSION`;
- ``<name>/<dataset key>-split-<split fingerprint>.npz``: which part (0 train,
  1 validation, 2 test) each rating of the dataset is in; the split
  fingerprint hashes the dataset key, the split rule and the seed.

Any change of data, preprocessing or seed changes the key, so a stale entry is
never read; files are written to a temporary name (``.<name>.<random>.tmp``)
and renamed. The writer holds a lock on its temporary until the rename
(:func:`phdlib.io.holding`), and every write first removes the temporaries
of cache files in its folder left by killed writers (lock free and older
than :data:`phdlib.io.GRACE_SECONDS`; see :mod:`phdlib.io`). A cache file
whose folder is a symbolic link out of ``processed`` is not written (a
warning says so).

Every file carries a sha256 of its own content (``__sha256__`` inside an
``.npz``: over each array's name, dtype, shape and bytes; ``sha256`` in a
JSON file). A file that is missing its checksum, does not match it or
cannot be read is reported (a warning naming it), removed and rebuilt from
the raw file: a corrupt or edited cache entry is never served.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np

from .. import io as _io
from .sources import cache_dir

CACHE_VERSION = 2  # 2: files carry their checksum
#: The temporaries of cache files (``.<name>.npz|json.<random>.tmp``): the only names
#: a write removes (when their writer is gone).
TEMPORARY = re.compile(rf"\.[^/]+\.(?:npz|json)\.{_io.RANDOM}\.tmp")


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def short_hash(obj) -> str:
    """16 hex digits of sha256 over the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical(obj).encode()).hexdigest()[:16]


def dataset_key(fingerprint: str, preprocessing: dict) -> str:
    return short_hash({"fingerprint": fingerprint, "preprocessing": preprocessing,
                       "version": CACHE_VERSION})


def processed_dir() -> Path:
    return cache_dir() / "processed"


def _atomic(path: Path, write) -> None:
    """Write via ``write(tmp)`` then rename; an unwritable cache only warns, and so
    does a folder that is a symbolic link out of the cache's own folder it is in
    (:func:`processed_dir`, or another folder of :func:`cache_dir`; not written)."""
    path = Path(path)
    try:
        parts = path.relative_to(cache_dir()).parts
    except ValueError:
        parts = ()
    if len(parts) < 2:
        out = None  # a file elsewhere (not in a cache folder): written where it is asked
    else:
        root = cache_dir() / parts[0]
        out = _io.link_out(path.parent, root)
    if out is not None:
        warnings.warn(f"phdlib.data: cache not written ({path}: {out[0]} is a symbolic link to "
                      f"{out[1]}, outside the cache {os.path.realpath(root)}; expected a folder "
                      f"inside it: replace the link by a folder, or set PHD_CACHE_DIR)",
                      RuntimeWarning, stacklevel=3)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _io.clean_temporaries(path.parent, TEMPORARY)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        warnings.warn(f"phdlib.data: cache not written ({path.parent}: {exc}); "
                      f"set PHD_CACHE_DIR to a writable folder", RuntimeWarning, stacklevel=3)
        return
    try:
        with _io.holding(tmp, fd):  # locked until renamed: a cleaner leaves it alone
            write(tmp)
            os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)


def arrays_sha256(arrays: dict) -> str:
    """sha256 (hex) over arrays: each one's name, dtype, shape and bytes, by name."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(canonical([name, a.dtype.str, list(a.shape)]).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _reject(path: Path, problem: str, source: str = "the raw data") -> None:
    warnings.warn(f"phdlib.data: cache file {path} is not used ({problem}); it is rebuilt "
                  f"from {source}", RuntimeWarning, stacklevel=3)
    try:
        Path(path).unlink()
    except OSError:
        pass


def save_npz(path: Path, **arrays) -> None:
    """Write ``arrays`` (with their checksum) to ``path`` atomically."""
    if "__sha256__" in arrays:
        raise ValueError("'__sha256__' is reserved for the checksum")
    digest = np.array(arrays_sha256(arrays))

    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, __sha256__=digest, **arrays)
    _atomic(path, write)


def load_npz(path: Path, source: str = "the raw data") -> dict | None:
    """Arrays of ``path``; None when absent, and when unreadable or failing its checksum
    (then reported and removed, so the caller rebuilds it from ``source``, which the
    warning names)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
    except Exception as exc:  # BadZipFile, EOFError, OSError, ValueError, zlib.error ...
        _reject(path, f"unreadable: {type(exc).__name__}: {str(exc)[:200]}", source)
        return None
    want = out.pop("__sha256__", None)
    if want is None:
        _reject(path, "no checksum", source)
        return None
    if str(want) != arrays_sha256(out):
        _reject(path, "content differs from its checksum (corrupt or edited)", source)
        return None
    return out


def save_json(path: Path, obj: dict) -> None:
    """Write the dict ``obj`` (with its checksum) to ``path`` atomically."""
    body = dict(obj)
    body["sha256"] = hashlib.sha256(canonical(obj).encode()).hexdigest()

    def write(tmp):
        Path(tmp).write_text(json.dumps(body, indent=1, default=str))
    _atomic(path, write)


def load_json(path: Path) -> dict | None:
    """The dict of ``path``; None when absent, unreadable or failing its checksum (reported)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        body = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        _reject(path, f"unreadable: {type(exc).__name__}")
        return None
    if not isinstance(body, dict) or "sha256" not in body:
        _reject(path, "no checksum")
        return None
    want = body.pop("sha256")
    if want != hashlib.sha256(canonical(body).encode()).hexdigest():
        _reject(path, "content differs from its checksum (corrupt or edited)")
        return None
    return body
