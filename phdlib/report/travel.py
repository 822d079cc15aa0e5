"""The chapter "Does the gain travel?": its tables and its computed findings.

From :mod:`phdlib.studies.travel`'s frames: :func:`arms_table` lays out one
dataset's arms (mean ± std over seeds, the better of each learner's Hamming
and PHD arms in bold), :func:`gains_table` the paired tests of PHD against
Hamming per learner, and :func:`findings` / :func:`conclusion` say in
sentences, computed from the numbers, whether the gain travels to DCF, and
what the two ablation questions answer for each learner.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import methods
from ..evaluation.metrics import METRIC_LABELS, METRICS
from ..studies import ablation as sab
from ..studies.travel import ARMS
from . import ablation as rablation
from .groups import by_method
from .page import and_list, mean_std, num, p_text, pct
from .style import dataset_label

__all__ = ["grouped", "arms_table", "gains_table", "offset_table", "distance_table", "cost_table", "headline", "summary", "findings", "conclusion", "learner_label",
           "travels"]

#: How a learner is named on the page.
LEARNER_LABELS = {"vh": "VH", "dcf": "DCF"}


def grouped(runs: dict, widths) -> dict:
    """``{(dataset, method, bits): [runs over seeds]}`` of the arms of
    :data:`phdlib.studies.travel.ARMS` from ``{dataset: {Cell: Run}}`` (plain cells,
    :func:`phdlib.report.by_method`), as :mod:`phdlib.studies.travel` takes them."""
    arms = {m for a in ARMS.values() for m in a}
    return {(ds, m, int(b)): rs for ds, cell_runs in runs.items() for b in widths
            for m, rs in by_method(cell_runs, bits=b).items() if m in arms}


def learner_label(learner: str) -> str:
    """``"dcf"`` -> ``"DCF"``."""
    return LEARNER_LABELS.get(learner, learner)


def arms_table(table: pd.DataFrame, dataset: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(shown, bold)``: :func:`phdlib.studies.travel.learner_table`'s rows of ``dataset``;
    rows (bits, method), one column per metric as ``mean ± std``; bold marks, per width and
    learner, the better of its Hamming and PHD arms (the offset arm does not compete)."""
    t = table[table["dataset"] == dataset]
    shown, bold = {}, {}
    for _, r in t.iterrows():
        key = (int(r["bits"]), methods.label(r["method"]))
        shown[key] = {METRIC_LABELS[k]: mean_std(r[k], r[f"{k} std"]) for k in METRICS}
        rivals = t[(t["bits"] == r["bits"]) & (t["learner"] == r["learner"])
                   & (t["arm"] != "offset")]
        bold[key] = {METRIC_LABELS[k]: bool(r["arm"] != "offset" and len(rivals) > 1
                                            and r[k] == rivals[k].max()) for k in METRICS}
    out, marks = (pd.DataFrame.from_dict(d, orient="index") for d in (shown, bold))
    for f in (out, marks):
        f.index.names = ["bits", "method"]
    return out, marks


def gains_table(tests: pd.DataFrame) -> pd.DataFrame:
    """:func:`phdlib.studies.travel.gain_tests` for reading: rows (dataset, bits, learner,
    metric); the two arms' means, the difference (absolute and relative), its 95% CI, the
    adjusted p and the verdict."""
    rows = {}
    for _, r in tests.iterrows():
        rows[(dataset_label(r["dataset"]), int(r["bits"]), learner_label(r["learner"]),
              METRIC_LABELS[r["metric"]])] = {
            "for Hamming": num(r["hamming"]), "for PHD": num(r["phd"]),
            "PHD − Hamming": f"{num(r['mean_diff'], sign=True)} ({pct(100 * r['rel'])})",
            "95% CI": f"{num(r['ci_low'], sign=True)} to {num(r['ci_high'], sign=True)}",
            "adjusted p": p_text(r["p_adj"]), "verdict": r["verdict"]}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.names = ["dataset", "bits", "learner", "metric"]
    return out


def offset_table(gaps: dict, metric: str = "ndcg@10") -> pd.DataFrame:
    """The offset question in one table: rows (dataset, bits, learner); the three arms' values
    of ``metric``, the share of the gap the offset arm closes (range over seeds) and the
    adjusted p of the PHD arm against the offset arm."""
    rows = {}
    for (ds, b, learner), g in gaps.items():
        base, bias, phd = g.attrs["arms"]
        r = g.set_index("metric").loc[metric]
        closed = "n/a (no gain)" if sab.share_range(r, (base, bias, phd)) is None else (
            f"{100 * r['closed']:.0f}%" + (f" ({100 * r['closed_min']:.0f}% to "
                                           f"{100 * r['closed_max']:.0f}%)"
                                           if np.isfinite(r["closed_std"]) else ""))
        rows[(dataset_label(ds), int(b), learner_label(learner))] = {
            "for Hamming": num(r[base]), "with offset": num(r[bias]), "for PHD": num(r[phd]),
            "gap closed by the offset": closed.replace("-", "−"),
            "offset vs Hamming": p_text(r[f"p {bias} vs {base}"]),
            "PHD vs offset": p_text(r[f"p {phd} vs {bias}"])}
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.names = ["dataset", "bits", "learner"]
    return out


