"""Does the decay of untouched rows matter? VH and VH_PHD with dense Adam and with lazy Adam.

The paper's optimiser is TF1's Adam: every step it decays the moments of
*every* row, so a row the batch did not touch keeps moving on its first
moment for a hundred steps or more after each touch, and its second moment
shrinks between touches. Lazy Adam (:mod:`phdlib.kernels.adam`, methods
``vh-lazy`` and ``vh-phd-lazy``) steps only the rows a batch touches: a row
is still between touches, and its moments decay per touch, not per step.
The two differ most for rows touched rarely, the users and items with few
ratings. This study compares them from stored runs (one per model seed):

- :func:`arms_table`: each method's test metrics, mean and std over seeds;
- :func:`lazy_tests`: lazy minus dense for VH and for VH_PHD, a paired
  two-tailed t-test over users (per-user values averaged over seeds),
  Bonferroni over the three metrics of one (bits, method);
- :func:`gain_table`: VH_PHD's gain over VH under each optimiser;
- :func:`by_activity`: the per-user difference, lazy minus dense, by
  quartile of the users' training ratings (where a rarely touched row is);
- :func:`training_table`: iterations to the best validation point and
  milliseconds per iteration, from the runs' training logs.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..evaluation import stats
from ..evaluation.metrics import METRICS

#: Each dense-Adam method and its lazy-Adam variant.
PAIRS = {"vh": "vh-lazy", "vh-phd": "vh-phd-lazy"}


def _seeds(group) -> list:
    return sorted(group, key=lambda r: r.seed)


def arms_table(runs: dict) -> pd.DataFrame:
    """Test metrics of every method of :data:`PAIRS` over seeds.

    runs: ``{(method, bits): [Run, ...]}`` (one run per model seed). One row per
    (bits, method) present; columns bits, method, base (the dense method it
    belongs to), adam (``"dense"`` or ``"lazy"``), seeds, and per metric its mean
    and ``"<metric> std"`` (ddof=1; NaN for one seed).
    """
    rows = []
    for (m, b), group in runs.items():
        base = m if m in PAIRS else next((k for k, v in PAIRS.items() if v == m), None)
        if base is None:
            continue
        vals = {k: np.array([float(r.metrics[k]) for r in group]) for k in METRICS}
        rows.append({"bits": int(b), "method": m, "base": base,
                     "adam": "dense" if m == base else "lazy", "seeds": len(group),
                     **{k: float(v.mean()) for k, v in vals.items()},
                     **{f"{k} std": float(v.std(ddof=1)) if len(v) > 1 else np.nan
                        for k, v in vals.items()}})
    if not rows:
        raise ValueError("no runs of VH, VH_PHD or their lazy-Adam variants to compare")
    order = [x for kv in PAIRS.items() for x in kv]
    return pd.DataFrame(rows).sort_values(
        ["bits", "method"], key=lambda c: c.map(order.index) if c.name == "method" else c,
        ignore_index=True)


def lazy_tests(runs: dict, alpha: float = 0.05) -> pd.DataFrame:
    """Lazy minus dense Adam, per (bits, method of :data:`PAIRS`) and metric.

    Paired two-tailed t-test over users on per-user test values averaged over
    seeds, Bonferroni over the three metrics of one (bits, method). Columns
    bits, method (the dense one), metric, dense, lazy (means of the per-user
    values), mean_diff, rel (over the dense mean), ci_low, ci_high, p_adj,
    seeds and verdict (``"lazy better"``, ``"dense better"`` or ``"no
    significant difference"``). Pairs without both arms are left out.
    """
    rows = []
    for b in sorted({b for _, b in runs}):
        for dense, lazy in PAIRS.items():
            if (dense, b) not in runs or (lazy, b) not in runs:
                continue
            groups = {m: _seeds(runs[(m, b)]) for m in (dense, lazy)}
            pu = {m: stats.mean_over_seeds([r.per_user for r in g]) for m, g in groups.items()}
            words = {"better": "lazy better", "worse": "dense better",
                     "none": "no significant difference"}
            for c in stats.one_against_one(pu, lazy, dense, METRICS, alpha):
                rows.append({"bits": int(b), "method": dense, "metric": c["metric"],
                             "dense": c["base"], "lazy": c["new"],
                             **{k: c[k] for k in ("mean_diff", "rel", "ci_low", "ci_high",
                                                  "p_adj")},
                             "seeds": min(len(g) for g in groups.values()),
                             "verdict": words[c["outcome"]]})
    return pd.DataFrame(rows)


def gain_table(table: pd.DataFrame, metric: str = "ndcg@10") -> pd.DataFrame:
    """VH_PHD's gain over VH under each optimiser, from :func:`arms_table`.

    One row per (bits, adam) with both methods; columns bits, adam, vh, vh-phd
    (means), gain (vh-phd minus vh) and rel (over vh).
    """
    rows = []
    for (b, adam), t in table.groupby(["bits", "adam"]):
        by = t.set_index("base")[metric]
        if {"vh", "vh-phd"} <= set(by.index):
            rows.append({"bits": int(b), "adam": adam, "vh": float(by["vh"]),
                         "vh-phd": float(by["vh-phd"]), "gain": float(by["vh-phd"] - by["vh"]),
                         "rel": float((by["vh-phd"] - by["vh"]) / by["vh"])})
    return pd.DataFrame(rows)


def by_activity(runs: dict, train, metric: str = "ndcg@10", quartiles: int = 4) -> pd.DataFrame:
    """Lazy minus dense per user, by quartile of the users' training ratings.

    runs: as :func:`arms_table`; train: the split's training ``Ratings`` (its
    ``user`` array). Per-user values are averaged over seeds first. One row per
    (bits, method, quartile); columns bits, method (the dense one), quartile (1:
    the users with the fewest ratings), ratings (the quartile's range, ``"20-35"``),
    users, and diff (the mean of lazy minus dense over the quartile's users).
    """
    counts = pd.Series(np.bincount(np.asarray(train.user)))
    rows = []
    for b in sorted({b for _, b in runs}):
        for dense, lazy in PAIRS.items():
            if (dense, b) not in runs or (lazy, b) not in runs:
                continue
            pu = {m: stats.mean_over_seeds([r.per_user for r in _seeds(runs[(m, b)])])
                  .set_index("user")[metric] for m in (dense, lazy)}
            diff = (pu[lazy] - pu[dense]).dropna()
            n = counts.reindex(diff.index).fillna(0).to_numpy()
            q = pd.qcut(pd.Series(n).rank(method="first"), quartiles, labels=False).to_numpy()
            for k in range(quartiles):
                sel = q == k
                rows.append({"bits": int(b), "method": dense, "quartile": k + 1,
                             "ratings": f"{int(n[sel].min())}-{int(n[sel].max())}",
                             "users": int(sel.sum()), "diff": float(diff.to_numpy()[sel].mean())})
    return pd.DataFrame(rows)


def training_table(runs: dict) -> pd.DataFrame:
    """Iterations to the best validation point and ms per iteration, from the training logs.

    One row per (bits, method) of :func:`arms_table`; columns bits, method,
    best_iteration (the mean over seeds of the logged best iteration) and
    ms_per_iteration (training seconds over iterations, mean over seeds; the
    machine's load at training time included).
    """
    rows = []
    for (m, b), group in runs.items():
        if m not in PAIRS and m not in PAIRS.values():
            continue
        best, ms = [], []
        for r in group:
            log = r.log
            if log is None or not len(log):
                continue
            i = int(log["valid_ndcg@10"].idxmax()) if "valid_ndcg@10" in log else len(log) - 1
            best.append(float(log["iteration"].iloc[i]))
            last = log.iloc[-1]
            if "train_seconds" in log and last["iteration"] > 0:
                ms.append(1e3 * float(last["train_seconds"]) / float(last["iteration"]))
        rows.append({"bits": int(b), "method": m,
                     "best_iteration": float(np.mean(best)) if best else np.nan,
                     "ms_per_iteration": float(np.mean(ms)) if ms else np.nan})
    return pd.DataFrame(rows).sort_values(["bits", "method"], ignore_index=True)
