"""Figures, tables and findings of the chapter "Serving PHD codes".

- :func:`padding_check`: the padded-Hamming identity on every (user, item) pair;
- :func:`load`, :func:`plot_recall_qps`, :func:`summary`, :func:`summary_table`,
  :func:`findings`: the engines benchmark (:mod:`phdlib.bench.serving` rows);
- :func:`native_against_padded`, :func:`native_finding`: phdlib's IVF on the native
  codes against faiss' IVF on padded codes at one recall;
- ties in served lists and the rules that order them: :mod:`phdlib.report.served_ties`;
- :func:`conclusion`: the chapter's closing statements;
- :func:`recorded_details`: where a recorded benchmark was made, for the
  page's "How this page was computed" block.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..codes import padding
from ..serving.search import BinaryIndex

ENGINE_LABELS = {"binaryindex": "BinaryIndex (exact, plain codes)",
                 "faiss-flat": "faiss IndexBinaryFlat (exact, padded)",
                 "faiss-hnsw": "faiss IndexBinaryHNSW (padded)",
                 "faiss-ivf": "faiss IndexBinaryIVF (padded)",
                 "phd-ivf": "phdlib IVFIndex (native codes)",
                 "usearch": "usearch HNSW (native codes)",
                 "milvus-lite": "Milvus Lite BIN_FLAT (exact, padded)"}
MARKERS = {"binaryindex": "*", "faiss-flat": "s", "faiss-hnsw": "o", "faiss-ivf": "^",
           "phd-ivf": "v", "usearch": "P", "milvus-lite": "D"}


def _times(x: float) -> str:
    """A ratio as ``63.7×`` (``0.25×`` below 10)."""
    return f"{x:,.1f}×" if x >= 10 else f"{x:.2f}×"


def padding_check(user_codes: np.ndarray, item_codes: np.ndarray, bits: int,
                  block: int = 256) -> tuple[int, int]:
    """Check ``H(u', i') = 2 PHD(u, i) + m - |u|`` on every (user, item) pair.

    user_codes, item_codes: packed code words (``uint8 (n, bytes)`` as
    :mod:`phdlib.codes.padding` takes them); bits: the code width ``m``. The padded
    Hamming distance is computed with NumPy's popcount, PHD with
    :class:`phdlib.serving.search.BinaryIndex`, ``block`` users at a time. Returns
    ``(pairs checked, pairs where the identity fails)``.
    """

    pu = padding.pad_users(user_codes, bits)
    pi = padding.pad_items(item_codes, bits)
    exact = BinaryIndex(bits, "phd")
    exact.add(item_codes)
    pop = padding.popcounts(user_codes, bits)
    bad = 0
    for a in range(0, len(pu), block):
        h = np.bitwise_count(pu[a:a + block, None, :] ^ pi[None, :, :]).sum(axis=2,
                                                                             dtype=np.int64)
        d = exact.distances(user_codes[a:a + block])
        bad += int((h != 2 * d + bits - pop[a:a + block, None]).sum())
    return len(pu) * len(pi), bad


def load(path) -> dict:
    """A benchmark written by ``phd bench --serving --out``: ``{"provenance", "rows"}``."""
    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable serving benchmark ({exc})") from None
    if not isinstance(obj, dict) or obj.get("format") != "phd-serving":
        raise ValueError(f"{path}: not written by phd bench --serving --out (format 'phd-serving')")
    rows = pd.DataFrame(obj["rows"]).fillna({"value": np.nan})
    rows["param"] = rows["param"].fillna("")
    return {"provenance": obj["provenance"], "rows": rows}


def plot_recall_qps(rows: pd.DataFrame, ax=None, title: str = ""):
    """Recall@k (x) against queries per second (y, log), one line or point per engine."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.4))
    for eng, g in rows.groupby("engine", sort=False):
        g = g.sort_values("recall")
        ax.plot(g["recall"], g["qps"], marker=MARKERS.get(eng, "o"),
                linestyle="-" if len(g) > 1 else "none", label=ENGINE_LABELS.get(eng, eng))
        for _, r in g.iterrows():
            if r["param"]:
                ax.annotate(f"{int(r['value'])}", (r["recall"], r["qps"]), fontsize=6,
                            xytext=(2, 2), textcoords="offset points")
    ax.set_yscale("log")
    k = int(rows["k"].iloc[0]) if "k" in rows else 10
    ax.set_xlabel(f"recall@{k} (tie-aware)")
    ax.set_ylabel("queries per second")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2,
              frameon=False)
    ax.figure.tight_layout()
    return ax


