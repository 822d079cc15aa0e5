"""Recall@k against queries per second of :class:`phdlib.serving.ivf.IVFIndex` by ``nprobe``.

``python -m phdlib.bench.ivf --items 1000000 --json`` draws seeded clustered
codes (:func:`phdlib.bench.serving.synthetic_codes`: planted centres with bit
flips), builds the exact :class:`~phdlib.serving.search.BinaryIndex` and an
``IVFIndex`` on the same items, and for each list-ranking distance
(``probe``: PHD or Hamming from the query to a list centre) and each ``nprobe``
reports:

- ``recall``: tie-aware recall@k against BinaryIndex (share of the ``k``
  returned items whose distance is at most the exact ``k``-th distance; see
  :func:`phdlib.bench.serving.recall_at_k`);
- ``id_recall``: share of BinaryIndex's ``k`` ids that the IVF also returned;
- ``qps``: queries per second over the whole batch, best of ``repeats`` runs
  after a warm-up run, on ``threads`` Numba threads (default one);
- ``build_s``: wall seconds of training and adding (BinaryIndex: adding);
- ``memory_mb``: the index's arrays, MiB.

The first row (``engine="binaryindex"``) is the exact scan in the same run.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time

import numba
import numpy as np

from ..serving.ivf import IVFIndex
from ..serving.search import BinaryIndex
from .serving import _timed, recall_at_k, synthetic_codes

NPROBE = (1, 2, 4, 8, 16, 32, 64, 128)
PROBES = ("phd", "hamming")


def cpu_model() -> str:
    """The CPU's model name (``lscpu``), or ``platform.processor()`` without it."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def id_recall(found_i: np.ndarray, true_i: np.ndarray) -> float:
    """Share of the exact ids (int64 ``(q, k)``) found among ``found_i`` (int64 ``(q, k)``)."""
    hit = sum(np.isin(t[t >= 0], f).sum() for f, t in zip(found_i, true_i))
    return float(hit / max(1, (true_i >= 0).sum()))


def run(items: int = 1_000_000, queries: int = 1000, bits: int = 64, k: int = 10,
        nlist: int | None = None, nprobe=NPROBE, probes=PROBES, threads: int = 1,
        repeats: int = 3, seed: int = 0, metric: str = "phd", log=lambda *a: None) -> dict:
    """Measure (see module): ``{"setup": {...}, "rows": [{...}, ...]}``."""
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        t0 = time.perf_counter()
        users, item_codes = synthetic_codes(items, queries, bits, seed=seed)
        log(f"codes: {time.perf_counter() - t0:.1f} s")
        rows = []
        t0 = time.perf_counter()
        ref = BinaryIndex(bits, metric)
        ref.add(item_codes)
        build = time.perf_counter() - t0
        secs, (true_d, true_i) = _timed(lambda: ref.search(users, k), repeats)
        rows.append({"engine": "binaryindex", "probe": "", "nprobe": None, "recall": 1.0,
                     "id_recall": 1.0, "qps": queries / secs, "build_s": build,
                     "memory_mb": ref.stored.nbytes / 2**20})
        log(f"binaryindex: {queries / secs:,.0f} qps")
        for probe in probes:
            t0 = time.perf_counter()
            iv = IVFIndex(bits, metric, nlist=nlist, seed=seed, probe=probe)
            iv.add(item_codes)
            build = time.perf_counter() - t0
            log(f"ivf probe={probe}: nlist {iv.nlist}, built in {build:.1f} s")
            for p in nprobe:
                if p > iv.nlist:
                    break
                iv.nprobe = int(p)
                secs, (d, i) = _timed(lambda: iv.search(users, k), repeats)
                rows.append({"engine": "ivf", "probe": probe, "nprobe": int(p),
                             "recall": recall_at_k(d, true_d, k), "id_recall": id_recall(i, true_i),
                             "qps": queries / secs, "build_s": build,
                             "memory_mb": iv.memory_bytes() / 2**20})
                log(f"  nprobe {p}: recall {rows[-1]['recall']:.3f}, {rows[-1]['qps']:,.0f} qps")
        setup = {"items": items, "queries": queries, "bits": bits, "k": k, "metric": metric,
                 "nlist": iv.nlist if probes else nlist, "threads": threads, "seed": seed,
                 "repeats": repeats, "cpu": cpu_model()}
        return {"setup": setup, "rows": rows}
    finally:
        numba.set_num_threads(before)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m phdlib.bench.ivf", description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--bits", type=int, default=64)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--nlist", type=int, default=None)
    ap.add_argument("--nprobe", type=int, nargs="+", default=list(NPROBE))
    ap.add_argument("--probe", choices=PROBES, nargs="+", default=list(PROBES))
    ap.add_argument("--metric", choices=("phd", "hamming"), default="phd")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    a = ap.parse_args(argv)
    out = run(a.items, a.queries, a.bits, a.k, a.nlist, a.nprobe, a.probe, a.threads,
              a.repeats, a.seed, a.metric, log=(lambda *x: None) if a.json else print)
    if a.json:
        print(json.dumps(out, indent=1))
    else:
        for r in out["rows"]:
            print(r)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
