"""Recall against queries per second for serving PHD codes (``phd bench --serving``).

One run measures, on one set of item codes and query (user) codes:

- ``binaryindex``: :class:`phdlib.serving.search.BinaryIndex` with ``metric="phd"``,
  the exact scan on the plain codes (the reference for recall);
- ``faiss-flat``: faiss ``IndexBinaryFlat`` on the padded codes (exact);
- ``faiss-hnsw``: ``IndexBinaryHNSW`` (``M`` links), one point per ``efSearch``;
- ``faiss-ivf``: ``IndexBinaryIVF`` (``nlist`` lists), one point per ``nprobe``;
- ``phd-ivf``: :class:`phdlib.serving.ivf.IVFIndex`, an inverted file on the native
  codes (no padding; lists ranked by PHD to their centres), the same ``nlist``,
  one point per ``nprobe``;
- ``usearch``: :class:`phdlib.serving.usearch_engine.USearchIndex`, usearch's HNSW on
  the native codes through a compiled PHD metric (graph linked by Hamming), one point
  per ``expansion_search``; only up to ``usearch_max`` items (its graph build is
  the slowest of all: minutes a million codes on one thread);
- ``milvus-lite``: Milvus Lite ``BIN_FLAT``/``HAMMING`` on the padded codes
  (exact; only up to ``milvus_max`` items, as it ingests rows through Python).

Recall@k is tie-aware: the share of the ``k`` returned items whose PHD is at
most the true ``k``-th smallest PHD of that user (an item tied with the
``k``-th is as good an answer as the one the exact scan happened to keep).
QPS is queries per second over the whole query batch, the best of
``repeats`` runs after a warm-up run, all on this machine's threads; memory is the size of the
serialised faiss index (codes, graph, lists) or of the codes array; build is
the wall time of training and adding.

Codes: ``synthetic_codes`` draws clustered user and item codes, seeded; :func:`run` also takes trained codes (``phd export``'s arrays).
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..serving import engines
from ..codes import padding
from ..codes.packed import pack
from ..names import SERVING_ENGINES
from ..serving.ivf import IVFIndex
from ..serving.search import BinaryIndex
from ..serving.usearch_engine import USearchIndex

#: The engines measured, in order (named in :data:`phdlib.names.SERVING_ENGINES` for ``phd --help``).
ENGINES = SERVING_ENGINES
HNSW_EF = (16, 32, 64, 128, 256)
IVF_NPROBE = (1, 2, 4, 8, 16, 32, 64, 128)
#: faiss trains binary IVF centroids by k-means on 39 points a list (cost ~ nlist^2):
#: the default nlist, 4 sqrt(n), is capped here so that 10M codes train in minutes.
IVF_MAX_NLIST = 4096


def synthetic_codes(n_items: int, n_users: int, bits: int = 64, seed: int = 0,
                    centers: int = 1024, flip: float = 0.15, chunk: int = 1 << 20):
    """(user_codes, item_codes): uint64 ``(n, ceil(bits/64))`` each, seeded.

    Codes cluster as trained ones do: ``centers`` random centre codes; every
    user and item copies one centre (items: Zipf-like popularity of centres)
    and flips each bit with probability ``flip``. Uniform random codes would
    have no neighbourhoods for an index to find; codes of one density would
    make PHD's top-k the densest items for every user.
    """
    rng = np.random.default_rng(seed)
    c = rng.random((centers, bits)) < 0.5
    w = 1.0 / np.arange(1, centers + 1) ** 0.5
    w /= w.sum()

    def draw(n, probs):
        out = []
        for a in range(0, n, chunk):
            m = min(chunk, n - a)
            pick = rng.choice(centers, size=m, p=probs)
            out.append(pack(c[pick] ^ (rng.random((m, bits), dtype=np.float32) < flip)).words)
        return np.concatenate(out)

    return draw(n_users, None), draw(n_items, w)


def recall_at_k(found_d: np.ndarray, true_d: np.ndarray, k: int) -> float:
    """Tie-aware recall@k: share of returned items with distance <= the true k-th (see module)."""
    kth = true_d[:, k - 1][:, None]
    return float(((found_d[:, :k] <= kth) & (found_d[:, :k] >= 0)).sum() / (k * len(true_d)))


def _timed(fn, repeats: int):
    """(best seconds of ``repeats`` calls after one untimed warm-up call, last result)."""
    best, out = np.inf, fn()
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _built(index, item_codes):
    """(index with the items added, seconds it took: training included)."""
    t0 = time.perf_counter()
    index.add(item_codes)
    return index, time.perf_counter() - t0


def _row(engine, param, value, q, k, secs, dist, true_d, memory, build):
    return {"engine": engine, "param": param, "value": value, "recall": recall_at_k(dist, true_d, k),
            "qps": len(q) / secs, "memory_mb": memory / 2**20, "build_s": build}


def _sweep(engine, make, param, values, set_value, item_codes, q, k, true_d, repeats) -> list:
    """One row per value of an approximate index's search setting (one build)."""
    index, build = _built(make(), item_codes)
    mem, rows = index.memory_bytes(), []
    for v in values:
        set_value(index, int(v))
        secs, (d, _) = _timed(lambda: index.search(q, k), repeats)
        rows.append(_row(engine, param, v, q, k, secs, d, true_d, mem, build))
    return rows


