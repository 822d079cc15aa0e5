"""Declarative experiment grids over the results store.

A *cell* is one run: (dataset, method, bits, seed, options), where options are
config overrides of the method (e.g. ``train_sampling``). A :class:`Grid` is a
list of :class:`Block` lines, each a product ``methods x bits x seeds x
options`` on every dataset of the grid; :func:`plan` builds the grid of the
paper's tables and figures for a *profile*:

- ``"full"``: the paper's settings, i.e. each method's defaults (which carry
  the paper's hyper-parameters and the baselines' validation grids);
- ``"quick"``: reduced settings for checks and CI (fixed hyper-parameters, no
  tuning grids, short training; see :data:`QUICK`). Numbers from it are not
  the paper's settings and every chapter says so.

:func:`run_grid` runs only the cells that the store does not hold yet (so an
interrupted reproduction resumes where it stopped: a run is stored atomically
by :func:`phdlib.methods.run`, complete or absent), in parallel with joblib,
and writes a manifest (provenance) beside the runs.

Parallel backends
-----------------
``run_grid(cells, jobs=J)`` uses joblib's default backend (loky processes) on
one machine. The same call runs unchanged on a Dask cluster through joblib's
dask backend::

    from dask.distributed import Client
    import joblib
    client = Client("tcp://scheduler:8786")       # or LocalCluster()
    with joblib.parallel_config(backend="dask"):
        experiments.run_grid(cells, jobs=-1)

Workers must see the same ``phdlib`` version, the data (``data_dir`` or
``PHD_DATA_DIR``) and a shared results directory (``root``, e.g. on a network
file system): each worker loads its split from the data cache and stores its
run itself; only small descriptions travel over the network.
"""
from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import time
import traceback
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from . import __version__, methods, results

#: The paper's seven methods in the order of its Table 1.
PAPER_METHODS = ["cccf", "dcf", "mf-mean", "mf-median", "vh", "vh-phd", "mf"]
#: Methods that use the Hamming distance (VH_PHD is compared against these).
HAMMING_METHODS = ["cccf", "dcf", "mf-mean", "mf-median", "vh"]
#: Our additions: the well-trained MF and the sanity baselines.
ADDITIONS = ["mf-als", "item-mean", "popularity", "random"]
#: Methods of Figures 1 to 3.
FIGURE_METHODS = ["cccf", "dcf", "vh", "vh-phd", "mf"]
#: The four (train, eval) sampling combinations of Figure 4.
SAMPLINGS = [
    ("stochastic", "deterministic"),
    ("deterministic", "deterministic"),
    ("stochastic", "stochastic"),
    ("deterministic", "stochastic"),
]
PARTS = ("table1", "users", "sampling", "convergence", "protocol")
PROFILES = ("full", "quick")

#: Config overrides of the quick profile, per method. Keys a method does not
#: have are reported by :func:`profile_overrides` (never dropped silently).
QUICK: dict[str, dict] = {
    "vh": {"max_iterations": 4500, "min_iterations": 4500, "eval_every": 750},
    "vh-phd": {"max_iterations": 4500, "min_iterations": 4500, "eval_every": 750},
    "dcf": {"tune": False, "max_iter": 10},
    "cccf": {"tune": False},
    "mf": {"tune": False},
    "mf-mean": {"tune": False},
    "mf-median": {"tune": False},
    "mf-als": {"tune": False},
}


# --------------------------------------------------------------------------- cells and grids


def _method(name: str):
    """:func:`phdlib.methods.get`, treating a module that does not define its
    method object yet (work in progress) as not available."""
    try:
        return methods.get(name)
    except AttributeError as exc:
        raise methods.MethodNotAvailable(f"method {name!r}: {exc}") from None


def available(names: Iterable[str] | None = None) -> list[str]:
    """The methods (of ``names``, default all registered) that this build can run."""
    out = []
    for n in (methods.REGISTRY if names is None else names):
        try:
            _method(n)
        except methods.MethodNotAvailable:
            continue
        out.append(n)
    return out


def _freeze(d: dict | None) -> tuple:
    return tuple(sorted((d or {}).items()))


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


