"""Tables and figures of the chapter "Variational hashing".

- :func:`chance_level`: a metric of the all-tied ranking (the plateau VH can stall on);
- :func:`variants_table`, :func:`variants_findings`: what each variant of
  :data:`phdlib.variants.VARIANTS` did;
- :func:`paired_tests`: VH_PHD against VH, paired t-test over users, Bonferroni;
- :func:`reached_cap`: whether a run's training ended at its iteration cap;
- :func:`plot_curves`: validation NDCG@10 against iterations or seconds.

Our test metrics beside the paper's are :func:`phdlib.report.comparison`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..methods.stopping import CAP_REASON
from ..metrics import METRICS

__all__ = ["chance_level", "variants_table", "variants_findings", "paired_tests", "plot_curves",
           "reached_cap"]


def reached_cap(run) -> bool:
    """Whether a VH-family run's training ended at its cap (``max_iterations``)
    instead of by early stopping, so that it may have gone on improving on
    validation. Read from the run's ``extra["stop_reason"]``; a run stored
    without one counts as capped when its ``iterations`` reached the cap."""
    reason = run.extra.get("stop_reason")
    if reason:
        return str(reason).startswith(CAP_REASON)
    cap = run.effective_config.get("max_iterations")
    return cap is not None and int(run.metrics.get("iterations", 0)) >= int(cap)


def chance_level(ratings, metric: str = "ndcg@10") -> float:
    """``metric`` of an all-tied ranking (every item at the same distance), expected over ties.

    ratings: an object with ``user`` (int (N,)) and ``rating`` ((N,)) arrays,
    e.g. ``split.valid``.
    """
    from .. import metrics

    per_user = metrics.evaluate(ratings.user, ratings.rating, np.zeros(len(ratings.user)))
    return float(per_user[metric].mean())


def variants_table(runs: dict, chance: float) -> pd.DataFrame:
    """One row per variant (index ``variant``) from ``{name: Run}`` of :func:`phdlib.variants.run_variants`.

    Columns: ``method``, ``tests`` (what the variant tests), ``iterations``,
    ``leaves plateau at`` (the first logged iteration whose validation
    NDCG@10 exceeds ``chance + 0.01``, None if never; ``chance``:
    :func:`chance_level` of the validation split), ``best iteration``, the
    validation metrics at the best point and the code statistics at the end
    (set bits of users and items, bits shared by 99% of users).
    """
    from ..variants import VARIANTS

    rows = []
    for name, r in runs.items():
        log = r.log
        first = log.loc[log["valid_ndcg@10"] > chance + 0.01, "iteration"]
        rows.append({"variant": name, "method": r.method, "tests": VARIANTS[name][3] if name in VARIANTS else "",
                     "iterations": int(r.metrics["iterations"]),
                     "leaves plateau at": int(first.iloc[0]) if len(first) else None,
                     "best iteration": int(r.metrics["best_iteration"]),
                     "valid ndcg@5": r.metrics["valid_ndcg@5"],
                     "valid ndcg@10": r.metrics["valid_ndcg@10"],
                     "valid mrr": r.metrics["valid_mrr"],
                     "set bits (users)": float(log["user_ones"].iloc[-1]),
                     "set bits (items)": float(log["item_ones"].iloc[-1]),
                     "bits shared by 99% of users": float(log["user_const_bits"].iloc[-1])})
    return pd.DataFrame(rows).set_index("variant")


def variants_findings(table: pd.DataFrame) -> list[str]:
    """Plain sentences, computed from :func:`variants_table`, on what each variant did."""
    out = []
    for name, row in table.iterrows():
        leave = row["leaves plateau at"]
        leave_s = ("never rose 0.01 above chance" if leave is None or pd.isna(leave)
                   else f"first 0.01 above chance at iteration {int(leave):,}")
        out.append(f"{name}: {leave_s}; best validation NDCG@10 {row['valid ndcg@10']:.4f} "
                   f"(MRR {row['valid mrr']:.4f}) at iteration {int(row['best iteration']):,} "
                   f"of {int(row['iterations']):,}.")
    vh_rows = table[table["method"] == "vh"]
    if len(vh_rows):
        best = vh_rows["valid ndcg@10"].idxmax()
        out.append(f"Best VH variant on validation NDCG@10: {best}.")
    return out


def paired_tests(phd_runs: list, vh_runs: list) -> pd.DataFrame:
    """VH_PHD against VH per metric: paired two-tailed t-test over users, Bonferroni.

    phd_runs, vh_runs: runs (seeds) of each method at one width. Several
    seeds: each user's metric is first averaged over the seeds of a method.
    The correction runs over the three metrics of one width. Returns
    :func:`phdlib.stats.compare`'s rows (``metric``, ``n``, ``mean_diff``,
    ``p``, ``p_adj``, ``better``, ...), one per metric.
    """
    from .. import stats

    def mean_frame(rs):
        f = pd.concat([r.per_user[["user", *METRICS]] for r in rs])
        return f.groupby("user", as_index=False)[list(METRICS)].mean()

    per_user = {"vh-phd": mean_frame(phd_runs), "vh": mean_frame(vh_runs)}
    return stats.compare(per_user, ["vh-phd"], ["vh"], metrics=METRICS, correction="bonferroni",
                         family="method")


def plot_curves(logs: dict, ax=None, x: str = "iteration", title: str = ""):
    """Validation NDCG@10 against ``x`` (``iteration`` or ``seconds``), one line per name.

    logs: ``{line name: training log}`` (frames with ``x`` and
    ``valid_ndcg@10``). Returns the axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.8))
    for name, log in logs.items():
        ax.plot(log[x], log["valid_ndcg@10"], lw=1.3, label=name)
    ax.set_xlabel("training iterations (batches of 400)" if x == "iteration" else "seconds")
    ax.set_ylabel("validation NDCG@10")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return ax
