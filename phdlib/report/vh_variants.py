"""The VH chapter's variant study: why VH as released stalls at the all-tied ranking, and
which variant of its training lets it leave that plateau (:data:`phdlib.studies.variants.VARIANTS`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..evaluation import metrics
from ..evaluation.metrics import METRIC_LABELS, METRICS
from ..studies.variants import VARIANTS
from .page import num

__all__ = ["chance_level", "variants_table", "variants_findings", "variants_view", "released_finding", "variants_reading"]


def chance_level(ratings, metric: str = "ndcg@10") -> float:
    """``metric`` of an all-tied ranking (every item at the same distance), expected over ties.

    ratings: an object with ``user`` (int (N,)) and ``rating`` ((N,)) arrays,
    e.g. ``split.valid``.
    """

    per_user = metrics.evaluate(ratings.user, ratings.rating, np.zeros(len(ratings.user)))
    return float(per_user[metric].mean())


def variants_table(runs: dict, chance: float) -> pd.DataFrame:
    """One row per variant (index ``variant``) from ``{name: Run}`` of :func:`phdlib.studies.variants.run_variants`.

    Columns: ``method``, ``tests`` (what the variant tests), ``iterations``,
    ``leaves plateau at`` (the first logged iteration whose validation
    NDCG@10 exceeds ``chance + 0.01``, None if never; ``chance``:
    :func:`chance_level` of the validation split), ``best iteration``, the
    validation metrics at the best point and the code statistics at the end
    (set bits of users and items, bits shared by 99% of users).
    """

    rows = []
    for name, r in runs.items():
        log = r.log
        first = log.loc[log["valid_ndcg@10"] > chance + 0.01, "iteration"]
        rows.append({"variant": name, "method": r.method, "tests": VARIANTS[name][3] if name in VARIANTS else "",
                     "iterations": int(r.metrics["iterations"]),
                     "leaves plateau at": int(first.iloc[0]) if len(first) else None,
                     "best iteration": int(r.metrics["best_iteration"]),
                     "valid ndcg@5": r.metrics["valid_ndcg@5"],
                     "valid ndcg@10": r.metrics["valid_ndcg@10"],
                     "valid mrr": r.metrics["valid_mrr"],
                     "set bits (users)": float(log["user_ones"].iloc[-1]),
                     "set bits (items)": float(log["item_ones"].iloc[-1]),
                     "bits shared by 99% of users": float(log["user_const_bits"].iloc[-1])})
    return pd.DataFrame(rows).set_index("variant")


def _plateau_left(value) -> str | None:
    """A variant's ``"leaves plateau at"`` iteration as text (``"12,750"``), or None
    where it never left the plateau (None or NaN in :func:`variants_table`)."""
    return None if value is None or pd.isna(value) else f"{int(value):,}"


def _vh_variants(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`variants_table` that are variants of VH (not VH_PHD's)."""
    return table[table["method"] == "vh"]


def variants_findings(table: pd.DataFrame) -> list[str]:
    """Plain sentences, computed from :func:`variants_table`, on what each variant did."""

    out = []
    for name, row in table.iterrows():
        at = _plateau_left(row["leaves plateau at"])
        leave_s = ("never rose 0.01 above chance" if at is None
                   else f"first 0.01 above chance at iteration {at}")
        out.append(f"{name}: {leave_s}; best validation NDCG@10 {num(row['valid ndcg@10'])} "
                   f"(MRR {num(row['valid mrr'])}) at iteration {int(row['best iteration']):,} "
                   f"of {int(row['iterations']):,}.")
    vh = _vh_variants(table)
    if len(vh):
        out.append(f"Best VH variant on validation NDCG@10: {vh['valid ndcg@10'].idxmax()}.")
    return out


