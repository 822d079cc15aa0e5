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

from .. import evaluation, methods, paper, stats, ties, training
from .. import metrics as M
from ..metrics import METRIC_LABELS, METRICS
from . import page
from .page import p_text

__all__ = ["PHD", "HAMMING", "RULES", "signed", "p_text", "shown", "levels", "item_mean_rank",
           "item_mean_findings", "pair_values", "tie_profiles", "tie_rule_tables",
           "tie_rule_table", "tie_rule_findings", "rule_tests", "rule_test_findings",
           "discount_table", "plot_tie_rules", "file_order", "file_order_gap",
           "file_order_findings", "catalogue", "catalogue_tests", "catalogue_findings",
           "best_per_width", "summary", "conclusion", "leaders"]

#: The paper's model and its Hamming twin (trained identically but for the distance).
PHD, HAMMING = "vh-phd", "vh"
#: Tie rules in the order the tables show them: the bounds around the expectation,
#: then the two rules blind to the ratings (file order, mean of seeded random orders).
RULES = ("pessimistic", "expected", "optimistic", "input", "random")
#: What each tie rule means, for captions.
RULE_WORDS = {"pessimistic": "tied items worst-rated first",
              "expected": "exact expectation over random orders of tied items",
              "optimistic": "tied items best-rated first",
              "input": "tied items in the order of the rating file",
              "random": "mean of seeded random orders"}


def _num(v: float, digits: int = 4, sign: bool = False) -> str:
    return page.num(v, digits, sign=sign)