@dataclass
class Block:
    """One line of a grid: the product ``methods x bits x seeds x options``."""

    methods: list[str]
    bits: list[int]
    seeds: list[int] = field(default_factory=lambda: [0])
    options: list[dict] = field(default_factory=lambda: [{}])
    part: str = ""


@dataclass
class Grid:
    """A declarative grid: every block on every dataset; ``profile`` adds overrides."""

    datasets: list[str]
    blocks: list[Block]
    profile: str = "full"
    split_seed: int = 0

    def cells(self) -> list[Cell]:
        """Distinct cells in declaration order (a cell named twice runs once)."""
        out: dict[Cell, None] = {}
        for ds in self.datasets:
            for b in self.blocks:
                for m in b.methods:
                    for bits in b.bits:
                        for seed in b.seeds:
                            for opt in b.options:
                                ov = dict(profile_overrides(self.profile, m, ds, bits)[0])
                                ov.update(opt)
                                out[Cell(ds, m, int(bits), int(seed), _freeze(ov), self.split_seed)] = None
        return list(out)


def profile_overrides(profile: str, method: str, dataset: str = "ml-1m",
                      bits: int = 64) -> tuple[dict, list[str]]:
    """(overrides, keys the method does not know) of ``profile`` for ``method``.

    ``"full"`` has no overrides (the defaults are the paper's settings);
    ``"quick"`` takes :data:`QUICK` restricted to the method's config keys.
    The second element lists the keys of :data:`QUICK` that the method lacks,
    so a caller can show them. An unknown or unavailable method gets ``{}``.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    if profile == "full":
        return {}, []
    wanted = QUICK.get(method, {})
    if not wanted:
        return {}, []
    try:
        keys = set(_method(method).defaults(dataset, bits))
    except methods.MethodNotAvailable:
        return {}, []
    return ({k: v for k, v in wanted.items() if k in keys},
            sorted(k for k in wanted if k not in keys))


def run_profiled(name: str, split, bits: int, profile: str = "full", seed: int = 0,
                 extra: dict | None = None, progress: bool = False):
    """``methods.run`` with ``profile``'s overrides (plus ``extra``) for ``name``.

    The one way chapters get a run: the stored run is reused when the store has
    it, else the method is trained and stored. Returns a :class:`results.Run`.
    """
    overrides, _ = profile_overrides(profile, name, split.dataset.name, bits)
    overrides.update(extra or {})
    return methods.run(name, split, bits, seed=seed, overrides=overrides, progress=progress)


def plan(dataset: str | list[str], profile: str = "full", seeds: int = 1,
         parts: Iterable[str] = PARTS, split_seed: int = 0) -> Grid:
    """The grid behind the paper's tables and figures.

    parts: any of ``table1`` (all methods and our additions, 32 and 64 bits),
    ``users`` (Figures 1-3: the figure methods at 64 bits), ``sampling``
    (Figure 4: VH_PHD at 64 bits, four sampling combinations), ``convergence``
    (Figure 5: VH and VH_PHD at 64 bits), ``protocol`` (the chapter on the
    protocol: the Table 1 cells). seeds: model seeds 0..seeds-1.
    """
    parts = list(parts)
    bad = set(parts) - set(PARTS)
    if bad:
        raise ValueError(f"unknown part(s) {sorted(bad)}; known: {PARTS}")
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    sd = list(range(seeds))
    blocks = []
    if "table1" in parts or "protocol" in parts:
        blocks.append(Block(PAPER_METHODS + ADDITIONS, [32, 64], sd, part="table1"))
    if "users" in parts:
        blocks.append(Block(FIGURE_METHODS, [64], sd, part="users"))
    if "convergence" in parts:
        blocks.append(Block(["vh", "vh-phd"], [64], sd, part="convergence"))
    if "sampling" in parts:
        blocks.append(Block(["vh-phd"], [64], sd,
                            [{"train_sampling": t, "eval_sampling": e} for t, e in SAMPLINGS],
                            part="sampling"))
    ds = [dataset] if isinstance(dataset, str) else list(dataset)
    return Grid(ds, blocks, profile=profile, split_seed=split_seed)


def profile_note(profile: str, method_names: Iterable[str]) -> str:
    """A plain-text statement of what ``profile`` means for these methods."""
    if profile == "full":
        return ("Profile 'full': every method runs with its default configuration, which is the "
                "paper's settings (baselines tuned on validation over their grids).")
    lines = ["Profile 'quick': REDUCED settings for checks, NOT the paper's settings "
             "(fixed hyper-parameters, no tuning grids, shorter training). "
             "Numbers below are not comparable to the paper's at full strength."]
    for m in method_names:
        ov, missing = profile_overrides(profile, m)
        if ov or missing:
            s = f"  {m}: " + (", ".join(f"{k}={v}" for k, v in ov.items()) or "defaults")
            if missing:
                s += f" (quick keys this method does not have: {', '.join(missing)})"
            lines.append(s)
    return "\n".join(lines)


# --------------------------------------------------------------------------- running


@lru_cache(maxsize=8)
def _split_cached(dataset: str, split_seed: int, data_dir: str | None):
    from . import data

    return data.load_split(dataset, seed=split_seed, data_dir=data_dir)


def load_split(dataset: str, split_seed: int = 0, data_dir: str | None = None):
    """The split of ``dataset`` (memoised in this process)."""
    return _split_cached(dataset, int(split_seed), None if data_dir is None else str(data_dir))


def _root(root) -> Path:
    return Path(root) if root is not None else results.results_dir()


def status(cells: Iterable[Cell], root=None, data_dir=None) -> pd.DataFrame:
    """One row per cell: ``cell``, ``status`` (stored / missing / unavailable), ``key``, ``path``."""
    root = _root(root)
    rows = []
    for c in cells:
        row = {"cell": c, "dataset": c.dataset, "method": c.method, "bits": c.bits,
               "seed": c.seed, "options": ",".join(f"{k}={v}" for k, v in c.options),
               "key": None, "path": None, "status": "missing", "error": None}
        try:
            _method(c.method)
            cfg = methods.resolve_config(c.method, c.dataset, c.bits, c.overrides)
        except methods.MethodNotAvailable as exc:
            row.update(status="unavailable", error=str(exc))
            rows.append(row)
            continue
        split = load_split(c.dataset, c.split_seed, data_dir)
        key = results.run_key(c.method, c.dataset, c.bits, c.seed, cfg, split.fingerprint)
        path = results.run_path(c.method, c.dataset, key, root)
        row.update(key=key, path=str(path))
        if (path / "meta.json").is_file():
            row["status"] = "stored"
        rows.append(row)
    return pd.DataFrame(rows)


def _run_cell(cell: Cell, root: str, data_dir: str | None) -> dict:
    """Worker: train one cell through the store. Returns a small picklable dict."""
    t0 = time.perf_counter()
    try:
        split = load_split(cell.dataset, cell.split_seed, data_dir)
        run = methods.run(cell.method, split, cell.bits, seed=cell.seed, overrides=cell.overrides,
                          progress=False, root=Path(root))
        return {"cell": cell, "ok": True, "seconds": time.perf_counter() - t0,
                "train_seconds": float(run.wall_seconds), "key": run.key,
                "path": str(run.path) if run.path else None, "metrics": dict(run.metrics),
                "host": socket.gethostname(), "pid": os.getpid(), "error": None}
    except Exception as exc:  # recorded, reported, and re-raised by run_grid if asked
        return {"cell": cell, "ok": False, "seconds": time.perf_counter() - t0,
                "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(),
                "host": socket.gethostname(), "pid": os.getpid()}


def _cost(cell: Cell) -> int:
    """Rough relative cost, to start the slowest cells first."""
    return {"vh": 6, "dcf": 5, "cccf": 5, "vh-phd": 3, "mf": 2, "mf-mean": 2, "mf-median": 2,
            "mf-als": 2}.get(cell.method, 1) * (2 if cell.bits >= 64 else 1)


def _git_commit() -> str | None:
    try:
        here = Path(__file__).resolve().parent.parent
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                              text=True, timeout=5).stdout.strip() or None
    except Exception:
        return None


class GridError(RuntimeError):
    """One or more cells of a grid failed; ``report`` holds every cell's outcome."""

    def __init__(self, message: str, report: pd.DataFrame):
        super().__init__(message)
        self.report = report


