"""``phd bench``: the runtime benchmark (Table 2, top-k against faiss)."""
from __future__ import annotations

import sys

from ..names import SERVING_ENGINES as ENGINE_NAMES
from .options import (SEED, add_json_flag, dump_json, fail, int_in, output_file_problem, positive_float)


def _bench_train(args, log) -> int:
    from ..bench import train
    from ..studies.scale import provenance

    try:
        res = train.run(shapes=args.shape or tuple(train.SHAPES), threads=args.threads,
                        repeats=args.repeats or 5, seed=args.seed, steps=args.step or train.STEPS,
                        log=log)
    except (ValueError, MemoryError) as exc:
        return fail(str(exc), 2)
    out = {"format": train.FORMAT, "version": 1, "provenance": provenance(args.command_line),
           **res.to_json()}
    if args.out:
        from ..io import write_json

        write_json(args.out, out)
    if args.json:
        dump_json(out)
    else:
        print(train.report(res))
    return 0


def _bench_dcd(args, log) -> int:
    from .. import data
    from ..bench import dcd

    widths = [args.bits] if args.bits else [32, 64]
    try:
        split = data.load_split(args.dataset)
        res = {str(b): dcd.sweep_ratio(split, b, repeats=args.repeats or 21, seed=args.seed)
               for b in widths}
    except (ValueError, MemoryError, data.DataNotFoundError) as exc:
        return fail(str(exc), 2)
    if args.out:
        from ..io import write_json

        write_json(args.out, res)
    if args.json:
        dump_json(res)
    else:
        for b, r in res.items():
            q = r["ratio"]
            print(f"{args.dataset}, {b} bits: one PHD sweep / one Hamming sweep = "
                  f"{q['median']:.2f} (q25 {q['q25']:.2f}, q75 {q['q75']:.2f}); seconds "
                  f"{r['seconds']['phd']:.3f} / {r['seconds']['hamming']:.3f}")
    return 0


def _bench_serving(args, log) -> int:
    from ..bench import serving
    from ..io import records
    from ..studies.scale import provenance

    try:
        if args.codes:
            from ..serving import codes_file

            codes = codes_file.load_codes(args.codes)
            if codes.distance != "phd":
                return fail(f"--codes {args.codes}: these codes rank by {codes.distance}; the "
                            f"serving benchmark measures PHD codes")
            users, items, bits = codes.user_codes[:args.queries], codes.item_codes, codes.bits
            source = {"codes": str(args.codes), "provenance": codes.provenance}
        else:
            bits = args.bits or 64
            users, items = serving.synthetic_codes(args.items, args.queries, bits, seed=args.seed)
            source = {"synthetic": {"items": args.items, "queries": args.queries,
                                    "seed": args.seed}}
        engines = args.engine or serving.ENGINES
        bad = [e for e in engines if e not in serving.ENGINES]
        if bad:
            return fail(f"--engine {bad[0]!r}: expected one of {', '.join(serving.ENGINES)}")
        # an engine named with --engine is measured at any size; by default the slow
        # ingest of Milvus Lite and the slow graph build of usearch stop at their caps
        named = set(args.engine or ())
        caps = {"milvus_max": None if "milvus-lite" in named else 200_000,
                "usearch_max": None if "usearch" in named else 1_000_000}
        df = serving.run(users, items, bits, k=args.k, repeats=args.repeats or 3, log=log,
                         engines_=tuple(engines), **caps)
    except (ValueError, KeyError, FileNotFoundError, MemoryError) as exc:
        return fail(str(exc))
    import faiss
    import numba

    threads = {"numba_threads": numba.get_num_threads(), "faiss_threads": faiss.omp_get_max_threads()}
    res = {"format": "phd-serving", "version": 1,
           "provenance": {**provenance(args.command_line), **source, **threads},
           "rows": records(df)}
    if args.out:
        from ..io import write_json

        write_json(args.out, res)
    if args.json:
        dump_json(res)
    else:
        print(df.to_string(index=False, float_format=lambda v: f"{v:,.4g}"))
    return 0