def _and(parts: Sequence[str]) -> str:
    parts = list(parts)
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def signed(v: float, digits: int = 4) -> str:
    """A difference with its sign, ``+.0123`` / ``−.0123``; a value that rounds to zero is
    ``.0000`` without a sign (never ``−.0000``)."""
    if v is not None and np.isfinite(v) and round(abs(float(v)), digits) == 0:
        return page.num(0.0, digits)
    return page.num(v, digits, sign=True)


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
    ``methods.names(learns_codes=True)``, of those stored). Returns one row
    per (bits, metric), index ``bits, metric`` (metric keys); columns
    ``reference`` (the item-mean value, 0..1), ``beaten`` (how many hashing
    methods score below it), ``hashing methods`` (how many were compared),
    ``best hashing`` (name of the best hashing method), ``best hashing value``
    and ``below`` (labels of the beaten methods, comma-separated, ``""`` if
    none). A width without the reference run is left out.
    """
    hashing = list(methods.names(learns_codes=True) if hashing is None else hashing)
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


# --------------------------------------------------------------------------- 2. ties


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
    """:func:`phdlib.ties.compare_tie_rules` of each key of ``values`` (paper's discount,
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


# --------------------------------------------------------------------------- 4. catalogue


def catalogue(seed0: Mapping, split, methods_: Sequence[str], widths: Iterable[int]
              ) -> tuple[pd.DataFrame, dict]:
    """Each model evaluated over the full item catalogue (our extension).

    For every test user, every item the user did not rate in training or
    validation is ranked (:func:`phdlib.evaluation.evaluate_catalogue`; an
    item's relevance is the user's test rating, 0 for the rest). seed0:
    ``{(method, bits): Run}`` with arrays; split: the split the runs were
    trained on; methods_: method names; widths: code widths.

    Returns ``(table, per_user)``: ``table`` has index ``bits, method``
    (names) and columns ``ndcg@5``, ``ndcg@10``, ``mrr`` (catalogue, means
    over test users, 0..1), ``ndcg@10 protocol`` (the stored value under the
    paper's protocol) and ``items ranked`` (median per user);
    ``per_user`` maps ``(method, bits)`` to the per-user frame (columns
    ``user``, ``ndcg@5``, ``ndcg@10``, ``mrr``, ``n_ranked``, ``n_test``).
    """

    rows, per_user = [], {}
    for b in widths:
        for m in methods_:
            r = seed0[(m, int(b))]
            pu = evaluation.evaluate_catalogue(training.fitted(r), split)
            per_user[(m, int(b))] = pu
            rows.append({"bits": int(b), "method": m,
                         **{k: float(pu[k].mean()) for k in METRICS},
                         "ndcg@10 protocol": float(r.metrics["ndcg@10"]),
                         "items ranked": float(np.median(pu["n_ranked"]))})
    return pd.DataFrame(rows).set_index(["bits", "method"]), per_user


def _best_hamming(table: pd.DataFrame, bits: int, hamming: Sequence[str]) -> str | None:
    t = table.xs(bits, level="bits")
    cand = [m for m in hamming if m in t.index]
    return max(cand, key=lambda m: t.loc[m, "ndcg@10"]) if cand else None


def catalogue_tests(per_user: Mapping, table: pd.DataFrame, a: str = PHD,
                    against: Sequence[str] = (HAMMING, "best hamming", "popularity"),
                    hamming: Sequence[str] | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """``a`` against each baseline over the catalogue, per width: paired two-tailed t-test
    over users, Bonferroni over the three metrics of one (width, baseline).

    per_user, table: :func:`catalogue`; against: method names, or ``"best
    hamming"`` for the Hamming code with the highest catalogue NDCG@10 at that
    width among ``hamming`` (default :func:`phdlib.methods.hashing_baselines`).
    A baseline without per-user results at a width is left out. Returns index
    ``bits, baseline, metric`` (baseline: a method name); columns ``role``
    (what the baseline stands for), ``method`` (mean of ``a``),
    ``baseline value``, ``difference`` (mean of a − baseline), ``ci low``,
    ``ci high``, ``p`` (Bonferroni-adjusted), ``d_z`` and ``verdict``
    (``"better"``, ``"worse"`` or ``"no significant difference"``).
    """
    hamming = list(methods.hashing_baselines() if hamming is None else hamming)
    rows = []
    for bits in sorted({b for _, b in per_user}):
        if (a, bits) not in per_user:
            continue
        for base in against:
            role = base
            if base == "best hamming":
                base = _best_hamming(table, bits, hamming)
                role = "best Hamming code"
            elif base == HAMMING:
                role = "Hamming twin"
            if base is None or (base, bits) not in per_user or base == a:
                continue
            c = stats.compare({a: per_user[(a, bits)], base: per_user[(base, bits)]}, [a], [base],
                              METRICS, correction="none")
            padj = stats.adjust(c["p"].to_numpy(), "bonferroni")
            for (_, r), p in zip(c.iterrows(), padj):
                verdict = ("better" if r["mean_diff"] > 0 and p < alpha else
                           "worse" if r["mean_diff"] < 0 and p < alpha else
                           "no significant difference")
                rows.append({"bits": bits, "baseline": base, "metric": r["metric"], "role": role,
                             "method": r["mean_method"], "baseline value": r["mean_baseline"],
                             "difference": r["mean_diff"], "ci low": r["ci_low"],
                             "ci high": r["ci_high"], "p": float(p), "d_z": r["d_z"],
                             "verdict": verdict})
    return pd.DataFrame(rows).set_index(["bits", "baseline", "metric"])


def catalogue_findings(tests: pd.DataFrame, seed0: Mapping | None = None, a: str = PHD,
                       metric: str = "ndcg@10") -> list[str]:
    """Sentences from :func:`catalogue_tests`, one per (width, baseline), on ``metric``.

    Against the Hamming twin (VH) the sentence gives the difference under the
    paper's protocol too (from ``seed0``); against the best Hamming code it
    carries the verdict on the paper's ordering (``AGREES``/``DISAGREES``:
    VH_PHD significantly ahead, or not).
    """
    la = methods.label(a)
    out = []
    t = tests.xs(metric, level="metric")
    for (bits, base), r in t.iterrows():
        lb = methods.label(base)
        diff = (f"{la} − {lb} = {_num(r['difference'], sign=True)} {METRIC_LABELS[metric]} "
                f"(95% CI {_num(r['ci low'], sign=True)} to {_num(r['ci high'], sign=True)}, "
                f"{p_text(r['p'])}, Bonferroni over three metrics)")
        if r["verdict"] == "better":
            what = f"{la} ranks significantly better"
        elif r["verdict"] == "worse":
            what = f"{la} ranks significantly worse"
        else:
            what = "no significant difference"
        if r["role"] == "best Hamming code":
            verdict = "AGREES" if r["verdict"] == "better" else "DISAGREES"
            out.append(f"{verdict} (PHD codes rank better than Hamming codes): At {bits} bits "
                       f"the best Hamming code over the catalogue is {lb}; {diff}: {what}.")
        elif r["role"] == "Hamming twin":
            s = f"At {bits} bits over the catalogue, {diff}: {what}"
            if seed0 is not None and (a, bits) in seed0 and (base, bits) in seed0:
                proto = seed0[(a, bits)].metrics[metric] - seed0[(base, bits)].metrics[metric]
                s += f"; under the paper's protocol the difference is {_num(proto, sign=True)}"
            out.append(s + ".")
        else:
            out.append(f"At {bits} bits over the catalogue, against {lb}: {diff}: {what}.")
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