def run_grid(cells: Iterable[Cell], jobs: int | None = None, root=None, data_dir=None,
             progress: bool = True, errors: str = "raise", name: str = "grid",
             skip_unavailable: bool = False) -> pd.DataFrame:
    """Run the cells the store lacks; return one row per cell.

    jobs: joblib ``n_jobs`` (None: 1, or whatever an enclosing
    ``joblib.parallel_config`` sets, e.g. the dask backend). errors:
    ``"raise"`` raises :class:`GridError` after every cell has been tried,
    ``"record"`` only records failures in the report. skip_unavailable: cells
    of methods not in this build are reported as ``unavailable`` instead of
    failing. Columns: cell fields, ``status`` (stored / ran / failed /
    unavailable), ``seconds`` (wall time of the cell in this call), ``key``,
    ``path``, ``ndcg@10``, ``error``. A manifest with the provenance of the
    call is written to ``<root>/_grids/<name>-<UTC time>.json``.
    """
    import joblib
    from tqdm import tqdm

    if errors not in ("raise", "record"):
        raise ValueError(f"errors must be 'raise' or 'record', got {errors!r}")
    cells = list(dict.fromkeys(cells))
    root = _root(root)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    t_start = time.perf_counter()
    st = status(cells, root=root, data_dir=data_dir)
    st["seconds"] = 0.0
    st["ndcg@10"] = float("nan")
    unavailable = st["status"] == "unavailable"
    if unavailable.any() and not skip_unavailable:
        names = sorted(set(st.loc[unavailable, "method"]))
        raise methods.MethodNotAvailable(
            f"method(s) {names} are not part of this build of phdlib; "
            f"pass skip_unavailable=True to run the others")
    # cells whose configs resolve to the same run (same key) are trained once
    todo, twins = [], {}
    for c, s, k in zip(st["cell"], st["status"], st["key"]):
        if s != "missing":
            continue
        if k in twins:
            twins[k].append(c)
        else:
            twins[k] = [c]
            todo.append(c)
    todo.sort(key=_cost, reverse=True)
    pos = {c: i for i, c in enumerate(st["cell"])}
    outcomes = []
    if todo:
        backend_jobs = jobs if jobs is not None else None
        par = joblib.Parallel(n_jobs=backend_jobs, return_as="generator_unordered")
        bar = tqdm(total=len(todo), desc=f"{name}: cells", unit="run", disable=not progress)
        try:
            for out in par(joblib.delayed(_run_cell)(c, str(root), None if data_dir is None else str(data_dir))
                           for c in todo):
                outcomes.append(out)
                key = st.at[pos[out["cell"]], "key"]
                for j, twin in enumerate(twins[key]):
                    i = pos[twin]
                    st.at[i, "seconds"] = out["seconds"] if j == 0 else 0.0
                    if out["ok"]:
                        st.at[i, "status"] = "ran" if j == 0 else "stored"
                        st.at[i, "key"] = out["key"]
                        st.at[i, "path"] = out["path"]
                        st.at[i, "ndcg@10"] = out["metrics"].get("ndcg@10", float("nan"))
                    else:
                        st.at[i, "status"] = "failed"
                        st.at[i, "error"] = out["error"]
                bar.set_postfix_str(f"{out['cell'].method} {out['cell'].bits}b "
                                    f"{'ok' if out['ok'] else 'FAILED'} {out['seconds']:.0f}s")
                bar.update(1)
        finally:
            bar.close()
    # metrics of cells that were already stored
    for i, row in st.iterrows():
        if row["status"] == "stored":
            meta = json.loads((Path(row["path"]) / "meta.json").read_text())
            st.at[i, "ndcg@10"] = meta.get("metrics", {}).get("ndcg@10", float("nan"))
    finished = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    _write_manifest(root, name, st, outcomes, started, finished, time.perf_counter() - t_start, jobs)
    failed = st[st["status"] == "failed"]
    if len(failed) and errors == "raise":
        msg = "; ".join(f"{c.label()}: {e}" for c, e in zip(failed["cell"], failed["error"]))
        raise GridError(f"{len(failed)} of {len(st)} cells failed: {msg}", st)
    return st


