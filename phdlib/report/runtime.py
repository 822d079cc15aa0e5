"""Tables and findings of the chapter "Runtime", from one :class:`phdlib.bench.BenchResult`.

The numeric tables of :mod:`phdlib.bench` (``table2``, ``BenchResult.table``,
``topk_table``, ``batch_table``, ``acceptance``) hold raw seconds and method
keys. The functions here turn them into tables for reading: method labels,
times in milliseconds (never in scientific notation), throughput in millions
of items per second, ratios as ``63.7×``, criteria met as yes/no. Findings
are lists of plain sentences for :func:`phdlib.report.page.findings`.

- :func:`ratio`, :func:`ms`: the two number formats;
- :func:`table2`, :func:`throughput`, :func:`topk`, :func:`batch`,
  :func:`acceptance`: the chapter's tables (frames of numbers and strings);
- :func:`findings`, :func:`summary`: the computed statements;
- :func:`same_answers`: every search kernel against the NumPy reference;
- :func:`plot_sweep`: time against N;
- :func:`details`: the machine and run settings for the computed block.
"""
from __future__ import annotations

import re

import numba
import numpy as np
import pandas as pd

from .. import bench
from .. import codes as C
from ..serving import search as S
from ..bench import ACCEPT, CODE_BYTES, batch_table, topk_table
from ..paper import TABLE2

__all__ = ["LABELS", "ratio", "ms", "table2", "throughput", "topk", "batch", "acceptance",
           "findings", "summary", "same_answers", "plot_sweep", "details"]

#: Display label of each benchmark method key (:mod:`phdlib.bench`).
LABELS = {"read": "read probe (Numba sum)", "read_numpy": "read probe (NumPy sum)",
          "hamming": "Hamming (Numba)", "phd": "PHD, NOT codes (Numba)",
          "phd_xor_and": "PHD, XOR-AND form (Numba)", "hamming_c": "Hamming (C -O3)",
          "phd_c": "PHD (C -O3)", "hamming_c_overwrite": "Hamming (C, result overwritten)",
          "hamming_numpy": "Hamming (np.bitwise_count)", "ip_numba": "inner product (Numba)",
          "ip_blas": "inner product (NumPy BLAS)", "topk_read": "read probe at top-k size",
          "topk_scan": "plain scan at top-k size"}


def _label(key: str) -> str:
    if key in LABELS:
        return LABELS[key]
    for pre, lab in (("faiss_topk", "faiss top-{}"), ("topk", "ours top-{}")):
        if key.startswith(pre):
            k = key[len(pre):]
            phd = k.endswith("_phd")
            return lab.format(k[:-4] if phd else k) + (", PHD" if phd else "")
    return key


def ratio(x) -> str:
    """A ratio as ``1.002×`` (below 10) or ``63.7×``; ``n/a`` for a missing value."""
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{x:,.1f}×" if abs(x) >= 10 else f"{x:.3f}×"


def ms(seconds) -> str:
    """A duration in milliseconds, without scientific notation: ``74.01``, ``0.0203``,
    ``< 0.0001`` (a loop the compiler removed); ``n/a`` for a missing value."""
    if seconds is None or not np.isfinite(seconds):
        return "n/a"
    v = float(seconds) * 1e3
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 1:
        return f"{v:.2f}"
    if v >= 0.0001:
        return f"{v:.4f}"
    return "< 0.0001"