def variants_view(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`variants_table` for reading: labels for the metrics, ``never`` where
    a variant never left the plateau, the code statistics as shares."""
    out = pd.DataFrame(index=table.index)
    out["iterations"] = table["iterations"].astype(int)
    out["leaves plateau at"] = [_plateau_left(v) or "never" for v in table["leaves plateau at"]]
    out["best iteration"] = table["best iteration"].astype(int)
    for k, lab in (("valid ndcg@5", "NDCG@5"), ("valid ndcg@10", "NDCG@10"), ("valid mrr", "MRR")):
        out[f"validation {lab}"] = table[k].astype(float)
    out["set bits, users"] = table["set bits (users)"].astype(float)
    out["set bits, items"] = table["set bits (items)"].astype(float)
    out["bits shared by 99% of users"] = table["bits shared by 99% of users"].astype(float)
    return out


def released_finding(released_metrics: dict, chance_test: float) -> str:
    """VH trained as released, on the test split, beside the all-tied ranking."""

    return ("VH trained as released scores, on the test split (shown here, used for no choice), "
            + ", ".join(f"{METRIC_LABELS[m]} {num(released_metrics[m])}" for m in METRICS)
            + f"; an all-tied ranking scores NDCG@10 {num(chance_test)}.")


def variants_reading(vt: pd.DataFrame) -> list[str]:
    """What the variant study shows, computed from :func:`variants_table`: the
    noise, the learning rate and the sampling of VH set against each other,
    whether the codes collapsed, and how much VH_PHD's alternatives move."""

    def leaves(name):
        at = _plateau_left(vt.loc[name, "leaves plateau at"])
        return "never leaves the plateau" if at is None else f"leaves the plateau at iteration {at}"

    def best(name):
        return num(vt.loc[name, "valid ndcg@10"])

    def span(col):
        lo, hi = vh_rows[col].min(), vh_rows[col].max()
        return f"{lo:.0%}" if f"{lo:.0%}" == f"{hi:.0%}" else f"{lo:.0%} to {hi:.0%}"

    have = set(vt.index)
    out = []
    if {"lr 0.005", "lr 0.005, no noise"} <= have:
        out.append(f"Noise: without noise injection VH {leaves('lr 0.005, no noise')} and reaches "
                   f"{best('lr 0.005, no noise')}; with it, VH {leaves('lr 0.005')} and reaches "
                   f"{best('lr 0.005')}.")
    vh_rows = _vh_variants(vt)
    if len(vh_rows):
        shared = vh_rows["bits shared by 99% of users"].max()
        out.append(f"Collapse: at the end of training, {span('set bits (users)')} of the users' "
                   f"bits are set in every VH variant, and "
                   + ("no bit is shared by 99% of users." if shared == 0 else
                      f"at most {shared:.0%} of the bits are shared by 99% of users."))
    if {"lr 0.001", "lr 0.005"} <= have:
        out.append(f"Learning rate: at 0.001 VH {leaves('lr 0.001')} (best {best('lr 0.001')}); "
                   f"at 0.005 it {leaves('lr 0.005')} (best {best('lr 0.005')}).")
    if {"lr 0.005", "lr 0.005, deterministic training"} <= have:
        k = "lr 0.005, deterministic training"
        out.append(f"Sampling: with deterministic training at 0.005, VH {leaves(k)} and reaches "
                   f"{best(k)}, against {best('lr 0.005')} with stochastic training.")
    phd = vt[vt["method"] == "vh-phd"]
    if len(phd) > 1:
        rng_ = f"{num(phd['valid ndcg@10'].min())} to {num(phd['valid ndcg@10'].max())}"
        if phd["leaves plateau at"].notna().all():
            out.append(f"VH_PHD leaves the plateau by iteration "
                       f"{int(phd['leaves plateau at'].max()):,} in all {len(phd)} of its "
                       f"variants; their best validation NDCG@10 spans {rng_}.")
        else:
            out.append(f"VH_PHD's variants reach a best validation NDCG@10 of {rng_}.")
    return out
