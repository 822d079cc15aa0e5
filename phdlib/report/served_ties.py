"""Ties in served top-k lists, and the rules that order them (chapter "Serving PHD codes").

- :func:`adjacent_ties`, :func:`served_ties`, :func:`ties_finding`: how often served
  top-k lists tie;
- :func:`tie_rules`, :func:`tie_rule_table`, :func:`tie_rule_findings`: the served
  order's effectiveness and cost under each tie rule (:mod:`phdlib.bench.ties` rows).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..evaluation.metrics import METRIC_LABELS as METRIC_NAMES
from ..serving.search import BinaryIndex
from .page import mean_std, num

def adjacent_ties(distances: np.ndarray) -> dict:
    """How much served top-k lists tie at equal distance.

    distances: ``(lists, k)`` distances of each user's top-k, ascending (as
    ``search`` returns them). Returns a dict: ``lists``, ``k``, ``pairs``
    (adjacent pairs inside the lists, ``lists * (k - 1)``), ``tied pairs``
    (adjacent pairs at equal distance), ``tied share`` (0..1), ``lists all
    tied`` (lists whose k items share one distance) and ``lists all zero``
    (lists whose k items are all at distance 0).
    """
    d = np.asarray(distances)
    if d.ndim != 2:
        raise ValueError(f"distances must be (lists, k); got shape {d.shape}")
    n, k = d.shape
    eq = d[:, :-1] == d[:, 1:]
    pairs = n * max(k - 1, 0)
    return {"lists": int(n), "k": int(k), "pairs": int(pairs), "tied pairs": int(eq.sum()),
            "tied share": float(eq.sum() / pairs) if pairs else 0.0,
            "lists all tied": int(eq.all(axis=1).sum()) if k > 1 else int(n),
            "lists all zero": int((d == 0).all(axis=1).sum())}


def served_ties(user_codes: np.ndarray, item_codes: np.ndarray, bits: int, k: int = 10,
                metric: str = "phd") -> dict:
    """:func:`adjacent_ties` of every user's exact top-``k`` (:class:`phdlib.serving.search.BinaryIndex`
    by ``metric``), plus ``lists tied at the cut``: lists whose k-th item is at the same
    distance as the (k+1)-th, so that which items are served depends on the tie rule.

    user_codes, item_codes: packed code words of one width ``bits``.
    """

    idx = BinaryIndex(bits, metric)
    idx.add(item_codes)
    d, _ = idx.search(user_codes, k + 1)
    out = adjacent_ties(d[:, :k])
    out["lists tied at the cut"] = int((d[:, k - 1] == d[:, k]).sum()) if d.shape[1] > k else 0
    return out


def ties_finding(counts: dict) -> str:
    """One sentence from :func:`adjacent_ties`."""
    c = counts
    return (f"Inside the {c['lists']:,} top-{c['k']} lists, {c['tied pairs']:,} of "
            f"{c['pairs']:,} adjacent pairs ({100 * c['tied share']:.1f}%) are at equal "
            f"distance; {c['lists all tied']:,} lists hold a single distance and "
            f"{c['lists all zero']:,} are all at distance 0"
            + (f"; in {c['lists tied at the cut']:,} the item at rank {c['k']} ties with the "
               "next one beyond the cut" if "lists tied at the cut" in c else "")
            + (". Engines must therefore agree on how ties are broken, not only on distances, "
               "to return the same items." if c["tied pairs"] or c.get("lists tied at the cut")
               else "."))


#: How a tie rule is named on the page.
RULE_LABELS = {"expected": "expectation over ties (the book's metric)", "id": "item id",
               "popularity": "popularity", "mean-rating": "mean rating",
               "seeded": "seeded random"}


def tie_rules(frames: dict, metrics=("ndcg@10", "mrr")) -> pd.DataFrame:
    """The served order under each tie rule, over model seeds.

    frames: ``{(method, seed): frame}`` of :func:`phdlib.bench.ties.served_effectiveness`
    (rules ``expected``, ``id``, ``popularity``, ``mean-rating``, ``seeded:S``...).
    The ``seeded:S`` rows of one run are averaged into one ``seeded`` row first.
    One row per (method, rule): ``seeds`` (runs), per metric its mean and ``"<metric>
    std"`` over the runs (ddof=1), ``extra_us`` (mean extra microseconds a query over
    ``id``; NaN for ``expected``).
    """
    rows = []
    for (m, seed), f in frames.items():
        f = f.assign(rule=f["rule"].str.replace(r"^seeded:.*$", "seeded", regex=True))
        g = f.groupby("rule", sort=False).mean(numeric_only=True).reset_index()
        for _, r in g.iterrows():
            rows.append({"method": m, "seed": seed, "rule": r["rule"],
                         **{k: float(r[k]) for k in metrics},
                         "extra_us": 1e6 * float(r.get("extra_seconds_per_query", np.nan))})
    df = pd.DataFrame(rows)
    out = df.groupby(["method", "rule"], sort=False).agg(
        seeds=("seed", "nunique"),
        **{k: (k, "mean") for k in metrics},
        **{f"{k} std": (k, lambda x: float(np.std(x, ddof=1)) if len(x) > 1 else np.nan)
           for k in metrics},
        extra_us=("extra_us", "mean")).reset_index()
    return out


def tie_rule_table(rules: pd.DataFrame, labels=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(shown, bold)`` of :func:`tie_rules` for reading: rows (method, rule), NDCG@10 and MRR
    as ``mean ± std``, the extra microseconds a query; bold marks each method's best served
    rule per metric (the expectation row does not compete)."""
    label = labels or (lambda m: m)
    shown, bold = {}, {}
    for _, r in rules.iterrows():
        key = (label(r["method"]), RULE_LABELS.get(r["rule"], r["rule"]))
        rivals = rules[(rules["method"] == r["method"]) & (rules["rule"] != "expected")]
        shown[key] = {"NDCG@10": mean_std(r["ndcg@10"], r["ndcg@10 std"]),
                      "MRR": mean_std(r["mrr"], r["mrr std"]),
                      "extra µs a query": ("n/a" if not np.isfinite(r["extra_us"]) else
                                           f"{r['extra_us']:+.1f}".replace("-", "−"))}
        bold[key] = {"NDCG@10": r["rule"] != "expected" and r["ndcg@10"] == rivals["ndcg@10"].max(),
                     "MRR": r["rule"] != "expected" and r["mrr"] == rivals["mrr"].max(),
                     "extra µs a query": False}
    out, marks = (pd.DataFrame.from_dict(d, orient="index") for d in (shown, bold))
    for f in (out, marks):
        f.index.names = ["method", "tie rule"]
    return out, marks