def table2(res, threads: int = 1) -> pd.DataFrame:
    """Table 2 beside the paper's, for reading.

    One row per method (label); columns ``paper (s)`` (seconds for 100M
    distances; NaN where the paper has no such row), ``paper: time /
    Hamming``, ``ours (s per 100M)`` (median at ``threads``, scaled to 100M
    by time per item), ``ours: time / Hamming`` (paired per round where
    measured so) and ``N measured`` (items of our measurement).
    """

    t = bench.table2(res, threads=threads)

    ham_paper = TABLE2["hamming"]["seconds"]
    rows = []
    for label, r in t.iterrows():
        ps = r["paper: runtime (s)"]
        ps = float(ps) if ps is not None and np.isfinite(ps) else np.nan
        ours = r["ours: overhead"]
        ours_ratio = 1.0 if ours == "-" else 1 + float(ours.rstrip("%")) / 100
        rows.append({"method": label, "paper (s)": ps,
                     "paper: time / Hamming": ratio(ps / ham_paper) if np.isfinite(ps) else "n/a",
                     "ours (s per 100M)": float(r["ours: runtime (s) per 100M"]),
                     "ours: time / Hamming": ratio(ours_ratio),
                     "N measured": int(r["ours: N measured"])})
    return pd.DataFrame(rows).set_index("method")


def throughput(res, threads: int = 1) -> pd.DataFrame:
    """Throughput of every scan at ``threads``, for reading.

    One row per method (label); columns ``N`` (items scanned), ``ms`` (median
    milliseconds of one scan), ``M items/s`` (millions), ``GB/s``, ``% of
    bandwidth`` (of the read probe measured in the same rounds), ``fastest
    ms`` and ``% fastest`` (fastest round of the method and of the probe).
    Only the scans: the top-k rows are in :func:`topk`.
    """
    t = res.table(threads)
    t = t[~t.index.str.startswith(("topk", "faiss_topk"))]
    out = pd.DataFrame({"N": t["N"].astype(np.int64),
                        "ms": t["seconds"].map(ms),
                        "M items/s": (t["items/s"] / 1e6).round(1),
                        "GB/s": t["GB/s"].round(1),
                        "% of bandwidth": t["% of read bandwidth"].round(0),
                        "fastest ms": t["seconds (min)"].map(ms),
                        "% fastest": t["% of read bandwidth (min)"].round(0)})
    out.index = [_label(k) for k in out.index]
    out.index.name = "method"
    return out


def topk(res) -> pd.DataFrame:
    """Top-k of one query: milliseconds of the plain scan, ours (Hamming, PHD), faiss
    (``IndexBinaryFlat``), and the ratios faiss / ours and ours / scan. Index ``threads, k``."""

    t = topk_table(res)
    out = pd.DataFrame(index=t.index)
    for c, new in (("plain scan (s)", "plain scan"), ("ours, Hamming (s)", "ours, Hamming"),
                   ("ours, PHD (s)", "ours, PHD"), ("faiss IndexBinaryFlat (s)", "faiss")):
        out[new] = t[c].map(ms)
    out["faiss / ours"] = t["faiss / ours"].map(ratio)
    out["ours / scan"] = t["ours / scan"].map(ratio)
    return out


def batch(res) -> pd.DataFrame:
    """Many queries at once: milliseconds of ours tiled, ours one query at a time, faiss,
    and the ratios. Index ``threads, queries, k``; empty when the run skipped it."""

    t = batch_table(res)
    if t.empty:
        return t
    out = pd.DataFrame(index=t.index)
    for c, new in (("ours, tiled (s)", "ours, tiled"),
                   ("ours, one query at a time (s)", "ours, one at a time"),
                   ("faiss IndexBinaryFlat (s)", "faiss")):
        if c in t:
            out[new] = t[c].map(ms)
    for c in ("faiss / tiled", "one at a time / tiled"):
        if c in t:
            out[c] = t[c].map(ratio)
    out.columns.name = None
    return out


