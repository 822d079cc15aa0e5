"""Figures and findings of the chapter "Serving PHD codes" (:mod:`phdlib.bench.serving` rows)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

ENGINE_LABELS = {"binaryindex": "BinaryIndex (exact, plain codes)",
                 "faiss-flat": "faiss IndexBinaryFlat (exact, padded)",
                 "faiss-hnsw": "faiss IndexBinaryHNSW (padded)",
                 "faiss-ivf": "faiss IndexBinaryIVF (padded)",
                 "milvus-lite": "Milvus Lite BIN_FLAT (exact, padded)"}
MARKERS = {"binaryindex": "*", "faiss-flat": "s", "faiss-hnsw": "o", "faiss-ivf": "^",
           "milvus-lite": "D"}


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
    ax.legend(fontsize=7)
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


def findings(rows: pd.DataFrame, target: float = 0.95) -> list[str]:
    """Sentences comparing the fastest setting at ``target`` recall with the exact scan."""
    s = summary(rows, target).set_index("engine")
    exact = s.loc[ENGINE_LABELS["binaryindex"]]
    n = int(rows["items"].iloc[0])
    out = [f"On {n:,} items the exact BinaryIndex scan answers {exact['qps']:,.0f} queries per "
           f"second from {exact['memory_mb']:,.1f} MB of codes."]
    for eng in ("faiss-hnsw", "faiss-ivf"):
        lab = ENGINE_LABELS[eng]
        if lab not in s.index:
            continue
        r = s.loc[lab]
        if r[f"reaches {target}"]:
            out.append(f"{lab} reaches recall {r['recall']:.3f} at {r['setting']} with "
                       f"{r['qps']:,.0f} queries per second ({r['qps'] / exact['qps']:.2f} times "
                       f"the exact scan), using {r['memory_mb']:,.1f} MB and {r['build_s']:,.1f} s "
                       f"to build.")
        else:
            out.append(f"{lab} does not reach recall {target} at any measured setting "
                       f"(best {rows[rows['engine'] == eng]['recall'].max():.3f}).")
    return out
