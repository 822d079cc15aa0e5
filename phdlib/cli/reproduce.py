"""``phd reproduce``: run every experiment behind the paper's tables and figures."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from ..names import PARTS, PROFILES
from .options import (SEED, add_json_flag, dask_address, dump_json, error_message, fail, int_in, output_file_problem)


def _reproduce(args) -> int:
    from .. import experiments, methods
    from ..io import write_text

    if args.jobs == 0:
        return fail("--jobs 0: give a number of parallel cells (1 or more), or -1 for every core")
    manifest = None if args.manifest is None else Path(args.manifest)
    problem = None if manifest is None else output_file_problem("--manifest", args.manifest,
                                                                 make_folders=False)
    if problem:
        return fail(problem)
    try:
        grid = experiments.plan(args.dataset, args.profile, seeds=args.seeds,
                                parts=args.part or experiments.PARTS, split_seed=args.split_seed)
        cells = grid.cells()
        if args.method:
            cells = experiments.only_methods(cells, args.method)
        log = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
        log(experiments.profile_note(args.profile, sorted({c.method for c in cells}),
                                     args.dataset, args.data_dir))
        log(f"{len(cells)} cells on {args.dataset}; "
            + (f"Dask scheduler {args.dask}" if args.dask else f"jobs={args.jobs}"))
        t0 = time.perf_counter()
        report = experiments.run_grid(
            cells, jobs=args.jobs, data_dir=args.data_dir, progress=not args.json or args.progress,
            errors="record", name=f"reproduce-{args.dataset}-{args.profile}", dask=args.dask,
            command=args.command_line)
        wall = time.perf_counter() - t0
    except (methods.MethodNotAvailable, KeyError, ValueError, TypeError, ArithmeticError,
            FileNotFoundError) as exc:  # a bad --set value, a diverging configuration
        return fail(error_message(exc))
    if manifest is not None:  # a copy of the grid's manifest, e.g. for the book's records
        try:
            write_text(manifest, Path(report.attrs["manifest"]).read_text(encoding="utf-8"))
        except OSError as exc:
            return fail(f"--manifest {args.manifest}: cannot write it ({exc.strerror or exc})")
    table = experiments.summary_table(report)
    counts = report["status"].value_counts().to_dict()
    if args.json:
        dump_json({"dataset": args.dataset, "profile": args.profile, "wall_seconds": wall,
                   "manifest": report.attrs["manifest"],
                   "counts": counts,
                   "cells": [{k: (None if v != v else v) for k, v in row.items()}
                             for row in table.to_dict(orient="records")],
                   "errors": {c.label(): e for c, e in zip(report["cell"], report["error"])
                              if isinstance(e, str) and e}})
    else:
        print(table.to_string(index=False))
        for c, e in zip(report["cell"], report["error"]):
            if isinstance(e, str) and e:
                print(f"  {c.label()}: {e}")
        print(f"wall time {wall:.1f} s; " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return 1 if counts.get("failed") else 0


def register(sub) -> None:
    p = sub.add_parser("reproduce",
                       help="run every experiment of the paper's tables and figures (resumable)")
    p.add_argument("--dataset", default="ml-1m")
    p.add_argument("--profile", default="full", choices=PROFILES,
                   help="full: the paper's settings; quick: reduced settings for checks")
    p.add_argument("--seeds", type=int_in(1, 1000), default=1, help="model seeds 0..N-1 (default 1)")
    p.add_argument("--jobs", type=int_in(-1), default=1, help="parallel cells (joblib n_jobs)")
    p.add_argument("--split-seed", type=SEED, default=0)
    p.add_argument("--dask", metavar="ADDRESS", type=dask_address, default=None,
                   help="run the cells on this Dask scheduler (tcp://HOST:PORT); the workers "
                        "need neither the data nor this store (see phdlib.experiments.cluster)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--part", action="append", choices=PARTS,
                   help="only the cells of this part; repeatable (default: all)")
    p.add_argument("--method", action="append", help="only this method; repeatable")
    p.add_argument("--manifest", metavar="PATH", default=None,
                   help="also write the grid's manifest (cells, seconds, CPU, peak memory, "
                        "provenance) to PATH, e.g. book/recorded/reproduce-full-10m.json")
    p.add_argument("--progress", action="store_true", help="progress bar even with --json")
    add_json_flag(p)
    p.set_defaults(func=_reproduce)
