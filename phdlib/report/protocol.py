"""Tables and findings of the chapter "What the protocol measures".

Everything takes ``seed0``, the stored runs of one model seed keyed by
``(method, bits)`` (:class:`phdlib.results.Run`, with arrays where a
function re-scores a model), and the split they were trained on. Numeric
tables keep method names (``"vh-phd"``) and metric keys (``"ndcg@10"``) in
their index so that other pages can look values up; :func:`shown` turns
them into labels for display. Findings are lists of plain sentences
(Markdown), for :func:`phdlib.report.page.findings`.

The four parts of the chapter:

1. a ranking without the user: :func:`levels`, :func:`item_mean_rank`,
   :func:`item_mean_findings`;
2. ties on real codes: :func:`pair_values`, :func:`tie_profiles`,
   :func:`tie_rule_tables`, :func:`tie_rule_table`, :func:`leaders`, :func:`tie_rule_findings`,
   :func:`rule_tests`, :func:`rule_test_findings`, :func:`discount_table`,
   :func:`plot_tie_rules`;
3. ties and the order of the rating file: :func:`file_order`,
   :func:`file_order_gap`, :func:`file_order_findings`;
4. the full catalogue: :func:`catalogue`, :func:`catalogue_tests`,
   :func:`catalogue_findings`.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import methods
from ..evaluation.metrics import METRIC_LABELS, METRICS
from . import page
from .catalogue import catalogue, catalogue_findings, catalogue_tests  # noqa: F401 (re-exported)
from .page import and_list as _and
from .page import p_text, signed  # noqa: F401 (re-exported)
from .style import PHD, VH as HAMMING
from .tie_rules import (RULE_WORDS, RULES, discount_table, file_order,  # noqa: F401
                        file_order_findings, file_order_gap, leaders, pair_values,
                        plot_tie_rules, rule_test_findings, rule_tests, tie_profiles,
                        tie_rule_findings, tie_rule_table, tie_rule_tables)

__all__ = ["PHD", "HAMMING", "RULES", "signed", "p_text", "shown", "levels", "item_mean_rank",
           "item_mean_findings", "pair_values", "tie_profiles", "tie_rule_tables",
           "tie_rule_table", "tie_rule_findings", "rule_tests", "rule_test_findings",
           "discount_table", "plot_tie_rules", "file_order", "file_order_gap",
           "file_order_findings", "catalogue", "catalogue_tests", "catalogue_findings",
           "best_per_width", "summary", "conclusion", "leaders"]



def _num(v: float, digits: int = 4, sign: bool = False) -> str:
    return page.num(v, digits, sign=sign)


def shown(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with labels for reading: method names in the index levels named ``method``
    or ``baseline`` (``vh-phd`` -> VH_PHD), metric keys in the index and the columns
    (``ndcg@10`` -> NDCG@10, ``"ndcg@10 paper"`` -> ``"NDCG@10 paper"``)."""
    def metric(x):
        if isinstance(x, str):
            if x in METRIC_LABELS:
                return METRIC_LABELS[x]
            head, _, tail = x.partition(" ")
            if tail and head in METRIC_LABELS:
                return f"{METRIC_LABELS[head]} {tail}"
        return x

    def level(values, name):
        if name in ("method", "baseline"):
            return [methods.label(v) if isinstance(v, str) else v for v in values]
        return [metric(v) for v in values]

    out = df.copy()
    idx = out.index
    if isinstance(idx, pd.MultiIndex):
        arrays = [level(idx.get_level_values(i), n) for i, n in enumerate(idx.names)]
        out.index = pd.MultiIndex.from_arrays(arrays, names=idx.names)
    else:
        out.index = pd.Index(level(idx, idx.name), name=idx.name)
    if isinstance(out.columns, pd.MultiIndex):
        out.columns = pd.MultiIndex.from_tuples([tuple(metric(v) for v in t)
                                                 for t in out.columns])
    else:
        out.columns = [metric(c) for c in out.columns]
    return out


