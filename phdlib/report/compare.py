"""Our numbers beside the paper's Table 1: the one comparison of the book.

:func:`comparison` lays out, for each (method, width), our test metrics (mean
and std over seeds) next to the paper's values (:mod:`phdlib.paper`) and the
difference; :func:`within` says which rows lie inside the reproduction's
acceptance band :data:`TOLERANCE` on every metric. Table 1
(:func:`phdlib.report.table1`) and every chapter use this layout:

- index: MultiIndex ``(method, bits)`` (str, int);
- columns: MultiIndex ``(metric, field)``, metric in :data:`phdlib.evaluation.metrics.METRICS`
  order, field in :data:`FIELDS`: ``ours`` (float64, mean over seeds), ``std``
  (float64, ddof=1, NaN for one seed), ``n`` (int64, seeds), ``paper``
  (float64, NaN where the paper has no value), ``diff`` (float64, ours − paper).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from .. import paper
from ..evaluation.metrics import METRICS

__all__ = ["TOLERANCE", "FIELDS", "comparison", "within", "max_abs_diff", "mean_std"]

#: The acceptance band of the reproduction: |ours − paper| at most this, per value.
TOLERANCE = 0.015

#: The fields of each metric in a comparison table, in column order.
FIELDS = ("ours", "std", "n", "paper", "diff")


def mean_std(values: Iterable[float]) -> tuple[float, float, int]:
    """(mean, std with ddof=1, count) of float values; NaN mean without values, NaN std below two."""
    v = np.asarray(list(values), dtype=float)
    mean = float(v.mean()) if len(v) else np.nan
    std = float(v.std(ddof=1)) if len(v) > 1 else np.nan
    return mean, std, len(v)


def _metric_key(metric: str, discount_prefix: str) -> str:
    """Where ``metric`` is stored under another discount: only NDCG has one (MRR has none)."""
    return discount_prefix + metric if metric.startswith("ndcg") else metric


def comparison(runs: dict, dataset: str, discount_prefix: str = "",
               paper_names: dict | None = None, metrics: Iterable[str] = METRICS) -> pd.DataFrame:
    """Our test metrics beside the paper's Table 1, one row per (method, bits).

    runs: ``{(method, bits): [Run, ...]}`` (one run per seed) or ``{(method,
    bits): Run}``; an empty list gives a row of NaN ours (``n`` 0). Rows are
    ordered by ``bits``, then in the order of ``runs``.
    dataset: the paper's dataset name (no paper values for one it lacks).
    discount_prefix: read NDCG stored under another discount, e.g.
    ``"released:"`` (``released:ndcg@10``); MRR is read as is.
    paper_names: ``{method: name in phdlib.paper.TABLE1 or None}`` for a
    method compared with another row of the paper (``{"mf-als": "mf"}``) or
    with none (``None``); default: the same name.
    Returns the layout of the module docstring (see :data:`FIELDS`).
    """
    metrics = list(metrics)
    paper_names = paper_names or {}
    items = sorted(runs.items(), key=lambda kv: kv[0][1])  # stable: input order within a width
    cols: dict[tuple[str, str], list] = {(m, f): [] for m in metrics for f in FIELDS}
    for (method, bits), rs in items:
        rs = list(rs) if isinstance(rs, (list, tuple)) else [rs]
        name = paper_names.get(method, method)
        ref = paper.table1(dataset, bits).get(name, {}) if name is not None else {}
        for m in metrics:
            ours, std, n = mean_std(r.metrics[_metric_key(m, discount_prefix)] for r in rs)
            theirs = float(ref.get(m, np.nan))
            for f, v in zip(FIELDS, (ours, std, n, theirs, ours - theirs)):
                cols[(m, f)].append(v)
    index = pd.MultiIndex.from_arrays([[k[0] for k, _ in items], [k[1] for k, _ in items]],
                                      names=["method", "bits"])
    out = pd.DataFrame(cols, index=index)
    out.columns = pd.MultiIndex.from_tuples(list(cols), names=["metric", "field"])
    return out.astype({(m, "n"): "int64" for m in metrics})


def within(table: pd.DataFrame, tol: float = TOLERANCE) -> pd.Series:
    """Per row of a :func:`comparison` table: is every metric within ``tol`` of the paper's?

    Returns bool, indexed like ``table``; False where the paper has no value.
    """
    return table.xs("diff", axis=1, level="field").abs().le(tol).all(axis=1)


def max_abs_diff(table: pd.DataFrame) -> pd.Series:
    """Per row of a :func:`comparison` table: the largest |ours − paper| (float64; NaN without paper values)."""
    return table.xs("diff", axis=1, level="field").abs().max(axis=1)