def _bench(args) -> int:
    from .. import bench

    log = (lambda *a: print(*a, file=sys.stderr)) if args.json else (
        lambda *a: print(*a, file=sys.stderr, flush=True))
    problem = args.out and output_file_problem("--out", args.out)
    if problem:
        return fail(problem)
    if args.train:
        return _bench_train(args, log)
    if args.serving:
        return _bench_serving(args, log)
    if args.dcd:
        return _bench_dcd(args, log)
    try:
        res = bench.run(n=args.n, threads=args.threads, profile=args.profile,
                        repeats=args.repeats, seed=args.seed, n_topk=args.n_topk, ip_n=args.ip_n,
                        min_seconds=args.min_seconds, topk_min_seconds=args.min_seconds,
                        sweep_min_seconds=(0.02 if args.min_seconds is None else args.min_seconds),
                        log=log, progress=args.progress)
    except (ValueError, MemoryError) as exc:
        return fail(str(exc), 2)
    if args.out:
        res.save(args.out)
    if args.json:
        dump_json(res.to_json())
    else:
        print(bench.report(res))
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "bench",
        help="runtime benchmark: Hamming, PHD, C, NumPy, inner products, top-k vs faiss",
        description=(
            "Re-measure the paper's Table 2 on this machine: N random 64-bit codes, one "
            "query, every distance consumed, methods interleaved, medians over rounds; "
            "memory read bandwidth measured in the same run. Prints every figure; with "
            "--json one object keyed by method name (run information under '_run')."
        ),
    )
    p.add_argument("--n", type=int_in(1), default=None,
                   help="codes for the throughput table (default: the profile's, quick 1e7, full 1e8)")
    p.add_argument("--threads", type=int_in(1), default=None,
                   help="thread count measured beside 1 thread (default: all Numba threads)")
    p.add_argument("--profile", choices=["quick", "full"], default="quick")
    p.add_argument("--repeats", type=int_in(1), default=None, help="interleaved rounds (default: 11 quick, 25 full)")
    p.add_argument("--n-topk", type=int_in(1), default=None, help="codes for the top-k comparison")
    p.add_argument("--ip-n", type=int_in(1), default=None,
                   help="64-d float32 vectors for the inner product (256 bytes each)")
    p.add_argument("--min-seconds", type=positive_float, default=None,
                   help="a timing sample averages back-to-back calls up to this long "
                        "(default: the profile's; 0: single calls)")
    p.add_argument("--train", action="store_true",
                   help="instead: the VH / VH_PHD training step (autograd; fused with the dense "
                        "Adam pass, the exact sparse update and lazy Adam), ms per iteration "
                        "beside each design's limit, at ML-1M's, ML-10M's and Amazon's shapes, "
                        "32 and 64 bits")
    p.add_argument("--shape", action="append", choices=["ml-1m", "ml-10m", "amazon"],
                   default=None, help="with --train: a shape to measure (repeatable; default all)")
    p.add_argument("--step", action="append", choices=["autograd", "dense", "exact", "auto", "lazy"],
                   default=None, help="with --train: a step to time (repeatable; default all; "
                   "the dense step is always timed, as the reference)")
    p.add_argument("--serving", action="store_true",
                   help="instead: PHD top-k served by BinaryIndex, faiss (flat, HNSW, IVF on "
                        "padded codes), phdlib's IVF on the native codes and Milvus Lite: "
                        "recall@k against queries per second, memory and build time")
    p.add_argument("--dcd", action="store_true",
                   help="instead: one discrete-coordinate-descent sweep of DCF_PHD against one "
                        "of DCF on a dataset's training ratings (--dataset, --bits: default 32 "
                        "and 64), interleaved; the median ratio and quartiles")
    p.add_argument("--dataset", default="ml-1m", help="with --dcd: the dataset (default ml-1m)")
    p.add_argument("--items", type=int_in(1), default=1_000_000,
                   help="with --serving: synthetic item codes (default 1,000,000)")
    p.add_argument("--queries", type=int_in(1), default=1000,
                   help="with --serving: query (user) codes (default 1000)")
    p.add_argument("--bits", type=int_in(1, 1024), default=None,
                   help="with --serving: code width of synthetic codes (default 64); with --dcd: "
                        "the one width to measure")
    p.add_argument("--codes", default=None, metavar="FILE.npz",
                   help="with --serving: trained codes from phd export instead of synthetic ones")
    p.add_argument("--k", type=int_in(1, 16_384), default=10, help="with --serving: top-k (default 10)")
    p.add_argument("--engine", action="append", default=None,
                   help="with --serving: an engine to measure (repeatable; default all: "
                        + ", ".join(ENGINE_NAMES) + "; by default Milvus Lite stops at "
                        "200,000 items and usearch at 1,000,000, a named one is measured at "
                        "any size)")
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--out", default=None, help="also write the JSON result to this file")
    p.add_argument("--progress", action="store_true", help="progress bars on stderr")
    add_json_flag(p)
    p.set_defaults(func=_bench)