def distance_table(table: pd.DataFrame, tests: pd.DataFrame, dataset: str,
                   metric: str = "ndcg@10") -> pd.DataFrame:
    """:func:`phdlib.report.ablation.distance_table` of one dataset of
    :func:`phdlib.studies.travel.distance_tests`' frames."""
    return rablation.distance_table(table[table["dataset"] == dataset].drop(columns="dataset"),
                                    tests[tests["dataset"] == dataset].drop(columns="dataset"),
                                    metric)


def cost_table(cost: pd.DataFrame) -> pd.DataFrame:
    """:func:`phdlib.studies.travel.sweep_cost` for reading: rows (dataset, bits, method);
    rounds, mean seconds per round and the ratio to DCF's."""
    out = pd.DataFrame({"rounds": cost["rounds"].astype(int),
                        "seconds per round": [f"{s:.3f}" for s in cost["seconds"]],
                        "ratio to DCF": [f"{r:.2f}" for r in cost["ratio"]]})
    out.index = pd.MultiIndex.from_arrays(
        [cost["dataset"].map(dataset_label), cost["bits"].astype(int),
         cost["method"].map(methods.label)], names=["dataset", "bits", "method"])
    return out


def travels(tests: pd.DataFrame, learner: str = "dcf", metric: str = "ndcg@10") -> tuple[int, int]:
    """(significant PHD gains, comparisons) of ``learner`` on ``metric`` over (dataset, bits)."""
    t = tests[(tests["learner"] == learner) & (tests["metric"] == metric)]
    return int((t["verdict"] == "PHD better").sum()), len(t)


def _where(t: pd.DataFrame) -> str:
    return and_list([f"{dataset_label(r.dataset)} {r.bits} bits" for r in t.itertuples()])


def _learner_line(tests: pd.DataFrame, learner: str, metric: str) -> str | None:
    t = tests[(tests["learner"] == learner) & (tests["metric"] == metric)]
    if t.empty:
        return None
    name, phd = learner_label(learner), methods.label(ARMS[learner][2]).replace(" (ours)", "")
    better, n = travels(tests, learner, metric)
    worse = t[t["verdict"] == "Hamming better"]
    lead = (f"**{phd} beats {name} in all {n} comparisons.**" if better == n else
            f"**{phd} never beats {name} significantly.**" if better == 0 else
            f"**{phd} beats {name} in {better} of {n} comparisons.**")
    diffs = "; ".join(f"{dataset_label(r.dataset)} {r.bits} bits {num(r.mean_diff, sign=True)} "
                      f"({pct(100 * r.rel)}, {p_text(r.p_adj)})" for r in t.itertuples())
    tail = (f" {name} is significantly better at {_where(worse)}." if len(worse) else "")
    return f"{lead} {METRIC_LABELS[metric]}, {phd} minus {name}: {diffs}.{tail}"


def _offset_line(gaps: dict, learner: str, metric: str) -> str | None:
    shares, parts, ranges = [], [], []
    for (ds, b, ln), g in gaps.items():
        if ln != learner:
            continue
        arms = g.attrs["arms"]
        r = g.set_index("metric").loc[metric]
        rng = sab.share_range(r, arms)
        if rng is None:
            parts.append(f"{dataset_label(ds)} {b} bits: no gain to close")
            continue
        ranges.append(rng)
        shares.append(float(r["closed"]))
        parts.append(f"{dataset_label(ds)} {b} bits {pct(100 * r['closed'], 0, sign=False)}")
    if not parts:
        return None
    name = learner_label(learner)
    off = methods.label(ARMS[learner][1]).replace(" (ours)", "")
    what = (f"{off} ({name} with a real offset per user in training, ranking exactly as "
            f"{name}) closes this share of the {METRIC_LABELS[metric]} gap from {name} to "
            f"its PHD arm: " + "; ".join(parts) + ".")
    if not ranges:
        return f"**{off}:** there is no gain of the PHD arm over {name} to explain; " + what
    if max(shares) <= 0:
        return (f"**A per-user offset explains none of the gain for {name}:** {off} is not "
                f"above {name} in any of the {len(shares)} comparisons. " + what)
    words = sab.share_words(min(r[0] for r in ranges), max(r[1] for r in ranges))
    return (f"**A per-user offset explains {words} the gain for {name} (range over datasets, "
            f"widths and seeds):** " + what)


