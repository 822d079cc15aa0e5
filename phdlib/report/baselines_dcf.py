"""The chapter "DCF and CCCF": grids, layouts, weights, defaults, ties and cost as tables and
computed statements (shared presentation helpers from :mod:`phdlib.report.baselines`).
"""
from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from .. import paper
from . import page
from .compare import TOLERANCE, max_abs_diff
from .baselines import blocks_text, setting
from .style import METRIC_LABELS, METRICS, label


__all__ = ["tuning_grid_shown", "time_formats", "dcf_runs_table", "layouts_table", "weights_lines", "defaults_rows", "defaults_lines", "tie_spread_lines", "cost_table", "dcf_conclusion"]


_GRID_COLUMNS = {"blocks": "blocks", "alpha": "α", "beta": "β",
                 "valid_ndcg@5": ("validation", "NDCG@5"), "valid_ndcg@10": ("validation", "NDCG@10"),
                 "valid_mrr": ("validation", "MRR"), "test_ndcg@5": ("test", "NDCG@5"),
                 "test_ndcg@10": ("test", "NDCG@10"), "test_mrr": ("test", "MRR"),
                 "train_seconds": ("training", "wall s"), "train_cpu_seconds": ("training", "CPU s")}


def tuning_grid_shown(grid: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A stored tuning grid (one row per grid point, with a ``chosen`` column) for reading.

    Returns ``(shown, bold)``: ``shown`` has the settings (``blocks`` as
    ``[16, 16]``, ``α``, ``β`` as ``0.001``) and the validation, test and
    training-time columns under a two-level header, one row per grid point;
    ``bold`` is True on the chosen row.
    """
    cols = [c for c in _GRID_COLUMNS if c in grid.columns]
    data = {}
    for c in cols:
        key = _GRID_COLUMNS[c]
        key = key if isinstance(key, tuple) else ("setting", key)
        v = grid[c]
        if c == "blocks":
            v = v.map(blocks_text)
        elif c in ("alpha", "beta"):
            v = v.map(lambda x: f"{x:g}")
        data[key] = v.to_numpy()
    shown = pd.DataFrame(data)
    shown.columns = pd.MultiIndex.from_tuples(list(data))
    chosen = grid["chosen"].astype(bool).to_numpy() if "chosen" in grid else np.zeros(len(grid), bool)
    bold = pd.DataFrame(np.repeat(chosen[:, None], shown.shape[1], axis=1),
                        index=shown.index, columns=shown.columns)
    return shown, bold


def time_formats(shown: pd.DataFrame) -> dict:
    """``formats`` for training-time columns (``12.3``) of a shown frame."""
    return {c: "{:,.1f}" for c in shown.columns
            if (c[0] if isinstance(c, tuple) else c) == "training"
            or "seconds" in str(c) or " s" in str(c)}


def dcf_runs_table(runs: Mapping, widths: Iterable[int]) -> pd.DataFrame:
    """How the chosen DCF runs trained: one row per width (``"32 bits"``) with
    ``init rounds``, ``outer iterations`` (int), ``stopped because`` (str),
    ``training (wall s)`` and ``training (CPU s)`` (float)."""
    rows = {}
    for b in widths:
        m = runs[("dcf", b)].metrics
        rows[f"{b} bits"] = {
            "init rounds": int(m["init_iterations"]), "outer iterations": int(m["iterations"]),
            "stopped because": "no bit changed" if m["converged"] else "iteration cap",
            "training (wall s)": float(m["train_seconds"]),
            "training (CPU s)": float(m["train_cpu_seconds"])}
    return pd.DataFrame.from_dict(rows, orient="index")


def layouts_table(widths: Iterable[int], layouts, cost) -> pd.DataFrame:
    """CCCF's block layouts that fit each budget: rows ``"32 bits"``, columns
    ``layouts`` (str, ``[16, 16] (64 bits)``: blocks and their cost in bits) and
    ``number`` (int). layouts, cost: :func:`phdlib.methods.cccf.layouts` and ``layout_cost``."""
    rows = {}
    for b in widths:
        ls = layouts(b)
        rows[f"{b}-bit budget"] = {
            "layouts (block sizes, cost in bits)": "; ".join(f"{list(l)} ({cost(l)})" for l in ls),
            "number": len(ls)}
    return pd.DataFrame.from_dict(rows, orient="index")


def weights_lines(table: pd.DataFrame, single_valid: float, single: str) -> list[str]:
    """Does any source of block weights lift a two-block layout to the single block's validation?

    table: one row per variant with ``weights / init`` and ``valid NDCG@10``;
    single_valid: validation NDCG@10 of the layout validation chose, named ``single``.
    """
    if table.empty:
        return []
    best = table.loc[table["valid NDCG@10"].idxmax()]
    lifted = best["valid NDCG@10"] >= single_valid
    return [f"The best source of weights for two 16-bit blocks, {best['weights / init']}, "
            f"validates at NDCG@10 {page.num(best['valid NDCG@10'])}, "
            + ("at or above" if lifted else "below")
            + f" the chosen layout {single} ({page.num(single_valid)}); "
            f"the largest user weight averages {page.num(table['users'].min(), 3)} to "
            f"{page.num(table['users'].max(), 3)} over the variants (0.5 is uniform)."]


def defaults_rows(runs_by_label: Mapping, dataset: str) -> pd.DataFrame:
    """DCF runs minus the paper's DCF row: ``{(bits, label): Run}`` -> rows ``("32 bits",
    label)``, columns the metric labels (float64, ours − paper)."""
    rows, idx = [], []
    for (b, lab), r in runs_by_label.items():
        ref = paper.table1(dataset, b).get("dcf", {})
        rows.append({METRIC_LABELS[k]: r.metrics[k] - ref.get(k, np.nan) for k in METRICS})
        idx.append((f"{b} bits", lab))
    return pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(idx, names=["width", "DCF run"]))


def defaults_lines(diffs: pd.DataFrame, tolerance: float = TOLERANCE) -> list[str]:
    """Per width, which DCF run of :func:`defaults_rows` lies closer to the paper."""
    out = []
    for w, part in diffs.groupby(level="width", sort=False):
        worst = part.abs().max(axis=1)
        best = worst.idxmin()[1]
        out.append(f"{w}: the run closest to the paper's DCF is the one {best} (largest "
                   f"difference {page.num(float(worst.min()))}, "
                   f"{'within' if worst.min() <= tolerance else 'outside'} the tolerance); "
                   + "; ".join(f"{lab}: {page.num(float(v))}" for (_, lab), v in worst.items())
                   + ".")
    return out


def tie_spread_lines(frames: Mapping, metric: str = "ndcg@10") -> list[str]:
    """The spread between the best and the worst tie order, per width (frames as in
    :func:`tie_table`, ``{bits: frame}``)."""
    out = []
    for b, f in frames.items():
        lo, hi = float(f.loc["pessimistic", metric]), float(f.loc["optimistic", metric])
        out.append(f"{b} bits: {METRIC_LABELS[metric]} runs from {page.num(lo)} (worst order) to "
                   f"{page.num(hi)} (best order), a spread of {page.num(hi - lo)} around the "
                   f"expected {page.num(float(f.loc['expected', metric]))}.")
    return out


def cost_table(runs: Mapping) -> pd.DataFrame:
    """Training time of every configuration of the stored runs (the grid's points when tuned).

    runs: ``{(method, bits): Run}``. Columns: ``method`` (label), ``bits``
    (int), ``configuration`` (str), ``wall s`` and ``CPU s`` (float).
    """
    rows = []
    for (name, b), r in runs.items():
        g = r.grid
        if g is not None:
            for _, row in g.iterrows():
                conf = setting({k: row[k] for k in ("blocks", "alpha") if k in row}, ("blocks", "alpha"))
                rows.append({"method": label(name), "bits": int(b), "configuration": conf,
                             "wall s": float(row["train_seconds"]),
                             "CPU s": float(row["train_cpu_seconds"])})
        else:
            rows.append({"method": label(name), "bits": int(b),
                         "configuration": setting(r.config, ("blocks", "alpha")) + " (fixed)",
                         "wall s": float(r.metrics["train_seconds"]),
                         "CPU s": float(r.metrics["train_cpu_seconds"])})
    return pd.DataFrame(rows)


def dcf_conclusion(cmp: pd.DataFrame, runs: Mapping, widths: Iterable[int],
                   tolerance: float = TOLERANCE) -> str:
    """The DCF and CCCF section's conclusion in a paragraph (Markdown).

    cmp: :func:`phdlib.report.comparison` of the DCF and CCCF runs.
    """
    text = []
    worst = max_abs_diff(cmp)
    have = worst.dropna()
    if len(have):
        ok = [f"{label(m)} at {b} bits" for (m, b), w in have.items() if w <= tolerance]
        off = [f"{label(m)} at {b} bits ({page.num(w)})" for (m, b), w in have.items()
               if w > tolerance]
        text.append(f"Against the paper's Table 1, {len(ok)} of {len(have)} rows lie within "
                    f"{page.num(tolerance, 3)} on every metric"
                    + (f"; outside: {', '.join(off)}." if off else "."))
    blocks = {b: blocks_text(runs[("cccf", b)].effective_config.get("blocks", [b])) for b in widths}
    single = [b for b, bl in blocks.items() if "," not in bl]
    if len(single) == len(blocks):
        text.append("CCCF ends with a single block at every width, so here it is DCF trained "
                    "with CCCF's settings.")
    else:
        text.append("CCCF uses several blocks at "
                    + ", ".join(f"{b} bits ({blocks[b]})" for b in blocks if b not in single) + ".")
    d = [runs[("dcf", b)].metrics["ndcg@10"] - runs[("cccf", b)].metrics["ndcg@10"] for b in widths]
    text.append("DCF minus CCCF in test NDCG@10: "
                + ", ".join(f"{page.num(x, sign=True)} at {b} bits" for x, b in zip(d, widths)) + ".")
    return " ".join(text)
