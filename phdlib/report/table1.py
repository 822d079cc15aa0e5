"""The paper's Table 1 from stored runs: values, significance, the Delta% row, findings.

:func:`table1` builds a :class:`Table1` for one dataset and width from
``{Cell: Run}`` (usually :func:`phdlib.experiments.ensure`); its ``values``
are :func:`phdlib.report.comparison`'s layout for that width.
:func:`format_table1` lays it out for display and :func:`table1_findings`
states, computed, where it agrees with the paper's findings (Section 5.4).
The method lists come from the registry: the paper's methods
(``methods.names(in_paper=True)``), our additions (``methods.names(in_paper=False, variant=False)``)
and the Hamming baselines (:func:`phdlib.methods.hashing_baselines`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
import pandas as pd

from .. import methods, paper
from ..evaluation import stats
from .compare import TOLERANCE, comparison
from .groups import by_method, per_user
from .page import best_mask, num, p_text, pct
from .page import table as page_table
from .style import METRIC_LABELS, METRICS, MF, PHD, dataset_label, fmt_value, label

__all__ = ["Table1", "table1", "format_table1", "table1_html", "table1_findings",
           "significance_table", "additions_findings", "FINDING3_METHODS"]

#: The Hamming methods the paper's finding 3 says score alike.
FINDING3_METHODS = ("cccf", "dcf", "vh")


@dataclass
class Table1:
    """Table 1 for one dataset and width.

    values: rows = methods (paper's, then ours; index ``method``), columns
    MultiIndex (metric, field) with fields ``ours``, ``std``, ``n``, ``paper``,
    ``diff`` (see :mod:`phdlib.report.compare`).
    marks: rows = methods, columns = metrics: ``"*"`` where the method is
    significantly better than every Hamming baseline in that column, else ``""``.
    pvalues: :func:`phdlib.evaluation.stats.compare`'s rows (method, baseline, metric, p, p_adj, ...).
    delta: ``{"ours": {metric: %}, "paper": {metric: %}}`` (VH_PHD over the best Hamming method).
    paper_methods, additions, hamming: the method lists used; missing: methods without runs.
    """

    dataset: str
    bits: int
    values: pd.DataFrame
    marks: pd.DataFrame
    pvalues: pd.DataFrame
    delta: dict
    paper_methods: list
    additions: list
    missing: list
    hamming: list = field(default_factory=list)


def _significance(groups: dict, ham: list, index: pd.Index, alpha: float):
    """Marks and p-values: each starred method of the paper against each Hamming method."""
    marked = [m for m in paper.TABLE1_STARRED if m in groups]
    marks = pd.DataFrame("", index=index, columns=list(METRICS))
    pvalues = pd.DataFrame()
    if ham and marked:
        frames = {m: pd.concat([per_user(groups[m], met) for met in METRICS], axis=1,
                               keys=list(METRICS)).rename_axis("user").reset_index()
                  for m in ham + marked}
        kw = dict(correction="bonferroni", family="column", alpha=alpha)
        pvalues = stats.compare(frames, marked, ham, METRICS, **kw)
        sm = stats.significance_marks(frames, marked, ham, METRICS, **kw)
        for m in marked:
            marks.loc[m] = sm.loc[m]
    return marks, pvalues


def _delta(values: pd.DataFrame, groups: dict, ham: list, hamming: list, ref: dict) -> dict:
    """The Delta% row: VH_PHD over the best Hamming method, ours and the paper's, per metric."""
    delta = {"ours": {}, "paper": {}}
    for met in METRICS:
        present = [m for m in ham if not np.isnan(values.loc[m, (met, "ours")])]
        if PHD in groups and present:
            best = max(values.loc[m, (met, "ours")] for m in present)
            delta["ours"][met] = 100.0 * (values.loc[PHD, (met, "ours")] - best) / best
        pd_ref = [ref[m][met] for m in hamming if m in ref]
        if PHD in ref and pd_ref:
            best = max(pd_ref)
            delta["paper"][met] = 100.0 * (ref[PHD][met] - best) / best
    return delta


def table1(runs: dict, dataset: str, bits: int, alpha: float = 0.05,
           paper_methods: Iterable[str] | None = None, additions: Iterable[str] | None = None,
           hamming: Iterable[str] | None = None) -> Table1:
    """Build Table 1 for ``dataset`` at ``bits`` from ``{Cell: Run}``.

    Our value is the mean over seeds (``std`` with ddof=1 when there are
    several). Significance follows the paper: per column, a paired
    two-tailed t-test over users of VH_PHD (and MF) against each Hamming
    method, Bonferroni-corrected over those comparisons, at ``alpha``; a mark
    means significantly better than every one of them. Per-user values are
    averaged over seeds before the test. ``paper_methods``, ``additions``,
    ``hamming`` override the registry's lists (None: the registry's).
    """
    paper_methods = list(methods.names(in_paper=True) if paper_methods is None else paper_methods)
    additions = list(methods.names(in_paper=False, variant=False) if additions is None
                     else additions)
    hamming = list(methods.hashing_baselines() if hamming is None else hamming)
    groups = by_method(runs, bits=bits)
    rows = paper_methods + additions
    values = comparison({(m, bits): groups.get(m, []) for m in rows}, dataset).xs(bits, level="bits")
    missing = [m for m in rows if not groups.get(m)]
    ham = [m for m in hamming if m in groups]
    marks, pvalues = _significance(groups, ham, values.index, alpha)
    delta = _delta(values, groups, ham, hamming, paper.table1(dataset, bits))
    return Table1(dataset, bits, values, marks, pvalues, delta, paper_methods, additions, missing,
                  hamming)


def _delta_row(t: Table1) -> list[str]:
    r = []
    for met in METRICS:
        o, p = t.delta["ours"].get(met), t.delta["paper"].get(met)
        r += ["n/a" if o is None else pct(o), "n/a" if p is None else pct(p),
              "n/a" if o is None or p is None else f"{o - p:+.1f} pt".replace("-", "−")]
    return r


def format_table1(t: Table1) -> pd.DataFrame:
    """Table 1 as strings for display: one block of columns per metric (ours, paper, ours − paper).

    The paper's methods come first, then the Delta% row, then a separator row
    and our additions (which the paper does not report). Rows are labelled
    with :func:`phdlib.methods.label` (``" (not run)"`` appended when missing).
    """
    cols = pd.MultiIndex.from_tuples([(METRIC_LABELS[m], f) for m in METRICS
                                      for f in ("ours", "paper", "ours − paper")])
    out, idx = [], []
    for m in t.paper_methods:
        r, v = [], t.values.loc[m]
        for met in METRICS:
            starred = m in paper.TABLE1_STARRED and not np.isnan(v[(met, "paper")])
            r += [fmt_value(v[(met, "ours")], v[(met, "std")], t.marks.loc[m, met]),
                  fmt_value(v[(met, "paper")], mark="*" if starred else ""),
                  num(v[(met, "diff")], sign=True)]
        out.append(r)
        idx.append(label(m) + (" (not run)" if m in t.missing else ""))
    out.append(_delta_row(t))
    idx.append(f"Δ% ({label(PHD)} vs best Hamming)")
    out.append([""] * len(cols))
    idx.append("— our additions (not in the paper) —")
    for m in t.additions:
        v = t.values.loc[m]
        out.append([x for met in METRICS
                    for x in (fmt_value(v[(met, "ours")], v[(met, "std")]), "–", "–")])
        idx.append(label(m) + (" (not run)" if m in t.missing else ""))
    return pd.DataFrame(out, index=idx, columns=cols)


def table1_html(t: Table1, seeds: int, alpha: float = 0.05):
    """Table 1 at one width for the page: :func:`format_table1` with the best value of each
    metric (ours, over every method shown) in bold and a caption naming the dataset, the
    width, the seeds and the test."""
    shown = format_table1(t)
    rows = [m for m in t.paper_methods + t.additions if m not in t.missing]
    ours = pd.DataFrame({METRIC_LABELS[met]: [t.values.loc[m, (met, "ours")] for m in rows]
                         for met in METRICS}, index=rows)
    best = best_mask(ours)
    bold = pd.DataFrame(False, index=shown.index, columns=shown.columns)
    for m in rows:
        for met in METRICS:
            bold.loc[label(m), (METRIC_LABELS[met], "ours")] = bool(best.loc[m, METRIC_LABELS[met]])
    unit = "dimensions for MF" if any(m.startswith("mf") for m in rows) else ""
    over = "on one model seed" if seeds == 1 else f"mean ± std over {seeds} model seeds"
    caption = (f"Table 1 on {dataset_label(t.dataset)}, {t.bits} bits"
               f"{f' ({t.bits} {unit})' if unit else ''}: "
               f"test NDCG@5, NDCG@10 and MRR, ours {over} beside "
               f"the paper's single run. Best of ours per metric in bold. * on our mean: "
               f"significantly better than every Hamming method of the column (paired two-tailed "
               f"t-test over users on per-user values averaged over seeds, Bonferroni over the "
               f"column's comparisons, α = {alpha}); * on the paper's value: the paper's mark. "
               f"The additions below the line are ours; the paper does not report them (–).")
    return page_table(shown, caption, bold=bold)


def significance_table(tables: dict) -> pd.DataFrame:
    """Every comparison behind Table 1's marks, for display: rows (bits, method, baseline),
    one column per metric holding ``+.0123 (p < 0.001)``: the mean per-user difference
    (method minus baseline) and the Bonferroni-adjusted p-value. ``tables``: ``{bits: Table1}``."""
    rows = []
    for b, t in tables.items():
        for _, r in t.pvalues.iterrows():
            ptxt = p_text(r["p_adj"])
            rows.append({"bits": b, "method": label(r["method"]), "baseline": label(r["baseline"]),
                         "metric": METRIC_LABELS[r["metric"]],
                         "cell": f"{num(r['mean_diff'], sign=True)} ({ptxt})"})
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows).pivot_table(index=["bits", "method", "baseline"], columns="metric",
                                        values="cell", aggfunc="first")
    return df[[METRIC_LABELS[m] for m in METRICS]]


