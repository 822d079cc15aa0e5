"""How large a difference the seed-to-seed spread can explain.

Every learned method of Table 1 is trained with several model seeds (the
tuning grid on seed 0, the chosen configuration on every seed). With ``n``
seeds and a pooled seed-to-seed standard deviation ``s`` (ddof=1), seed noise
alone moves, at the 95% level (normal approximation, ``z = 1.96``):

- the difference of two single runs by up to ``z sqrt(2) s``;
- the difference of two means of ``n`` seeds by up to ``z sqrt(2 / n) s``;
- our mean minus one single run (the paper reports one run per value) by up
  to ``z sqrt(1 + 1 / n) s``.

The pooled ``s`` is the root mean variance over the methods whose values move
with the seed; methods that do not depend on the seed (their std is 0) are
listed, not pooled.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..evaluation.metrics import METRIC_LABELS, METRICS
from .style import label

__all__ = ["Z95", "seed_spread", "seed_table", "noise_bands", "seed_findings"]

#: Two-sided 95% normal quantile.
Z95 = 1.959963984540054


def seed_spread(t) -> pd.DataFrame:
    """Per method of a :class:`~phdlib.report.table1.Table1`: seeds and std of each metric.

    Returns rows = methods with values, columns ``n`` (int, seeds) and one
    float64 column per metric (std over seeds, ddof=1; NaN with one seed).
    """
    v = t.values
    rows = [m for m in v.index if v.loc[m, ("ndcg@10", "n")] > 0]
    out = pd.DataFrame({"n": [int(v.loc[m, ("ndcg@10", "n")]) for m in rows]}, index=rows)
    for met in METRICS:
        out[met] = [float(v.loc[m, (met, "std")]) for m in rows]
    out.index.name = "method"
    return out


def seed_table(tables: dict) -> pd.DataFrame:
    """:func:`seed_spread` of several widths for display: rows (bits, method label), columns
    ``seeds`` and the metric labels (std over seeds; NaN with one seed). ``tables``: ``{bits:
    Table1}``."""
    frames = {b: seed_spread(t) for b, t in tables.items()}
    out = pd.concat(frames, names=["bits"]).rename(columns={"n": "seeds", **METRIC_LABELS})
    out.index = out.index.set_levels(out.index.levels[1].map(label), level=1)
    return out


def noise_bands(spread: pd.DataFrame, metric: str = "ndcg@10") -> dict:
    """Pooled std of ``metric`` and the three 95% bands of the module docstring.

    Pools the methods with at least two seeds and a nonzero std. Returns
    ``{"pooled_std", "n", "single", "means", "vs_single", "pooled", "constant"}``
    (floats NaN when nothing can be pooled; ``pooled`` / ``constant``: method lists).
    """
    ok = spread[(spread["n"] > 1) & spread[metric].notna()]
    moving = ok[ok[metric] > 0]
    constant = list(ok.index[ok[metric] == 0])
    if moving.empty:
        nan = float("nan")
        return {"pooled_std": nan, "n": 0, "single": nan, "means": nan, "vs_single": nan,
                "pooled": [], "constant": constant}
    s = float(np.sqrt((moving[metric] ** 2).mean()))
    n = int(moving["n"].min())
    return {"pooled_std": s, "n": n, "single": Z95 * np.sqrt(2) * s,
            "means": Z95 * np.sqrt(2 / n) * s, "vs_single": Z95 * np.sqrt(1 + 1 / n) * s,
            "pooled": list(moving.index), "constant": constant}


def seed_findings(t, metric: str = "ndcg@10") -> list[str]:
    """Plain statements, computed, of what the seed spread explains in one Table 1."""
    spread = seed_spread(t)
    b = noise_bands(spread, metric)
    name = METRIC_LABELS[metric]
    if not b["pooled"]:
        return [f"{t.bits} bits: no method has two seeds or more; the seed spread is unknown."]
    sd = spread.loc[b["pooled"], metric]
    out = [f"{t.bits} bits: the std of {name} over seeds ranges from {sd.min():.4f} "
           f"({label(sd.idxmin())}) to {sd.max():.4f} ({label(sd.idxmax())}); pooled "
           f"{b['pooled_std']:.4f} over {len(sd)} methods with {b['n']} seeds or more."
           + (f" Not moved by the seed: {', '.join(label(m) for m in b['constant'])}."
              if b["constant"] else ""),
           f"Seed noise alone (95%) moves two single runs apart by up to {b['single']:.4f}, "
           f"two means of {b['n']} seeds by up to {b['means']:.4f}, and our mean against "
           f"one run of the paper by up to {b['vs_single']:.4f}."]
    d = t.values[(metric, "diff")].dropna()
    if len(d):
        inside = d.abs() <= b["vs_single"]
        out.append(f"{int(inside.sum())} of {len(d)} of our {name} values are that close to the "
                   f"paper's" + ("." if inside.all() else "; further: " + ", ".join(
                       f"{label(m)} ({d[m]:+.4f})" for m in d.index[~inside]) + "."))
    return out
