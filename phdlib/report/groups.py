"""Grouping stored runs for the tables and figures: by method, per user."""
from __future__ import annotations

import pandas as pd

__all__ = ["by_method", "per_user"]


def by_method(runs: dict, bits: int | None = None, plain: bool = True) -> dict[str, list]:
    """``{method: [runs over seeds]}`` from ``{Cell: Run}`` (:class:`phdlib.experiments.Cell`).

    bits: keep only cells of that width (None: all). plain: keep only cells
    without sampling options (the default sampling), so Figure 4's variants
    do not mix into Table 1. One run per seed, sorted by seed.
    """
    out: dict[str, list] = {}
    for cell, run in runs.items():
        if bits is not None and cell.bits != bits:
            continue
        ov = cell.overrides
        if plain and ("train_sampling" in ov or "eval_sampling" in ov):
            continue  # Figure 4's variants; the plain cell of the same method is the default run
        lst = out.setdefault(cell.method, [])
        if all(r.seed != run.seed for r in lst):  # one run per seed
            lst.append(run)
    for lst in out.values():
        lst.sort(key=lambda r: r.seed)
    return out


def per_user(runs: list, metric: str = "ndcg@10") -> pd.Series:
    """Per-user ``metric`` averaged over the runs (seeds): float64 Series indexed by user, sorted.

    Raises ValueError without runs, or when the runs cover different users.
    """
    if not runs:
        raise ValueError("per_user needs at least one run")
    frames = [r.per_user.set_index("user")[metric] for r in runs]
    df = pd.concat(frames, axis=1)
    if df.isna().any().any():
        raise ValueError(f"runs of {runs[0].method!r} cover different users; cannot average per user")
    return df.mean(axis=1).sort_index()
