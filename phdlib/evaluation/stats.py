"""Significance tests over per-user metrics, as in the paper's Table 1.

The paper marks a result with an asterisk when it is "statistically
significantly better than the other Hamming distance baselines per column,
using a paired two tailed t-test at the 0.05 level and Bonferroni
correction". Here:

- :func:`paired_ttest`: the paired two-tailed t-test over users (scipy's
  ``ttest_rel``), with the paired effect size ``d_z = mean(diff) / sd(diff)``
  and a 95% confidence interval of the mean difference;
- :func:`adjust`: Bonferroni (the paper's), Holm, or Benjamini–Hochberg
  (false discovery rate) adjusted p-values;
- :func:`compare`: every (method, baseline, metric) comparison over
  per-user frames from :func:`phdlib.evaluation.metrics.evaluate`, adjusted per column;
- :func:`significance_marks` and :func:`marked_table`: the paper's asterisks
  and a printable table of means with marks.

A *family* of comparisons, the set one correction runs over, is by default
every comparison of one column (metric) of the table (``family="column"``:
each marked method against each baseline); ``family="method"`` corrects only
over one method's comparisons in that column. The paper does not say which;
``"column"`` is the more conservative reading.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _st

CORRECTIONS = ("bonferroni", "holm", "bh", "none")
METRICS = ("ndcg@5", "ndcg@10", "mrr")

__all__ = ["CORRECTIONS", "PairedTest", "paired_ttest", "effect_size", "adjust", "align",
           "one_against_one",
           "compare", "significance_marks", "marked_table", "mean_over_seeds"]


@dataclass(frozen=True)
class PairedTest:
    """Result of one paired two-tailed t-test of ``a - b`` over users."""

    n: int                 # number of paired users
    mean_a: float
    mean_b: float
    mean_diff: float       # mean of a - b
    t: float               # t statistic (inf where every difference is the same non-zero value)
    p: float               # two-tailed p-value, unadjusted
    d_z: float             # paired effect size mean(diff) / sd(diff, ddof=1)
    ci_low: float          # 95% confidence interval of the mean difference
    ci_high: float


def _vec(name: str, x) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array of per-user values; got shape {a.shape}")
    bad = ~np.isfinite(a)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{i}] = {float(a[i])!r} is not finite")
    return a


def effect_size(a, b) -> float:
    """Paired effect size (Cohen's d_z): ``mean(a - b) / sd(a - b)``, ddof = 1.

    a, b: float (n,) paired per-user values. 0 where every difference is 0;
    +-inf where every difference is the same non-zero value.
    """
    d = _vec("a", a) - _vec("b", b)
    if d.shape[0] < 2:
        raise ValueError(f"a paired effect size needs at least 2 pairs; got {d.shape[0]}")
    sd = d.std(ddof=1)
    m = d.mean()
    if sd <= 1e-12 * max(1.0, abs(m)):
        return 0.0 if m == 0 else float(np.sign(m) * np.inf)
    return float(m / sd)


def paired_ttest(a, b) -> PairedTest:
    """Paired two-tailed t-test of per-user values ``a`` against ``b``.

    a, b: float (n,), the same users in the same order (see :func:`align`).
    Where every difference is identical (sd <= 1e-12 max(1, |mean|)) the t
    statistic is undefined: p = 1 if the differences are 0, p = 0 otherwise.
    """
    a = _vec("a", a)
    b = _vec("b", b)
    if a.shape != b.shape:
        raise ValueError(f"a and b must pair the same users; got {a.shape[0]} and {b.shape[0]} values")
    n = a.shape[0]
    if n < 2:
        raise ValueError(f"a paired t-test needs at least 2 users; got {n}")
    d = a - b
    m = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd <= 1e-12 * max(1.0, abs(m)):  # constant up to rounding: t is undefined
        t = 0.0 if m == 0 else float(np.sign(m) * np.inf)
        p = 1.0 if m == 0 else 0.0
        lo = hi = m
    else:
        res = _st.ttest_rel(a, b)
        t, p = float(res.statistic), float(res.pvalue)
        half = float(_st.t.ppf(0.975, n - 1)) * sd / np.sqrt(n)
        lo, hi = m - half, m + half
    return PairedTest(n=n, mean_a=float(a.mean()), mean_b=float(b.mean()), mean_diff=m, t=t, p=p,
                      d_z=effect_size(a, b), ci_low=lo, ci_high=hi)


def adjust(pvalues, method: str = "bonferroni") -> np.ndarray:
    """Adjusted p-values for one family of comparisons: float64 (m,).

    ``bonferroni``: ``min(1, m p)``; ``holm``: Holm's step-down;
    ``bh``: Benjamini–Hochberg step-up (controls the false discovery rate);
    ``none``: unchanged. Reject where the adjusted p-value is < alpha.
    """
    if method not in CORRECTIONS:
        raise ValueError(f"method={method!r} is not supported; expected one of {', '.join(CORRECTIONS)}")
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"pvalues must be 1-d; got shape {p.shape}")
    if np.any(~np.isfinite(p) | (p < 0) | (p > 1)):
        i = int(np.flatnonzero(~np.isfinite(p) | (p < 0) | (p > 1))[0])
        raise ValueError(f"pvalues[{i}] = {float(p[i])!r} is not a probability in [0, 1]")
    m = p.shape[0]
    if m == 0 or method == "none":
        return p.copy()
    if method == "bonferroni":
        return np.minimum(1.0, p * m)
    order = np.argsort(p, kind="stable")
    ps = p[order]
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, ps * (m - np.arange(m))))
    else:  # bh
        adj = np.minimum.accumulate((ps * m / np.arange(1, m + 1))[::-1])[::-1]
        adj = np.minimum(1.0, adj)
    out = np.empty(m)
    out[order] = adj
    return out


def align(a: pd.DataFrame, b: pd.DataFrame, metric: str, names=("a", "b")):
    """The values of ``metric`` for the users of two per-user frames, paired.

    a, b: frames with columns ``user`` and ``metric`` (from
    :func:`phdlib.evaluation.metrics.evaluate`). Both must hold exactly the same users;
    a user missing on one side is an error naming it. Returns two float64
    (n,) arrays ordered by user id.
    """
    for name, f in zip(names, (a, b)):
        for col in ("user", metric):
            if col not in f.columns:
                raise ValueError(f"per-user frame {name!r} has no column {col!r}; columns: {list(f.columns)}")
        if f["user"].duplicated().any():
            u = f.loc[f["user"].duplicated(), "user"].iloc[0]
            raise ValueError(f"per-user frame {name!r} lists user {u} more than once")
    ua, ub = set(a["user"].tolist()), set(b["user"].tolist())
    if ua != ub:
        only_a, only_b = sorted(ua - ub), sorted(ub - ua)
        raise ValueError(
            f"per-user frames {names[0]!r} and {names[1]!r} cover different users: "
            f"{len(only_a)} only in {names[0]!r} (first {only_a[:5]}), "
            f"{len(only_b)} only in {names[1]!r} (first {only_b[:5]}); a paired test needs the same users")
    sa = a.set_index("user")[metric].sort_index()
    sb = b.set_index("user")[metric].sort_index()
    return sa.to_numpy(np.float64), sb.to_numpy(np.float64)


def compare(per_user: Mapping[str, pd.DataFrame], methods: Sequence[str], against: Sequence[str],
            metrics: Sequence[str] = METRICS, correction: str = "bonferroni",
            family: str = "column", alpha: float = 0.05) -> pd.DataFrame:
    """Every paired test of a method in ``methods`` against a baseline in ``against``.

    per_user: name -> per-user frame (from :func:`phdlib.evaluation.metrics.evaluate`).
    A method is never compared with itself. p-values are adjusted by
    ``correction`` within each family (``family="column"``: all comparisons
    of one metric; ``"method"``: one method's comparisons of one metric;
    ``"all"``: every comparison of the call, e.g. one comparison over the
    three metrics).
    Returns one row per comparison: ``metric, method, baseline, n, mean_method,
    mean_baseline, mean_diff, ci_low, ci_high, t, p, p_adj, d_z, better``
    (``better``: mean_diff > 0 and p_adj < alpha).
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"correction={correction!r} is not supported; expected one of {', '.join(CORRECTIONS)}")
    if family not in ("column", "method", "all"):
        raise ValueError(f"family={family!r} is not supported; expected 'column', 'method' or 'all'")
    for name in (*methods, *against):
        if name not in per_user:
            raise ValueError(f"no per-user results for method {name!r}; have: {', '.join(per_user)}")
    rows = []
    for metric in metrics:
        for m in methods:
            for b in against:
                if b == m:
                    continue
                x, y = align(per_user[m], per_user[b], metric, names=(m, b))
                r = paired_ttest(x, y)
                rows.append({"metric": metric, "method": m, "baseline": b, "n": r.n,
                             "mean_method": r.mean_a, "mean_baseline": r.mean_b,
                             "mean_diff": r.mean_diff, "ci_low": r.ci_low, "ci_high": r.ci_high,
                             "t": r.t, "p": r.p, "d_z": r.d_z})
    out = pd.DataFrame(rows, columns=["metric", "method", "baseline", "n", "mean_method",
                                      "mean_baseline", "mean_diff", "ci_low", "ci_high", "t", "p", "d_z"])
    keys = {"column": ["metric"], "method": ["metric", "method"], "all": None}[family]
    out["p_adj"] = np.nan
    for _, g in (out.groupby(keys, sort=False) if keys else [(None, out)]):
        idx = g.index
        out.loc[idx, "p_adj"] = adjust(out.loc[idx, "p"].to_numpy(), correction)
    out["better"] = (out["mean_diff"] > 0) & (out["p_adj"] < alpha)
    return out[["metric", "method", "baseline", "n", "mean_method", "mean_baseline", "mean_diff",
                "ci_low", "ci_high", "t", "p", "p_adj", "d_z", "better"]]


