"""Grids on a Dask cluster whose workers share no disk with the client.

:func:`phdlib.experiments.runner.run_grid` with ``dask=`` (a scheduler address such as
``"tcp://host:8786"``, or a ``distributed.Client``) runs here (:func:`execute`).
The runner imports this module; this module takes what a cell is, its split,
its status and its tuning points from :mod:`phdlib.experiments.cells`, as the runner
does, and imports Dask only when a grid runs on a cluster. The protocol:

1. The client loads each split of the grid from its own data folder and
   scatters it to the workers (once per split, broadcast): workers need no
   data folder and no copy of the data files.
2. For each cell the store lacks, the client ships, with the cell, the
   stored runs it depends on (the tuning points, or the tuned run whose
   choice a transfer reuses; :func:`dependency_cells`).
3. A worker (:func:`remote_cell`) checks the split's fingerprint, writes the
   shipped runs into a private temporary store, trains the cell there
   through :func:`phdlib.experiments.training.run`, and returns every run it created
   (arrays, metadata, logs) as :class:`phdlib.results.Run` objects; the
   temporary store is then deleted. Nothing is written to the worker's own
   results folder.
4. The client verifies nothing was lost in transit by saving each returned
   run into its own store (:func:`phdlib.results.save`: atomic, and a key
   already stored is kept, so a cell that ran twice is stored once).

A task whose worker dies is retried on another worker (``retries``). Across
real machines::

    dask scheduler --port 8786                       # on one machine
    dask worker tcp://SCHEDULER:8786 --nworkers 2    # on every worker machine
    phd reproduce --dataset ml-1m --dask tcp://SCHEDULER:8786

Every machine needs the same ``phdlib`` (and Python packages) installed; no
shared file system, no data on the workers.
"""
from __future__ import annotations

import shutil
import tempfile
import time
import traceback
from pathlib import Path

from .. import methods, results
from . import training
from .cells import Cell, grid_cells, record, status
from .usage import usage_since, usage_start


def dependency_cells(cell, data_dir=None) -> list:
    """The cells whose stored runs ``cell`` may reuse (points and the tuned anchor)."""
    out = list(grid_cells([cell], data_dir))
    cfg = methods.resolve_config(cell.method, cell.dataset, cell.bits, cell.overrides)
    method = methods.get(cell.method)
    if method.tunes(cfg, cell.bits):
        bits, seed = method.tune_point(cfg, cell.bits)
        anchor = Cell(cell.dataset, cell.method, bits, seed, cell.options, cell.split_seed)
        if anchor != cell:
            out.append(anchor)
    return list(dict.fromkeys(out))


def remote_cell(cell, split, fingerprint: str, deps: list) -> dict:
    """Worker: train ``cell`` on ``split`` in a private store; return the runs it created."""
    # a Dask worker may run cells in several threads at once: its peak is left
    # whole (the worker process's, an upper bound) rather than reset under another cell
    start = usage_start(reset=False)
    root = Path(tempfile.mkdtemp(prefix="phdlib-cell-"))
    try:
        if split.fingerprint != fingerprint:
            raise ValueError(f"split fingerprint {split.fingerprint} differs from the "
                             f"client's {fingerprint}")
        shipped = set()
        for r in deps:
            results.save(r, root=root)
            shipped.add(r.key)
        run = training.run(cell.method, split, cell.bits, seed=cell.seed,
                           overrides=cell.overrides, progress=False, root=root)
        idx = results.index(root)
        new = [results.load(p) for p, k in zip(idx.get("path", []), idx.get("key", []))
               if k not in shipped]
        return {"cell": cell, "ok": True, "runs": new, "key": run.key,
                "metrics": dict(run.metrics), "error": None, **usage_since(start)}
    except Exception as exc:  # recorded by the client
        return {"cell": cell, "ok": False, "runs": [], "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(), **usage_since(start)}
    finally:
        shutil.rmtree(root, ignore_errors=True)
        methods.forget_shared_work([cell.method])  # none kept into the worker's next cell


def client_for(dask):
    """A ``distributed.Client`` for ``dask`` (an address string or a Client)."""
    import distributed

    if isinstance(dask, distributed.Client):
        return dask, False
    return distributed.Client(dask), True


def execute(st, todo: list, twins: dict, dask, root, data_dir, progress: bool, name: str,
            outcomes: list, retries: int = 2) -> None:
    """Run ``todo`` on the cluster; store the returned runs; record outcomes in ``st``
    (:func:`phdlib.experiments.cells.record`)."""
    import distributed  # heavy and optional: only a grid on a cluster needs it
    from tqdm import tqdm

    client, own = client_for(dask)
    try:
        splits = {}
        for c in todo:
            k = (c.dataset, c.split_seed)
            if k not in splits:
                sp = c.load_split(data_dir)
                splits[k] = (client.scatter(sp, broadcast=True, hash=False), sp.fingerprint)
        futures, loaded = {}, {}
        pos = {c: i for i, c in enumerate(st["cell"])}

        def load_once(path):  # a tuned run's points are shipped to every seed's cell
            if path not in loaded:
                loaded[path] = results.load(path)
            return loaded[path]

        for c in todo:
            deps = dependency_cells(c, data_dir)
            dst = status(deps, root=root, data_dir=data_dir) if deps else None
            stored = [] if dst is None else [
                load_once(p) for p, s in zip(dst["path"], dst["status"]) if s == "stored"]
            if dst is None or (dst["status"] != "stored").any():
                # an anchor not stored yet tunes on the worker: ship its grid's points
                # on the user sample, if it draws one, that the client's store holds
                stored += training.stored_on_sample(
                    c.method, c.load_split(data_dir), c.bits,
                    c.overrides, root)
            fut, fp = splits[(c.dataset, c.split_seed)]
            f = client.submit(remote_cell, c, fut, fp, stored, retries=retries, pure=False,
                              key=f"phd-cell-{st.at[pos[c], 'key']}-{time.time_ns()}")
            futures[f] = c
        bar = tqdm(total=len(futures), desc=f"{name}: cells on {client.scheduler.address}",
                   unit="run", disable=not progress)
        for f in distributed.as_completed(futures):
            try:
                out = f.result()
            except Exception as exc:  # the task itself failed (e.g. every retry's worker died)
                out = {"cell": futures[f], "ok": False, "runs": [], "seconds": 0.0,
                       "error": f"{type(exc).__name__}: {exc}", "host": None, "pid": None}
            for r in out.pop("runs", []):
                training.store_run(r, root)
            if out["ok"]:
                out["path"] = str(results.run_path(out["cell"].method, out["cell"].dataset,
                                                   out["key"], root))
            outcomes.append(out)
            record(st, out, twins, pos)
            bar.update(1)
        bar.close()
    finally:
        if own:
            client.close()
