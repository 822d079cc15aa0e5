"""Per-user frames derived from a stored run, cached so that chapters share them.

Several chapters re-score the same stored runs the same way: the protocol
chapter ranks every model over the full catalogue and the landing page ranks
seven of them again; the ablation chapter ranks every code run by both
distances and the landing page does it again. :func:`frame` computes such a
frame once and keeps it in the cache (``PHD_CACHE_DIR``, else the
platformdirs user cache), under ``derived/<dataset>/<method>/<key>.npz``.

The key hashes everything the numbers depend on: the model (the run's
method, width and the sha256 of its arrays, so a run trained again to other
parameters is a new entry), the split's fingerprint, what was derived and
with which options (``what``), :data:`VERSION`, the sha256 of phdlib's own
sources as this process imported them (any edit of the library starts
afresh, as the book's chapter cache does) and the versions of numpy, pandas,
scipy and numba. Only a stored run (one with a ``path``) is cached. A frame is
cached only where it reads back equal, column types included; otherwise it
is returned uncached. Files are written atomically and carry their checksum
(:func:`phdlib.data.cache.save_npz`); a file that is unreadable or fails its
checksum is reported, removed and computed again, never served. Two
processes that derive the same frame write it under the same name; the last
rename wins, and either file is the frame.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from importlib import metadata
from typing import Any, Callable

import numpy as np
import pandas as pd

from .. import io as _io
from ..data import cache as _cache
from ..data.sources import cache_dir
from .store import check_name

#: Bump when an evaluation that :func:`frame` caches changes its numbers or columns in a way
#: neither phdlib's sources nor its dependencies' versions show.
VERSION = 1

__all__ = ["VERSION", "frame", "path_of", "derived_dir"]


def derived_dir() -> Path:
    """The folder of derived frames: ``<cache_dir()>/derived``."""
    return cache_dir() / "derived"


def _code() -> dict:
    """What computes a frame besides its inputs: phdlib's sources (sha256) and the versions of
    the libraries its evaluations run on."""
    return {"phdlib": _io.sources_sha256(Path(__file__).resolve().parents[1]),
            **{name: _version(name) for name in ("numpy", "pandas", "scipy", "numba")}}


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


#: Read once, when this module is first imported: a process keeps the code it imported, so
#: its frames are keyed by that code even if the sources are edited while it runs.
_CODE = _code()


def path_of(run, split, what: Any) -> Path | None:
    """Where the frame ``what`` of ``run`` on ``split`` is cached; None for a run that was
    never stored or was loaded without its arrays."""
    if getattr(run, "path", None) is None or not getattr(run, "arrays", None):
        return None
    key = _io.digest({"method": run.method, "bits": int(run.bits),
                      "arrays": _cache.arrays_sha256(run.arrays), "split": split.fingerprint,
                      "what": what, "version": VERSION, "code": _CODE})
    return (derived_dir() / check_name(run.dataset, "dataset")
            / check_name(run.method, "method") / f"{key}.npz")


def _to_arrays(df: pd.DataFrame) -> dict | None:
    """A frame as arrays, when they read back to an equal frame (values, column names and
    order, numpy dtypes, a default index, no attrs); else None."""
    idx, cols = df.index, list(df.columns)
    if (not isinstance(idx, pd.RangeIndex) or idx.start != 0 or idx.step != 1 or idx.name
            or df.columns.name or df.attrs or not cols or len(set(cols)) != len(cols)
            or not all(isinstance(c, str) for c in cols)
            or not all(isinstance(t, np.dtype) and t.kind in "biuf" for t in df.dtypes)):
        return None
    out = {f"c{i}": df[c].to_numpy() for i, c in enumerate(cols)}
    out["__columns__"] = np.array(json.dumps(cols))
    back = _from_arrays(out)
    if back is None or not back.equals(df) or list(back.dtypes) != list(df.dtypes):
        return None
    return out


def _from_arrays(arrays: dict) -> pd.DataFrame | None:
    try:
        names = json.loads(str(arrays["__columns__"]))
        return pd.DataFrame({n: arrays[f"c{i}"] for i, n in enumerate(names)})
    except (KeyError, ValueError, TypeError):
        return None


def frame(run, split, what: Any, compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """The frame ``what`` of ``run`` on ``split``: from the cache, else ``compute()``
    (then cached).

    run: a stored :class:`phdlib.results.Run` with its arrays; split: the
    split the frame is computed on; what: JSON-able, naming the evaluation
    and every option that moves its numbers (e.g. ``{"frame": "test",
    "distance": "phd", "ties": "expected"}``); compute: returns the frame (a
    per-user frame: default index, numeric columns).
    """
    path = path_of(run, split, what)
    if path is not None:
        got = _cache.load_npz(path, source="the stored run")
        df = _from_arrays(got) if got is not None else None
        if df is not None:
            return df
        if got is not None:
            warnings.warn(f"phdlib.results: derived frame {path} is not used (not a frame "
                          "this version writes); it is computed again", RuntimeWarning,
                          stacklevel=2)
    df = compute()
    arrays = _to_arrays(df) if path is not None else None
    if arrays is not None:
        _cache.save_npz(path, **arrays)
    return df