def acceptance(res) -> pd.DataFrame:
    """The benchmark's targets on this run (:func:`phdlib.bench.acceptance`), shortened for
    reading: index ``target`` (e.g. ``"PHD / Hamming, 1 thread(s)"``); columns ``measured``
    (ratios as ``1.003×``, percentages as ``91%``), ``target`` (``0.98 to 1.02``, ``≥ 85%``)
    and ``met`` (bool)."""


    t = bench.acceptance(res)
    # a percentage is cut, not rounded, so 84.96% never reads as a met target of 85%
    meas = [f"{np.floor(v * 10) / 10:.1f}%" if "bandwidth" in c else ratio(v)
            for c, v in t["measured"].items()]
    tgt = []
    for c, s in t["target"].items():
        m = re.match(r"\[([\d.]+), ([\d.]+)\]", s)
        s = f"{m.group(1)} to {m.group(2)}{s[m.end():]}" if m else s
        s = s.replace(">=", "≥").replace("<=", "≤")
        tgt.append(s + "%" if "bandwidth" in c else s)
    names = []
    for c in t.index:
        c = re.sub(r", N=[\d,]+", "", c)
        c = re.sub(r", median of \d+ adjacent pairs", "", c)
        c = c.replace("IndexBinaryFlat ", "").replace(", one query", "").replace(" time", "")
        c = c.replace("read bandwidth", "bandwidth").replace("plain scan", "scan")
        c = re.sub(r"^(hamming|phd) scan", lambda m: {"hamming": "Hamming", "phd": "PHD"}[
            m.group(1)] + " scan", c)
        names.append(c)
    return pd.DataFrame({"measured": meas, "target": tgt,
                         "met": t["met"].astype(bool).to_numpy()},
                        index=pd.Index(names, name="target"))


def findings(res) -> list[str]:
    """The chapter's statements on Table 2 (Markdown lines): PHD / Hamming against the
    paper's, the inner product per item against the paper's, what the compiler did with the
    released loop, and the PHD / Hamming ratio at each thread count against its band."""

    c = res.config
    out = []
    r1 = res.ratios["phd/hamming@1"]
    p = TABLE2
    paper_r = p["phd"]["seconds"] / p["hamming"]["seconds"]
    out.append(f"PHD / Hamming time at one thread: {ratio(r1['median'])} here (median of "
               f"{r1['rounds']} back-to-back pairs, quartiles {ratio(r1['q25'])} to "
               f"{ratio(r1['q75'])}); the paper: {ratio(paper_r)}.")
    p_ip = p["inner_product"]["seconds"] / p["hamming"]["seconds"]
    ips = [f"{ratio(res.ratios[f'{nm}/hamming per code@1']['median'])} "
           f"({LABELS[nm].split('(')[1].rstrip(')')})"
           for nm in ("ip_numba", "ip_blas") if f"{nm}/hamming per code@1" in res.ratios]
    if ips:
        out.append(f"Inner product / Hamming per item at one thread: {' and '.join(ips)} here; "
                   f"the paper: {ratio(p_ip)}.")
    if "hamming_c_overwrite" in res.methods and "hamming_c" in res.methods:
        ov = res.methods["hamming_c_overwrite"]["threads"][1]["seconds"]
        hc = res.methods["hamming_c"]["threads"][1]["seconds"]
        kept = ov >= 0.1 * hc
        share = f"{100 * ov / hc:.0f}% of it" if kept else f"{hc / ov:,.0f} times less"
        out.append(f"The released C loop, its result overwritten, takes {ms(ov)} ms for "
                   f"{c['n']:,} codes; the same loop with its result summed takes {ms(hc)} ms "
                   f"({share}): "
                   + ("this compiler kept the overwritten loop." if kept else
                      "this compiler deleted the overwritten loop, so its time does not "
                      "measure the distances."))
    lo, hi = ACCEPT["phd_ratio"]
    for t in c["threads"]:
        r = res.ratios.get(f"phd/hamming@{t}")
        if not r:
            continue
        fastest = res.ratios.get(f"phd/hamming fastest pair samples@{t}", {}).get("median")
        xa = res.ratios.get(f"phd_xor_and/hamming@{t}", {}).get("median")
        inside = lo <= r["median"] <= hi
        s = (f"{t} thread{'s' if t > 1 else ''}: PHD / Hamming = {ratio(r['median'])}, "
             f"{'inside' if inside else 'outside'} the band {lo} to {hi}")
        if fastest is not None:
            s += f" (fastest samples: {ratio(fastest)}"
            s += f"; XOR-AND form / Hamming: {ratio(xa)})" if xa is not None else ")"
        out.append(s + ".")
    return out