def _distance_line(dtests: pd.DataFrame, learner: str, metric: str) -> str | None:
    ham, _, phd = ARMS[learner]
    t = dtests[dtests["metric"] == metric]
    a, b = t[t["method"] == ham], t[t["method"] == phd]
    if a.empty and b.empty:
        return None
    name_h = methods.label(ham).replace(" (ours)", "")
    name_p = methods.label(phd).replace(" (ours)", "")

    def say(rows, what):
        better = (rows["verdict"] == "PHD better").sum()
        worse = (rows["verdict"] == "Hamming better").sum()
        rng = f"{num(rows['mean_diff'].min(), sign=True)} to {num(rows['mean_diff'].max(), sign=True)}"
        return (f"{what} changes {METRIC_LABELS[metric]} by {rng} (PHD minus Hamming ranking; "
                f"PHD significantly better in {better}, Hamming in {worse} of {len(rows)})")

    parts = []
    if len(a):
        parts.append(say(a, f"ranking {name_h}'s codes by PHD"))
    if len(b):
        parts.append(say(b, f"ranking {name_p}'s codes by PHD rather than Hamming"))
    return f"**The distance alone, {learner_label(learner)}:** " + "; ".join(parts) + "."


def findings(tests: pd.DataFrame, gaps: dict, dtests: pd.DataFrame,
             metric: str = "ndcg@10") -> list[str]:
    """The chapter's answer in computed sentences: per learner whether the PHD arm beats the
    Hamming arm (and where), then per learner how much of the gap a per-user offset closes."""
    out = [line for ln in ARMS for line in [_learner_line(tests, ln, metric)] if line]
    out += [line for ln in ARMS for line in [_offset_line(gaps, ln, metric)] if line]
    return out


def headline(tests: pd.DataFrame, metric: str = "ndcg@10") -> str | None:
    """One sentence for the landing page: does DCF fitted to PHD beat DCF, per width (from
    :func:`phdlib.studies.travel.gain_tests` of one dataset); None without DCF's arms."""
    t = tests[(tests["learner"] == "dcf") & (tests["metric"] == metric)]
    if t.empty:
        return None
    better, n = travels(tests, "dcf", metric)
    lead = ("**The gain travels to a second learner.**" if better == n else
            "**The gain does not travel to a second learner.**" if better == 0 else
            "**The gain travels to a second learner at some widths.**")
    parts = "; ".join(f"{num(r.mean_diff, sign=True)} ({pct(100 * r.rel)}, {p_text(r.p_adj)}) "
                      f"at {r.bits} bits" for r in t.itertuples())
    return (f"{lead} DCF's discrete learner fitted to PHD instead of the inner product "
            f"(DCF_PHD, ours) against DCF, {METRIC_LABELS[metric]}: {parts}. See {{doc}}`travel`.")


def summary(tests: pd.DataFrame, gaps: dict, dtests: pd.DataFrame,
            metric: str = "ndcg@10") -> list[str]:
    """The chapter's opening answer: :func:`conclusion`'s lead sentence, then :func:`findings`."""
    return conclusion(tests, gaps, dtests, metric)[:1] + findings(tests, gaps, dtests, metric)


def conclusion(tests: pd.DataFrame, gaps: dict, dtests: pd.DataFrame,
               metric: str = "ndcg@10") -> list[str]:
    """The closing statements: whether the gain travels to DCF in one sentence computed from
    the tests, then the distance-alone and offset answers for each learner."""
    dcf_b, dcf_n = travels(tests, "dcf", metric)
    vh_b, vh_n = travels(tests, "vh", metric)
    if dcf_n == 0:
        head = "DCF_PHD was not run, so this build cannot say whether the gain travels."
    elif dcf_b == dcf_n:
        head = (f"**The gain travels.** Learning codes for PHD beats learning them for the Hamming "
                f"distance with DCF's discrete learner in all {dcf_n} (dataset, width) comparisons "
                f"on {METRIC_LABELS[metric]}, as it does with VH in {vh_b} of {vh_n}.")
    elif dcf_b == 0:
        head = (f"**The gain does not travel.** With DCF's discrete learner, learning codes for "
                f"PHD is never significantly better than learning them for the Hamming distance "
                f"({dcf_n} comparisons on {METRIC_LABELS[metric]}); with VH it is in {vh_b} of "
                f"{vh_n}.")
    else:
        head = (f"**The gain travels in part.** With DCF's discrete learner, learning codes for "
                f"PHD is significantly better in {dcf_b} of {dcf_n} (dataset, width) comparisons "
                f"on {METRIC_LABELS[metric]}; with VH in {vh_b} of {vh_n}.")
    out = [head]
    out += [line for ln in ARMS for line in [_distance_line(dtests, ln, metric)] if line]
    out += [line for ln in ARMS for line in [_offset_line(gaps, ln, metric)] if line]
    return out
