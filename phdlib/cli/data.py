"""``phd data``: dataset statistics and downloads.

``phd data stats --dataset NAME [--data-dir D] [--seed S] [--json]`` prints
users, items, ratings, density, the rating histogram and the split sizes;
``phd data fetch --dataset NAME`` downloads a dataset into the per-user cache
and verifies its content fingerprint.
"""
from __future__ import annotations

import sys

from .options import SEED, add_json_flag, dump_json, error_message, fail, int_in


def _prep_args(args) -> dict:
    out = {"verify": not args.no_verify, "min_ratings": args.min_ratings,
           "filtering": args.filtering}
    return out


def _stats(args) -> int:
    from .. import data
    from ..paper import DATA_STATS, RELEASED_SPLITS

    try:
        split = data.load_split(args.dataset, seed=args.seed, data_dir=args.data_dir,
                                download=args.download, **_prep_args(args))
    except (data.DataError, FileNotFoundError, KeyError, TypeError) as exc:
        return fail(error_message(exc))
    s = data.stats(split)
    s["paper"] = DATA_STATS.get(split.dataset.name)
    s["released_split"] = RELEASED_SPLITS.get(split.dataset.name)
    if args.json:
        dump_json(s)
        return 0
    kind = "  [SYNTHETIC data, not a real dataset]" if s["synthetic"] else ""
    print(f"{s['dataset']}{kind}  (from {s['source']})")
    print(f"  fingerprint {s['fingerprint']}  ({s['raw_rows']:,} raw rows)")
    p = s["preprocessing"]
    print(f"  preprocessing: first rating per (user, item); users/items with < {p['min_ratings']} "
          f"ratings removed ({p['filtering']}); half stars doubled: {p['double_half_stars']}")
    paper = s["paper"] or {}

    def row(label, ours, key, fmt="{:,}"):
        extra = f"   (paper: {fmt.format(paper[key])})" if key in paper else ""
        print(f"  {label:<10}{fmt.format(ours):>12}{extra}")

    row("users", s["users"], "users")
    row("items", s["items"], "items")
    row("ratings", s["ratings"], "ratings")
    row("density", 100 * s["density"], "density", "{:.2f}%")
    lo, hi = s["rating_scale"]
    print(f"  rating scale {lo:g}..{hi:g}; histogram:")
    total = s["ratings"]
    for v, c in s["histogram"].items():
        print(f"    {v:>4}  {c:>10,}  {100 * c / total:5.1f}%")
    for what in ("ratings_per_user", "ratings_per_item"):
        d = s[what]
        print(f"  {what.replace('_', ' ')}: min {d['min']}, median {d['median']:g}, "
              f"mean {d['mean']:.1f}, max {d['max']}")
    rel = s["released_split"] or {}
    print(f"  split (seed {s['seed']}, fingerprint {s['split_fingerprint']}):")
    for part in ("train", "valid", "test"):
        extra = f"   (released code: {rel[part]:,})" if part in rel else ""
        print(f"    {part:<6}{s['split'][part]:>12,}{extra}")
    return 0


def _fetch(args) -> int:
    from .. import data
    from ..data.sources import check_url

    if data.is_synthetic(args.dataset):
        if args.url is not None:
            return fail(f"--url: {args.dataset} is generated on use, not downloaded; --url goes "
                        f"with a downloadable dataset")
        if args.json:
            dump_json({"dataset": args.dataset, "generated": True, "path": None})
        else:
            print(f"{args.dataset}: generated on use (synthetic, planted codes): nothing to "
                  f"fetch")
        return 0
    if args.url is not None:
        try:
            check_url(args.url)
        except ValueError as exc:
            return fail(f"--{exc}")
    tty = not args.json and sys.stderr.isatty()
    if not tty:
        import pooch

        pooch.get_logger().setLevel("WARNING")  # a failure is the one message
    try:
        out = data.fetch(args.dataset, url=args.url, verify=not args.no_verify, progress=tty)
    except (data.DataError, FileNotFoundError, KeyError) as exc:
        return fail(error_message(exc))
    out = {"dataset": args.dataset, **out}
    known = out["known_fingerprint"]
    path = out["path"]
    if args.json:
        dump_json(out)
    else:
        state = ("verified against the known fingerprint" if out["verified"]
                 else "no known fingerprint in this build: not verified" if not known
                 else "NOT verified (--no-verify)")
        print(f"{args.dataset}: {path} ({out['rows']:,} rows)\n  fingerprint {out['fingerprint']} ({state})")
    return 0