def one_against_one(per_user: Mapping[str, pd.DataFrame], new: str, base: str,
                    metrics: Sequence[str] = METRICS, alpha: float = 0.05) -> list[dict]:
    """``new`` against ``base`` on every metric, Bonferroni over the metrics (one family).

    Returns one dict per metric: metric, base and new (the means of the per-user
    values), mean_diff, rel (mean_diff over the base mean; NaN when it is 0), ci_low,
    ci_high, p_adj and outcome (``"better"``: new significantly above base,
    ``"worse"``: significantly below, ``"none"``: neither).
    """
    out = []
    for _, c in compare(per_user, [new], [base], metrics, family="all", alpha=alpha).iterrows():
        b, n = float(per_user[base][c["metric"]].mean()), float(per_user[new][c["metric"]].mean())
        worse = c["mean_diff"] < 0 and c["p_adj"] < alpha
        out.append({"metric": c["metric"], "base": b, "new": n,
                    "mean_diff": float(c["mean_diff"]),
                    "rel": float(c["mean_diff"]) / b if b else np.nan,
                    "ci_low": float(c["ci_low"]), "ci_high": float(c["ci_high"]),
                    "p_adj": float(c["p_adj"]),
                    "outcome": "better" if c["better"] else "worse" if worse else "none"})
    return out


