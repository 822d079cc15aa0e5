"""The landing page's "What this reproduction finds": a few computed sentences, each linking
to the chapter that shows it in full.

Every sentence is computed from stored runs through the same functions the chapters use
(:func:`phdlib.report.table1`, :mod:`phdlib.ablation`, :mod:`phdlib.report.protocol`,
:mod:`phdlib.report.serving`); nothing is written in advance of the numbers. The
sentences are MyST Markdown (bold lead, ``{doc}`` link to the chapter) for
:func:`phdlib.report.page.findings`.
"""
from __future__ import annotations

import numpy as np

from .. import ablation, methods
from ..metrics import METRIC_LABELS
from .groups import by_method
from .page import num
from .style import PHD, label
from .table1 import Table1, table1

__all__ = ["seeds_text", "paper_claim", "item_mean", "bias_share", "phd_without_retraining", "headline"]

_NAME = METRIC_LABELS["ndcg@10"]


def seeds_text(n: int) -> str:
    """``"one model seed"``, ``"the mean of 5 model seeds"``."""
    return "one model seed" if n == 1 else f"the mean of {n} model seeds"


def paper_claim(tables: dict[int, Table1], seeds: int) -> str | None:
    """Does VH_PHD beat every Hamming method under the paper's protocol, by how much, and is
    it significant; the paper's Delta% beside ours. ``tables``: ``{bits: Table1}``."""
    parts, verdicts = [], []
    for b, t in tables.items():
        v = t.values
        if t.missing and PHD in t.missing:
            return None
        ham = [m for m in t.hamming if m not in t.missing]
        if not ham:
            return None
        best = max(ham, key=lambda m: v.loc[m, ("ndcg@10", "ours")])
        ours, paper = t.delta["ours"].get("ndcg@10"), t.delta["paper"].get("ndcg@10")
        above = v.loc[PHD, ("ndcg@10", "ours")] > v.loc[best, ("ndcg@10", "ours")]
        sig = t.marks.loc[PHD, "ndcg@10"] == "*"
        verdicts.append(above and sig)
        parts.append(f"at {b} bits VH_PHD is {ours:+.1f}% {_NAME} from the best Hamming method "
                     f"({label(best)}; {'significant' if sig else 'not significant'})"
                     + (f", the paper {paper:+.1f}%" if paper is not None else ""))
    if not parts:
        return None
    lead = ("**The paper's claim holds under its protocol.**" if all(verdicts) else
            "**The paper's claim holds only in part under its protocol.**" if any(verdicts) else
            "**The paper's claim does not hold under its protocol.**")
    return (f"{lead} Codes learned for PHD rank a user's rated items better than codes learned "
            f"for the Hamming distance: " + "; ".join(parts)
            + f" ({seeds_text(seeds)}; paired t-test over users with Bonferroni). "
            "See {doc}`table1`.")


def item_mean(tables: dict[int, Table1]) -> str | None:
    """How the item-mean ranking (one order for every user) compares with the hashing methods."""
    rows = []
    for b, t in tables.items():
        v = t.values
        if "item-mean" not in v.index or "item-mean" in t.missing:
            return None
        hashing = [m for m in methods.names(learns_codes=True, in_paper=True)
                   if m in v.index and m not in t.missing]
        im = v.loc["item-mean", ("ndcg@10", "ours")]
        beaten = [m for m in hashing if v.loc[m, ("ndcg@10", "ours")] < im]
        rows.append((b, im, beaten, hashing))
    if not rows:
        return None
    im = rows[0][1]
    every = all(len(be) == len(h) for _, _, be, h in rows)
    some = any(be for _, _, be, _ in rows)
    lead = ("**No personalisation beats every hashing method.**" if every else
            "**A ranking without personalisation beats some hashing methods.**" if some else
            "**Every hashing method beats the ranking without personalisation.**")
    detail = "; ".join(f"at {b} bits it is above {len(be)} of {len(h)}"
                       + (" (VH_PHD included)" if PHD in be else "") for b, _, be, h in rows)
    return (f"{lead} Ranking every user's items by their mean training rating, the same order "
            f"for all users, scores {_NAME} {num(im)}: {detail}. Under the paper's protocol "
            "only the items a user rated are ranked, so much of the score needs no model of "
            "the user. See {doc}`table1` and {doc}`protocol`.")


