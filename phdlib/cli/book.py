"""``phd book``: execute the chapters with papermill and build the site."""
from __future__ import annotations

import sys

from ..names import PROFILES
from .options import (add_json_flag, dump_json, fail, name_value, output_file_problem,
                      seconds_above_zero)


def _parse_params(items: list[str]) -> dict:
    return dict(name_value("--param", item) for item in items)


def _build(args) -> int:
    from ..book import driver as book
    from ..book import record

    problem = args.record and output_file_problem("--record", args.record)
    if problem:
        return fail(problem)
    params = {}
    if args.dataset is not None:
        params["dataset"] = args.dataset
    if args.profile is not None:
        params["profile"] = args.profile
    try:
        params.update(_parse_params(args.param))
        opts = dict(
            parameters=params, only=args.chapter or None, force=args.force, site=not args.no_site,
            log=(lambda *a: print(*a, file=sys.stderr)) if args.json else print,
            cell_timeout=args.cell_timeout,
        )
        res = (record.build_recorded(args.record, command=args.command_line, **opts)
               if args.record else book.build(**opts))
    except (book.ChapterError, book.SiteBuildError) as exc:  # a chapter or the site failed
        return fail(str(exc), 1)
    except (FileNotFoundError, ValueError) as exc:  # a bad option value
        return fail(str(exc), 2)
    if args.json:
        dump_json(_results_json(book, res))
    return 0


def _results_json(book, res) -> dict:
    """``--json`` of a build: every chapter with code, in the book's order, with its
    seconds, whether it was executed now (or reused), its parameters, and whether it
    was left out (``--chapter`` with ``--no-site``: never executed, not selected)."""
    done = {r.name: r for r in res}   # each a chapter of book.chapters
    out = {}
    for src in book.chapters(book.project_root()):
        r = done.get(src.stem)
        if r is not None:
            out[r.name] = {"seconds": r.seconds, "executed": r.executed,
                           "parameters": r.parameters, "left_out": False}
        elif book.is_notebook(src.read_text()):
            out[src.stem] = {"seconds": 0.0, "executed": False, "parameters": {},
                             "left_out": True}
    return out


def _record(args) -> int:
    from ..book import record

    problem = output_file_problem("--out", args.out)
    if problem:
        return fail(problem)
    try:
        path = record.write(args.out, command=args.command_line)
    except (FileNotFoundError, ValueError) as exc:  # no book here, nothing executed, a bad notebook
        return fail(str(exc), 2)
    rec = record.load(path)
    if args.json:
        dump_json({"out": str(path), "chapters": len(rec["rows"]), **rec["build"]})
    else:
        b = rec["build"]
        n = len(rec["rows"])
        print(f"{path}: {n} chapter{'s' if n != 1 else ''}, {b['chapter_seconds'] / 60:.1f} min of "
              f"execution, {b['span_seconds'] / 60:.1f} min from the first start to the last end"
              + (f"; never executed: {', '.join(b['missing'])}" if b["missing"] else ""))
    return 0


def _list(args) -> int:
    from ..book import driver as book

    import jupytext

    root = book.project_root()
    rows = {}
    for src in book.chapters(root):
        text = src.read_text()
        rows[src.stem] = (
            book.declared_parameters(jupytext.read(src)) if book.is_notebook(text) else {}
        )
    if args.json:
        dump_json(rows)
    else:
        for name, params in rows.items():
            shown = ", ".join(f"{k}={v}" for k, v in params.items()) or "(no code)"
            print(f"{name:24s} {shown}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("book", help="execute the chapters (papermill) and build the site")
    bs = p.add_subparsers(dest="book_command", metavar="ACTION")
    bs.required = True

    b = bs.add_parser("build", help="execute every chapter, then jupyter-book build -W")
    b.add_argument("--dataset", help="papermill parameter 'dataset' (e.g. ml-1m, ml-100k)")
    b.add_argument("--profile", choices=PROFILES,
                   help="papermill parameter 'profile' (full or quick)")
    b.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="any other chapter parameter; repeatable")
    b.add_argument("--chapter", action="append", metavar="NAME",
                   help="execute only this chapter (file stem); repeatable. The others are "
                        "reused from the last build; with --no-site one never executed is "
                        "left out, without it every one must have been executed once")
    b.add_argument("--force", action="store_true", help="ignore the execution cache")
    b.add_argument("--no-site", action="store_true", help="execute only; skip jupyter-book build")
    b.add_argument("--cell-timeout", type=seconds_above_zero, default=None, metavar="SECONDS",
                   help="fail a chapter whose cell runs longer than this (default: no limit; "
                        "at the paper's settings on a large dataset one cell trains for hours)")
    b.add_argument("--record", default=None, metavar="FILE",
                   help="write what the build cost to FILE (JSON): each chapter's seconds, the "
                        "build's wall time, the runs the results store gained and the peak "
                        "memory of the build, its kernels and their workers together; "
                        "rewritten after each chapter, so that a build stopped from outside "
                        "leaves what it did. The chapter 'Cost at scale' reads such a file")
    add_json_flag(b)
    b.set_defaults(func=_build)

    r = bs.add_parser("record", help="write what the last build's chapters cost (papermill's "
                                     "timing of each executed chapter) to a JSON file")
    r.add_argument("--out", required=True, metavar="FILE", help="the record's JSON file")
    add_json_flag(r)
    r.set_defaults(func=_record)

    ls = bs.add_parser("list", help="chapters in order, with their parameters")
    add_json_flag(ls)
    ls.set_defaults(func=_list)
