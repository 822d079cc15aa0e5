"""The section on lazy Adam (chapter "Cost at scale"): its tables and computed findings.

From :mod:`phdlib.studies.lazy`'s frames: :func:`arms_frame` lays out the four
methods (mean ± std over seeds, the better optimiser of each method in bold),
:func:`tests_frame` the paired tests of lazy against dense Adam,
:func:`activity_frame` the per-user differences by the users' activity, and
:func:`findings` says in sentences, computed from the numbers, whether the
decay of untouched rows matters to VH and to VH_PHD, where, and whether lazy
Adam could replace the paper's.
"""
from __future__ import annotations

import pandas as pd

from .. import methods
from ..evaluation.metrics import METRIC_LABELS, METRICS
from ..studies.lazy import PAIRS
from .page import and_list, mean_std, num, p_text, signed

__all__ = ["arms_frame", "tests_frame", "activity_frame", "training_frame", "findings",
           "default_line"]


def arms_frame(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(shown, bold)``: rows (bits, method label), one column per metric as
    ``mean ± std``; bold marks, per width and method, the better of dense and lazy Adam."""
    shown, bold = {}, {}
    for _, r in table.iterrows():
        key = (int(r["bits"]), methods.label(r["method"]))
        rivals = table[(table["bits"] == r["bits"]) & (table["base"] == r["base"])]
        shown[key] = {METRIC_LABELS[k]: mean_std(r[k], r[f"{k} std"]) for k in METRICS}
        bold[key] = {METRIC_LABELS[k]: bool(len(rivals) > 1 and r[k] == rivals[k].max())
                     for k in METRICS}
    out, marks = (pd.DataFrame.from_dict(d, orient="index") for d in (shown, bold))
    for f in (out, marks):
        f.index.names = ["bits", "method"]
    return out, marks


def tests_frame(tests: pd.DataFrame) -> pd.DataFrame:
    """Rows (bits, method label, metric label): dense, lazy, Δ (lazy minus dense), its 95%
    interval and the Bonferroni-adjusted p-value, as text."""
    rows = {}
    for _, t in tests.iterrows():
        key = (int(t["bits"]), methods.label(t["method"]), METRIC_LABELS[t["metric"]])
        rows[key] = {"dense Adam": num(t["dense"]), "lazy Adam": num(t["lazy"]),
                     "Δ lazy − dense": signed(t["mean_diff"]),
                     "95% interval": f"[{signed(t['ci_low'])}, {signed(t['ci_high'])}]",
                     "p (adjusted)": p_text(t["p_adj"])}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.names = ["bits", "method", "metric"]
    return out


def activity_frame(act: pd.DataFrame) -> pd.DataFrame:
    """Rows: quartile of the users' training ratings (``"1 (20-35)"``); columns (bits,
    method label): the mean per-user difference, lazy minus dense, as text."""
    out = act.assign(q=[f"{q} ({r})" for q, r in zip(act["quartile"], act["ratings"])],
                     col=[f"{methods.label(m)}, {b} bits" for m, b in
                          zip(act["method"], act["bits"])])
    wide = out.pivot(index="q", columns="col", values="diff")
    wide.index.name = "quartile (training ratings)"
    wide.columns.name = None
    return wide.map(signed)


def training_frame(train: pd.DataFrame) -> pd.DataFrame:
    """Rows (bits, method label): the best validation iteration and ms per iteration."""
    out = pd.DataFrame({
        "best iteration": [f"{v:,.0f}" for v in train["best_iteration"]],
        "ms / iteration": [f"{v:.3f}" for v in train["ms_per_iteration"]],
    }, index=pd.MultiIndex.from_arrays(
        [train["bits"].astype(int).to_numpy(), [methods.label(m) for m in train["method"]]],
        names=["bits", "method"]))
    return out


def _differs(tests: pd.DataFrame, metric: str) -> pd.DataFrame:
    t = tests[tests["metric"] == metric]
    return t[t["verdict"] != "no significant difference"]


def findings(tests: pd.DataFrame, gains: pd.DataFrame, act: pd.DataFrame,
             metric: str = "ndcg@10") -> list[str]:
    """The section's findings, computed: per method, whether lazy Adam changes it; how
    VH_PHD's gain over VH moves; where in the users' activity the difference lies."""
    out = []
    name = METRIC_LABELS[metric]
    for dense in PAIRS:
        t = tests[(tests["method"] == dense) & (tests["metric"] == metric)]
        if not len(t):
            continue
        parts = [f"{signed(r['mean_diff'])} at {int(r['bits'])} bits ({p_text(r['p_adj'])})"
                 for _, r in t.sort_values("bits").iterrows()]
        sig = t[t["verdict"] != "no significant difference"]
        if len(sig) == 0:
            verdict = "does not change it significantly"
        elif (sig["mean_diff"] < 0).all():
            verdict = "makes it worse"
        elif (sig["mean_diff"] > 0).all():
            verdict = "makes it better"
        else:
            verdict = "moves it both ways"
        out.append(f"Lazy Adam {verdict} for {methods.label(dense)}: {name} "
                   f"{and_list(parts)}.")
    if len(gains):
        g = gains.pivot(index="bits", columns="adam", values="gain")
        if {"dense", "lazy"} <= set(g.columns):
            parts = [f"{signed(r['dense'])} with dense Adam and {signed(r['lazy'])} with lazy "
                     f"Adam at {int(b)} bits" for b, r in g.iterrows()]
            out.append(f"VH_PHD's gain over VH in {name} is {and_list(parts)}.")
    if len(act):
        worst = {}
        for _, a in act.groupby(["bits", "method"]):
            q = int(a.loc[a["diff"].idxmin(), "quartile"])
            worst[q] = worst.get(q, 0) + 1
        n, top = sum(worst.values()), max(worst, key=worst.get)
        where = {1: "the least active quarter of users", int(act["quartile"].max()):
                 "the most active quarter of users"}.get(top, f"users of quartile {top}")
        lo = act[act["quartile"] == 1]["ratings"].iloc[0]
        hi = act[act["quartile"] == act["quartile"].max()]["ratings"].iloc[0]
        out.append(f"Lazy Adam costs most among {where} in {worst[top]} of the {n} "
                   f"comparisons (the quarters run from {lo} to {hi} training ratings; "
                   "the table below gives each).")
    return out


def default_line(tests: pd.DataFrame, metric: str = "ndcg@10") -> str:
    """Whether lazy Adam may become a default: only where no test tells it from dense."""
    sig = tests[tests["verdict"] != "no significant difference"]
    if len(tests) and not len(sig):
        return ("No metric of any width or method tells lazy Adam from the paper's dense "
                "Adam; it would be eligible as a faster default, but the dense semantics "
                "stay the default, since the exact sparse update already costs only the "
                "rows a batch touches.")
    where = sorted({f"{methods.label(m)} at {int(b)} bits"
                    for m, b in zip(sig["method"], sig["bits"])})
    return ("Table 1's tests tell lazy Adam from the paper's dense Adam (" + and_list(where)
            + "), so lazy Adam is the default nowhere; the exact sparse update gives the "
            "dense semantics at the cost of the rows a batch touches.")
