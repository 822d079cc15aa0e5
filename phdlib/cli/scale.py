"""``phd scale``: what a reproduction costs, per method and stage, against dataset size."""
from __future__ import annotations

from .options import (BITS, add_json_flag, dump_json, fail, float_above_zero, output_file_problem)

#: The sizes the chapter "Cost at scale" sweeps, smallest first.
DEFAULT_DATASETS = ["ml-100k", "ml-1m", "synthetic-yelp", "synthetic-amazon", "synthetic-ml-10m"]


def _scale(args) -> int:
    from .. import data, methods
    from ..studies import scale
    from ..io import records

    datasets = args.dataset or DEFAULT_DATASETS
    known = data.names()
    for d in datasets:
        if d not in known:
            return fail(f"--dataset {d!r}: unknown dataset; expected one of {', '.join(known)}")
    names = args.method or methods.names(variant=False)
    for m in names:
        if m not in methods.names():
            return fail(f"--method {m!r}: unknown method; expected one of "
                        f"{', '.join(methods.names())}")
    if args.redo and not args.out:
        return fail("--redo: needs --out FILE (the sweep file whose cells are measured again)")
    problem = args.out and output_file_problem("--out", args.out)
    if problem:
        return fail(problem)
    try:
        df = scale.sweep(datasets, names, bits=args.bits or (32, 64), profile=args.profile,
                         data_dir=args.data_dir, progress=not args.json or args.progress,
                         timeout=args.timeout, out=args.out,
                         command=args.command_line, redo=args.redo,
                         catalogue=args.catalogue)
    except ValueError as exc:  # an unreadable --out file
        return fail(str(exc))
    failed = df[df["error"].notna()] if "error" in df else df.iloc[:0]
    if args.json:
        dump_json({"profile": args.profile, "out": args.out,
                   "rows": records(df)})
    else:
        cells = scale.per_cell(df)
        if "stage" in df and (df["stage"] == "catalogue").any():
            cat = scale.per_cell(df, stages=("catalogue",))
            cells = cells.merge(cat[["dataset", "method", "bits", "wall_s"]].rename(
                columns={"wall_s": "catalogue_s"}), on=["dataset", "method", "bits"],
                how="left")
        if len(cells):
            print(cells.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
        else:
            print("no cell was measured")
        for _, r in failed.iterrows():
            cell = f"{r['dataset']}/{r['method']}/{r['bits']}b"
            err = str(r["error"])
            print(f"  {err}" if err.startswith(cell + ":") else f"  {cell}: {err}")
        if args.out:
            print(f"written to {args.out}")
    return 1 if len(failed) else 0


def register(sub) -> None:
    p = sub.add_parser(
        "scale",
        help="cost of a reproduction: wall time, CPU time and peak memory per method and stage",
        description=(
            "Measure every (dataset, method, width) in a fresh process: the stages load, "
            "split, tune (the grid, where the profile tunes), train (the chosen point or the "
            "one fit), evaluate and, with --catalogue, the full-catalogue evaluation, with wall "
            "time, CPU time and peak resident memory. With --out the sweep is written after "
            "every cell and a rerun resumes it; sweeps of different methods may write "
            "one --out file at once. The chapter 'Cost at scale' reads such a file."
        ),
    )
    p.add_argument("--dataset", action="append", default=None,
                   help="a dataset to measure (repeatable; default: "
                        + ", ".join(DEFAULT_DATASETS) + ")")
    p.add_argument("--method", action="append", default=None,
                   help="a method to measure (repeatable; default: every method)")
    p.add_argument("--bits", type=BITS, action="append", default=None,
                   help="a code width (repeatable; default 32 and 64)")
    p.add_argument("--profile", choices=["quick", "full"], default="quick",
                   help="full: the paper's settings with tuning grids; quick: one fit each")
    p.add_argument("--timeout", type=float_above_zero, default=None,
                   help="seconds one cell may take before it is stopped and reported")
    p.add_argument("--data-dir", default=None, help="where the rating files are")
    p.add_argument("--out", default=None,
                   help="JSON file for the sweep (written after every cell; resumed when present)")
    p.add_argument("--redo", action="store_true",
                   help="with --out: measure the cells asked for again even when the file "
                        "holds them (the file's other cells are kept)")
    p.add_argument("--catalogue", action="store_true",
                   help="also time each cell's full-catalogue evaluation (every item a test "
                        "user has not rated; minutes per cell at the Amazon shape); it is "
                        "reported on its own, outside the cell's total")
    p.add_argument("--progress", action="store_true", help="progress bars on stderr with --json")
    add_json_flag(p)
    p.set_defaults(func=_scale)
