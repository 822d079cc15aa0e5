"""Figure 5: validation NDCG@10 of VH and VH_PHD during training, and when each gets where."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .style import COLORS, PHD, label

__all__ = ["plot_convergence", "convergence_summary", "convergence_findings"]

_SUMMARY_COLUMNS = ["method", "run", "fraction", "level", "iterations", "seconds",
                    "best_valid_ndcg@10", "best_iteration"]


def _log_columns(log: pd.DataFrame) -> tuple[str, str, str]:
    """Names of the iteration, wall-seconds and validation NDCG@10 columns of a training log."""
    it = "iteration"
    sec = next((c for c in ("seconds", "wall_seconds", "train_seconds") if c in log.columns), None)
    val = next((c for c in ("valid_ndcg@10", "valid:ndcg@10") if c in log.columns), None)
    if it not in log.columns or sec is None or val is None:
        raise ValueError(f"training log lacks iteration / seconds / validation NDCG@10 columns; "
                         f"has {list(log.columns)}")
    return it, sec, val


def plot_convergence(logs: dict[str, list[pd.DataFrame]], title: str = "", axes=None):
    """Figure 5: validation NDCG@10 against iterations (left) and wall seconds (right).

    logs: ``{method: [training logs, one per seed]}`` (frames with
    ``iteration``, ``seconds`` and ``valid_ndcg@10`` or their older names);
    each seed is one line. Returns the two axes.
    """
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for m, lst in logs.items():
        for j, log in enumerate(lst):
            it, sec, val = _log_columns(log)
            kw = dict(color=COLORS.get(m), lw=1.3, alpha=1.0 if j == 0 else 0.5,
                      label=label(m) if j == 0 else None)
            axes[0].plot(log[it], log[val], **kw)
            axes[1].plot(log[sec], log[val], **kw)
    axes[0].set_xlabel("training iterations (batches)")
    axes[1].set_xlabel("wall time (s, this machine)")
    axes[0].set_ylabel("validation NDCG@10")
    for a in axes:
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    if title:
        axes[0].figure.suptitle(title)
    return axes


def convergence_summary(logs: dict[str, list[pd.DataFrame]], fractions=(0.5, 0.9, 0.99),
                        target: float | None = None) -> pd.DataFrame:
    """When each run first reaches common validation levels.

    The levels lie between ``start`` (the lowest first logged validation
    NDCG@10 of all runs) and ``target`` (default: the lowest best value of
    all runs, a level every run reaches): ``start + f (target - start)`` for
    each f in ``fractions``. One row per (method, run, fraction): ``method``
    (str), ``run`` (int, index in the method's list), ``fraction``, ``level``,
    ``iterations``, ``seconds`` (float64; NaN if the run never reaches it),
    ``best_valid_ndcg@10`` (float64), ``best_iteration`` (int).
    """
    cols = {}
    for m, lst in logs.items():
        for j, log in enumerate(lst):
            cols[(m, j)] = (log, *_log_columns(log))
    if not cols:
        return pd.DataFrame(columns=_SUMMARY_COLUMNS)
    if target is None:
        target = min(float(log[val].max()) for log, _, _, val in cols.values())
    start = min(float(log[val].iloc[0]) for log, _, _, val in cols.values())
    rows = []
    for (m, j), (log, it, sec, val) in cols.items():
        best_row = log.loc[log[val].idxmax()]
        for f in fractions:
            level = start + f * (target - start)
            hit = log[log[val] >= level]
            rows.append({"method": m, "run": j, "fraction": f, "level": level,
                         "iterations": float(hit.iloc[0][it]) if len(hit) else np.nan,
                         "seconds": float(hit.iloc[0][sec]) if len(hit) else np.nan,
                         "best_valid_ndcg@10": float(best_row[val]), "best_iteration": int(best_row[it])})
    return pd.DataFrame(rows)


def convergence_findings(summary: pd.DataFrame) -> list[str]:
    """Does VH_PHD reach the common validation levels sooner than VH (the paper's Figure 5)?

    summary: :func:`convergence_summary`'s frame, with VH and VH_PHD rows.
    """
    if not {"vh", PHD} <= set(summary["method"]):
        return ["needs both VH and VH_PHD logs"]
    g = summary.groupby(["fraction", "method"])[["level", "iterations", "seconds"]].mean()
    out = []
    for f in sorted(summary["fraction"].unique()):
        a, b = g.loc[(f, PHD)], g.loc[(f, "vh")]
        faster = a["iterations"] < b["iterations"] and a["seconds"] < b["seconds"]
        out.append(("AGREES" if faster else "DISAGREES")
                   + f": validation NDCG@10 {a['level']:.4f} ({100 * f:.0f}% of the way to the common level) "
                   f"is reached by VH_PHD after {a['iterations']:.0f} iterations / {a['seconds']:.1f} s, "
                   f"by VH after {b['iterations']:.0f} / {b['seconds']:.1f} s"
                   + (f" ({b['iterations'] / a['iterations']:.1f}x the iterations)." if a["iterations"] > 0 else "."))
    best = summary.groupby("method")["best_valid_ndcg@10"].mean()
    d = best[PHD] - best["vh"]
    out.append(("AGREES" if d > 0.001 else "DISAGREES" if d < -0.001 else "NEITHER (within 0.001)")
               + f": best validation NDCG@10 VH_PHD {best[PHD]:.4f} vs VH {best['vh']:.4f} "
               "(the paper's PHD curves end higher).")
    return out
