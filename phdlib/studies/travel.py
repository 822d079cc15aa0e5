"""Does PHD's gain travel to a second learner? VH against VH_PHD and DCF against DCF_PHD.

The paper shows that codes learned *for* PHD rank better than codes learned
for the Hamming distance with one learner, variational hashing (VH). This
study asks the same question of a second, unrelated learner: DCF's discrete
coordinate descent (:mod:`phdlib.methods.dcf`) against the same descent fitted
to PHD's score (:mod:`phdlib.methods.dcf_phd`), on several datasets and widths,
from stored runs (one per model seed) and through the one evaluation path.

- :func:`learner_table`: each arm's test metrics, mean and std over seeds;
- :func:`gain_tests`: the PHD arm minus the Hamming arm of each learner, a
  paired two-tailed t-test over users (per-user values averaged over seeds),
  Bonferroni over the three metrics of one (dataset, width, learner);
- the ablation chapter's two questions, asked of both learners:
  :func:`phdlib.studies.ablation.distance_ablation` (the codes ranked by the
  other distance) and :func:`phdlib.studies.ablation.bias_gap` with each
  learner's :data:`ARMS` (does a per-user offset in training, VH+bias or
  DCF+bias, close the gap?);
- :func:`sweep_cost`: seconds per outer iteration of the discrete descent of
  DCF and DCF_PHD, from the runs' training logs.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import methods
from ..evaluation import stats
from ..evaluation.metrics import METRICS
from . import ablation

#: Per learner, its arms (learned for Hamming, with a per-user offset in training, learned for
#: PHD), as :func:`phdlib.studies.ablation.bias_gap` takes them.
ARMS = {"vh": ("vh", "vh-bias", "vh-phd"), "dcf": ("dcf", "dcf-bias", "dcf-phd")}


def learners() -> dict[str, tuple]:
    """:data:`ARMS` restricted to the learners whose three methods are registered."""
    have = set(methods.names())
    return {k: arms for k, arms in ARMS.items() if set(arms) <= have}


def _seeds(group) -> list:
    return sorted(group, key=lambda r: r.seed)


def learner_table(runs: dict) -> pd.DataFrame:
    """Each arm's test metrics over seeds.

    runs: ``{(dataset, method, bits): [Run, ...]}`` (one run per model seed).
    One row per (dataset, bits, learner, method) of :data:`ARMS` present;
    columns dataset, bits, learner, method, arm (``"hamming"``, ``"offset"``
    or ``"phd"``), seeds (int), and per metric its mean and ``"<metric> std"``
    (ddof=1; NaN for one seed).
    """
    rows = []
    for learner, arms in ARMS.items():
        for arm, m in zip(("hamming", "offset", "phd"), arms):
            for (ds, mm, b), group in runs.items():
                if mm != m:
                    continue
                vals = {k: np.array([float(r.metrics[k]) for r in group]) for k in METRICS}
                rows.append({"dataset": ds, "bits": int(b), "learner": learner, "method": m,
                             "arm": arm, "seeds": len(group),
                             **{k: float(v.mean()) for k, v in vals.items()},
                             **{f"{k} std": float(v.std(ddof=1)) if len(v) > 1 else np.nan
                                for k, v in vals.items()}})
    if not rows:
        raise ValueError("no runs of VH, VH_PHD, DCF or DCF_PHD to compare")
    return pd.DataFrame(rows).sort_values(["dataset", "bits", "learner", "method"],
                                          key=lambda c: c.map(_order) if c.name == "method" else c,
                                          ignore_index=True)


def _order(m: str) -> int:
    flat = [x for arms in ARMS.values() for x in arms]
    return flat.index(m) if m in flat else len(flat)


def gain_tests(runs: dict, alpha: float = 0.05) -> pd.DataFrame:
    """The PHD arm minus the Hamming arm of each learner, per (dataset, bits) and metric.

    runs: as :func:`learner_table`. Paired two-tailed t-test over users on
    per-user test values averaged over seeds, Bonferroni over the three
    metrics of one (dataset, bits, learner). Columns dataset, bits, learner,
    metric, hamming, phd (means of the per-user values), mean_diff, rel (the
    difference over the Hamming arm's mean), ci_low, ci_high, p_adj, seeds and
    verdict (``"PHD better"``, ``"Hamming better"`` or ``"no significant
    difference"``). Pairs whose two arms are not both present are left out.
    """
    rows = []
    keys = sorted({(ds, b) for ds, _, b in runs})
    for ds, b in keys:
        for learner, (ham, _, phd) in ARMS.items():
            if (ds, ham, b) not in runs or (ds, phd, b) not in runs:
                continue
            groups = {m: _seeds(runs[(ds, m, b)]) for m in (ham, phd)}
            pu = {m: stats.mean_over_seeds([r.per_user for r in g]) for m, g in groups.items()}
            words = {"better": "PHD better", "worse": "Hamming better",
                     "none": "no significant difference"}
            for c in stats.one_against_one(pu, phd, ham, METRICS, alpha):
                rows.append({"dataset": ds, "bits": int(b), "learner": learner,
                             "metric": c["metric"], "hamming": c["base"], "phd": c["new"],
                             **{k: c[k] for k in ("mean_diff", "rel", "ci_low", "ci_high",
                                                  "p_adj")},
                             "seeds": min(len(g) for g in groups.values()),
                             "verdict": words[c["outcome"]]})
    return pd.DataFrame(rows)


def distance_tests(runs: dict, splits: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ablation's first question for every learner's Hamming and PHD arms, per dataset.

    runs: as :func:`learner_table`; splits: ``{dataset: Split}``. Returns
    ``(table, tests)``: :func:`phdlib.studies.ablation.distance_ablation`'s table
    and :func:`phdlib.studies.ablation.distance_tests`' tests of each dataset,
    with a ``dataset`` column first.
    """
    tables, tests = [], []
    for ds in sorted({d for d, _, _ in runs}):
        grouped = {(m, b): g for (d, m, b), g in runs.items() if d == ds
                   and any(m in (arms[0], arms[2]) for arms in ARMS.values())}
        if not grouped:
            continue
        table, per_user = ablation.distance_ablation(grouped, splits[ds])
        tables.append(table.assign(dataset=ds))
        tests.append(ablation.distance_tests(per_user).assign(dataset=ds))
    first = lambda f: f[["dataset"] + [c for c in f.columns if c != "dataset"]]  # noqa: E731
    return first(pd.concat(tables, ignore_index=True)), first(pd.concat(tests, ignore_index=True))


def offset_gaps(runs: dict) -> dict:
    """The ablation's second question for every learner: ``{(dataset, bits, learner):
    bias_gap frame}`` (:func:`phdlib.studies.ablation.bias_gap` with the learner's
    :data:`ARMS`), for every (dataset, bits, learner) whose three arms are present."""
    out = {}
    for ds, b in sorted({(ds, b) for ds, _, b in runs}):
        for learner, arms in ARMS.items():
            if all((ds, m, b) in runs for m in arms):
                grouped = {(m, b): runs[(ds, m, b)] for m in arms}
                out[(ds, int(b), learner)] = ablation.bias_gap(grouped, b, arms=arms)
    return out


def sweep_cost(runs: dict, learner_methods=("dcf", "dcf-phd")) -> pd.DataFrame:
    """Seconds per outer iteration of the discrete descent (every user's and item's bits, then
    the surrogates), from the training logs of the stored runs.

    runs: as :func:`learner_table`. One row per (dataset, bits, method) of
    ``learner_methods``: rounds (outer iterations over all seeds), seconds (their
    mean wall seconds; the machine's load at training time included) and, on each
    method's row, ratio (its seconds over the first method's at the same dataset
    and width).
    """
    rows = []
    for (ds, m, b), group in sorted(runs.items()):
        if m not in learner_methods:
            continue
        secs = []
        for r in group:
            log = r.log  # the stored training log (relaxed initialisation, then discrete rounds)
            if log is None:
                continue
            d = log[log["phase"] == "discrete"] if "phase" in log else log
            d = d[d["iteration"] > 0]
            secs.extend(float(x) for x in d["seconds"])
        if secs:
            rows.append({"dataset": ds, "bits": int(b), "method": m, "rounds": len(secs),
                         "seconds": float(np.mean(secs))})
    out = pd.DataFrame(rows)
    if len(out):
        base = out[out["method"] == learner_methods[0]].set_index(["dataset", "bits"])["seconds"]
        out["ratio"] = [s / base.get((d, b), np.nan) for d, b, s in
                        zip(out["dataset"], out["bits"], out["seconds"])]
    return out
