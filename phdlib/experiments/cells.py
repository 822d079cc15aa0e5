"""The cells of a grid: what one run of a grid is, and where it stands in the store.

A *cell* (:class:`Cell`) is one run: (dataset, method, bits, seed, options),
where options are config overrides of the method, frozen into sorted pairs
(:func:`freeze`). This module holds what every user of cells needs, and
nothing about which grids exist or how they are executed:

- :func:`load_split`: the split a cell runs on (memoised in this process);
  :meth:`Cell.load_split` goes through it, so it is the one place where the
  runner, the cluster and :func:`status` get a cell's split;
- :func:`status`: the run key of each cell, its folder in the results store
  and whether a verified run is stored there (the grid's status table);
- :func:`grid_cells`: the tuning points of cells, as cells of their own,
  which run before the cells that choose among them;
- :func:`record`: one cell's outcome written into the status table.

Imports go one way: :mod:`phdlib.experiments` (the paper's grids, profiles
and parts) and the executors, :mod:`phdlib.experiments.runner` (joblib) and
:mod:`phdlib.experiments.cluster` (Dask), import this module; it imports neither.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import pandas as pd

from .. import data, methods, results
from . import training


def freeze(d: dict | None) -> tuple:
    """Config overrides as sorted (key, value) pairs, lists as tuples (hashable)."""
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in (d or {}).items()))


@dataclass(frozen=True)
class Cell:
    """One run of the grid. ``options`` holds config overrides as sorted pairs."""

    dataset: str
    method: str
    bits: int
    seed: int = 0
    options: tuple = ()
    split_seed: int = 0

    @property
    def overrides(self) -> dict:
        return dict(self.options)

    def label(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in self.options)
        return f"{self.dataset}/{self.method}/{self.bits}b/s{self.seed}" + (f"[{opts}]" if opts else "")

    def load_split(self, data_dir=None):
        """The split this cell runs on (:func:`load_split`, memoised in this process)."""
        return load_split(self.dataset, self.split_seed, data_dir)


@lru_cache(maxsize=8)
def _split_cached(dataset: str, split_seed: int, data_dir: str | None):
    return data.load_split(dataset, seed=split_seed, data_dir=data_dir)


def load_split(dataset: str, split_seed: int = 0, data_dir: str | None = None):
    """The split of ``dataset`` (memoised in this process)."""
    return _split_cached(dataset, int(split_seed), None if data_dir is None else str(data_dir))


STATUS_COLUMNS = ["cell", "dataset", "method", "bits", "seed", "options", "key", "path", "status",
                  "error"]


def status(cells: Iterable[Cell], root=None, data_dir=None) -> pd.DataFrame:
    """One row per cell: ``cell``, ``status`` (stored / missing), ``key``, ``path``.

    A run is ``stored`` only when it verifies (:func:`phdlib.results.verify`):
    a corrupt or incomplete one is reported and counts as missing. root: the
    results store (None: :func:`phdlib.results.results_dir`).
    """
    root = Path(root) if root is not None else results.results_dir()
    rows = []
    for c in cells:
        row = dict(zip(STATUS_COLUMNS, (c, c.dataset, c.method, c.bits, c.seed,
                                        ",".join(f"{k}={v}" for k, v in c.options),
                                        None, None, "missing", None)))
        split = c.load_split(data_dir)
        cfg = training.config_of(c.method, split, c.bits, c.overrides)[0]
        key = results.run_key(c.method, c.dataset, c.bits, c.seed, cfg, split.fingerprint)
        path = results.run_path(c.method, c.dataset, key, root)
        row.update(key=key, path=str(path))
        if results.stored(path, root):
            row["status"] = "stored"
        rows.append(row)
    return pd.DataFrame(rows, columns=STATUS_COLUMNS)


def grid_cells(cells: Iterable[Cell], data_dir=None) -> list[Cell]:
    """Tuning points of the given cells, as cells of their own (for parallel tuning).

    A cell whose method tunes over a grid of independent points
    (:attr:`phdlib.methods.Method.parallel_grid`) expands into one cell per
    point (at the width and seed grids are tuned at:
    :meth:`phdlib.methods.Method.tune_point`); the tuned cell then only assembles
    the stored points. Methods whose points
    share work (MF's epoch counts) stay whole: their tuned run at that width
    and seed becomes one cell, so that the other seeds' cells only reuse it.
    So do grids chosen on a user sample (a dataset over ``tune_ratings``:
    :func:`phdlib.experiments.training.tune_split`), whose points are runs on the sample,
    not cells of the dataset.
    """
    out = {}
    for c in cells:
        method = methods.get(c.method)
        cfg = methods.resolve_config(c.method, c.dataset, c.bits, c.overrides)
        bits, seed = method.tune_point(cfg, c.bits)
        anchor = methods.resolve_config(c.method, c.dataset, bits, c.overrides)
        points = method.grid(anchor, bits)
        if not points:
            continue
        whole = not method.parallel_grid or data.needs_sample(
            c.load_split(data_dir), anchor.get("tune_ratings"))
        if whole:  # the tuned run itself, once, before its transfers
            if (bits, c.seed) != (c.bits, seed):
                out[Cell(c.dataset, c.method, bits, seed, c.options, c.split_seed)] = None
            continue
        for pt in points:
            ov = {**c.overrides, **pt}
            out[Cell(c.dataset, c.method, bits, seed, freeze(ov), c.split_seed)] = None
    return list(out)


def record(st: pd.DataFrame, out: dict, twins: dict, pos: dict) -> None:
    """Write one cell's outcome into ``st`` (and into the rows of its twins: same key).

    st: the status table (:func:`status`) with the outcome columns an
    executor adds (``seconds``, ``cpu_seconds``, ``peak_rss_mb``,
    ``peak_rss``, ``ndcg@10``). out: the worker's outcome (``cell``, ``ok``,
    ``seconds``, usage, and ``key``, ``path``, ``metrics`` or ``error``).
    twins: ``{key: [cells with that key]}``, the first one run.
    pos: ``{cell: row of st}``, built once per grid phase.
    """
    key = st.at[pos[out["cell"]], "key"]
    for j, twin in enumerate(twins[key]):
        i = pos[twin]
        st.at[i, "seconds"] = out["seconds"] if j == 0 else 0.0
        # a twin reuses the run: it cost nothing, as a cell found stored
        st.at[i, "cpu_seconds"] = out.get("cpu_seconds", float("nan")) if j == 0 else 0.0
        st.at[i, "peak_rss_mb"] = out.get("peak_rss_mb", float("nan")) if j == 0 else float("nan")
        st.at[i, "peak_rss"] = out.get("peak_rss") if j == 0 else None
        if out["ok"]:
            st.at[i, "status"] = "ran" if j == 0 else "stored"
            st.at[i, "key"] = out["key"]
            st.at[i, "path"] = out["path"]
            st.at[i, "ndcg@10"] = out["metrics"].get("ndcg@10", float("nan"))
        else:
            st.at[i, "status"] = "failed"
            st.at[i, "error"] = out["error"]