def summary(rows: pd.DataFrame, target: float = 0.95) -> pd.DataFrame:
    """Per engine: the fastest setting whose recall is at least ``target`` (exact engines:
    their one row), with its recall, qps, memory and build time."""
    out = []
    for eng, g in rows.groupby("engine", sort=False):
        ok = g[g["recall"] >= target]
        r = (ok if len(ok) else g).sort_values("qps").iloc[-1]
        out.append({"engine": ENGINE_LABELS.get(eng, eng),
                    "setting": f"{r['param']}={int(r['value'])}" if r["param"] else "",
                    "recall": r["recall"], "qps": r["qps"], "memory_mb": r["memory_mb"],
                    "build_s": r["build_s"], f"reaches {target}": bool(len(ok))})
    return pd.DataFrame(out)


def summary_table(rows: pd.DataFrame, target: float = 0.95) -> pd.DataFrame:
    """:func:`summary` for reading: index ``engine`` (labels); columns ``setting`` ("exact"
    for the exact engines), ``recall@k``, ``queries/s`` (rounded to a whole number),
    ``MB`` (memory), ``build s`` (seconds to build) and ``≥ {target}`` (bool: the recall
    reaches ``target``)."""
    s = summary(rows, target)
    k = int(rows["k"].iloc[0]) if "k" in rows else 10
    out = pd.DataFrame({"engine": s["engine"],
                        "setting": s["setting"].replace("", "exact"),
                        f"recall@{k}": s["recall"].astype(float),
                        "queries/s": s["qps"].astype(float).round().astype(np.int64),
                        "MB": s["memory_mb"].astype(float),
                        "build s": s["build_s"].astype(float),
                        f"≥ {target}": s[f"reaches {target}"]})
    return out.set_index("engine")


def recorded_details(rec: dict, path: str = "") -> dict:
    """Where and how a recorded benchmark (:func:`load`) was made, as ``{name: text}``
    rows for :func:`phdlib.report.page.computed`."""
    p = rec["provenance"]
    out = {"recorded benchmark": f"{path} ({p.get('date', '?')})" if path else p.get("date", "?"),
           "recorded with": str(p.get("command", "?")),
           "recorded on": f"{p.get('cpus', '?')} CPUs, {p.get('platform', '?')}; threads: "
                          f"Numba {p.get('numba_threads', '?')}, "
                          f"faiss {p.get('faiss_threads', '?')}",
           "recorded at commit": str(p.get("commit", "?"))[:10]}
    return out


def findings(rows: pd.DataFrame, target: float = 0.95) -> list[str]:
    """Sentences comparing the fastest setting at ``target`` recall with the exact scan."""
    s = summary(rows, target).set_index("engine")
    exact = s.loc[ENGINE_LABELS["binaryindex"]]
    n = int(rows["items"].iloc[0])
    out = [f"On {n:,} items the exact BinaryIndex scan answers {exact['qps']:,.0f} queries per "
           f"second from {exact['memory_mb']:,.1f} MB of codes."]
    for eng in ("faiss-hnsw", "faiss-ivf", "phd-ivf", "usearch"):
        lab = ENGINE_LABELS[eng]
        if lab not in s.index:
            continue
        r = s.loc[lab]
        if r[f"reaches {target}"]:
            out.append(f"{lab} reaches recall {r['recall']:.3f} at {r['setting']} with "
                       f"{r['qps']:,.0f} queries per second ({_times(r['qps'] / exact['qps'])} "
                       f"the exact scan's), using {r['memory_mb']:,.1f} MB and {r['build_s']:,.1f} s "
                       f"to build.")
        else:
            g = rows[rows["engine"] == eng]
            b = g.loc[g["recall"].idxmax()]
            out.append(f"{lab} does not reach recall {target} at any measured setting: its best, "
                       f"{b['recall']:.3f}, comes with {b['qps']:,.0f} queries per second "
                       f"({_times(b['qps'] / exact['qps'])} the exact scan's), from "
                       f"{b['memory_mb']:,.1f} MB ({_times(b['memory_mb'] / exact['memory_mb'])} "
                       f"the exact scan's) and {b['build_s']:,.0f} s to build.")
    return out


def _first_at(rows: pd.DataFrame, engine: str, target: float):
    """The fastest row of ``engine`` whose recall is at least ``target`` (None if none)."""
    g = rows[(rows["engine"] == engine) & (rows["recall"] >= target)]
    return None if g.empty else g.sort_values("qps").iloc[-1]


