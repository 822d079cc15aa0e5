"""Figure 4: VH_PHD under the four (train, eval) sampling combinations.

:func:`sampling_table` collects the numbers, :func:`plot_sampling` draws the
figure, :func:`sampling_shown` lays the numbers out for reading,
:func:`sampling_findings` checks the paper's statements and
:func:`sampling_conclusion` says it in a paragraph.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import page
from .compare import mean_std
from .style import METRIC_LABELS, PHD

__all__ = ["sampling_table", "plot_sampling", "sampling_findings", "sampling_shown",
           "sampling_conclusion", "combination"]

#: The paper's order of the four combinations, best first (its Figure 4).
PAPER_ORDER = [("stochastic", "deterministic"), ("deterministic", "deterministic"),
               ("stochastic", "stochastic"), ("deterministic", "stochastic")]


def combination(train: str, evaluation: str) -> str:
    """``"stochastic training, deterministic evaluation"``: a combination in words."""
    return f"{train} training, {evaluation} evaluation"


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
    """Figure 4: bars of the sampling combinations of :func:`sampling_table`; returns the axes.

    Bars in the paper's order; the colour says how the codes are drawn at
    evaluation (legend); error bars are ± one std over seeds (none for one seed).
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    key = {c: i for i, c in enumerate(PAPER_ORDER)}
    t = table.assign(_k=[key.get((a, b), 9) for a, b in zip(table["train"], table["eval"])])
    t = t.sort_values("_k")
    names = [f"train {a[:5]}.\neval {b[:5]}." for a, b in zip(t["train"], t["eval"])]
    colors = {"deterministic": "tab:blue", "stochastic": "tab:orange"}
    x = np.arange(len(t))
    err = t["std"].fillna(0).to_numpy()
    for ev, col in colors.items():
        sel = (t["eval"] == ev).to_numpy()
        if sel.any():
            ax.bar(x[sel], t["mean"].to_numpy()[sel], yerr=err[sel] if err.any() else None,
                   capsize=4, color=col, label=f"{ev} evaluation")
    ax.set_xticks(x, names)
    lo = float(np.nanmin(t["mean"])) if len(t) else 0.0
    ax.set_ylim(max(0.0, lo - 0.05), None)
    for i, v in enumerate(t["mean"]):
        ax.text(i, v, page.num(v), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel(f"test {METRIC_LABELS.get(metric, metric)}")
    ax.legend(fontsize=8, loc="upper right")
    if title:
        ax.set_title(title)
    return ax


def sampling_shown(table: pd.DataFrame, metric: str = "ndcg@10") -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`sampling_table` for reading, and where to set values in bold.

    Returns ``(shown, bold)``: ``shown`` has one row per combination (best
    first) with the columns ``training``, ``evaluation`` (str), the metric's
    label (str, mean ± std over seeds, four decimals), ``below the best``
    (str, the difference to the best mean) and ``seeds`` (int); ``bold`` is
    True on the best mean.
    """
    lab = METRIC_LABELS.get(metric, metric)
    best = float(table["mean"].max()) if len(table) else np.nan
    shown = pd.DataFrame({
        "training": table["train"].to_list(), "evaluation": table["eval"].to_list(),
        lab: [page.mean_std(m, s) for m, s in zip(table["mean"], table["std"])],
        "below the best": ["–" if m == best else page.num(m - best) for m in table["mean"]],
        "seeds": table["seeds"].astype(int).to_list()})
    bold = pd.DataFrame(False, index=shown.index, columns=shown.columns)
    bold.loc[(table["mean"] == best).to_numpy(), lab] = True
    return shown, bold


def sampling_findings(table: pd.DataFrame) -> list[str]:
    """The paper's Figure 4 findings checked on :func:`sampling_table`'s numbers.

    Returns sentences, each starting ``AGREES:`` or ``DISAGREES:``
    (:func:`phdlib.report.page.findings` sets the verdict in bold); one
    sentence without a verdict when fewer than four combinations ran.
    """
    if len(table) < 4:
        return [f"Only {len(table)} of the 4 sampling combinations are available, "
                "so the paper's ordering cannot be checked."]
    m = {(a, b): v for a, b, v in zip(table["train"], table["eval"], table["mean"])}
    rank = table.sort_values("mean", ascending=False)
    order = [(a, b) for a, b in zip(rank["train"], rank["eval"])]
    out = []
    out.append(("AGREES" if order[0] == PAPER_ORDER[0] else "DISAGREES")
               + f": The best combination is {combination(*order[0])} "
               f"({page.num(m[order[0]])}); the paper's best is stochastic training "
               "with deterministic evaluation.")
    out.append(("AGREES" if order[1] == PAPER_ORDER[1] else "DISAGREES")
               + f": Second is {combination(*order[1])} ({page.num(m[order[1]])}); "
               "the paper's second is deterministic training and evaluation.")
    det_eval = min(m[PAPER_ORDER[0]], m[PAPER_ORDER[1]])
    sto_eval = max(m[PAPER_ORDER[2]], m[PAPER_ORDER[3]])
    out.append(("AGREES" if sto_eval < det_eval else "DISAGREES")
               + f": The better stochastic evaluation ({page.num(sto_eval)}) is "
               + ("below" if sto_eval < det_eval else "not below")
               + f" the worse deterministic evaluation ({page.num(det_eval)}), "
               f"a difference of {page.num(abs(det_eval - sto_eval))}.")
    a, b = m[PAPER_ORDER[3]], m[PAPER_ORDER[2]]
    worse = a < b
    out.append(("AGREES" if worse else "DISAGREES")
               + ": With stochastic evaluation, deterministic training "
               f"({page.num(a)}) is " + ("worse" if worse else "not worse")
               + f" than stochastic training ({page.num(b)}); the paper finds it worst of all.")
    return out


def sampling_conclusion(table: pd.DataFrame, metric: str = "ndcg@10") -> str:
    """One paragraph of conclusion from :func:`sampling_table`'s numbers (Markdown)."""
    lab = METRIC_LABELS.get(metric, metric)
    if len(table) < 4:
        return (f"Only {len(table)} of the four combinations ran, so this page draws "
                "no conclusion about the paper's Figure 4.")
    lines = sampling_findings(table)
    agree = sum(line.startswith("AGREES") for line in lines)
    m = {(a, b): v for a, b, v in zip(table["train"], table["eval"], table["mean"])}
    best = table.iloc[0]
    gain = m[PAPER_ORDER[0]] - m[PAPER_ORDER[1]]
    loss = min(m[PAPER_ORDER[0]], m[PAPER_ORDER[1]]) - max(m[PAPER_ORDER[2]], m[PAPER_ORDER[3]])
    text = (f"The best of the four combinations in this build is "
            f"{combination(best['train'], best['eval'])}, with test {lab} "
            f"{page.num(best['mean'])}. With deterministic evaluation, stochastic "
            f"training {'gains' if gain >= 0 else 'loses'} {page.num(abs(gain))} "
            "against deterministic training. ")
    if loss > 0:
        text += (f"Drawing the codes at random at evaluation costs at least "
                 f"{page.num(loss)}. ")
    else:
        text += ("Drawing the codes at random at evaluation does not cost anything "
                 f"here: the better stochastic evaluation is {page.num(-loss)} above "
                 "the worse deterministic one. ")
    if agree == len(lines):
        text += "All four of the paper's statements about its Figure 4 hold here."
    else:
        text += (f"{agree} of the paper's four statements about its Figure 4 hold here; "
                 "the others are marked above.")
    if int(table["seeds"].min()) < 2:
        text += (" With one seed per combination there is no spread to compare these "
                 "differences with.")
    return text