# --------------------------------------------------------------------------- findings


def _phd_findings(t: Table1, ham: list[str]) -> list[str]:
    """Findings (1) VH_PHD beats every hashing baseline, its significance, and (2) Delta% for MRR."""
    v, out = t.values, []
    lost = [(met, m) for met in METRICS for m in ham if v.loc[m, (met, "ours")] >= v.loc[PHD, (met, "ours")]]
    if not lost:
        out.append(f"AGREES (finding 1): VH_PHD is the best hashing method on all three metrics "
                   f"at {t.bits} bits (against {', '.join(label(m) for m in ham)}).")
    else:
        out.append(f"DISAGREES (finding 1): at {t.bits} bits VH_PHD is not above "
                   + "; ".join(f"{label(m)} on {METRIC_LABELS[met]}" for met, m in lost) + ".")
    sig = [met for met in METRICS if t.marks.loc[PHD, met] == "*"]
    fam = int((t.pvalues["metric"] == "ndcg@10").sum()) if len(t.pvalues) else 0
    out.append(f"Significance (paired two-tailed t-test over users, Bonferroni over the {fam} "
               f"comparisons of each column, against {len(ham)} Hamming methods): VH_PHD is "
               f"significantly better than all of them on "
               f"{', '.join(METRIC_LABELS[m] for m in sig) if sig else 'no metric'}"
               f" (the paper marks all three).")
    d = t.delta["ours"]
    if d:
        bigger = d["mrr"] > max(d["ndcg@5"], d["ndcg@10"])
        out.append(("AGREES" if bigger else "DISAGREES")
                   + f" (finding 2): our Δ% is {d['ndcg@5']:+.1f}% / {d['ndcg@10']:+.1f}% / "
                   f"{d['mrr']:+.1f}% (NDCG@5 / NDCG@10 / MRR); the gain is "
                   + ("larger" if bigger else "not larger") + " for MRR than for NDCG.")
    return out