def _widths(seed0: Mapping, widths) -> list[int]:
    return sorted({b for _, b in seed0}) if widths is None else [int(b) for b in widths]


# --------------------------------------------------------------------------- 1. without the user


def levels(seed0: Mapping, widths: Iterable[int] | None = None) -> pd.DataFrame:
    """Every stored method's test metrics under the paper's protocol.

    seed0: ``{(method, bits): Run}``. Returns one row per (bits, method),
    index ``bits, method`` (method names), sorted by width then NDCG@10 best
    first; columns ``ndcg@5, ndcg@10, mrr`` (means over test users, 0..1) and
    ``learns codes`` (bool).
    """
    ws = _widths(seed0, widths)
    rows = [{"bits": b, "method": m, **{k: float(r.metrics[k]) for k in METRICS},
             "learns codes": bool(methods.get(m).learns_codes)}
            for (m, b), r in seed0.items() if b in ws]
    out = pd.DataFrame(rows).sort_values(["bits", "ndcg@10"], ascending=[True, False])
    return out.set_index(["bits", "method"])


def item_mean_rank(seed0: Mapping, widths: Iterable[int] | None = None,
                   hashing: Sequence[str] | None = None, reference: str = "item-mean"
                   ) -> pd.DataFrame:
    """How many hashing methods the item-mean ranking (one order for every user) beats.

    seed0: ``{(method, bits): Run}``; hashing: the code-learning methods it
    is set against (default: every registered one,
    ``methods.names(learns_codes=True, variant=False)``, of those stored). Returns one row
    per (bits, metric), index ``bits, metric`` (metric keys); columns
    ``reference`` (the item-mean value, 0..1), ``beaten`` (how many hashing
    methods score below it), ``hashing methods`` (how many were compared),
    ``best hashing`` (name of the best hashing method), ``best hashing value``
    and ``below`` (labels of the beaten methods, comma-separated, ``""`` if
    none). A width without the reference run is left out.
    """
    hashing = list(methods.names(learns_codes=True, variant=False) if hashing is None
                   else hashing)
    rows = []
    for b in _widths(seed0, widths):
        if (reference, b) not in seed0:
            continue
        ref = seed0[(reference, b)].metrics
        hs = {m: seed0[(m, b)].metrics for m in hashing if (m, b) in seed0}
        for k in METRICS:
            below = [m for m, v in hs.items() if v[k] < ref[k]]
            best = max(hs, key=lambda m: hs[m][k]) if hs else None
            rows.append({"bits": b, "metric": k, "reference": float(ref[k]),
                         "beaten": len(below), "hashing methods": len(hs),
                         "best hashing": best,
                         "best hashing value": float(hs[best][k]) if best else np.nan,
                         "below": ", ".join(methods.label(m) for m in below)})
    return pd.DataFrame(rows).set_index(["bits", "metric"])


def item_mean_findings(rank: pd.DataFrame, reference: str = "item-mean") -> list[str]:
    """One sentence per width from :func:`item_mean_rank`: how many hashing methods the
    item-mean ranking beats on each metric, and which."""
    out = []
    name = methods.label(reference)
    for b, g in rank.groupby(level="bits", sort=True):
        g = g.droplevel("bits")
        same = g["below"].nunique() == 1
        parts = [f"{r['beaten']} of {r['hashing methods']}{' hashing methods' if i == 0 else ''}"
                 f" on {METRIC_LABELS[k]} ({_num(r['reference'])}"
                 + (f"; above {r['below']})" if r["below"] and not same else ")")
                 for i, (k, r) in enumerate(g.iterrows())]
        s = f"At {b} bits the ranking by {name} (the same order for every user) is above "
        s += _and(parts)
        if same and g["below"].iloc[0]:
            s += f"; the methods below it: {g['below'].iloc[0]}"
        out.append(s + ".")
    return out


# --------------------------------------------------------------------------- the page's summary


