"""``phd train``: train and evaluate one method on one dataset split."""
from __future__ import annotations

import sys

from ..names import METHODS
from .options import (BITS, SEED, add_json_flag, dump_json, error_message, fail, int_in, name_value)


def _overrides(args) -> dict:
    out = dict(name_value("--set", item, "KEY") for item in args.set)
    if args.train_sampling:
        out["train_sampling"] = args.train_sampling
    if args.eval_sampling:
        out["eval_sampling"] = args.eval_sampling
    return out


def _train(args) -> int:
    from .. import data, methods
    from ..experiments import training

    try:
        overrides = _overrides(args)
        if args.ratings:
            if args.dataset:
                return fail("give --dataset or --ratings, not both")
            if args.data_dir:
                return fail("--data-dir goes with --dataset; --ratings FILE names the file")
            if not args.columns or not args.scale:
                return fail("--ratings needs --columns user=...,item=...,rating=...[,time=...] "
                            "and --scale LOW,HIGH")
            ds = data.load_file(args.ratings, args.columns, args.scale,
                                min_ratings=args.min_ratings, sep=args.sep)
            # what preprocessing left of the file: nothing is dropped unsaid
            print(f"{args.ratings}: {ds.raw_rows:,} rating rows read; {ds.n_ratings:,} kept "
                  f"({ds.n_users:,} users, {ds.n_items:,} items) after keeping the first "
                  f"rating of each (user, item) and removing users and items with fewer "
                  f"than {args.min_ratings} ratings", file=sys.stderr)
            split = data.split_dataset(ds, seed=args.split_seed)
            empty = [part for part in ("train", "valid", "test") if len(getattr(split, part)) == 0]
            if empty:
                return fail(f"--ratings {args.ratings}: the {' and '.join(empty)} split"
                            f"{'s are' if len(empty) > 1 else ' is'} empty: {ds.n_ratings:,} "
                            f"ratings of {ds.n_users:,} users are too few to split per user "
                            f"(the paper's 50/25/25 split needs users with several ratings; "
                            f"give each user more ratings)")
        else:
            if args.columns or args.scale or args.sep is not None:
                return fail("--columns, --scale and --sep go with --ratings FILE")
            split = data.load_split(args.dataset or "ml-1m", seed=args.split_seed,
                                    data_dir=args.data_dir)
        run = training.run(args.method, split, args.bits, seed=args.seed, overrides=overrides,
                          reuse=not args.no_cache, progress=not args.json and sys.stderr.isatty() or args.progress)
    except (methods.MethodNotAvailable, KeyError, ValueError, TypeError, ArithmeticError,
            FileNotFoundError) as exc:  # a bad --set value, a diverging configuration
        return fail(error_message(exc))
    out = {"method": run.method, "dataset": run.dataset, "bits": run.bits, "seed": run.seed,
           "metrics": run.metrics, "config": run.config, "wall_seconds": run.wall_seconds,
           "fingerprint": run.fingerprint, "version": run.version,
           "path": str(run.path) if run.path else None}
    if args.json:
        dump_json(out)
    else:
        print(f"{run.method} on {run.dataset}, {run.bits} bits, seed {run.seed} "
              f"({run.wall_seconds:.1f} s; stored in {run.path})")
        for k, v in run.metrics.items():
            print(f"  {k:12s} {v:.4f}" if isinstance(v, float) else f"  {k:12s} {v}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("train", help="train and evaluate a method (results go to the store)")
    p.add_argument("--method", required=True, choices=sorted(METHODS))
    p.add_argument("--dataset", default=None, help="a named dataset (default ml-1m)")
    p.add_argument("--ratings", metavar="FILE", default=None,
                   help="your own ratings instead: a CSV, TSV or Parquet file with a header")
    p.add_argument("--columns", metavar="MAP", default=None,
                   help="with --ratings: user=COL,item=COL,rating=COL[,time=COL]")
    p.add_argument("--scale", metavar="LOW,HIGH", default=None,
                   help="with --ratings: the rating scale, e.g. 1,5 (a rating outside it is an error)")
    p.add_argument("--sep", default=None,
                   help="with --ratings: the field separator (default from the suffix: "
                        ".csv comma, .tsv tab; .parquet is Parquet)")
    p.add_argument("--min-ratings", type=int_in(0), default=10,
                   help="with --ratings: drop items, then users, with fewer ratings (default 10)")
    p.add_argument("--bits", type=BITS, default=64)
    p.add_argument("--seed", type=SEED, default=0, help="seed of the model's randomness")
    p.add_argument("--split-seed", type=SEED, default=0, help="seed of the train/valid/test split")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--train-sampling", choices=["stochastic", "deterministic"])
    p.add_argument("--eval-sampling", choices=["stochastic", "deterministic"])
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key of the method; repeatable")
    p.add_argument("--no-cache", action="store_true", help="retrain even if the store has this run")
    p.add_argument("--progress", action="store_true", help="force a progress bar")
    add_json_flag(p)
    p.set_defaults(func=_train)
