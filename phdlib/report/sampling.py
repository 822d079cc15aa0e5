"""Figure 4: VH_PHD under the four (train, eval) sampling combinations."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .compare import mean_std
from .style import METRIC_LABELS, PHD

__all__ = ["sampling_table", "plot_sampling", "sampling_findings"]


def sampling_table(runs: dict, bits: int = 64, method: str = PHD,
                   metric: str = "ndcg@10") -> pd.DataFrame:
    """Mean and std (over seeds) of ``metric`` for each (train, eval) sampling combination.

    runs: ``{Cell: Run}``; only cells of ``method`` at ``bits`` whose options
    set both ``train_sampling`` and ``eval_sampling`` count. Returns columns
    ``train``, ``eval`` (str), ``mean``, ``std`` (float64, ddof=1, NaN for one
    seed), ``seeds`` (int), best mean first.
    """
    rows: dict[tuple[str, str], list] = {}
    for cell, run in runs.items():
        if cell.method != method or cell.bits != bits:
            continue
        ov = cell.overrides
        if "train_sampling" not in ov or "eval_sampling" not in ov:
            continue
        rows.setdefault((ov["train_sampling"], ov["eval_sampling"]), []).append(run.metrics[metric])
    out = [dict(zip(("train", "eval", "mean", "std", "seeds"), (t, e, *mean_std(v))))
           for (t, e), v in rows.items()]
    df = pd.DataFrame(out, columns=["train", "eval", "mean", "std", "seeds"])
    return df.sort_values("mean", ascending=False).reset_index(drop=True)


def plot_sampling(table: pd.DataFrame, metric: str = "ndcg@10", title: str = "", ax=None):
    """Figure 4: bars of the sampling combinations of :func:`sampling_table`; returns the axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    t = table.sort_values(["train", "eval"], ascending=[False, True])
    names = [f"train {a[:5]}.\neval {b[:5]}." for a, b in zip(t["train"], t["eval"])]
    ax.bar(names, t["mean"], yerr=t["std"].fillna(0).to_numpy(), capsize=4,
           color=["tab:red" if (a, b) == ("stochastic", "deterministic") else "tab:gray"
                  for a, b in zip(t["train"], t["eval"])])
    lo = float(np.nanmin(t["mean"])) if len(t) else 0.0
    ax.set_ylim(max(0.0, lo - 0.05), None)
    for i, v in enumerate(t["mean"]):
        ax.text(i, v, f"{v:.4f}", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    ax.set_title(title)
    return ax


def sampling_findings(table: pd.DataFrame) -> list[str]:
    """The paper's Figure 4 findings checked on :func:`sampling_table`'s numbers."""
    if len(table) < 4:
        return [f"only {len(table)} of the 4 sampling combinations are available"]
    m = {(a, b): v for a, b, v in zip(table["train"], table["eval"], table["mean"])}
    rank = table.sort_values("mean", ascending=False)
    order = [(a, b) for a, b in zip(rank["train"], rank["eval"])]
    out = []
    out.append(("AGREES" if order[0] == ("stochastic", "deterministic") else "DISAGREES")
               + f": best combination is train {order[0][0]} / eval {order[0][1]} "
               "(the paper: stochastic training, deterministic evaluation).")
    out.append(("AGREES" if order[1] == ("deterministic", "deterministic") else "DISAGREES")
               + f": second is train {order[1][0]} / eval {order[1][1]} (the paper: deterministic / deterministic).")
    det_eval = min(m[("stochastic", "deterministic")], m[("deterministic", "deterministic")])
    sto_eval = max(m[("stochastic", "stochastic")], m[("deterministic", "stochastic")])
    out.append(("AGREES" if sto_eval < det_eval else "DISAGREES")
               + f": stochastic evaluation (best {sto_eval:.4f}) is below deterministic evaluation "
               f"(worst {det_eval:.4f}).")
    worse = m[("deterministic", "stochastic")] < m[("stochastic", "stochastic")]
    out.append(("AGREES" if worse else "DISAGREES")
               + ": with stochastic evaluation, deterministic training is "
               + ("worse" if worse else "not worse") + " than stochastic training (the paper: even worse).")
    return out