def _hamming_ceiling_finding(t: Table1, have) -> list[str]:
    """Finding (3): the best Hamming methods (CCCF, DCF, VH) score alike.

    Compares the spread of their NDCG@10 with VH_PHD's lead over the best of
    them; the paper's spread is quoted where the paper has numbers.
    """
    v = t.values
    best3 = [m for m in FINDING3_METHODS if have(m)]
    if len(best3) < 2 or not have(PHD):
        return [f"{t.bits} bits: finding 3 needs VH_PHD and at least two of CCCF, DCF, VH."]
    nd = v.loc[best3, ("ndcg@10", "ours")]
    spread = float(nd.max() - nd.min())
    theirs = v.loc[best3, ("ndcg@10", "paper")]
    quoted = "" if theirs.isna().any() else f" (paper {float(theirs.max() - theirs.min()):.4f})"
    gap = float(v.loc[PHD, ("ndcg@10", "ours")] - nd.max())
    verdict = ("AGREES (finding 3): they are closer to each other than to VH_PHD."
               if spread < abs(gap) else
               "DISAGREES (finding 3): their spread is not smaller than VH_PHD's gap.")
    return [f"NDCG@10 of {', '.join(label(m) for m in best3)} spans {spread:.4f}{quoted} at "
            f"{t.bits} bits; VH_PHD is {gap:+.4f} above the best of them. {verdict}"]