def _write_manifest(root: Path, name: str, st: pd.DataFrame, outcomes: list, started: str,
                    finished: str, seconds: float, jobs) -> Path:
    import joblib

    backend = joblib.parallel.get_active_backend()[0]
    manifest = {
        "name": name, "started": started, "finished": finished, "wall_seconds": seconds,
        "phdlib": __version__, "git_commit": _git_commit(), "python": platform.python_version(),
        "host": socket.gethostname(), "platform": platform.platform(), "jobs": jobs,
        "backend": type(backend).__name__,
        "cells": [
            {"label": r["cell"].label(), "dataset": r["dataset"], "method": r["method"],
             "bits": int(r["bits"]), "seed": int(r["seed"]), "options": dict(r["cell"].options),
             "split_seed": r["cell"].split_seed, "status": r["status"], "key": r["key"],
             "seconds": float(r["seconds"]), "error": r["error"]}
            for _, r in st.iterrows()
        ],
        "workers": sorted({f"{o['host']}:{o['pid']}" for o in outcomes}),
    }
    d = root / "_grids"
    d.mkdir(parents=True, exist_ok=True)
    import uuid

    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    dst = d / f"{name}-{stamp}-{uuid.uuid4().hex[:8]}.json"
    tmp = dst.with_name("." + dst.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, default=str))
    os.replace(tmp, dst)
    return dst