def best_per_width(table: pd.DataFrame, columns: Sequence[str], higher: bool = True,
                   level: str = "bits") -> pd.DataFrame:
    """True where a value is the best of its column among the rows of its width (ties all
    marked): a ``bold`` mask for :func:`phdlib.report.page.table` of a table indexed by
    ``bits`` and method."""
    mask = pd.DataFrame(False, index=table.index, columns=table.columns)
    for _, g in table.groupby(level=level, sort=False):
        mask |= page.best_mask(table, columns, higher=higher, groups=g.index).reindex(
            index=table.index, columns=table.columns, fill_value=False)
    return mask


def summary(rank: pd.DataFrame, tie_table: pd.DataFrame, by_rule: pd.DataFrame | None,
            tests: pd.DataFrame | None, a: str = PHD, b: str = HAMMING) -> list[str]:
    """The page's answer in a few sentences (Markdown), from :func:`item_mean_rank`,
    :func:`tie_rule_table`, :func:`file_order` and :func:`catalogue_tests` (the last two
    may be None): how often the item-mean ranking beats the hashing methods, how far the tie
    rule moves NDCG@10 against the gap between ``a`` and ``b``, which of them leads under
    the pessimistic rule, and whether ``a`` beats the best Hamming code over the catalogue."""
    out = []
    beaten, total = int(rank["beaten"].sum()), int(rank["hashing methods"].sum())
    widths = sorted(set(rank.index.get_level_values("bits")))
    out.append(f"Ranking each user's test items by the items' mean training rating, the same "
               f"order for every user, beats a hashing method in {beaten} of {total} "
               f"comparisons (hashing methods × metrics × widths {', '.join(map(str, widths))}).")
    nd = tie_table.xs("ndcg@10", level="metric") if "ndcg@10" in \
        tie_table.index.get_level_values("metric") else None
    if nd is not None:
        span = nd["optimistic − pessimistic"]
        s = (f"The tie rule alone moves NDCG@10 by {_num(span.min())} to {_num(span.max())} "
             "between its optimistic and pessimistic bounds")
        gaps = []
        for bits in sorted(set(nd.index.get_level_values("bits"))):
            if (a, bits) in nd.index and (b, bits) in nd.index:
                gaps.append(abs(nd.loc[(a, bits), "expected"] - nd.loc[(b, bits), "expected"]))
        if gaps:
            s += (f"; the gap between {methods.label(a)} and {methods.label(b)} under the "
                  f"expectation is at most {_num(max(gaps))}")
        out.append(s + ".")
        lead = leaders(tie_table, a, b)
        for k, g in lead.groupby(level="metric", sort=False):
            parts = [f"{r['pessimistic leader']} at {bits} bits ({methods.label(a)} − "
                     f"{methods.label(b)} = {_num(r['pessimistic'], sign=True)})"
                     for (bits, _), r in g.iterrows()]
            out.append(f"Under the pessimistic rule the {METRIC_LABELS[k]} leader is "
                       + _and(parts) + ".")
    if by_rule is not None and len(by_rule):
        out.extend(file_order_findings(by_rule)[1:])
    if tests is not None and len(tests):
        t = tests.xs("ndcg@10", level="metric")
        for (bits, base), r in t.iterrows():
            if r["role"] != "best Hamming code":
                continue
            verdict = "AGREES" if r["verdict"] == "better" else "DISAGREES"
            out.append(f"{verdict} (PHD codes rank better than Hamming codes): Over the full "
                       f"catalogue at {bits} bits, {methods.label(a)} − "
                       f"{methods.label(base)} (the best Hamming code there) = "
                       f"{_num(r['difference'], sign=True)} NDCG@10, {p_text(r['p'])}.")
    return out