def _closeness(t: Table1, have, tolerance: float) -> list[str]:
    """How many of our values of the paper's methods lie within ``tolerance`` of the paper's."""
    close, far = [], []
    for m in t.paper_methods:
        if not have(m):
            continue
        for met in METRICS:
            d = t.values.loc[m, (met, "diff")]
            if np.isnan(d):
                continue
            (close if abs(d) <= tolerance else far).append(f"{label(m)} {METRIC_LABELS[met]} ({d:+.4f})")
    if close or far:
        return [f"Within {tolerance} of the paper: {len(close)} of {len(close) + len(far)} values."
                + (f" Further away: {', '.join(far)}." if far else "")]
    if not paper.table1(t.dataset, t.bits):
        return [f"The paper reports no numbers for {t.dataset}; only our values are shown."]
    return []


def table1_findings(t: Table1, tolerance: float = TOLERANCE) -> list[str]:
    """Plain statements of where our Table 1 agrees with the paper's findings, computed.

    Checks the paper's findings (1) VH_PHD beats every hashing baseline,
    (2) its gain is larger for MRR than for NDCG, (3) the best Hamming methods
    score alike, (4) MF beats every hashing method; and, where the paper has
    numbers, which of our values lie within ``tolerance`` of them.
    """
    v = t.values
    have = lambda m: m in v.index and not np.isnan(v.loc[m, ("ndcg@10", "ours")])  # noqa: E731
    ham = [m for m in t.hamming if have(m)]
    out = _phd_findings(t, ham) if have(PHD) and ham else []
    out.extend(_hamming_ceiling_finding(t, have))
    hashing = ham + ([PHD] if have(PHD) else [])
    if have(MF) and hashing:
        below = [(met, m) for met in METRICS for m in hashing
                 if v.loc[m, (met, "ours")] >= v.loc[MF, (met, "ours")]]
        out.append("AGREES (finding 4): MF beats every hashing method on every metric."
                   if not below else
                   "DISAGREES (finding 4): MF is not above "
                   + "; ".join(f"{label(m)} on {METRIC_LABELS[met]}" for met, m in below) + ".")
    out.extend(_closeness(t, have, tolerance))
    if t.missing:
        out.append("NOT RUN (no stored run of this method): "
                   + ", ".join(label(m) for m in t.missing) + ".")
    return out


def additions_findings(t: Table1, metric: str = "ndcg@10") -> list[str]:
    """What our additions say about the table at one width, computed: how many of the
    paper's hashing methods the item-mean ranking (no personalisation) is above, how far
    ALS-trained MF is from the paper's SGD MF, and where DCF fitted to PHD (DCF_PHD) stands
    against DCF, VH_PHD and the item-mean ranking."""
    v, out = t.values, []
    have = lambda m: m in v.index and m not in t.missing  # noqa: E731
    name = METRIC_LABELS[metric]
    hashing = [m for m in methods.names(learns_codes=True, in_paper=True) if have(m)]
    if have("item-mean") and hashing:
        im = v.loc["item-mean", (metric, "ours")]
        beaten = [m for m in hashing if v.loc[m, (metric, "ours")] < im]
        out.append(f"At {t.bits} bits the item-mean ranking, the same order for every user, scores "
                   f"{name} {num(im)}, above {len(beaten)} of the paper's {len(hashing)} hashing "
                   "methods" + (f" ({', '.join(label(m) for m in beaten)})." if beaten else "."))
    if have("mf-als") and have("mf"):
        d = v.loc["mf-als", (metric, "ours")] - v.loc["mf", (metric, "ours")]
        out.append(f"At {t.bits} dimensions, MF trained by alternating least squares and tuned on "
                   f"validation is {num(d, sign=True)} {name} from the paper's SGD-trained MF.")
    if have("dcf-phd") and have("dcf"):
        x = v.loc["dcf-phd", (metric, "ours")]
        rel = [f"{num(x - v.loc[m, (metric, 'ours')], sign=True)} from {label(m)}"
               for m in ("dcf", "vh-phd", "item-mean") if have(m)]
        out.append(f"At {t.bits} bits DCF's discrete learner fitted to PHD (DCF_PHD, chapter "
                   f"{{doc}}`travel`) scores {name} {num(x)}: " + ", ".join(rel) + ".")
    return out
