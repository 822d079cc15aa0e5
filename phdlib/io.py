"""Small file helpers every store and cache of ``phdlib`` shares.

- :func:`atomic_write`: write a file through a temporary name in the same
  folder and rename it into place, so a reader sees the old file or the new
  one, never a partial one;
- :func:`file_sha256`: the checksum the stores record;
- :func:`write_json` / :func:`canonical` / :func:`digest`: JSON that numpy
  values and paths survive, a canonical (sorted, compact) form, and a short
  sha256 of that form (the content keys of the stores).
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np


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


def digest(obj: Any, length: int = 16) -> str:
    """The first ``length`` hex digits of sha256 over :func:`canonical` of ``obj``."""
    return hashlib.sha256(canonical(obj).encode()).hexdigest()[:length]


@contextmanager
def atomic_write(path: Path | str, mode: str = "wb") -> Iterator[Any]:
    """Open a temporary file beside ``path``; on success rename it to ``path``.

    The temporary file is ``.<name>.<random>.tmp`` in the same folder (so the
    rename is atomic on one file system); on error it is removed and the old
    ``path``, if any, is left untouched. ``mode``: ``"wb"`` or ``"w"``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would make the published file private
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
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
