"""usearch's HNSW serving PHD codes, against the exact scan: build, memory, recall, QPS.

``python -m phdlib.bench.usearch --items 1000000 --json`` measures, on seeded
clustered codes (:func:`phdlib.bench.serving.synthetic_codes`: planted centres,
each bit flipped with probability ``flip``), on ``threads`` threads (Numba's and
usearch's, default one):

- ``binaryindex``: :class:`phdlib.serving.search.BinaryIndex` ``metric="phd"``,
  the exact scan and the reference for recall;
- ``usearch-exact``: :class:`phdlib.serving.usearch_engine.USearchIndex` with
  ``exact=True`` (usearch's exhaustive scan through the compiled metric), only
  up to ``exact_max`` items (it is slow);
- ``usearch-hnsw`` once per ``build_metric`` (``"hamming"``: the graph linked by
  Hamming, searched by PHD; ``"phd"``: built and searched with PHD), one row per
  ``expansion_search``.

Recall@k is :func:`phdlib.bench.serving.recall_at_k` (tie-aware); QPS the best of
``repeats`` timed runs of the whole query batch after one warm-up; memory is
the serialised usearch index (``memory_mb``, codes and graph,
:meth:`USearchIndex.memory_bytes`) beside what usearch allocated
(``allocated_mb``, arenas of many MiB), or the codes array of ``BinaryIndex``;
build is the wall time of ``add``. Nothing here is asserted: the numbers are
reported.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import pandas as pd

from ..serving.search import BinaryIndex
from ..serving.usearch_engine import USearchIndex
from .machine import limited_threads, machine_info
from .serving import _timed, recall_at_k, synthetic_codes

EXPANSION_SEARCH = (16, 32, 64, 128, 256)


def run(user_codes: np.ndarray, item_codes: np.ndarray, bits: int, k: int = 10,
        repeats: int = 3, connectivity: int = 16, expansion_add: int = 128,
        expansion_search=EXPANSION_SEARCH, build_metrics=("hamming", "phd"),
        exact_max: int = 100_000, threads: int = 1, seed: int = 0,
        log=lambda *a: None) -> pd.DataFrame:
    """One row per (engine, build metric, expansion_search): recall, qps, memory_mb,
    build_s (module doc). ``user_codes``/``item_codes``: uint64 ``(n, ceil(bits/64))``."""
    q = np.ascontiguousarray(user_codes)
    n = len(item_codes)
    rows = []

    def row(engine, build_metric, ef, secs, d, true_d, index, build):
        memory = index.stored.nbytes if isinstance(index, BinaryIndex) else index.memory_bytes()
        alloc = memory if isinstance(index, BinaryIndex) else index.allocated_bytes()
        rows.append({"engine": engine, "build_metric": build_metric, "expansion_search": ef,
                     "recall": recall_at_k(d, true_d, k), "qps": len(q) / secs,
                     "memory_mb": memory / 2**20, "allocated_mb": alloc / 2**20,
                     "build_s": build})

    with limited_threads(threads):
        t0 = time.perf_counter()
        ref = BinaryIndex(bits, "phd")
        ref.add(item_codes)
        build = time.perf_counter() - t0
        secs, (true_d, _) = _timed(lambda: ref.search(q, k), repeats)
        row("binaryindex", "", np.nan, secs, true_d, true_d, ref, build)
        log(f"binaryindex: {len(q) / secs:,.0f} qps")
        if n <= exact_max:
            ex = USearchIndex(bits, "phd", exact=True, seed=seed, threads=threads)
            t0 = time.perf_counter()
            ex.add(item_codes)
            build = time.perf_counter() - t0
            secs, (d, _) = _timed(lambda: ex.search(q, k), repeats)
            row("usearch-exact", "", np.nan, secs, d, true_d, ex, build)
            log(f"usearch-exact: {len(q) / secs:,.0f} qps")
        for bm in build_metrics:
            hn = USearchIndex(bits, "phd", connectivity=connectivity,
                              expansion_add=expansion_add, seed=seed, build_metric=bm,
                              threads=threads)
            t0 = time.perf_counter()
            hn.add(item_codes)
            build = time.perf_counter() - t0
            log(f"usearch-hnsw (built by {bm}): {build:.1f} s")
            for ef in expansion_search:
                hn.expansion_search = int(ef)
                secs, (d, _) = _timed(lambda: hn.search(q, k), repeats)
                row("usearch-hnsw", bm, int(ef), secs, d, true_d, hn, build)
                log(f"  expansion_search {ef}: recall {rows[-1]['recall']:.3f}, "
                    f"{rows[-1]['qps']:,.0f} qps")
    df = pd.DataFrame(rows)
    for at, (name, value) in enumerate((("items", n), ("queries", len(q)), ("bits", bits),
                                        ("k", k), ("threads", threads))):
        df.insert(at, name, value)
    return df


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m phdlib.bench.usearch", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=1_000_000, help="item codes (default 1,000,000)")
    p.add_argument("--queries", type=int, default=1000, help="user codes (default 1000)")
    p.add_argument("--bits", type=int, default=64, help="code width (default 64)")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--connectivity", type=int, default=16)
    p.add_argument("--expansion-add", type=int, default=128)
    p.add_argument("--expansion-search", type=int, nargs="+", default=list(EXPANSION_SEARCH))
    p.add_argument("--build-metric", nargs="+", default=["hamming", "phd"],
                   choices=["hamming", "phd"])
    p.add_argument("--exact-max", type=int, default=100_000,
                   help="run the exhaustive usearch scan only up to this many items")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    a = p.parse_args(argv)
    for name in ("items", "queries", "bits", "k", "repeats", "threads"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be >= 1, got {getattr(a, name)}")
    log = (lambda *m: print(*m, file=sys.stderr)) if a.json else print
    users, items = synthetic_codes(a.items, a.queries, a.bits, seed=a.seed)
    df = run(users, items, a.bits, k=a.k, repeats=a.repeats, connectivity=a.connectivity,
             expansion_add=a.expansion_add, expansion_search=a.expansion_search,
             build_metrics=a.build_metric, exact_max=a.exact_max, threads=a.threads,
             seed=a.seed, log=log)
    if a.json:
        import usearch

        info = machine_info()
        info["usearch"] = usearch.__version__
        out = {"format": "phd-usearch", "version": 1, "machine": info,
               "args": vars(a), "rows": json.loads(df.to_json(orient="records"))}
        print(json.dumps(out, indent=1))
    else:
        print(df.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
