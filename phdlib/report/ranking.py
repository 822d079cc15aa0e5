"""The chapter "Measuring rankings": how often codes tie, and what the tie rule moves.

- :func:`tie_summary`: how much the test items of every user tie
  (from :func:`phdlib.evaluation.ties.tie_profile`);
- :func:`rule_spread`: the mean metrics under every tie rule
  (from :func:`phdlib.evaluation.ties.compare_tie_rules`), one row per rule;
- :func:`tie_findings`: both as plain sentences;
- :func:`one_user_findings`, :func:`draws_findings`: the example user;
- :func:`benchmark_table`: :func:`phdlib.evaluation.ties.benchmark` for reading;
- :func:`conclusion`: the chapter's conclusion from :func:`rule_spread`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..evaluation import ties
from ..evaluation.metrics import METRIC_LABELS
from .page import num

__all__ = ["RULE_LABELS", "tie_summary", "rule_spread", "tie_findings", "one_user_findings",
           "draws_findings", "benchmark_table", "conclusion"]

#: Display names of the tie rules.
RULE_LABELS = {"expected": "expected (exact)", "random": "one random order",
               "optimistic": "optimistic", "pessimistic": "pessimistic",
               "input": "input order"}


def tie_summary(user, values, rating, k: int = 10) -> dict:
    """How much the test items tie, over all users.

    user, values, rating: flat (N,) test arrays (dissimilarities, smallest
    first). Returns ``users`` (int), ``items`` (int), ``tied_share`` (fraction
    of test items that share their value with another item of the same user),
    ``straddle_share`` (fraction of users with a tie across positions k and
    k + 1, whose top k the tie rule decides), ``mrr_tied_share`` (fraction of
    users whose first best-rated item is in a tie group of more than one item),
    ``median_largest_tie`` (float, items in a user's largest tie group, median
    over users) and ``k``.
    """

    p = ties.tie_profile(user, values, ks=(k,), rating=rating)
    return {"users": int(len(p)), "items": int(p["n_test"].sum()),
            "tied_share": float(p["tied_items"].sum() / p["n_test"].sum()),
            "straddle_share": float(p[f"straddles@{k}"].mean()),
            "mrr_tied_share": float((p["top_tie"] > 1).mean()),
            "median_largest_tie": float(p["largest_tie"].median()), "k": k}


def rule_spread(rules: pd.DataFrame, discount: str = "paper") -> pd.DataFrame:
    """Mean metrics per tie rule under one discount, for reading.

    rules: :func:`phdlib.evaluation.ties.compare_tie_rules`. Returns one row per rule
    (index: :data:`RULE_LABELS`, in the order pessimistic, expected,
    optimistic, input, random), columns the metric labels (``NDCG@5``, ...)
    as floats; the random row is the mean over its draws (labelled with their number).
    """
    r = rules[rules["discount"] == discount].set_index("ties")
    order = [t for t in ("pessimistic", "expected", "optimistic", "input", "random") if t in r.index]
    cols = [c for c in r.columns if c in METRIC_LABELS]
    out = r.loc[order, cols].rename(columns=METRIC_LABELS)
    out.index = [f"random (mean of {int(r.loc[t, 'draws'])} orders)" if t == "random"
                 and "draws" in r.columns else RULE_LABELS.get(t, t) for t in order]
    out.index.name = "tie rule"
    return out


def tie_findings(summary: dict, rules: pd.DataFrame, dataset: str, bits: int,
                 discount: str = "paper") -> list[str]:
    """Sentences on :func:`tie_summary` and :func:`phdlib.evaluation.ties.compare_tie_rules` of
    random ``bits``-bit codes on ``dataset``'s test split."""
    k = summary["k"]
    out = [f"With random {bits}-bit codes on {dataset}, {summary['tied_share']:.0%} of the "
           f"{summary['items']:,} test items share their distance with another test item of the "
           f"same user; for {summary['straddle_share']:.0%} of the {summary['users']:,} users a "
           f"tie spans positions {k} and {k + 1}, so the tie rule decides what enters the top {k}, "
           f"and for {summary['mrr_tied_share']:.0%} the first best-rated item is tied."]
    r = rules[rules["discount"] == discount].set_index("ties")
    parts = []
    for m in [c for c in r.columns if c in METRIC_LABELS]:
        lo, hi, ex = r.loc["pessimistic", m], r.loc["optimistic", m], r.loc["expected", m]
        parts.append(f"{METRIC_LABELS[m]} from {num(lo)} to {num(hi)} (expected {num(ex)})")
    out.append("Averaged over all users, the tie rule alone moves " + "; ".join(parts)
               + ": the same codes, ranked by the same distances.")
    return out


