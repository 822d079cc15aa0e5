"""``phd tune-sample``: grids chosen on user samples against the grid on all the data."""
from __future__ import annotations

from .options import BITS, add_json_flag, dump_json, fail, int_in, output_file_problem


def _tune_sample(args) -> int:
    from .. import data, methods
    from ..studies import sample_tuning
    from ..io import records

    known = data.names()
    if args.dataset not in known:
        return fail(f"--dataset {args.dataset!r}: unknown dataset; expected one of "
                    f"{', '.join(known)}")
    for m in args.method or []:
        if m not in methods.names():
            return fail(f"--method {m!r}: unknown method; expected one of "
                        f"{', '.join(methods.names())}")
    problem = args.out and output_file_problem("--out", args.out)
    if problem:
        return fail(problem)
    tunable = sample_tuning.tunable(args.dataset, args.bits)
    for m in args.method or []:
        if m not in tunable:
            return fail(f"--method {m!r}: it has no tuning grid; tunable methods: "
                        f"{', '.join(tunable)}")
    split = data.load_split(args.dataset, data_dir=args.data_dir)
    for c in args.ratings:
        if not data.needs_sample(split, c):
            return fail(f"--ratings {c}: not smaller than {args.dataset}'s "
                        f"{split.dataset.n_ratings} ratings, so nothing would be sampled")
    df = sample_tuning.compare(split, args.ratings, names=args.method, bits=args.bits,
                               progress=not args.json or args.progress)
    if args.out:
        sample_tuning.save(args.out, df, args.dataset, split.fingerprint,
                           command=args.command_line)
    if args.json:
        dump_json({"dataset": args.dataset, "out": args.out, "rows": records(df)})
    else:
        print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        if args.out:
            print(f"written to {args.out}")
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "tune-sample",
        help="grids chosen on user samples against the same grids on all the data",
        description=(
            "For each tunable method: its tuning grid on all the data, and the same grid on a "
            "user sample of each --ratings size (the sample's chosen point then trained on all "
            "the data), both evaluated on the same test split. This is how the book checks "
            "that choosing a grid on a sample (tune_ratings, used above 1,000,000 ratings) "
            "costs little. Runs go through the results store."
        ),
    )
    p.add_argument("--dataset", default="ml-1m", help="the dataset (default ml-1m)")
    p.add_argument("--ratings", type=int_in(1), action="append", required=True,
                   help="a sample size in ratings (repeatable), smaller than the dataset")
    p.add_argument("--method", action="append", default=None,
                   help="a tunable method (repeatable; default: every tunable method)")
    p.add_argument("--bits", type=BITS, default=64, help="code width (default 64)")
    p.add_argument("--data-dir", default=None, help="where the rating files are")
    p.add_argument("--out", default=None, help="JSON file for the comparison, with provenance")
    p.add_argument("--progress", action="store_true", help="progress bar on stderr with --json")
    add_json_flag(p)
    p.set_defaults(func=_tune_sample)
