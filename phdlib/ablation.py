"""Ablations the paper lacks: is VH_PHD's gain the distance, or learning for it?

Two questions, answered from stored runs through the one evaluation path
(:func:`phdlib.evaluation.evaluate`), without retraining:

- :func:`distance_ablation`: every code method's stored codes ranked by both
  distances. Codes learned for the Hamming distance ranked by PHD, and codes
  learned for PHD ranked by Hamming; paired tests (:func:`distance_tests`)
  of PHD ranking against Hamming ranking of the *same* codes.
- :func:`bias_gap`: under PHD, every bit a user switches off adds +1 to all
  of that user's scores in training (``m - 2 PHD = <z_u, z_i'>`` grows by 1
  per bit the user masks), a per-user bias that Hamming codes lack. The
  method ``vh-bias`` gives VH a learned per-user bias in training (unused at
  ranking, where it cannot change a user's order). If VH+bias closes most of
  the gap from VH to VH_PHD, PHD's gain comes from that bias.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import methods, stats, training
from .evaluation import evaluate
from .metrics import METRICS
from .methods import BlockCodeModel, CodeModel

DISTANCES = ("hamming", "phd")


def as_codes(model) -> CodeModel | None:
    """The plain codes of a fitted model, or None when it has none.

    A :class:`CodeModel` is returned as is; a :class:`BlockCodeModel` with one
    block and no weights (CCCF's chosen layout on ML-1M) as its codes; a
    weighted block model or a real-valued model has no single code to rank.
    """
    if isinstance(model, CodeModel):
        return model
    if isinstance(model, BlockCodeModel) and "block_starts" not in model.arrays:
        return CodeModel(model.bits, {k: model.arrays[k] for k in ("user_codes", "item_codes")})
    return None


def distance_ablation(runs: dict, split, ties: str = "expected") -> tuple[pd.DataFrame, dict]:
    """Each code run's test metrics under both distances.

    runs: ``{(method, bits): Run}`` (with arrays). Returns ``(table,
    per_user)``: table rows ``method``, ``bits``, ``learned for`` (the
    method's distance), ``ranked by``, ``stored`` (True where this is how the
    method ranks, whose value must equal the stored test metric) and one
    column per metric; per_user maps ``(method, bits, distance)`` to the
    per-user frame. Runs without plain codes are left out (and listed in
    ``table.attrs["skipped"]``).
    """
    rows, per_user, skipped = [], {}, []
    for (m, b), run in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        codes = as_codes(training.fitted(run))
        if codes is None:
            skipped.append(f"{m} {b} bits")
            continue
        for d in DISTANCES:
            pu = evaluate(codes.with_distance(d), split.test, ties=ties)
            per_user[(m, b, d)] = pu
            rows.append({"method": m, "bits": b, "learned for": methods.get(m).ranks_by,
                         "ranked by": d, "stored": d == methods.get(m).ranks_by,
                         **{k: float(pu[k].mean()) for k in METRICS}})
    table = pd.DataFrame(rows)
    table.attrs["skipped"] = skipped
    return table, per_user


def distance_tests(per_user: dict, alpha: float = 0.05) -> pd.DataFrame:
    """PHD ranking minus Hamming ranking of the same codes, per (method, bits) and metric.

    Paired two-tailed t-test over users, Bonferroni over the three metrics
    of one (method, bits). Columns: method, bits, metric, mean_diff (PHD -
    Hamming), ci_low, ci_high, p_adj, verdict.
    """
    rows = []
    for m, b in sorted({(m, b) for m, b, _ in per_user}, key=lambda k: (k[1], k[0])):
        cmp = stats.compare({"phd": per_user[(m, b, "phd")], "hamming": per_user[(m, b, "hamming")]},
                            ["phd"], ["hamming"], METRICS, family="method", alpha=alpha)
        for _, c in cmp.iterrows():
            worse = c["mean_diff"] < 0 and c["p_adj"] < alpha
            rows.append({"method": m, "bits": b, "metric": c["metric"], "mean_diff": c["mean_diff"],
                         "ci_low": c["ci_low"], "ci_high": c["ci_high"], "p_adj": c["p_adj"],
                         "verdict": "PHD better" if c["better"] else "Hamming better" if worse
                         else "no significant difference"})
    return pd.DataFrame(rows)


def bias_gap(runs: dict, bits: int, alpha: float = 0.05) -> pd.DataFrame:
    """How much of the VH -> VH_PHD gap a per-user training bias closes, per metric.

    runs: ``{(method, bits): Run}`` with ``vh``, ``vh-bias`` and ``vh-phd``.
    Columns: metric, vh, vh-bias, vh-phd, closed (``(vh-bias - vh) / (vh-phd
    - vh)``; NaN when the gap is 0), and the Bonferroni-adjusted p-values of
    the paired tests vh-bias vs vh and vh-phd vs vh-bias.
    """
    need = [("vh", bits), ("vh-bias", bits), ("vh-phd", bits)]
    missing = [k for k in need if k not in runs]
    if missing:
        raise KeyError(f"bias_gap needs runs {need}; missing {missing}")
    pu = {m: runs[(m, bits)].per_user for m, _ in need}
    t1 = stats.compare(pu, ["vh-bias"], ["vh"], METRICS, family="method", alpha=alpha)
    t2 = stats.compare(pu, ["vh-phd"], ["vh-bias"], METRICS, family="method", alpha=alpha)
    rows = []
    for k in METRICS:
        v = {m: float(runs[(m, bits)].metrics[k]) for m, _ in need}
        gap = v["vh-phd"] - v["vh"]
        rows.append({"metric": k, **v,
                     "closed": (v["vh-bias"] - v["vh"]) / gap if gap != 0 else np.nan,
                     "p vh-bias vs vh": float(t1.loc[t1.metric == k, "p_adj"].iloc[0]),
                     "p vh-phd vs vh-bias": float(t2.loc[t2.metric == k, "p_adj"].iloc[0])})
    return pd.DataFrame(rows)


def findings(tests: pd.DataFrame, gaps: dict[int, pd.DataFrame], alpha: float = 0.05) -> list[str]:
    """Plain sentences, computed from :func:`distance_tests` and :func:`bias_gap` tables."""
    out = []
    for (m, b), g in tests.groupby(["method", "bits"], sort=False):
        verdicts = dict(zip(g["metric"], g["verdict"]))
        out.append(f"{methods.label(m)} codes at {b} bits ranked by PHD instead of Hamming: "
                   + "; ".join(f"{k} {g.loc[g.metric == k, 'mean_diff'].iloc[0]:+.4f} ({verdicts[k]})"
                               for k in METRICS) + ".")
    for b, t in gaps.items():
        nd = t.set_index("metric").loc["ndcg@10"]
        if not np.isfinite(nd["closed"]):
            out.append(f"{b} bits: VH and VH_PHD tie on NDCG@10; there is no gap to close.")
            continue
        share = 100 * nd["closed"]
        what = ("half or more of PHD's gain is what a per-user bias gives" if share >= 50 else
                "less than half of PHD's gain is what a per-user bias gives")
        rest = ("VH_PHD stays significantly above VH+bias, so the rest is not the bias"
                if nd["p vh-phd vs vh-bias"] < alpha and nd["vh-phd"] > nd["vh-bias"] else
                "VH_PHD is not significantly above VH+bias")
        out.append(f"{b} bits: VH+bias closes {share:.0f}% of the NDCG@10 gap from VH to VH_PHD: "
                   f"{what}; {rest} (VH+bias vs VH p_adj {nd['p vh-bias vs vh']:.2g}, VH_PHD vs "
                   f"VH+bias p_adj {nd['p vh-phd vs vh-bias']:.2g}).")
    return out