def native_against_padded(rows: pd.DataFrame, target: float = 0.99, ours: str = "phd-ivf",
                          theirs: str = "faiss-ivf") -> dict | None:
    """Two inverted-file indexes at one recall, from one benchmark run's ``rows``: each one's
    fastest setting reaching recall ``target`` (``"ours"``, ``"theirs"``: the row, or None when
    it never reaches it), ``speed`` (our queries/s over theirs) and ``memory`` (our MB over
    theirs; from any row, memory does not depend on the setting). None when either engine
    is not in ``rows``."""
    if not {ours, theirs} <= set(rows["engine"]):
        return None
    a, b = _first_at(rows, ours, target), _first_at(rows, theirs, target)
    mem = (float(rows.loc[rows["engine"] == ours, "memory_mb"].iloc[0])
           / float(rows.loc[rows["engine"] == theirs, "memory_mb"].iloc[0]))
    speed = float(a["qps"] / b["qps"]) if a is not None and b is not None else np.nan
    return {"ours": a, "theirs": b, "speed": speed, "memory": mem, "target": target,
            "names": (ENGINE_LABELS.get(ours, ours), ENGINE_LABELS.get(theirs, theirs))}


def native_finding(cmp: dict | None) -> str | None:
    """One computed sentence from :func:`native_against_padded`: whether the native index is
    faster at the target recall and within half the memory, with the numbers."""
    if cmp is None:
        return None
    (na, nb), a, b, t = cmp["names"], cmp["ours"], cmp["theirs"], cmp["target"]
    if a is None or b is None:
        miss = " and ".join(n for n, r in ((na, a), (nb, b)) if r is None)
        return f"{miss} did not reach recall {t} at any measured setting."
    faster, half = cmp["speed"] > 1, cmp["memory"] <= 0.5
    lead = ("**Faster in half the memory.**" if faster and half else
            "**Faster, but not in half the memory.**" if faster else
            "**Smaller, but not faster.**" if half else "**Neither faster nor half the memory.**")
    return (f"{lead} At recall@10 of at least {t}, {na} answers {a['qps']:,.0f} queries per "
            f"second ({a['param']}={int(a['value'])}, recall {a['recall']:.3f}) against "
            f"{b['qps']:,.0f} for {nb} ({b['param']}={int(b['value'])}, recall "
            f"{b['recall']:.3f}): {cmp['speed']:.2f} times; it holds {a['memory_mb']:,.1f} MB "
            f"against {b['memory_mb']:,.1f} MB ({cmp['memory']:.2f} times).")


def conclusion(same: pd.DataFrame, rows: pd.DataFrame, target: float = 0.95) -> list[str]:
    """The chapter's conclusion (Markdown lines): whether every exact engine returned
    BinaryIndex's top-k (``same``: index engine, bool columns ``same distances`` and ``same
    ids (ties included)``, column ``users``), and from benchmark ``rows`` (usually the
    recorded run) the fastest engine reaching recall ``target`` with its speed and memory
    against the exact scan of the plain codes."""
    out = []
    ok = same[["same distances", "same ids (ties included)"]].all(axis=1)
    users = int(same["users"].iloc[0]) if "users" in same else None
    names = " and ".join(same.index)
    if ok.all():
        out.append(f"PHD is served exactly by Hamming engines: {names} returned the same top-k "
                   f"distances and ids as BinaryIndex"
                   + (f" for all {users:,} users compared." if users else "."))
    else:
        bad = " and ".join(same.index[~ok])
        out.append(f"{bad} did not return BinaryIndex's top-k for every user compared.")
    s = summary(rows, target).set_index("engine")
    exact = s.loc[ENGINE_LABELS["binaryindex"]]
    n = int(rows["items"].iloc[0])
    approx = s[[lab not in (ENGINE_LABELS["binaryindex"], ENGINE_LABELS["faiss-flat"],
                            ENGINE_LABELS["milvus-lite"]) for lab in s.index]]
    approx = approx[approx[f"reaches {target}"]]
    if len(approx):
        best = approx.sort_values("qps").iloc[-1]
        out.append(f"On {n:,} items, the fastest approximate setting reaching recall {target} "
                   f"is {best.name} at {best['setting']}: {best['qps']:,.0f} queries per second, "
                   f"{_times(best['qps'] / exact['qps'])} the exact scan's, with an index of "
                   f"{best['memory_mb']:,.0f} MB against {exact['memory_mb']:,.0f} MB of plain "
                   f"codes ({_times(best['memory_mb'] / exact['memory_mb'])}).")
    else:
        out.append(f"On {n:,} items no approximate setting reached recall {target}; the exact "
                   f"scan answers {exact['qps']:,.0f} queries per second.")
    return out

