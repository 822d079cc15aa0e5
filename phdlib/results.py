"""The results store shared by every method, the experiments and the chapters.

One run (a method trained and evaluated once on one dataset split) is a
folder ``<results_dir>/<dataset>/<method>/<key>/`` holding:

- ``meta.json``: method, dataset, bits, seed, config, the summary metrics,
  data fingerprint, library version, wall time, creation time, and ``key``;
- ``per_user.parquet``: one row per test user (``user`` plus metric columns
  such as ``ndcg@5``, ``ndcg@10``, ``mrr``, ``n_test``);
- ``arrays.npz``: codes or vectors (e.g. ``user_codes``/``item_codes`` as
  packed ``uint64``, or ``user_vectors``/``item_vectors`` as ``float32``);
- ``log.parquet`` (optional): the training trace, one row per logged step;
- ``grid.parquet`` (tuned runs only): the tuning grid, one row per point
  (see :func:`phdlib.training.tune`); each point is also a run of its own.

``key`` is a hash of (method, dataset, bits, seed, config, data fingerprint),
so a run with the same inputs is found again instead of recomputed, and any
change of its inputs gives a new folder. Files are written to a temporary
folder that is renamed into place: a run is either complete or absent.

The store's root is ``results_dir()``: the ``PHD_RESULTS_DIR`` environment
variable, else ``<project root>/results`` when running from a checkout, else
the per-user data directory of ``platformdirs``.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__
from .io import digest
from .io import json_default as _json_default


def results_dir() -> Path:
    """Root of the results store (see module docstring)."""
    env = os.environ.get("PHD_RESULTS_DIR")
    if env:
        return Path(env).expanduser().resolve()
    here = Path(__file__).resolve().parent.parent
    if (here / "pyproject.toml").is_file() and (here / "phdlib").is_dir():
        return here / "results"
    import platformdirs

    return Path(platformdirs.user_data_dir("phdlib")) / "results"


def run_key(method: str, dataset: str, bits: int, seed: int, config: dict, fingerprint: str) -> str:
    """Content key of a run: 16 hex digits of sha256 over its inputs."""
    return digest({"method": method, "dataset": dataset, "bits": int(bits), "seed": int(seed),
                   "config": config, "fingerprint": fingerprint})


@dataclass
class Run:
    """One trained-and-evaluated method; see the module docstring for files."""

    method: str
    dataset: str
    bits: int
    seed: int
    config: dict
    metrics: dict
    per_user: pd.DataFrame
    fingerprint: str
    wall_seconds: float
    arrays: dict = field(default_factory=dict)
    log: pd.DataFrame | None = None
    grid: pd.DataFrame | None = None
    extra: dict = field(default_factory=dict)
    version: str = __version__
    created: str = ""
    path: Path | None = None

    @property
    def effective_config(self) -> dict:
        """The configuration the stored model was trained with: ``config`` with the
        tuning grid's choice (``extra["chosen"]``) applied, for a tuned run."""
        return {**self.config, **self.extra.get("chosen", {})}

    @property
    def key(self) -> str:
        return run_key(self.method, self.dataset, self.bits, self.seed, self.config, self.fingerprint)

    def meta(self) -> dict:
        return {
            "key": self.key,
            "method": self.method,
            "dataset": self.dataset,
            "bits": int(self.bits),
            "seed": int(self.seed),
            "config": self.config,
            "metrics": self.metrics,
            "fingerprint": self.fingerprint,
            "wall_seconds": float(self.wall_seconds),
            "version": self.version,
            "created": self.created or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "extra": self.extra,
        }


def run_path(method: str, dataset: str, key: str, root: Path | None = None) -> Path:
    return (root or results_dir()) / dataset / method / key


def save(run: Run, root: Path | None = None) -> Path:
    """Write ``run`` atomically; returns its folder.

    The files go into a temporary folder that is renamed into place; when a
    complete run of the same key is already there (another process stored
    the same inputs), that run is kept and the new copy discarded.
    """
    dst = run_path(run.method, run.dataset, run.key, root)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{run.key}.", dir=dst.parent))
    try:
        meta = run.meta()
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, default=_json_default))
        run.per_user.to_parquet(tmp / "per_user.parquet", index=False)
        if run.arrays:
            np.savez(tmp / "arrays.npz", **run.arrays)  # packed codes and float32 barely compress
        if run.log is not None:
            run.log.to_parquet(tmp / "log.parquet", index=False)
        if run.grid is not None:
            run.grid.to_parquet(tmp / "grid.parquet", index=False)
        try:
            os.rename(tmp, dst)  # atomic; fails when another writer published the key first
        except OSError:
            if not (dst / "meta.json").is_file():
                raise
            # the same key means the same inputs: the run already published is kept
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    run.path = dst
    return dst


def load(path: Path | str, arrays: bool = True) -> Run:
    """Read a run folder written by :func:`save`."""
    path = Path(path)
    meta_file = path / "meta.json"
    if not meta_file.is_file():
        raise FileNotFoundError(f"{path} is not a run folder (no meta.json)")
    meta = json.loads(meta_file.read_text())
    arr = {}
    if arrays and (path / "arrays.npz").is_file():
        with np.load(path / "arrays.npz") as z:
            arr = {k: z[k] for k in z.files}
    log = pd.read_parquet(path / "log.parquet") if (path / "log.parquet").is_file() else None
    grid = pd.read_parquet(path / "grid.parquet") if (path / "grid.parquet").is_file() else None
    return Run(
        method=meta["method"], dataset=meta["dataset"], bits=meta["bits"], seed=meta["seed"],
        config=meta["config"], metrics=meta["metrics"],
        per_user=pd.read_parquet(path / "per_user.parquet"), fingerprint=meta["fingerprint"],
        wall_seconds=meta["wall_seconds"], arrays=arr, log=log, grid=grid, extra=meta.get("extra", {}),
        version=meta["version"], created=meta["created"], path=path,
    )


def find(method: str, dataset: str, bits: int, seed: int, config: dict, fingerprint: str,
         root: Path | None = None, arrays: bool = True) -> Run | None:
    """The stored run with exactly these inputs, or None."""
    p = run_path(method, dataset, run_key(method, dataset, bits, seed, config, fingerprint), root)
    return load(p, arrays=arrays) if (p / "meta.json").is_file() else None


def index(root: Path | None = None) -> pd.DataFrame:
    """One row per stored run: method, dataset, bits, seed, key, metrics, wall time, path."""
    root = root or results_dir()
    rows = []
    for meta_file in sorted(root.glob("*/*/*/meta.json")):
        if meta_file.parent.name.startswith("."):
            continue
        m = json.loads(meta_file.read_text())
        row = {k: m[k] for k in ("method", "dataset", "bits", "seed", "key", "wall_seconds", "version")}
        row.update({f"metric:{k}": v for k, v in m.get("metrics", {}).items()})
        row["path"] = str(meta_file.parent)
        rows.append(row)
    return pd.DataFrame(rows)
