"""The ablation chapter's tables and headline findings, from :mod:`phdlib.studies.ablation`'s frames.

:func:`summary` states the chapter's answer in three to four sentences (the
distance alone, how close Hamming-trained codes ranked by PHD come to
VH_PHD, and the share of the gap a per-user bias closes, with its spread
over seeds); :func:`tests_table` and :func:`gap_table` lay the tests and the
gap out for reading (labels, mean ± std, p-values as words).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import methods
from ..studies.ablation import BIAS_ARMS, share_range, share_words
from ..studies.ablation import findings as ablation_findings
from ..evaluation.metrics import METRIC_LABELS
from .groups import by_method
from .page import num, p_text, pct

__all__ = ["grouped", "conclusion", "shares", "reach_parts", "DISTANCE_LABELS", "tests_table", "distance_table", "gap_table",
           "summary"]

#: How a distance (what a method ranks by) is named on the page.
DISTANCE_LABELS = {"hamming": "Hamming", "phd": "PHD", "score": "weighted score"}


def grouped(runs: dict, widths) -> dict:
    """``{(method, bits): [runs over seeds]}`` of Table 1's plain cells at ``widths``, from
    ``{Cell: Run}`` (:func:`phdlib.report.by_method`), as the ablations take them."""
    return {(m, b): rs for b in widths for m, rs in by_method(runs, bits=b).items()}


def tests_table(tests: pd.DataFrame) -> pd.DataFrame:
    """:func:`phdlib.studies.ablation.distance_tests` for display: rows (bits, method, metric);
    columns difference, 95% CI, p (adjusted), verdict."""
    t = tests.assign(method=tests["method"].map(methods.label),
                     metric=tests["metric"].map(METRIC_LABELS))
    out = pd.DataFrame({
        "PHD − Hamming": [num(v, sign=True) for v in t["mean_diff"]],
        "95% CI": [f"{num(a, sign=True)} to {num(b, sign=True)}"
                   for a, b in zip(t["ci_low"], t["ci_high"])],
        "adjusted p": [p_text(p) for p in t["p_adj"]],
        "verdict": t["verdict"],
    })
    out.index = pd.MultiIndex.from_frame(t[["bits", "method", "metric"]])
    return out


def distance_table(table: pd.DataFrame, tests: pd.DataFrame,
                   metric: str = "ndcg@10") -> pd.DataFrame:
    """One metric of :func:`phdlib.studies.ablation.distance_ablation` and its tests in one table for
    reading: rows (bits, method); columns what the codes were learned for, the metric ranked
    by Hamming and by PHD, the difference with its 95% CI, the adjusted p and the verdict."""
    rows = {}
    for (b, m), g in table.groupby(["bits", "method"], sort=False):
        by = g.set_index("ranked by")[metric]
        t = tests[(tests["bits"] == b) & (tests["method"] == m) & (tests["metric"] == metric)]
        t = t.iloc[0]
        rows[(int(b), methods.label(m))] = {
            "learned for": DISTANCE_LABELS.get(g["learned for"].iloc[0], g["learned for"].iloc[0]),
            "ranked by Hamming": num(by["hamming"]), "ranked by PHD": num(by["phd"]),
            "PHD − Hamming": num(t["mean_diff"], sign=True),
            "95% CI": f"{num(t['ci_low'], sign=True)} to {num(t['ci_high'], sign=True)}",
            "adjusted p": p_text(t["p_adj"]), "verdict": t["verdict"]}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.names = ["bits", "method"]
    return out


def gap_table(gap: pd.DataFrame) -> pd.DataFrame:
    """:func:`phdlib.studies.ablation.bias_gap` for display: one row per metric, the three arms
    (``gap.attrs["arms"]``: VH's by default), the share closed with its range over seeds, and
    the two adjusted p-values."""
    base, bias, phd = arms = gap.attrs.get("arms", BIAS_ARMS)
    label = methods.label
    rows = {}
    for _, g in gap.iterrows():
        closed = "n/a" if not np.isfinite(g["closed"]) else f"{100 * g['closed']:.0f}%"
        if np.isfinite(g["closed_std"]):
            closed += f" ({100 * g['closed_min']:.0f}% to {100 * g['closed_max']:.0f}%)"
        rows[METRIC_LABELS[g["metric"]]] = {
            **{label(m): num(g[m]) for m in arms},
            "closed (range over seeds)": closed,
            f"{label(bias)} vs {label(base)}": p_text(g[f"p {bias} vs {base}"]),
            f"{label(phd)} vs {label(bias)}": p_text(g[f"p {phd} vs {bias}"]),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def shares(gaps: dict[int, pd.DataFrame], metric: str = "ndcg@10"
           ) -> tuple[str, list[str]] | None:
    """The share of the VH -> VH_PHD gap that VH+bias closes, for a sentence: ``(words,
    parts)``, words for the whole range over widths and seeds
    (:func:`phdlib.studies.ablation.share_words`) and one part per width (``"42% at 32 bits (23% to
    62% over 5 seeds)"``); None where no width has a gain to close."""
    parts, ranges = [], []
    for b, g in gaps.items():
        row = g.set_index("metric").loc[metric]
        rng = share_range(row)
        if rng is None:
            continue
        ranges.append(rng)
        s = f"{pct(100 * row['closed'], 0, sign=False)} at {b} bits"
        if np.isfinite(row["closed_std"]):
            s += (f" ({pct(100 * row['closed_min'], 0, sign=False)} to "
                  f"{pct(100 * row['closed_max'], 0, sign=False)} over {int(row['seeds'])} seeds)")
        parts.append(s)
    if not parts:
        return None
    return share_words(min(r[0] for r in ranges), max(r[1] for r in ranges)), parts


def reach_parts(reach: pd.DataFrame) -> list[str]:
    """Per width, how close the best Hamming-trained code ranked by PHD comes to VH_PHD
    (:func:`phdlib.studies.ablation.phd_reach`), or how far above it it is."""
    best = reach.loc[reach.groupby("bits")["phd"].idxmax()]
    return [(f"{methods.label(r.method)} at {r.bits} bits comes within {num(r.below_target)}"
             if r.below_target >= 0 else
             f"{methods.label(r.method)} at {r.bits} bits is above it by {num(-r.below_target)}")
            for r in best.itertuples()]


def summary(tests: pd.DataFrame, gaps: dict[int, pd.DataFrame], reach: pd.DataFrame,
            metric: str = "ndcg@10") -> list[str]:
    """The chapter's answer in a few computed sentences (Markdown)."""
    out = []
    nd = tests[tests["metric"] == metric]
    ham = nd[nd["method"].map(lambda m: methods.get(m).ranks_by) == "hamming"]
    if len(ham):
        helped = ham[ham["verdict"] == "PHD better"]
        lead = ("**Ranking by PHD alone helps codes learned for the Hamming distance.**"
                if len(helped) == len(ham) else
                "**Ranking by PHD alone does not help codes learned for the Hamming distance.**"
                if len(helped) == 0 else
                "**Ranking by PHD alone helps some Hamming-trained codes, not all.**")
        out.append(
            f"{lead} Ranking codes learned for the Hamming distance "
            f"by PHD changes {METRIC_LABELS[metric]} by {num(ham['mean_diff'].min(), sign=True)} "
            f"to {num(ham['mean_diff'].max(), sign=True)}; it is a significant gain for "
            f"{len(helped)} of {len(ham)} (method, width) pairs.")
    phd = nd[nd["method"] == "vh-phd"]
    if len(phd):
        out.append(
            "VH_PHD's own codes ranked by Hamming instead of PHD change by "
            + " and ".join(f"{num(-d, sign=True)} at {b} bits" for b, d in
                           zip(phd["bits"], phd["mean_diff"])) + f" {METRIC_LABELS[metric]}.")
    if len(reach):
        out.append("**Without retraining**, the best Hamming-trained codes ranked by PHD, "
                   f"against VH_PHD's {METRIC_LABELS[metric]}: " + "; ".join(reach_parts(reach))
                   + ".")
    shared = shares(gaps, metric)
    if shared:
        words, parts = shared
        out.append(f"**A per-user bias closes {words} PHD's gain:** VH trained with a "
                   "per-user bias (VH+bias), which ranks exactly like VH, closes "
                   + " and ".join(parts) + f" of the {METRIC_LABELS[metric]} gap from VH to "
                   "VH_PHD.")
    return out


def conclusion(tests: pd.DataFrame, gaps: dict[int, pd.DataFrame], reach: pd.DataFrame,
               metric: str = "ndcg@10") -> list[str]:
    """The chapter's closing statements: the distance alone (one sentence over every
    Hamming-trained code, :func:`summary`'s) and, per width, the bias arm's share of the gap with
    its tests (:func:`phdlib.studies.ablation.findings`' width sentences); the per-code lines stay in the
    tables above."""
    first = [line for line in summary(tests, gaps, reach, metric)
             if line.startswith("**Ranking by PHD alone")]
    widths = tuple(f"{b} bits:" for b in gaps)
    return first + [line for line in ablation_findings(tests, gaps) if line.startswith(widths)]