def summary(res) -> list[str]:
    """The page's conclusion in a few sentences (Markdown lines), from the same run."""


    out = []
    r = res.ratios["phd/hamming@1"]
    lo, hi = ACCEPT["phd_ratio"]
    paper_r = ratio(TABLE2['phd']['seconds'] / TABLE2['hamming']['seconds'])
    if lo <= r["median"] <= hi:
        out.append(f"AGREES (Table 2): PHD costs what Hamming costs; PHD / Hamming at one "
                   f"thread is {ratio(r['median'])} here, within {lo} to {hi} (the paper: "
                   f"{paper_r}).")
    elif r["median"] < lo:
        out.append(f"AGREES (Table 2): PHD costs no more than Hamming; PHD / Hamming at one "
                   f"thread is {ratio(r['median'])} here, below {lo}: PHD was even slightly "
                   f"faster in this run (the paper: {paper_r}).")
    else:
        out.append(f"DISAGREES (Table 2): PHD / Hamming at one thread is {ratio(r['median'])} "
                   f"here, above {hi}: PHD was slower in this run (the paper: {paper_r}); "
                   "on a shared machine a second run may land inside the band.")
    ipr = res.ratios.get("ip_numba/hamming per code@1")
    if ipr:
        p_ip = TABLE2["inner_product"]["seconds"] / TABLE2["hamming"]["seconds"]
        far = ipr["median"] >= 10
        out.append(f"{'AGREES' if far else 'DISAGREES'} (Table 2, inner product): An inner "
                   f"product of 64-d float vectors costs {ratio(ipr['median'])} the Hamming "
                   f"distance per item here (the paper: {ratio(p_ip)}); the factor depends on "
                   "the machine and the implementation"
                   + (", the order of magnitude does not." if far else "."))
    h1 = res.methods["hamming"]["threads"][1]
    out.append(f"The Hamming scan streams codes at {h1['gb_per_s']:.1f} GB/s, "
               f"{h1['pct_bandwidth']:.0f}% of the read bandwidth measured beside it (median "
               f"rounds; {h1['pct_bandwidth_min']:.0f}% in the fastest rounds).")
    tk = res.ratios.get("faiss_topk10/topk10@1")
    if tk:
        out.append(f"One top-10 query over {res.config['n_topk']:,} codes: faiss "
                   f"IndexBinaryFlat takes {ratio(tk['median'])} the time of BinaryIndex.")
    acc = acceptance(res)
    missed = acc[~acc["met"]]
    if len(missed):
        out.append(f"{len(missed)} of {len(acc)} targets were missed in this run: "
                   + "; ".join(f"{c} ({m}, target {t})" for c, (m, t) in
                               missed[["measured", "target"]].iterrows()) + ".")
    else:
        out.append(f"All {len(acc)} targets were met in this run.")
    return out


