"""The protocol chapter's ties: how the unstated tie rule moves the metrics on real codes,
and how the rating file's order does (:mod:`phdlib.report.protocol` shows them).
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import evaluation, methods, paper
from ..evaluation import stats, ties
from ..experiments import training
from ..evaluation import metrics as M
from ..evaluation.metrics import METRIC_LABELS
from . import page
from .page import and_list as _and
from .style import PHD, VH as HAMMING


def _num(v: float, digits: int = 4, sign: bool = False) -> str:
    return page.num(v, digits, sign=sign)


def _widths(seed0: Mapping, widths) -> list[int]:
    return sorted({b for _, b in seed0}) if widths is None else [int(b) for b in widths]


__all__ = ["RULES", "RULE_WORDS", "pair_values", "tie_profiles", "tie_rule_tables", "tie_rule_table", "tie_rule_findings", "leaders", "rule_tests", "rule_test_findings", "discount_table", "plot_tie_rules", "file_order", "file_order_gap", "file_order_findings"]

#: Tie rules in the order the tables show them: the bounds around the expectation,
#: then the two rules blind to the ratings (file order, mean of seeded random orders).
RULES = ("pessimistic", "expected", "optimistic", "input", "random")
#: What each tie rule means, for captions.
RULE_WORDS = {"pessimistic": "tied items worst-rated first",
              "expected": "exact expectation over random orders of tied items",
              "optimistic": "tied items best-rated first",
              "input": "tied items in the order of the rating file",
              "random": "mean of seeded random orders"}



def pair_values(seed0: Mapping, test, names: Sequence[str], widths: Iterable[int]) -> dict:
    """The dissimilarity of every test pair under each stored model.

    seed0: ``{(method, bits): Run}`` with arrays; test: ratings with ``user``
    and ``item`` (N,). Returns ``{(method, bits): (N,) array}`` (integers for
    code models), in the order of ``names`` then ``widths``.
    """

    return {(m, int(b)): training.fitted(seed0[(m, int(b))]).pairs(test.user, test.item)
            for m in names for b in widths}


def tie_profiles(values: Mapping, test) -> pd.DataFrame:
    """How much each model's values tie within a user's test items, averaged over users.

    values: :func:`pair_values`; test: ratings with ``user``, ``rating``.
    Returns one row per key, index ``method, bits``; columns ``test items``
    (mean per user), ``distinct distances`` (mean per user), ``items tied (%)``
    (share of test items sharing their distance with another of the user's),
    ``largest tie`` (mean per user of the largest tie group), ``tie across
    cut @5 (%)``, ``tie across cut @10 (%)`` (users whose tie group covers
    positions k and k + 1) and ``best item tied (%)`` (users whose first
    best-rated item is tied, so the tie rule moves its reciprocal rank).
    """

    rows = []
    for (m, b), v in values.items():
        tp = ties.tie_profile(test.user, v, ks=(5, 10), rating=test.rating)
        rows.append({"method": m, "bits": b, "test items": tp["n_test"].mean(),
                     "distinct distances": tp["n_distinct"].mean(),
                     "items tied (%)": 100 * tp["tied_items"].sum() / tp["n_test"].sum(),
                     "largest tie": tp["largest_tie"].mean(),
                     "tie across cut @5 (%)": 100 * tp["straddles@5"].mean(),
                     "tie across cut @10 (%)": 100 * tp["straddles@10"].mean(),
                     "best item tied (%)": 100 * (tp["top_tie"] > 1).mean()})
    return pd.DataFrame(rows).set_index(["method", "bits"])


def tie_rule_tables(values: Mapping, test, random_draws: int = 10) -> dict:
    """:func:`phdlib.evaluation.ties.compare_tie_rules` of each key of ``values`` (paper's discount,
    NDCG@5, NDCG@10, MRR; ``random``: mean and sd over ``random_draws`` seeded draws)."""

    return {key: ties.compare_tie_rules(test.user, test.rating, v, ks=(5, 10),
                                        discounts_=("paper",), random_seeds=range(random_draws))
            for key, v in values.items()}


def tie_rule_table(tables: Mapping, seed0: Mapping | None = None, dataset: str | None = None,
                   metrics: Sequence[str] = ("ndcg@10", "mrr")) -> pd.DataFrame:
    """The metrics of each model under every tie rule, beside the paper's and the stored value.

    tables: :func:`tie_rule_tables`; seed0: the runs (for ``stored``, the
    test metric stored when the model was trained, under its configured
    rule); dataset: for ``paper`` (the published value, NaN where the paper
    has none). Returns one row per (method, bits, metric), index ``method,
    bits, metric``; columns the rules of :data:`RULES` (means over users,
    0..1), ``random sd`` (standard deviation of one random draw's mean),
    ``optimistic − pessimistic`` (the room an unstated rule leaves),
    ``paper`` and ``stored``.
    """
    rows = []
    for (m, b), t in tables.items():
        p = t[t.discount == "paper"].set_index("ties")
        pub = paper.table1(dataset, b).get(m, {}) if dataset else {}
        for k in metrics:
            row = {"method": m, "bits": b, "metric": k,
                   **{r: float(p.loc[r, k]) for r in RULES},
                   "random sd": float(p.loc["random", f"{k}_sd"])}
            row["optimistic − pessimistic"] = row["optimistic"] - row["pessimistic"]
            row["paper"] = float(pub.get(k, np.nan))
            row["stored"] = (float(seed0[(m, b)].metrics[k])
                             if seed0 is not None and (m, b) in seed0 else np.nan)
            rows.append(row)
    return pd.DataFrame(rows).set_index(["method", "bits", "metric"])


def tie_rule_findings(table: pd.DataFrame, a: str = PHD, b: str = HAMMING,
                      dataset: str | None = None) -> list[str]:
    """Sentences from :func:`tie_rule_table`: how far the rule moves each metric; how close
    the rules blind to the ratings stay to the expectation; and, per width, which of ``a``
    and ``b`` is ahead on NDCG@10 under the pessimistic rule (and under the others), beside
    the paper's gap where the paper has both."""
    out = []
    span = table["optimistic − pessimistic"]
    gap = (table["input"] - table["expected"]).abs()
    for k, s in span.groupby(level="metric", sort=False):
        out.append(f"Choosing the tie rule freely moves mean {METRIC_LABELS[k]} by "
                   f"{_num(s.min())} to {_num(s.max())} (optimistic minus pessimistic), "
                   "depending on the model.")
    parts = [f"{_num(g.max())} ({METRIC_LABELS[k]})"
             for k, g in gap.groupby(level="metric", sort=False)]
    sd = [f"{_num(g.max())} ({METRIC_LABELS[k]})"
          for k, g in table["random sd"].groupby(level="metric", sort=False)]
    out.append("Breaking ties in file order lands within " + " and ".join(parts)
               + " of the exact expectation; one random draw has a standard deviation of at "
               "most " + " and ".join(sd) + ".")
    la, lb = methods.label(a), methods.label(b)
    for (bits, k), r in leaders(table, a, b).iterrows():
        s = (f"At {bits} bits, under the pessimistic rule {r['pessimistic leader']} is ahead "
             f"on {METRIC_LABELS[k]} ({la} − {lb} = {_num(r['pessimistic'], sign=True)}; "
             f"expected {_num(r['expected'], sign=True)}, optimistic "
             f"{_num(r['optimistic'], sign=True)})")
        s += (": which model is ahead depends on the rule" if r["depends on rule"]
              else ": the order of the two models does not depend on the rule")
        if np.isfinite(r["paper"]):
            s += f"; the paper's gap is {_num(r['paper'], sign=True)}"
        out.append(s + ".")
    return out


def leaders(table: pd.DataFrame, a: str = PHD, b: str = HAMMING) -> pd.DataFrame:
    """``a`` − ``b`` under each tie rule, per width and metric, from :func:`tie_rule_table`.

    Returns index ``bits, metric`` (metric keys); columns ``pessimistic``,
    ``expected``, ``optimistic``, ``input`` (mean of a minus mean of b under
    that rule), ``paper`` (the paper's a − b, NaN where it has none),
    ``pessimistic leader`` (label of the method ahead under the pessimistic
    rule, or ``"neither"``) and ``depends on rule`` (True where the sign of
    the difference is not the same under the pessimistic, expected and
    optimistic rules). Widths lacking either method are left out.
    """
    la, lb = methods.label(a), methods.label(b)
    rows = []
    for bits in sorted(set(table.index.get_level_values("bits"))):
        for k in dict.fromkeys(table.index.get_level_values("metric")):
            if (a, bits, k) not in table.index or (b, bits, k) not in table.index:
                continue
            ra, rb = table.loc[(a, bits, k)], table.loc[(b, bits, k)]
            d = {r: float(ra[r] - rb[r]) for r in ("pessimistic", "expected", "optimistic",
                                                   "input", "paper")}
            p = d["pessimistic"]
            rows.append({"bits": bits, "metric": k, **d,
                         "pessimistic leader": la if p > 0 else lb if p < 0 else "neither",
                         "depends on rule": len({np.sign(d[r]) for r in
                                                 ("pessimistic", "expected", "optimistic")}) > 1})
    return pd.DataFrame(rows).set_index(["bits", "metric"])


def rule_tests(values: Mapping, test, a: str = PHD, b: str = HAMMING,
               widths: Iterable[int] | None = None,
               rules: Sequence[str] = ("expected", "pessimistic", "optimistic", "input"),
               metrics: Sequence[str] = ("ndcg@10", "mrr")) -> pd.DataFrame:
    """``a`` against ``b`` per user under each tie rule: paired two-tailed t-test.

    values: :func:`pair_values` (both methods at each width); test: the
    test ratings. One comparison per (width, rule, metric), so Bonferroni
    changes nothing. Returns index ``bits, ties, metric``; columns
    ``difference`` (mean of a − b over users), ``ci low``, ``ci high`` (95%),
    ``p``, ``d_z`` (paired effect size) and ``significant`` (p < 0.05).
    """

    ws = sorted({k[1] for k in values}) if widths is None else list(widths)
    rows = []
    for bits in ws:
        for t in rules:
            pu = {n: M.evaluate(test.user, test.rating, values[n, bits], ties=t) for n in (a, b)}
            c = stats.compare(pu, [a], [b], metrics=metrics)
            for _, r in c.iterrows():
                rows.append({"bits": bits, "ties": t, "metric": r["metric"],
                             "difference": r["mean_diff"], "ci low": r["ci_low"],
                             "ci high": r["ci_high"], "p": r["p_adj"], "d_z": r["d_z"],
                             "significant": bool(r["p_adj"] < 0.05)})
    return pd.DataFrame(rows).set_index(["bits", "ties", "metric"])


def rule_test_findings(tests: pd.DataFrame, a: str = PHD, b: str = HAMMING) -> list[str]:
    """One sentence per (width, metric) of :func:`rule_tests`: under which rules ``a`` is
    significantly ahead of ``b``, significantly behind, or neither."""
    la, lb = methods.label(a), methods.label(b)
    out = []
    for (bits, k), g in tests.groupby(level=["bits", "metric"], sort=False):
        g = g.droplevel(["bits", "metric"])
        ahead = [t for t, r in g.iterrows() if r["significant"] and r["difference"] > 0]
        behind = [t for t, r in g.iterrows() if r["significant"] and r["difference"] < 0]
        none = [t for t in g.index if t not in ahead and t not in behind]
        parts = []
        if ahead:
            parts.append(f"{la} is significantly ahead under {_and(ahead)}")
        if behind:
            parts.append(f"{lb} is significantly ahead under {_and(behind)}")
        if none:
            parts.append(f"no significant difference under {_and(none)}")
        verdict = ("the conclusion does not depend on the tie rule"
                   if sum(bool(x) for x in (ahead, behind, none)) == 1
                   else "the conclusion depends on the tie rule")
        out.append(f"{bits} bits, {METRIC_LABELS[k]}: " + "; ".join(parts) + f" ({verdict}).")
    return out


def discount_table(values: Mapping, test) -> pd.DataFrame:
    """NDCG@5 and NDCG@10 of each model under both discounts (tie rule ``expected``).

    Returns index ``method, bits``; columns ``(metric, discount)`` pairs as
    ``"ndcg@5 paper"``, ``"ndcg@5 released"``, ``"ndcg@10 paper"``,
    ``"ndcg@10 released"`` and ``"ndcg@10 released − paper"``.
    """

    rows = []
    for (m, b), v in values.items():
        row = {"method": m, "bits": b}
        for d in M.DISCOUNTS:
            s = M.summarize(M.evaluate(test.user, test.rating, v, discount=d))
            row[f"ndcg@5 {d}"], row[f"ndcg@10 {d}"] = s["ndcg@5"], s["ndcg@10"]
        rows.append(row)
    out = pd.DataFrame(rows).set_index(["method", "bits"])
    out["ndcg@10 released − paper"] = out["ndcg@10 released"] - out["ndcg@10 paper"]
    return out[sorted(c for c in out.columns if c.startswith("ndcg@5"))
               + [c for c in out.columns if c.startswith("ndcg@10")]]


def plot_tie_rules(table: pd.DataFrame, metrics: Sequence[str] = ("ndcg@10", "mrr")):
    """One panel per metric: per model, the pessimistic..optimistic range (grey bar), the
    expectation, the file order and the paper's value. Returns the figure."""
    import matplotlib.pyplot as plt

    keys = list(dict.fromkeys((m, b) for m, b, _ in table.index))
    fig, axes = plt.subplots(1, len(metrics), figsize=(8, 1.4 + 0.45 * len(keys)), sharey=True,
                             squeeze=False)
    y = np.arange(len(keys))
    for ax, k in zip(axes[0], metrics):
        t = table.xs(k, level="metric").loc[keys]
        ax.hlines(y, t["pessimistic"], t["optimistic"], color="0.7", lw=7,
                  label="pessimistic to optimistic")
        ax.plot(t["expected"], y, "o", color="black", label="expected")
        ax.plot(t["input"], y, "|", color="tab:red", ms=14, mew=2, label="file order")
        if t["paper"].notna().any():
            ax.plot(t["paper"], y, "*", color="tab:blue", ms=9, label="paper")
        ax.set_xlabel(f"{METRIC_LABELS[k]} (mean over test users)")
        ax.grid(True, axis="x", alpha=0.3)
    axes[0][0].set_yticks(y)
    axes[0][0].set_yticklabels([f"{methods.label(m)}, {b} bits" for m, b in keys])
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig


# --------------------------------------------------------------------------- 3. file order


def file_order(seed0: Mapping, split, rules: Sequence[str] = RULES,
               widths: Iterable[int] | None = None) -> pd.DataFrame:
    """Every stored model re-scored on the test split under each tie rule.

    seed0: ``{(method, bits): Run}`` with arrays. Returns index ``bits,
    method`` (names); columns ``"{metric} {rule}"`` for NDCG@10 and MRR and
    each rule (``random``: one seeded draw), ``ndcg@10 stored`` (the value
    stored with the run), and ``"{metric} input − expected"``.
    """

    ws = _widths(seed0, widths)
    rows = []
    for (m, b), r in sorted(seed0.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if b not in ws:
            continue
        t = evaluation.tie_rules(training.fitted(r), split.test, list(rules))
        row = {"bits": b, "method": m, "ndcg@10 stored": float(r.metrics["ndcg@10"])}
        for k in ("ndcg@10", "mrr"):
            for rule in rules:
                row[f"{k} {rule}"] = float(t.loc[rule, k])
        rows.append(row)
    out = pd.DataFrame(rows).set_index(["bits", "method"])
    for k in ("ndcg@10", "mrr"):
        if f"{k} input" in out and f"{k} expected" in out:
            out[f"{k} input − expected"] = out[f"{k} input"] - out[f"{k} expected"]
    return out


def file_order_gap(by_rule: pd.DataFrame) -> float:
    """Largest |re-scored expected NDCG@10 − stored NDCG@10| of :func:`file_order` (0 when
    re-scoring the stored arrays reproduces the stored metrics)."""
    return float((by_rule["ndcg@10 expected"] - by_rule["ndcg@10 stored"]).abs().max())


def file_order_findings(by_rule: pd.DataFrame, baseline: str = "random") -> list[str]:
    """Sentences from :func:`file_order`: how far file order moves the metrics from the
    expectation, and what file order gives for ``baseline`` (every item tied: no model)."""
    d, dn = by_rule["mrr input − expected"], by_rule["ndcg@10 input − expected"]
    out = [f"Breaking ties in file order instead of the expectation moves MRR by "
           f"{_num(d.min(), sign=True)} to {_num(d.max(), sign=True)} and NDCG@10 by "
           f"{_num(dn.min(), sign=True)} to {_num(dn.max(), sign=True)} across the "
           f"{len(by_rule)} stored models."]
    rows = by_rule.xs(baseline, level="method") if baseline in \
        by_rule.index.get_level_values("method") else None
    if rows is not None and len(rows):
        r = rows.iloc[0]
        leak = r["ndcg@10 input"] - r["ndcg@10 expected"]
        out.append("With every item tied (no model at all), "
                   f"NDCG@10 is {_num(r['ndcg@10 expected'])} in expectation and "
                   f"{_num(r['ndcg@10 input'])} in file order ({_num(leak, sign=True)}): "
                   + ("the order of the rating file itself carries signal about the ratings."
                      if abs(leak) > 0.005 else
                      "the order of the rating file carries no visible signal here."))
    return out