def tie_rule_findings(rules: pd.DataFrame, labels=None, metric: str = "ndcg@10") -> list[str]:
    """The default tie rule, chosen from the numbers: the served rule with the highest mean
    ``metric`` over the methods (each method's mean over seeds), its gain over the item id
    and its extra cost a query; and whether it is the best rule for every method."""
    label = labels or (lambda m: m)
    served = rules[rules["rule"] != "expected"]
    if served.empty:
        return []
    name = METRIC_NAMES.get(metric, metric)
    per_rule = served.groupby("rule")[metric].mean()
    best = per_rule.idxmax()
    by_method = served.loc[served.groupby("method", sort=False)[metric].idxmax()]
    gain = per_rule[best] - per_rule.get("id", np.nan)
    cost = served.loc[served["rule"] == best, "extra_us"].mean()
    rule = RULE_LABELS.get(best, best)
    extra = "at no extra cost" if best == "id" else \
        f"for {num(cost, 1, lead_zero=True, sign=True)} µs a query"
    out = [f"**Default: break ties by {rule}.** Averaged over the methods, its served "
           f"{name} is {num(per_rule[best])}, {num(gain, sign=True)} from the item id's, "
           f"{extra}."]
    out.append("It is the best served rule for every method." if (by_method["rule"] == best).all()
               else "The best served rule differs by method: " + "; ".join(
                   f"{label(r.method)}, {RULE_LABELS.get(r.rule, r.rule)}"
                   for r in by_method.itertuples()) + ".")
    exp = rules[rules["rule"] == "expected"].set_index("method")[metric]
    top = by_method.set_index("method")[metric]
    diffs = (top - exp.reindex(top.index)).dropna()
    if len(diffs):
        out.append(f"Each method's best served order is {num(diffs.min(), sign=True)} to "
                   f"{num(diffs.max(), sign=True)} {name} from the expectation over ties that "
                   "the book's tables report.")
    return out
