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
never read; files are written to a temporary name and renamed.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from .sources import cache_dir

CACHE_VERSION = 1


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def short_hash(obj) -> str:
    """16 hex digits of sha256 over the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical(obj).encode()).hexdigest()[:16]


def dataset_key(fingerprint: str, preprocessing: dict) -> str:
    return short_hash({"fingerprint": fingerprint, "preprocessing": preprocessing,
                       "version": CACHE_VERSION})


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def processed_dir() -> Path:
    return cache_dir() / "processed"


def _atomic(path: Path, write) -> None:
    """Write via ``write(tmp)`` then rename; an unwritable cache only warns."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        import warnings

        warnings.warn(f"phdlib.data: cache not written ({path.parent}: {exc}); "
                      f"set PHD_CACHE_DIR to a writable folder", RuntimeWarning, stacklevel=3)
        return
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_npz(path: Path, **arrays) -> None:
    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
    _atomic(path, write)


def load_npz(path: Path) -> dict | None:
    """Arrays of ``path``, or None when absent or unreadable (then rebuilt)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError, EOFError):
        return None


def save_json(path: Path, obj) -> None:
    def write(tmp):
        Path(tmp).write_text(json.dumps(obj, indent=1, default=str))
    _atomic(path, write)


def load_json(path: Path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