def conclusion(rank: pd.DataFrame, tie_table: pd.DataFrame, tests: pd.DataFrame | None,
               profile: str = "full", a: str = PHD, b: str = HAMMING) -> list[str]:
    """The chapter's conclusion as paragraphs of plain sentences (Markdown), generated from
    :func:`item_mean_rank`, :func:`tie_rule_table` and :func:`catalogue_tests` (may be None);
    says where the results go against the paper's claim."""
    la, lb = methods.label(a), methods.label(b)
    out = []
    beaten, total = int(rank["beaten"].sum()), int(rank["hashing methods"].sum())
    if beaten:
        out.append(f"The paper's protocol ranks only items each user rated, and on it a "
                   f"single order for all users (items by mean training rating) is above a "
                   f"hashing method in {beaten} of {total} comparisons"
                   + (": the methods' absolute levels say more about recovering item quality "
                      "than about personal taste." if beaten >= total / 2 else "."))
    else:
        out.append(f"The paper's protocol ranks only items each user rated; a single order for "
                   f"all users (items by mean training rating) stays below every hashing "
                   f"method in all {total} comparisons here.")
    if "ndcg@10" in tie_table.index.get_level_values("metric"):
        nd = tie_table.xs("ndcg@10", level="metric")
        span = nd["optimistic − pessimistic"]
        lead = leaders(tie_table, a, b)
        gaps = [abs(r["expected"]) for (_, k), r in lead.iterrows() if k == "ndcg@10"]
        s = (f"The tie rule, which the paper does not state, moves NDCG@10 by up to "
             f"{_num(span.max())}")
        if gaps:
            s += (f", {'more' if span.max() > max(gaps) else 'less'} than the largest gap "
                  f"between {la} and {lb} under the expectation ({_num(max(gaps))})")
        s += "."
        for k, g in lead.groupby(level="metric", sort=False):
            flips = [str(bits) for (bits, _), r in g.iterrows() if r["depends on rule"]]
            if flips:
                s += (f" On {METRIC_LABELS[k]}, which of the two is ahead depends on the rule "
                      f"at {_and(flips)} bits, so a comparison on it must state its rule.")
            else:
                s += (f" On {METRIC_LABELS[k]}, the order of the two is the same under every "
                      "rule.")
        out.append(s)
    if tests is not None and len(tests):
        t = tests.xs("ndcg@10", level="metric")
        agree, disagree = [], []
        for (bits, base), r in t.iterrows():
            if r["role"] == "best Hamming code":
                (agree if r["verdict"] == "better" else disagree).append(
                    f"{_num(r['difference'], sign=True)} at {bits} bits "
                    f"(against {methods.label(base)}, {p_text(r['p'])})")
        pop = [f"{_num(r['difference'], sign=True)} at {bits} bits"
               for (bits, base), r in t.iterrows() if r["role"] == "popularity"]
        s = "Over the full catalogue, " if agree or disagree else ""
        if agree:
            s += (f"{la} is significantly ahead of the best Hamming code on NDCG@10 by "
                  f"{_and(agree)}, as the paper's claim predicts")
        if disagree:
            s += ("; but " if agree else "") + (
                f"{la} is not significantly ahead of the best Hamming code on NDCG@10 "
                f"({_and(disagree)}), which goes against the paper's claim")
        s += "." if agree or disagree else ""
        if pop:
            pop_ahead = [r["verdict"] == "worse" for (_, _), r in t.iterrows()
                         if r["role"] == "popularity"]
            s += (f" Item popularity, which the rated-items protocol cannot see, "
                  + ("ranks better than " + la if all(pop_ahead) else
                     "is ahead of " + la + " at some widths" if any(pop_ahead) else
                     "stays behind " + la)
                  + f" here: {la} − popularity is {_and(pop)} NDCG@10.")
        out.append(s + " The models were trained for the rating task (squared error on "
                   "observed ratings only), so none was trained to separate rated from "
                   "unrated items; the catalogue numbers measure what their codes carry over "
                   "to that task.")
    if profile != "full":
        out.append(f"This build used the '{profile}' profile (reduced training), so these "
                   "statements check the pipeline; the full profile gives the numbers to "
                   "compare with the paper.")
    return out