def bias_share(gaps: dict) -> str | None:
    """The share of the VH -> VH_PHD gap that a per-user training bias closes, with its spread
    over seeds. ``gaps``: ``{bits: ablation.bias_gap(...)}``."""
    parts, lows = [], []
    for b, g in gaps.items():
        row = g.set_index("metric").loc["ndcg@10"]
        if not np.isfinite(row["closed"]):
            continue
        lows.append(row["closed_min"] if np.isfinite(row["closed_min"]) else row["closed"])
        s = f"{100 * row['closed']:.0f}% at {b} bits"
        if np.isfinite(row["closed_std"]):
            s += (f" ({100 * row['closed_min']:.0f}% to {100 * row['closed_max']:.0f}% over "
                  f"{int(row['seeds'])} seeds)")
        parts.append(s)
    if not parts:
        return None
    lo = min(lows)
    size = ("most of" if lo >= 0.5 else "a large share of" if lo >= 0.25 else
            "a small share of" if lo > 0 else "none of")
    verb = "closes" if lo >= 0 else "changes by"
    return (f"**A per-user bias explains {size} PHD's gain.** Under PHD a user who switches a "
            "bit off adds one to every item's training score, a per-user offset Hamming codes "
            "cannot express. VH trained with a learned per-user bias, and ranked exactly like "
            f"VH, {verb} {' and '.join(parts)} of the {_NAME} gap from VH to VH_PHD. See "
            "{doc}`ablation`.")


def phd_without_retraining(reach) -> str | None:
    """How close the best Hamming-trained codes, ranked by PHD, come to VH_PHD
    (:func:`phdlib.ablation.phd_reach`)."""
    if reach is None or not len(reach):
        return None
    best = reach.loc[reach.groupby("bits")["phd"].idxmax()]
    parts = [f"{label(r.method)} at {r.bits} bits comes within {num(r.below_target)}"
             for r in best.itertuples()]
    return ("**PHD ranking without retraining.** Codes learned for the Hamming distance, ranked "
            f"by PHD as they are: {'; '.join(parts)} {_NAME} of VH_PHD. See {{doc}}`ablation`.")


def headline(runs: dict, split, dataset: str, widths=(32, 64), seeds: int = 1,
             extra=()) -> tuple[list[str], dict]:
    """The landing page's computed findings from Table 1's runs (with arrays).

    runs: ``{Cell: Run}`` of Table 1's part, every seed. extra: more finding sentences
    (from the protocol and serving chapters' functions) appended in order. Returns
    ``(sentences, parts)``: the Markdown sentences (missing inputs leave theirs out) and the
    tables they came from (``tables``, ``gaps``, ``reach``), for a page that wants them.
    """
    tables = {b: table1(runs, dataset, b) for b in widths}
    grouped = {(m, b): rs for b in widths for m, rs in by_method(runs, bits=b).items()}
    gaps = {b: ablation.bias_gap(grouped, b) for b in widths
            if all((m, b) in grouped for m in ablation.BIAS_ARMS)}
    code_runs = {k: v for k, v in grouped.items()
                 if methods.get(k[0]).learns_codes}
    table, _ = ablation.distance_ablation(code_runs, split)
    reach = ablation.phd_reach(table) if len(table) else None
    out = [paper_claim(tables, seeds), item_mean(tables), bias_share(gaps),
           phd_without_retraining(reach), *extra]
    return [s for s in out if s], {"tables": tables, "gaps": gaps, "reach": reach}
