"""What a reproduction costs: wall time, CPU time and peak memory per method and stage.

:func:`measure` runs one method at one width on one dataset in a fresh
process (so its peak resident memory is its own) and times the stages a
reproduction goes through:

- ``load``: reading (or generating) and preprocessing the dataset;
- ``split``: the train / validation / test split;
- ``tune`` (only where the profile tunes a grid for the method): what
  chooses the cell's configuration, as :func:`phdlib.experiments.training.run` gets it.
  For the grid's anchor (the cell at the grid's ``tune_bits`` and seed 0)
  that is the grid itself, every point fitted and evaluated, on
  :func:`phdlib.experiments.training.tune_split`'s user sample when the data are larger
  than ``tune_ratings``; for another width or seed it is the anchor's run on
  all the data (its grid, and its chosen point's fit where the grid ran on a
  sample), which the cell's choice is read from. A grid already in the store
  is read back;
- ``train``: :func:`phdlib.experiments.training.run` of the cell: the chosen point
  fitted on all the data, or one fit where nothing is tuned, with its
  evaluation on the validation and test splits. Where the cell is an
  anchor whose grid ran on all the data, its run is the grid's chosen point
  and ``train`` only reads it back;
- ``evaluate``: evaluating the trained model on the test split again, on its
  own (what evaluation adds to a fit);
- ``catalogue`` (only when asked: ``catalogue=True``, ``phd scale
  --catalogue``): the full-catalogue evaluation of the trained model
  (:func:`phdlib.evaluation.evaluate_catalogue`: every item a test user has
  not rated, the chapter "The evaluation protocol"'s extension). Only that
  chapter runs it, on a few methods, so :func:`per_cell` leaves it out of a
  cell's cost unless asked.

Each stage also records ``trained``: how many runs it added to the store
(grid points and tuned runs included; 0 where it read them back).
The cell trains through a results store, as a reproduction does: ``root``,
or else a private temporary one. :func:`sweep` gives the widths of one
(dataset, method) one store and measures the tuning width first, so a width
tuned at another (VH's ``tune_bits``) reuses that grid (its ``tune`` stage
only reads it back) instead of running it again.

:func:`sweep` measures every (dataset, method, width) and returns one row per
stage with ``wall_s``, ``cpu_s`` (user + system of the process) and
``peak_rss_mb`` (the process's peak resident set after the stage), plus the
dataset's users, items and ratings and the machine's one-minute load average
when the cell ended (``load_average``: how busy the machine was; two sweeps
side by side on two cores show about 2); :func:`provenance` records commit,
date, machine and command of a measurement. (The "Cost at scale" study that
uses it is the chapter "Cost at scale".) The process measurements
themselves are :mod:`phdlib.experiments.usage`'s, re-exported here.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import platform
import socket
import tempfile
import time
from itertools import groupby
from pathlib import Path

import pandas as pd

from .. import __version__
from ..bench.machine import cpu_model
from ..results.provenance import git_commit
from ..experiments.usage import cpu_seconds, peak_rss_mb, usage_since, usage_start  # noqa: F401 (re-exported)
from .. import data, evaluation, experiments, methods, results
from ..experiments import training
from ..experiments.grids import profile_overrides
from ..io import read_recorded, records, write_json

#: The stages of a cell, in order; ``tune`` only where the method's profile tunes a grid,
#: ``catalogue`` only when asked.
STAGES = ("load", "split", "tune", "train", "evaluate", "catalogue")
#: The stages :func:`per_cell` sums by default: what the cell costs inside a reproduction.
REPRODUCTION_STAGES = ("load", "split", "tune", "train", "evaluate")


def _child(dataset: str, method: str, bits: int, profile: str, seed: int, data_dir, root,
           q, catalogue: bool = False) -> None:
    try:
        q.put(_stages(dataset, method, bits, profile, seed, data_dir, Path(root), catalogue))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        q.put({"ok": False, "error": f"{type(exc).__name__}: {exc}"})


def _stages(dataset: str, method: str, bits: int, profile: str, seed: int, data_dir,
            root: Path, catalogue: bool = False) -> dict:
    """Run and time the stages of one cell in this process (see the module docstring)."""
    rows = []

    def stage(name, fn, store=False):
        before = results.count(root) if store else None
        w0, c0 = time.perf_counter(), cpu_seconds()
        out = fn()
        rows.append({"stage": name, "wall_s": time.perf_counter() - w0,
                     "cpu_s": cpu_seconds() - c0, "peak_rss_mb": peak_rss_mb(),
                     "trained": results.count(root) - before if store else 0})
        return out

    ds = stage("load", lambda: data.load_dataset(dataset, data_dir=data_dir))
    split = stage("split", lambda: data.load_split(dataset, 0, data_dir=data_dir))
    overrides, _ = experiments.profile_overrides(profile, method, dataset, bits)
    cfg, points, tune_bits = training.config_of(method, split, bits, overrides)
    if points:
        # as training.transfer: the anchor tunes (on the sample, if any); another width
        # or seed reads its choice from the anchor's run on all the data
        anchor = (int(bits), int(seed)) == (int(tune_bits), training.TUNE_SEED)
        on = training.tune_split(split, cfg) if anchor else split
        stage("tune", lambda: training.run(method, on, tune_bits, seed=training.TUNE_SEED,
                                           overrides=overrides, progress=False, root=root),
              store=True)
    run = stage("train", lambda: training.run(method, split, bits, seed=seed,
                                              overrides=overrides, progress=False, root=root),
                store=True)
    model = training.fitted(run)
    stage("evaluate", lambda: training.evaluate_fitted(model, split, run.config["ties"],
                                                       run.config.get("discount", "paper")))
    if catalogue:
        stage("catalogue", lambda: evaluation.evaluate_catalogue(
            model, split, ties=run.config["ties"],
            discount=run.config.get("discount", "paper")))
    return {"ok": True, "rows": rows, "load_average": os.getloadavg()[0],
            "users": ds.n_users, "items": ds.n_items, "ratings": ds.n_ratings,
            "ndcg@10": run.metrics.get("ndcg@10")}


def measure(dataset: str, method: str, bits: int, profile: str = "quick", seed: int = 0,
            data_dir=None, timeout: float | None = None, root=None,
            catalogue: bool = False) -> pd.DataFrame:
    """One row per stage of one cell, measured in a fresh process (see the module docstring).

    root: a results store the cell trains through (reusing what it holds);
    None: a temporary one of its own, removed after. catalogue: add the
    full-catalogue evaluation stage (``timeout`` covers it too)."""
    if root is None:  # (made and removed here, so a child killed on time leaves none)
        with tempfile.TemporaryDirectory(prefix="phd-scale-cell-") as tmp:
            return measure(dataset, method, bits, profile, seed, data_dir, timeout, tmp,
                           catalogue)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(dataset, method, int(bits), profile, int(seed),
                                         data_dir, str(root), q, bool(catalogue)))
    p.start()
    t0, out = time.monotonic(), None
    while out is None:
        try:
            out = q.get(timeout=1.0)
        except Exception:  # noqa: BLE001 - the queue's Empty: still running, or gone
            if not p.is_alive():
                out = {"ok": False, "error": f"the process died (exit code {p.exitcode}; "
                                             f"killed for memory?) before reporting"}
            elif timeout is not None and time.monotonic() - t0 > timeout:
                p.kill()
                out = {"ok": False, "error": f"timed out after {timeout} s"}
    p.join()
    if not out["ok"]:
        raise RuntimeError(f"{dataset}/{method}/{bits}b: {out['error']}")
    df = pd.DataFrame(out["rows"])
    for k in ("users", "items", "ratings", "ndcg@10", "load_average"):
        df[k] = out[k]
    df.insert(0, "bits", int(bits))
    df.insert(0, "method", method)
    df.insert(0, "dataset", dataset)
    return df


def provenance(command: str = "") -> dict:
    """Commit, date, machine (its CPU named: :func:`phdlib.bench.machine.cpu_model`) and
    command of a measurement."""
    return {"commit": git_commit(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": socket.gethostname(), "platform": platform.platform(),
            "cpu": cpu_model(), "cpus": os.cpu_count(), "phdlib": __version__,
            "command": command}


def _cell_key(row) -> tuple:
    return (row["dataset"], row["method"], int(row["bits"]))


def sweep(datasets, methods_, bits=(32, 64), profile: str = "quick", data_dir=None,
          progress: bool = False, timeout: float | None = None, out=None,
          command: str = "", redo: bool = False, catalogue: bool = False) -> pd.DataFrame:
    """:func:`measure` over every (dataset, method, width); failures are rows with ``error``.

    With ``out`` (a JSON path) the sweep is resumable: after every cell its
    rows are merged into that file (:func:`_merge_save`: under a lock, so
    sweeps of other methods running at the same time into the same file keep
    theirs), and a rerun keeps the cells the file already holds (failed ones
    are measured again; with ``redo`` the cells asked for are measured
    again, e.g. after a change that makes them faster). A file of another
    ``profile`` is a ``ValueError``. Every row records the commit and date
    it was measured at; the file's provenance is the last writer's.
    The cells run dataset-major in the order given; the widths of one method
    share a private results store (removed afterwards) and the width the
    method tunes at runs first, so each cell costs what it costs inside a
    reproduction. (A resumed sweep whose tuning width was measured by an
    earlier run tunes again for the widths left.) catalogue: measure the
    full-catalogue evaluation of every cell too (:func:`measure`); a resumed
    sweep then measures again every cell the file holds without it.
    """
    from tqdm import tqdm

    cells = [(d, m, int(b)) for d in datasets for m in methods_
             for b in _tuning_width_first(m, d, bits, profile)]
    have = (_measured(load(out), out, profile) if out is not None and Path(out).is_file()
            else None)  # (also the profile check)
    # with catalogue, a cell measured without its catalogue stage is not done
    held = have if have is None or not catalogue or "stage" not in have else \
        have[have.groupby(["dataset", "method", "bits"])["stage"].transform(
            lambda s: (s == "catalogue").any())]
    done = set() if held is None or redo else {_cell_key(r) for _, r in held.iterrows()}
    prov = {**provenance(command), "profile": profile}
    todo = [c for c in cells if c not in done]
    frames = []
    bar = tqdm(total=len(todo), desc="scale", unit="cell", disable=not progress)
    for (d, m), widths in groupby(todo, key=lambda c: c[:2]):
        # the widths of one method share a private store, removed when they are done
        with tempfile.TemporaryDirectory(prefix="phd-scale-") as store:
            for _, _, b in widths:
                try:
                    row = measure(d, m, b, profile, data_dir=data_dir, timeout=timeout,
                                  root=store, catalogue=catalogue)
                except RuntimeError as exc:
                    row = pd.DataFrame([{"dataset": d, "method": m, "bits": b,
                                         "error": str(exc)}])
                # each cell keeps the commit, date and CPU it was measured at (a
                # resumed sweep mixes them; the file's provenance is its last writer's)
                frames.append(row.assign(commit=prov["commit"], date=prov["date"],
                                         cpu=prov["cpu"]))
                if out is not None:
                    _merge_save(out, frames[-1], prov)
                bar.update()
    bar.close()
    ran = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if out is None:
        return ran
    if not Path(out).is_file():
        save(out, ran, prov)
    # the file's measured cells, then this run's rows (its failures included, and
    # only its own: a failure another writer left in the file is not this run's)
    return _concat(_without(_measured(load(out), out, profile), ran), ran)


def _without(rows: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """``rows`` less the rows of every cell that ``cells`` has rows of."""
    if not len(rows) or not len(cells):
        return rows
    keys = {_cell_key(r) for _, r in cells.iterrows()}
    return rows[~rows.apply(lambda r: _cell_key(r) in keys, axis=1)]


def _concat(*frames: pd.DataFrame) -> pd.DataFrame:
    """The non-empty frames one after the other (an empty frame if none)."""
    kept = [f for f in frames if f is not None and len(f)]
    return pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()


def _measured(old: dict, out, profile: str) -> pd.DataFrame:
    """The rows of a sweep file that measured a cell (errors left out); checks the profile."""
    if old["provenance"].get("profile") != profile:
        raise ValueError(f"{out} holds a sweep of profile "
                         f"{old['provenance'].get('profile')!r}, not {profile!r}; give "
                         f"another --out (or remove the file) rather than mix profiles")
    rows = old["rows"]
    ok = rows[rows["error"].isna()] if "error" in rows else rows
    if "commit" not in ok:  # rows of a file written before rows had their own provenance
        ok = ok.assign(commit=old["provenance"].get("commit"),
                       date=old["provenance"].get("date"))
    return ok


def _merge_save(out, rows: pd.DataFrame, prov: dict) -> None:
    """Write ``rows`` (one cell's) into the sweep file ``out``, keeping every other cell.

    Read, merge and write happen under an exclusive lock on ``.<name>.lock``
    beside the file, so two sweeps writing the same file (e.g. ``phd scale
    --method vh`` and ``--method vh-phd`` at once) lose none of each other's
    cells, measured or failed; the write itself is atomic (:func:`save`). A
    cell's new rows replace its old ones, except that a failed new row does
    not replace a measured old one.
    """
    import fcntl

    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        old = None
        if path.is_file():
            rec = load(path)
            measured = _measured(rec, path, prov["profile"])  # also the profile check
            failed = "error" in rows and rows["error"].notna().any()
            if failed and len(_without(measured, rows)) < len(measured):
                return  # keep the cell's measurement; the failure is in the return value
            old = _without(rec["rows"], rows)
        save(path, _concat(old, rows), prov)


def _tuning_width_first(method: str, dataset: str, bits, profile: str) -> list[int]:
    """``bits`` with the width ``method`` tunes its grid at (``tune_bits``) first."""
    widths = [int(b) for b in bits]
    try:
        overrides = profile_overrides(profile, method, dataset, widths[0])[0]
        cfg = methods.resolve_config(method, dataset, widths[0], overrides)
    except methods.MethodNotAvailable:  # an unknown method: its cells report the error
        return widths
    tb = methods.get(method).tune_point(cfg, widths[0])[0]
    return sorted(widths, key=lambda b: b != tb)


def save(path, rows: pd.DataFrame, prov: dict) -> Path:
    """Write a sweep (``{"provenance": ..., "rows": [...]}``) atomically to ``path``."""
    return write_json(path, {"format": "phd-scale", "version": 1, "provenance": prov,
                             "rows": records(rows)})


def load(path) -> dict:
    """A sweep written by :func:`save`: ``{"provenance": dict, "rows": DataFrame}``.

    Raises ``ValueError`` naming the file when it is not a complete sweep.
    """
    return read_recorded(path, "phd-scale", "scale sweep", "scale sweep",
                         "phdlib.studies.scale.save", need=("dataset", "method", "bits"))


def per_cell(rows: pd.DataFrame, stages=REPRODUCTION_STAGES) -> pd.DataFrame:
    """One row per measured (dataset, method, bits): the wall and CPU time of
    ``stages`` summed (seconds; by default every stage but the full-catalogue
    evaluation: what the cell costs inside a reproduction), the peak resident
    memory (MB, the largest of those stages) and the dataset's size. Failed
    cells are left out (none measured: an empty frame with these columns)."""
    cols = ["dataset", "method", "bits", "wall_s", "cpu_s", "peak_rss_mb", "users", "items",
            "ratings"]
    ok = rows[rows["error"].isna()] if "error" in rows else rows
    if ok.empty or "wall_s" not in ok:
        return pd.DataFrame(columns=cols)
    ok = ok[ok["stage"].isin(stages)] if "stage" in ok else ok
    g = ok.groupby(["dataset", "method", "bits"], sort=False)
    return g.agg(wall_s=("wall_s", "sum"), cpu_s=("cpu_s", "sum"),
                 peak_rss_mb=("peak_rss_mb", "max"), users=("users", "first"),
                 items=("items", "first"), ratings=("ratings", "first")).reset_index()


def growth(cells: pd.DataFrame, y: str = "wall_s", x: str = "ratings") -> pd.DataFrame:
    """Per (method, bits): the exponent ``k`` of ``y ~ c * x**k``, a least-squares
    line through ``log y`` against ``log x`` over the datasets, with the number
    of points. A method measured on fewer than two sizes gets NaN."""
    import numpy as np

    out = []
    for (m, b), g in cells.groupby(["method", "bits"], sort=False):
        g = g[(g[x] > 0) & (g[y] > 0)]
        k = float(np.polyfit(np.log(g[x]), np.log(g[y]), 1)[0]) if g[x].nunique() > 1 else np.nan
        out.append({"method": m, "bits": b, "exponent": k, "points": len(g)})
    return pd.DataFrame(out)