def run(user_codes: np.ndarray, item_codes: np.ndarray, bits: int, k: int = 10,
        repeats: int = 3, hnsw_m: int = 32, hnsw_ef=HNSW_EF, nlist: int | None = None,
        ivf_nprobe=IVF_NPROBE, milvus_max: int = 200_000, milvus_uri: str | None = None,
        usearch_max: int = 1_000_000, usearch_ef=HNSW_EF, engines_=ENGINES,
        log=lambda *a: None) -> pd.DataFrame:
    """One row per (engine, parameter value): recall@k, qps, memory_mb, build_s (module doc).

    milvus_max, usearch_max: the most items those engines are measured at (None: any)."""
    q = np.ascontiguousarray(user_codes)
    n = len(item_codes)
    rows = []
    ref, build = _built(BinaryIndex(bits, "phd"), item_codes)
    secs, (true_d, _) = _timed(lambda: ref.search(q, k), repeats)
    if "binaryindex" in engines_:
        rows.append(_row("binaryindex", "", np.nan, q, k, secs, true_d, true_d,
                         ref.stored.nbytes, build))
        log(f"binaryindex: {len(q) / secs:,.0f} qps")
    if "faiss-flat" in engines_:
        fl, build = _built(engines.FaissIndex(bits, "phd", "flat", exact_ties=False), item_codes)
        secs, (d, _) = _timed(lambda: fl.search(q, k), repeats)
        rows.append(_row("faiss-flat", "", np.nan, q, k, secs, d, true_d, fl.memory_bytes(), build))
        log(f"faiss-flat: {len(q) / secs:,.0f} qps")
    lists = nlist or int(min(max(16, 4 * np.sqrt(n)), n // 39 or 1, IVF_MAX_NLIST))
    sweeps = [  # engine, make the index, the setting's name, its values, set it on the index
        ("faiss-hnsw", lambda: engines.FaissIndex(bits, "phd", "hnsw", M=hnsw_m), "efSearch",
         hnsw_ef, lambda ix, v: setattr(ix.index.hnsw, "efSearch", v)),
        ("faiss-ivf", lambda: engines.FaissIndex(bits, "phd", "ivf", nlist=lists), "nprobe",
         [p for p in ivf_nprobe if p <= lists], lambda ix, v: setattr(ix.index, "nprobe", v)),
        ("phd-ivf", lambda: IVFIndex(bits, "phd", nlist=lists, seed=0), "nprobe",
         [p for p in ivf_nprobe if p <= lists], lambda ix, v: setattr(ix, "nprobe", v)),
        ("usearch", lambda: USearchIndex(bits, "phd", seed=0), "expansion_search", usearch_ef,
         lambda ix, v: setattr(ix, "expansion_search", v)),
    ]
    for engine, make, param, values, set_value in sweeps:
        if engine not in engines_ or (engine == "usearch" and usearch_max is not None
                                      and n > usearch_max):
            continue
        rows += _sweep(engine, make, param, values, set_value, item_codes, q, k, true_d,
                       repeats)
        log(f"{engine}: built in {rows[-1]['build_s']:.1f} s"
            + (f", nlist {lists}" if "ivf" in engine else ""))
    if "milvus-lite" in engines_ and (milvus_max is None or n <= milvus_max):
        import importlib.util
        import tempfile
        import warnings

        if importlib.util.find_spec("pymilvus") is None:
            raise ValueError("Milvus Lite is not installed (pip install 'phdlib[serving]', or "
                             "leave it out with engines_ / more than milvus_max items)")

        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mv, build = _built(engines.MilvusIndex(bits, milvus_uri or f"{tmp}/bench.db",
                                                   metric="phd", exact_ties=False), item_codes)
            secs, (d, _) = _timed(lambda: mv.search(q, k), repeats)
            # memory: the padded codes it holds (Milvus' own overhead is not measured)
            rows.append(_row("milvus-lite", "", np.nan, q, k, secs, d, true_d,
                             n * padding.padded_bytes(bits), build))
            mv.client.close()
        log(f"milvus-lite: {len(q) / secs:,.0f} qps")
    df = pd.DataFrame(rows)
    df.insert(0, "items", n)
    df.insert(1, "queries", len(q))
    df.insert(2, "bits", bits)
    df.insert(3, "k", k)
    return df