# --------------------------------------------------------------------------- reading back


def load_runs(cells: Iterable[Cell], root=None, data_dir=None, arrays: bool = False,
              missing: str = "raise") -> dict[Cell, results.Run]:
    """The stored run of each cell. missing: ``"raise"`` or ``"skip"`` (absent cells left out)."""
    st = status(list(cells), root=root, data_dir=data_dir)
    out = {}
    for _, row in st.iterrows():
        if row["status"] != "stored":
            if missing == "raise":
                raise LookupError(f"no stored run for {row['cell'].label()} ({row['status']}"
                                  + (f": {row['error']}" if row["error"] else "") + ")")
            continue
        out[row["cell"]] = results.load(row["path"], arrays=arrays)
    return out


def ensure(dataset: str, profile: str, parts: Iterable[str], seeds: int = 1, jobs: int | None = 1,
           root=None, data_dir=None, progress: bool = True, methods_only: Iterable[str] | None = None,
           arrays: bool = False) -> tuple[dict[Cell, results.Run], pd.DataFrame]:
    """Run what ``parts`` need (resuming from the store) and load the runs.

    Returns ``(runs, report)``: ``runs`` maps each cell to its run, only for
    methods available in this build; ``report`` is :func:`run_grid`'s table,
    where unavailable methods appear with status ``unavailable``.
    """
    grid = plan(dataset, profile, seeds=seeds, parts=parts)
    cells = grid.cells()
    if methods_only is not None:
        keep = set(methods_only)
        cells = [c for c in cells if c.method in keep]
    report = run_grid(cells, jobs=jobs, root=root, data_dir=data_dir, progress=progress,
                      skip_unavailable=True, name=f"{dataset}-{profile}-{'+'.join(parts)}")
    ok = report[report["status"].isin(["stored", "ran"])]
    # load from the paths the workers reported (not by resolving configs again here)
    runs = {c: results.load(p, arrays=arrays) for c, p in zip(ok["cell"], ok["path"])}
    return runs, report


def select(runs: dict[Cell, results.Run], method: str | None = None, bits: int | None = None,
           **options) -> dict[Cell, results.Run]:
    """The runs whose cell matches ``method``, ``bits`` and option values.

    An option given as ``None`` means the cell must not set it.
    """
    out = {}
    for c, r in runs.items():
        if method is not None and c.method != method:
            continue
        if bits is not None and c.bits != bits:
            continue
        ov = c.overrides
        if any((k in ov) if v is None else ov.get(k) != v for k, v in options.items()):
            continue
        out[c] = r
    return out


def summary_table(report: pd.DataFrame) -> pd.DataFrame:
    """The report as a compact table for printing (one row per cell)."""
    cols = ["dataset", "method", "bits", "seed", "options", "status", "seconds", "ndcg@10"]
    t = report[cols].copy()
    t["seconds"] = t["seconds"].round(1)
    t["ndcg@10"] = t["ndcg@10"].round(4)
    return t