#: What to say when the book's dataset is missing and cannot be downloaded.
OFFLINE_HINT = ("or build the whole book offline on planted data with `make book "
                "DATASET=synthetic` (every page then says that its data are synthetic)")


def _ensure(args) -> int:
    """The dataset is here, or is downloaded (hash-verified, progress bar), or one message."""
    from .. import data

    name = args.dataset
    if name not in data.names():
        return fail(f"--dataset {name!r}: unknown dataset; expected one of {', '.join(data.names())}")
    if data.is_synthetic(name):
        print(f"{name}: generated on use (synthetic, planted codes): nothing to fetch")
        return 0
    if name not in data.SOURCES:  # a kind registered by a reader: it says itself
        kind = data.get(name)
        if kind.available(args.data_dir):
            print(f"{name}: available ({kind.describe()})")
            return 0
        return fail(f"dataset {name!r} ({kind.describe()}) is not available here")
    path = data.locate(name, args.data_dir)
    if path is not None:
        print(f"{name}: {path}")
        return 0
    src = data.source(name)
    if not src.url:
        return fail(f"dataset {name!r} is not on this machine and phdlib cannot download it "
                    f"({src.how_to_get}); put {src.files[0]} under a folder and run with "
                    f"PHD_DATA_DIR=FOLDER, {OFFLINE_HINT}")
    import pooch

    tty = sys.stderr.isatty()
    if tty:
        print(f"{name}: not on this machine; downloading it from {src.url}", file=sys.stderr)
    else:
        pooch.get_logger().setLevel("WARNING")  # the failure below is the one message
    try:
        out = data.fetch(name, progress=tty)
    except (data.DataError, FileNotFoundError) as exc:
        reason = " ".join(str(exc).split())
        reason = reason.split(". Provide it in")[0].split(". dataset ")[0]
        return fail(f"dataset {name!r} is not on this machine and could not be downloaded "
                    f"({reason[:200]}...). Provide it: put {src.files[0]} (from {src.url}) under a "
                    f"folder and run `make book PHD_DATA_DIR=FOLDER` (or `phd data fetch "
                    f"--dataset {name}` when the network allows), {OFFLINE_HINT}")
    print(f"{name}: {out['path']} (fingerprint verified: {out['verified']})")
    return 0


def _common(p) -> None:
    p.add_argument("--dataset", required=True, help="ml-1m, ml-100k, ml-10m, yelp, amazon, synthetic, ...")
    p.add_argument("--no-verify", action="store_true",
                   help="accept a content fingerprint that differs from the known one")
    add_json_flag(p)


def register(sub) -> None:
    p = sub.add_parser("data", help="dataset statistics and downloads")
    dsub = p.add_subparsers(dest="data_command", metavar="ACTION")
    dsub.required = True
    s = dsub.add_parser("stats", help="users, items, ratings, density, histogram, split sizes")
    _common(s)
    s.add_argument("--data-dir", default=None, help="searched before PHD_DATA_DIR and the cache")
    s.add_argument("--seed", type=SEED, default=0, help="seed of the split")
    s.add_argument("--min-ratings", type=int_in(0), default=10, help="remove users/items with fewer")
    s.add_argument("--filtering", choices=("once", "until_stable"), default="once")
    s.add_argument("--download", action="store_true", help="download the dataset if it is missing")
    s.set_defaults(func=_stats)
    f = dsub.add_parser("fetch", help="download into the per-user cache and verify")
    _common(f)
    f.add_argument("--url", default=None, help="download from this URL instead of the official one")
    f.set_defaults(func=_fetch)
    e = dsub.add_parser("ensure", help="make sure a dataset is here: found, else downloaded "
                                       "(hash-verified), else one message saying what to do")
    e.add_argument("--dataset", required=True)
    e.add_argument("--data-dir", default=None, help="searched before PHD_DATA_DIR and the cache")
    e.set_defaults(func=_ensure)