def one_user_findings(rules: pd.DataFrame) -> list[str]:
    """Sentences on :func:`phdlib.evaluation.ties.one_user_rules` (rows: tie rules; columns
    ``NDCG@5``, ``NDCG@10``, ``RR``): the range between the two bounds."""
    out = []
    for m in rules.columns:
        lo, hi = rules.loc["pessimistic", m], rules.loc["optimistic", m]
        if np.isclose(lo, hi):
            out.append(f"{m} is {num(hi)} under every rule: no tie decides it for this user.")
        else:
            out.append(f"{m} lies between {num(lo)} (pessimistic) and {num(hi)} (optimistic); "
                       f"its expected value is {num(rules.loc['expected', m])}.")
    return out


def draws_findings(exact, mean, stderr, n: int, names) -> list[str]:
    """Whether the mean of ``n`` seeded random tie-breaks agrees with the exact expectation:
    for each metric in ``names``, the difference in standard errors of that mean."""
    out = []
    for name, e, m, s in zip(names, exact, mean, stderr):
        if s == 0:
            out.append(f"{name}: every one of the {n:,} random orders gives {num(m)}, "
                       f"the exact expectation ({num(e)}).")
        else:
            z = abs(m - e) / s
            out.append(f"{name}: the mean of {n:,} random orders, {num(m)}, is {z:.1f} standard "
                       f"errors from the exact expectation {num(e)}.")
    return out


def benchmark_table(bench: pd.DataFrame) -> pd.DataFrame:
    """:func:`phdlib.evaluation.ties.benchmark` for reading: index the tie rule
    (:data:`RULE_LABELS`), columns users and test ratings (int), best and
    median seconds (float) and millions of ratings a second (float)."""
    out = pd.DataFrame({
        "users": bench["users"].astype(int).to_numpy(),
        "test ratings": bench["ratings"].astype(int).to_numpy(),
        "best (s)": bench["seconds"].astype(float).to_numpy(),
        "median (s)": bench["seconds_median"].astype(float).to_numpy(),
        "million ratings/s": bench["ratings_per_s"].astype(float).to_numpy() / 1e6,
    }, index=[RULE_LABELS.get(t, t) for t in bench["ties"]])
    out.index.name = "tie rule"
    return out


def conclusion(spread: pd.DataFrame) -> str:
    """The chapter's conclusion from :func:`rule_spread`: the gap between the
    pessimistic and the optimistic order per metric, absolute and relative to
    the expected value."""
    lo, hi = spread.loc[RULE_LABELS["pessimistic"]], spread.loc[RULE_LABELS["optimistic"]]
    ex = spread.loc[RULE_LABELS["expected"]]
    gaps = ", ".join(f"{num(hi[m] - lo[m])} in {m} ({(hi[m] - lo[m]) / ex[m]:.0%} of its "
                     "expected value)" for m in spread.columns)
    return ("The tie rule is part of the metric. Here the gap between the "
            f"pessimistic and the optimistic order of the tied items is {gaps}. The expected "
            "value over all orders of the tied items is the one rule that depends on nothing but "
            "the distances, it can be computed exactly, and it is what every table of this book "
            "reports unless it says otherwise.")
