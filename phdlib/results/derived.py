"""Per-user frames derived from a stored run, cached so that chapters share them.

Several chapters re-score the same stored runs the same way: the protocol
chapter ranks every model over the full catalogue and the landing page ranks
five of them again; the ablation chapter ranks every code run by both
distances and the landing page does it again. :func:`frame` computes such a
frame once and keeps it in the cache (``PHD_CACHE_DIR``, else the
platformdirs user cache), under ``derived/<dataset>/<method>/<key>.npz``.

The key hashes what identifies the numbers: the run (its store key and the
time it was stored, so a run trained again is a new entry), the split's
fingerprint, the name of what was derived (``what``: the evaluation and its
options), :data:`VERSION` and phdlib's version. A run that was never stored
(no ``created`` time) is not cached. Files are written atomically and carry
their checksum (:func:`phdlib.data.cache.save_npz`); a file that is
unreadable or fails its checksum is reported, removed and computed again,
never served. Two processes that derive the same frame write the same bytes
under the same name, the last rename wins.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .. import __version__
from ..data import cache as _cache
from ..data.sources import cache_dir
from ..io import digest

#: Bump when an evaluation that :func:`frame` caches changes its numbers or columns.
VERSION = 1

__all__ = ["VERSION", "frame", "path_of", "derived_dir"]


def derived_dir() -> Path:
    """The folder of derived frames: ``<cache_dir()>/derived``."""
    return cache_dir() / "derived"


def path_of(run, split, what: str) -> Path | None:
    """Where the frame ``what`` of ``run`` on ``split`` is cached; None for a run that was
    never stored (nothing identifies its numbers beyond this process)."""
    if not getattr(run, "created", ""):
        return None
    key = digest({"run": run.key, "created": run.created, "split": split.fingerprint,
                  "what": str(what), "version": VERSION, "phdlib": __version__})
    return derived_dir() / run.dataset / run.method / f"{key}.npz"


def _to_arrays(df: pd.DataFrame) -> dict | None:
    """A frame with a default index and plain columns as arrays; None when it cannot be
    kept exactly (another index, an object column, attrs)."""
    idx = df.index
    if not isinstance(idx, pd.RangeIndex) or idx.start != 0 or idx.step != 1 or idx.name:
        return None
    if df.attrs or not all(isinstance(c, str) for c in df.columns):
        return None
    cols = [np.asarray(df[c]) for c in df.columns]
    if any(a.dtype.kind not in "biuf" for a in cols):
        return None
    out = {f"c{i}": a for i, a in enumerate(cols)}
    out["__columns__"] = np.array(json.dumps(list(df.columns)))
    return out


def _from_arrays(arrays: dict) -> pd.DataFrame | None:
    try:
        names = json.loads(str(arrays["__columns__"]))
        return pd.DataFrame({n: arrays[f"c{i}"] for i, n in enumerate(names)})
    except (KeyError, ValueError, TypeError):
        return None


def frame(run, split, what: str, compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """The frame ``what`` of ``run`` on ``split``: from the cache, else ``compute()``
    (then cached).

    run: a stored :class:`phdlib.results.Run`; split: the split the frame is
    computed on; what: a name for the evaluation and every option that moves
    its numbers (e.g. ``"catalogue:expected"``); compute: returns the frame
    (a per-user frame: default index, numeric columns). A frame that cannot
    be stored exactly is returned uncached.
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
