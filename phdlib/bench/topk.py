"""The top-k stages: one query (ours, Hamming and PHD, against faiss) and many at once."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..kernels import bandwidth as KB
from ..kernels import search as K
from ..serving.search import BinaryIndex, n_chunks
from .config import BenchConfig
from .data import CODE_BYTES, Inputs
from .machine import read_bandwidth, set_threads
from .result import Measurements
from .timing import interleaved, paired_ratio


@dataclass
class TopkIndexes:
    """The first ``n_topk`` codes behind our index (Hamming, PHD) and faiss's (or None)."""

    sub: np.ndarray
    hamming: BinaryIndex
    phd: BinaryIndex
    faiss: object = None


def topk_indexes(cfg: BenchConfig, inp: Inputs) -> TopkIndexes:
    """Indexes over the first ``cfg.n_topk`` codes; ours are views, not copies."""
    sub = inp.codes[:cfg.n_topk]
    idx_h = BinaryIndex(64, "hamming")
    idx_h.stored = sub  # a view: add() would copy
    idx_p = BinaryIndex(64, "phd")
    idx_p.stored = sub  # the NOT codes of the items ~sub
    fidx = None
    if inp.faiss is not None:
        fidx = inp.faiss.IndexBinaryFlat(64)
        fidx.add(np.ascontiguousarray(sub).view(np.uint8).reshape(-1, 8))
    return TopkIndexes(sub, idx_h, idx_p, fidx)


def _topk_fns(cfg: BenchConfig, q: np.ndarray, idx: TopkIndexes) -> tuple[dict, dict]:
    """The one-query methods (read probe, plain scan, top-k of each k) and each one's k."""
    sub, idx_h, idx_p, fidx = idx.sub, idx.hamming, idx.phd, idx.faiss
    qq = q[None, :]
    qq8 = qq.view(np.uint8).reshape(1, 8)
    nc = n_chunks(cfg.n_topk)
    sflat = sub.reshape(-1)
    fns = {"read": lambda: int(KB.read_sum(sflat, nc)),
           "scan": lambda: int(K.scan_sum(K.OP_XOR, q, sub, nc))}
    kof = {"read": -1, "scan": 0}
    for k in cfg.ks:
        fns[f"topk{k}"] = (lambda k=k: idx_h.search(qq, k))
        fns[f"topk{k}_phd"] = (lambda k=k: idx_p.search(qq, k))
        kof[f"topk{k}"] = kof[f"topk{k}_phd"] = k
        if fidx is not None:
            fns[f"faiss_topk{k}"] = (lambda k=k: fidx.search(qq8, k))
            kof[f"faiss_topk{k}"] = k
    return fns, kof


def topk_stage(cfg: BenchConfig, inp: Inputs, idx: TopkIndexes, acc: Measurements, t: int,
               log=print, bar=None) -> list[dict]:
    """Top-k of one query at ``n_topk`` codes, ``t`` threads, against the plain scan; rows."""
    set_threads(t)
    fns, kof = _topk_fns(cfg, inp.q, idx)
    n_topk = cfg.n_topk
    log(f"bench: top-k at N={n_topk:,}, {t} thread(s)")
    times, vals = interleaved(fns, cfg.repeats, seed=cfg.seed + 100 + t, progress=bar,
                              min_seconds=cfg.topk_min_seconds)
    bw_topk = read_bandwidth(times, n_topk, CODE_BYTES, names=("read",))
    bwmin_topk = read_bandwidth(times, n_topk, CODE_BYTES, stat=np.min, names=("read",))
    acc.bandwidth_topk[t] = bw_topk
    rows = []
    for nm, secs in times.items():
        acc.record(nm if nm.startswith(("topk", "faiss")) else f"topk_{nm}", n_topk, CODE_BYTES,
                   t, secs, bw_topk, bwmin_topk)
        if nm == "read":
            continue
        rows.append({"method": nm, "k": kof[nm], "threads": t, "N": n_topk,
                     "seconds": float(np.median(secs))})
    for k in cfg.ks:
        acc.ratios[f"topk{k}/scan@{t}"] = paired_ratio(times[f"topk{k}"], times["scan"])
        if idx.faiss is not None:
            acc.ratios[f"faiss_topk{k}/topk{k}@{t}"] = paired_ratio(times[f"faiss_topk{k}"],
                                                                     times[f"topk{k}"])
            fd, fi = vals[f"faiss_topk{k}"]
            od, oi = vals[f"topk{k}"]
            acc.checks[f"faiss_distances_equal_k{k}@{t}"] = bool(np.array_equal(fd, od))
    return rows


def batch_k(cfg: BenchConfig) -> int:
    """The k of the many-query comparison: 10 when measured, else the first k."""
    return 10 if 10 in cfg.ks else cfg.ks[0]


def batch_stage(cfg: BenchConfig, Qb: np.ndarray, idx: TopkIndexes, acc: Measurements, t: int,
                log=print) -> list[dict]:
    """Many queries ``Qb`` at once: the tiled top-k against one query at a time and faiss."""
    set_threads(t)
    nq, kb = Qb.shape[0], batch_k(cfg)
    Qb8 = Qb.view(np.uint8).reshape(-1, 8)
    ncb = n_chunks(cfg.n_topk, 2)
    odb = np.empty((nq, kb), dtype=np.int32)
    oib = np.empty((nq, kb), dtype=np.int64)
    sub, idx_h, fidx = idx.sub, idx.hamming, idx.faiss

    def one_by_one():
        for a in range(nq):
            K.topk_fused(K.OP_XOR, Qb[a], sub, 64, kb, odb[a], oib[a], ncb)
        return odb.copy(), oib.copy()

    fns = {"batch_tiled": lambda: idx_h.search(Qb, kb), "batch_one_by_one": one_by_one}
    if fidx is not None:
        fns["faiss_batch"] = lambda: fidx.search(Qb8, kb)
    log(f"bench: {nq} queries at once, top-{kb}, {t} thread(s)")
    times, vals = interleaved(fns, cfg.batch_repeats, seed=cfg.seed + 200 + t)
    if not (np.array_equal(vals["batch_tiled"][0], vals["batch_one_by_one"][0])
            and np.array_equal(vals["batch_tiled"][1], vals["batch_one_by_one"][1])):
        raise RuntimeError("tiled and one-query top-k disagree")
    if fidx is not None:
        acc.checks[f"faiss_batch_distances_equal@{t}"] = bool(
            np.array_equal(vals["faiss_batch"][0], vals["batch_tiled"][0]))
    rows = [{"method": nm, "k": kb, "threads": t, "N": cfg.n_topk, "queries": nq,
             "seconds": float(np.median(secs))} for nm, secs in times.items()]
    acc.ratios[f"batch_one_by_one/batch_tiled@{t}"] = paired_ratio(
        times["batch_one_by_one"], times["batch_tiled"])
    if fidx is not None:
        acc.ratios[f"faiss_batch/batch_tiled@{t}"] = paired_ratio(
            times["faiss_batch"], times["batch_tiled"])
    return rows


def topk_frame(rows: list[dict]) -> pd.DataFrame:
    """The top-k rows as one table; ``queries`` is 1 for the one-query rows."""
    topk = pd.DataFrame(rows)
    if "queries" not in topk:
        topk["queries"] = 1
    topk["queries"] = topk["queries"].fillna(1).astype(int)
    return topk