def same_answers(seed: int = 0, n: int = 100_000, queries: int = 32,
                 ks=(1, 10, 100)) -> pd.DataFrame:
    """Every search path of :class:`phdlib.serving.search.BinaryIndex` against a NumPy reference.

    ``n`` 64-bit item codes with biased bits (80% ones: many tied distances)
    and ``queries`` random queries, seeded by ``seed``; for Hamming and PHD,
    one thread and all of Numba's, each k of ``ks``: whether the fused
    one-query search and the tiled many-query search return exactly the
    reference's distances and ids (ties broken by the smaller id). Returns
    index ``metric, threads, k``; columns ``one query``, ``{queries}
    queries`` (bool). Numba's thread count is restored afterwards.
    """


    rng = np.random.default_rng(seed)
    items = C.pack(rng.random((n, 64)) < 0.8)
    qs = C.pack(rng.random((queries, 64)) < 0.5)
    rows = []
    before = numba.get_num_threads()
    try:
        for metric in S.METRICS:  # every distance BinaryIndex ranks by, Hamming first
            idx = S.BinaryIndex(64, metric)
            idx.add(items)
            for t in sorted({1, numba.config.NUMBA_NUM_THREADS}):
                numba.set_num_threads(t)
                for k in ks:
                    ref_d, ref_i = S.reference_search(qs.rows(), idx.stored, k, metric)
                    d1, i1 = idx.search(qs[:1], k)
                    d, i = idx.search(qs, k)
                    rows.append({"metric": metric, "threads": t, "k": k,
                                 "one query": bool((d1 == ref_d[:1]).all()
                                                   and (i1 == ref_i[:1]).all()),
                                 f"{queries} queries": bool((d == ref_d).all()
                                                            and (i == ref_i).all())})
    finally:
        numba.set_num_threads(before)
    return pd.DataFrame(rows).set_index(["metric", "threads", "k"])


def plot_sweep(res):
    """Seconds of one query against N (log-log), one thread unless marked, with the
    memory bound (8 bytes a code at the one-thread read bandwidth). Returns the figure."""
    import matplotlib.pyplot as plt


    sw = res.sweep
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for nm in ("hamming", "phd", "phd_xor_and", "hamming_c", "phd_c", "hamming_numpy",
               "ip_numba", "ip_blas"):
        d = sw[(sw.method == nm) & (sw.threads == 1)].sort_values("N")
        if len(d):
            ax.plot(d.N, d.seconds * 1e3, marker="o", label=LABELS[nm])
    tmax = max(res.config["threads"])
    if tmax > 1:
        d = sw[(sw.method == "hamming") & (sw.threads == tmax)].sort_values("N")
        ax.plot(d.N, d.seconds * 1e3, marker="s", ls="--", color="tab:olive",
                label=f"Hamming (Numba, {tmax} threads)")
    ns = np.array(sorted(sw.N.unique()), dtype=float)
    ax.plot(ns, ns * CODE_BYTES / (res.bandwidth[1] * 1e9) * 1e3, color="k", lw=1, ls=":",
            label="memory bound (8 bytes a code)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N (codes or vectors scored)")
    ax.set_ylabel("time of one query (ms, median)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    return fig


def details(res) -> dict:
    """The machine and the run's settings as ``{name: text}`` rows for
    :func:`phdlib.report.page.computed`."""
    m, c = res.machine, res.config
    out = {"CPU": f"{m['cpu']}, LLVM target {m['llvm_cpu']}, {m['cores']} cores",
           "libraries": f"NumPy {m['numpy']}, Numba {m['numba']} "
                        f"({m.get('numba_threading_layer', '?')}), faiss {m['faiss']}",
           "codes": f"{c['n']:,} random 64-bit codes; inner product at {c['ip_n']:,} "
                    f"float32 {c.get('ip_dim', 64)}-d vectors; top-k at {c['n_topk']:,} codes",
           "rounds": f"{c['repeats']} interleaved rounds (medians); threads "
                     f"{', '.join(map(str, c['threads']))}; seed {c['seed']}",
           "read bandwidth": "; ".join(f"{bw:.1f} GB/s at {t} thread{'s' if t > 1 else ''}"
                                       for t, bw in res.bandwidth.items())}
    if m.get("load_average_start") is not None:
        la = m.get("load_average_start"), m.get("load_average")
        out["load average (1 min)"] = (f"{la[0][0]:.2f} at start, {la[1][0]:.2f} at end"
                                       if la[1] else f"{la[0][0]:.2f} at start")
    for part, why in res.skipped.items():
        out[f"skipped: {part}"] = str(why)
    return out