def significance_marks(per_user: Mapping[str, pd.DataFrame], methods: Sequence[str],
                       against: Sequence[str], metrics: Sequence[str] = METRICS,
                       correction: str = "bonferroni", family: str = "column",
                       alpha: float = 0.05, mark: str = "*") -> pd.DataFrame:
    """The paper's asterisks: ``mark`` where a method is significantly better
    than every baseline of ``against`` (other than itself) in that column.

    Returns a frame of strings (``mark`` or ``""``), index ``methods``,
    columns ``metrics``.
    """
    cmp = compare(per_user, methods, against, metrics, correction, family, alpha)
    out = pd.DataFrame("", index=list(methods), columns=list(metrics))
    for (metric, m), g in cmp.groupby(["metric", "method"], sort=False):
        if len(g) and bool(g["better"].all()):
            out.loc[m, metric] = mark
    return out


def marked_table(per_user: Mapping[str, pd.DataFrame], methods: Sequence[str],
                 against: Sequence[str], metrics: Sequence[str] = METRICS,
                 digits: int = 4, **kwargs) -> pd.DataFrame:
    """Means over users formatted like the paper (``.7135*``), one row per
    method of ``per_user``; marks from :func:`significance_marks` (kwargs go
    there). Returns a frame of strings, index method names, columns metrics.
    """
    marks = significance_marks(per_user, methods, against, metrics, **kwargs)
    rows = {}
    for name, f in per_user.items():
        cells = []
        for metric in metrics:
            if metric not in f.columns:
                raise ValueError(f"per-user frame {name!r} has no column {metric!r}")
            s = f"{float(f[metric].mean()):.{digits}f}"
            s = s[1:] if s.startswith("0.") else s
            cells.append(s + (marks.loc[name, metric] if name in marks.index else ""))
        rows[name] = cells
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(metrics))


def mean_over_seeds(frames: Sequence[pd.DataFrame], metrics: Sequence[str] = METRICS
                    ) -> pd.DataFrame:
    """Per-user metrics averaged over seeds (one frame per seed, as :func:`phdlib.evaluation.metrics.
    evaluate` returns): one row per user, columns ``user`` and ``metrics``. The seeds must
    cover the same users (``ValueError`` otherwise: a test over users pairs them)."""
    if len(frames) == 1:
        return frames[0][["user", *metrics]]
    both = pd.concat([f[["user", *metrics]] for f in frames], ignore_index=True)
    counts = both.groupby("user").size()
    if (counts != len(frames)).any():
        raise ValueError("the seeds' runs cover different users; cannot average per user")
    return both.groupby("user", sort=True)[list(metrics)].mean().reset_index()
