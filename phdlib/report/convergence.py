"""Figure 5: validation NDCG@10 of VH and VH_PHD during training, and when each gets where.

:func:`plot_convergence` draws the figure, :func:`convergence_summary` finds
when each run reaches common validation levels, :func:`convergence_shown` and
:func:`convergence_runs` lay the numbers out for reading,
:func:`convergence_findings` checks the paper's statement and
:func:`convergence_conclusion` says it in a paragraph.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import page
from .style import COLORS, PHD, label

__all__ = ["plot_convergence", "convergence_summary", "convergence_findings",
           "convergence_shown", "convergence_runs", "convergence_conclusion"]

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
    axes[0].legend(fontsize=8, loc="lower right")
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


def _ratio(a: float, b: float) -> str:
    """``b / a`` as ``3.2×`` (n/a when it is not defined)."""
    if not (a > 0) or np.isnan(b):
        return page.NA
    return f"{b / a:.1f}×"


def convergence_shown(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`convergence_summary` for reading: one row per level, VH_PHD beside VH.

    Rows: ``"50%"``, ... of the way to the common level. Columns (MultiIndex,
    values formatted as str): ``("", "NDCG@10")`` (the level), ``("iterations",
    "VH_PHD")``, ``("iterations", "VH")``, ``("iterations", "ratio")`` (VH's over
    VH_PHD's, ``3.2×``), ``("seconds", "VH_PHD")``, ``("seconds", "VH")``; means
    over runs. Empty without both methods.
    """
    if summary.empty or not {"vh", PHD} <= set(summary["method"]):
        return pd.DataFrame()
    g = summary.groupby(["fraction", "method"])[["level", "iterations", "seconds"]].mean()
    rows = {}
    p, v = label(PHD), label("vh")
    for f in sorted(summary["fraction"].unique()):
        a, b = g.loc[(f, PHD)], g.loc[(f, "vh")]
        rows[f"{100 * f:.0f}%"] = {
            ("", "NDCG@10"): page.num(a["level"]),
            ("iterations", p): page.count(a["iterations"]),
            ("iterations", v): page.count(b["iterations"]),
            ("iterations", "ratio"): _ratio(a["iterations"], b["iterations"]),
            ("seconds", p): page.num(a["seconds"], 1, lead_zero=True),
            ("seconds", v): page.num(b["seconds"], 1, lead_zero=True),
        }
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.columns = pd.MultiIndex.from_tuples(out.columns)
    out.index.name = "share of the way"
    return out


def convergence_runs(groups: dict, methods=("vh", PHD)) -> pd.DataFrame:
    """One row per training run: how long it trained and where it peaked.

    groups: ``{method: [Run, ...]}`` (:func:`phdlib.report.by_method`). Columns:
    ``method`` (label), ``seed`` (int), ``iterations`` (int, batches trained),
    ``best iteration`` (int, the validation maximum), ``training seconds``
    (float, wall clock), ``best validation NDCG@10`` (float).
    """
    rows = []
    for m in methods:
        for r in groups.get(m, []):
            mt = r.metrics
            best = np.nan
            if r.log is not None and len(r.log):
                best = float(r.log[_log_columns(r.log)[2]].max())
            rows.append({"method": label(m), "seed": int(r.seed),
                         "iterations": int(mt["iterations"]),
                         "best iteration": int(mt["best_iteration"]),
                         "training seconds": float(mt["train_seconds"]),
                         "best validation NDCG@10": best})
    return pd.DataFrame(rows, columns=["method", "seed", "iterations", "best iteration",
                                       "training seconds", "best validation NDCG@10"])


def convergence_findings(summary: pd.DataFrame) -> list[str]:
    """Does VH_PHD reach the common validation levels sooner than VH (the paper's Figure 5)?

    summary: :func:`convergence_summary`'s frame, with VH and VH_PHD rows.
    Returns sentences starting ``AGREES:`` or ``DISAGREES:``, one per level
    and one on the best validation value (without a verdict when the two are
    within 0.001).
    """
    if summary.empty or not {"vh", PHD} <= set(summary["method"]):
        return ["Both VH and VH_PHD training logs are needed to compare convergence."]
    g = summary.groupby(["fraction", "method"])[["level", "iterations", "seconds"]].mean()
    out = []
    for f in sorted(summary["fraction"].unique()):
        a, b = g.loc[(f, PHD)], g.loc[(f, "vh")]
        faster = a["iterations"] < b["iterations"] and a["seconds"] < b["seconds"]
        ratio = _ratio(a["iterations"], b["iterations"])
        out.append(("AGREES" if faster else "DISAGREES")
                   + f": VH_PHD reaches validation NDCG@10 {page.num(a['level'])} "
                   f"({100 * f:.0f}% of the way to the common level) after "
                   f"{page.count(a['iterations'])} iterations ({a['seconds']:.1f} s), "
                   f"VH after {page.count(b['iterations'])} iterations ({b['seconds']:.1f} s)"
                   + (f", {ratio} as many." if ratio != page.NA else "."))
    best = summary.groupby("method")["best_valid_ndcg@10"].mean()
    d = best[PHD] - best["vh"]
    head = "AGREES: " if d > 0.001 else "DISAGREES: " if d < -0.001 else ""
    out.append(head + f"VH_PHD's best validation NDCG@10 is {page.num(best[PHD])}, VH's "
               f"{page.num(best['vh'])} (a difference of {page.num(d, sign=True)}); "
               "the paper's VH_PHD curves end higher.")
    return out


def convergence_conclusion(summary: pd.DataFrame) -> str:
    """One paragraph of conclusion from :func:`convergence_summary` (Markdown)."""
    if summary.empty or not {"vh", PHD} <= set(summary["method"]):
        return "Without both training logs this page draws no conclusion about Figure 5."
    g = summary.groupby(["fraction", "method"])[["iterations", "seconds"]].mean()
    fr = sorted(summary["fraction"].unique())
    faster = [f for f in fr if g.loc[(f, PHD), "iterations"] < g.loc[(f, "vh"), "iterations"]
              and g.loc[(f, PHD), "seconds"] < g.loc[(f, "vh"), "seconds"]]
    best = summary.groupby("method")["best_valid_ndcg@10"].mean()
    levels = ", ".join(f"{100 * f:.0f}%" for f in fr)
    if len(faster) == len(fr):
        f = fr[-1]
        text = (f"VH_PHD converges faster than VH in this build: it reaches every level "
                f"checked ({levels} of the way) sooner in iterations and in seconds; to "
                f"{100 * f:.0f}% VH needs "
                f"{_ratio(g.loc[(f, PHD), 'iterations'], g.loc[(f, 'vh'), 'iterations'])}"
                " as many iterations. This agrees with the paper's Figure 5.")
    elif not faster:
        text = (f"VH_PHD does not converge faster than VH in this build: it reaches none of "
                f"the levels checked ({levels} of the way) sooner in both iterations and "
                "seconds, against the paper's Figure 5.")
    else:
        text = (f"VH_PHD reaches {len(faster)} of the {len(fr)} levels checked sooner than VH "
                "in both iterations and seconds, so the paper's faster convergence holds "
                "only in part here.")
    d = best[PHD] - best["vh"]
    text += (f" Its best validation NDCG@10 is {page.num(best[PHD])} against VH's "
             f"{page.num(best['vh'])} ({page.num(d, sign=True)}).")
    return text
