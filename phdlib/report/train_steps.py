"""The training-step benchmark (``phd bench --train``) for reading: a table and findings.

From the rows of :func:`phdlib.bench.train.run` (a recorded file's or a live
run's): :func:`steps_frame` lays them out per shape, width, method, step and
thread count with each design's limit, and :func:`findings` says in
sentences, computed from the numbers, how the exact sparse step compares
with the dense one at each shape and how close each comes to its limit.
"""
from __future__ import annotations

import pandas as pd

from .. import methods
from ..methods.vh_config import SPARSE_GAP

__all__ = ["STEP_LABELS", "SHAPE_LABELS", "steps_frame", "findings"]

#: How the steps are named on the page.
STEP_LABELS = {"autograd": "autograd", "dense": "dense Adam", "exact": "exact sparse Adam",
               "auto": "as training runs it", "lazy": "lazy Adam"}
#: How the shapes are named on the page.
SHAPE_LABELS = {"ml-1m": "ML-1M", "ml-10m": "ML-10M", "amazon": "Amazon"}


def steps_frame(rows: list[dict] | pd.DataFrame, method: str | None = None,
                bits: int | None = None) -> pd.DataFrame:
    """Rows (shape, [bits, method label,] step label, threads); columns ms per iteration,
    the dense step's time over this one's (same threads), the design's limit (ms), the
    ratio to it and the row-steps replayed in full per step (exact step only). ``method``,
    ``bits``: keep only those rows (and leave that level out of the index)."""
    df = pd.DataFrame(rows)
    if method is not None:
        df = df[df["method"] == method]
    if bits is not None:
        df = df[df["bits"] == bits]
    levels = [("shape", [SHAPE_LABELS.get(s, s) for s in df["shape"]])]
    if bits is None:
        levels.append(("bits", df["bits"].astype(int).to_numpy()))
    if method is None:
        levels.append(("method", [methods.label(m) for m in df["method"]]))
    levels += [("step", [STEP_LABELS.get(s, s) for s in df["step"]]),
               ("threads", df["threads"].astype(int).to_numpy())]
    out = pd.DataFrame({
        "ms / iteration": df["ms_per_iteration"].astype(float).to_numpy(),
        "dense ÷ this": [f"{v:.2f}×" for v in df["vs_dense"]],
        "limit (ms)": df["limit_ms"].astype(float).to_numpy(),
        "× limit": [f"{v:.1f}×" for v in df["over_limit"]],
        "replayed rows / step": [f"{v:,.0f}" if s == "exact" else "–"
                                 for v, s in zip(df["full_rows_per_step"], df["step"])],
    }, index=pd.MultiIndex.from_arrays([v for _, v in levels], names=[n for n, _ in levels]))
    return out


def _ceiling(df: pd.DataFrame, exact: pd.Series) -> tuple[float, float] | None:
    """``(speed-up, rest ms)``: the most the exact step ``exact`` (a row of ``df``) could
    run faster than the dense step at its shape and thread count, were it at its limit
    while the rest of a step stayed as the lazy step measures it (its time beyond its own
    limit, which is the touched rows' Adam alone); None without both rows."""
    same = df[(df["shape"] == exact["shape"]) & (df["threads"] == exact["threads"])]
    dense, lazy = same[same["step"] == "dense"], same[same["step"] == "lazy"]
    if not len(dense) or not len(lazy):
        return None
    rest = max(float(lazy["ms_per_iteration"].iloc[0]) - float(lazy["limit_ms"].iloc[0]), 0.0)
    return float(dense["ms_per_iteration"].iloc[0]) / (float(exact["limit_ms"]) + rest), rest


def findings(rows: list[dict] | pd.DataFrame, method: str = "vh-phd", bits: int = 64) -> list[str]:
    """The benchmark's findings for ``method`` at ``bits``: the exact step against the
    dense one per shape and thread count, and the exact step against its own limit."""
    df = pd.DataFrame(rows)
    df = df[(df["method"] == method) & (df["bits"] == bits)]
    out = []
    exact = df[df["step"] == "exact"]
    if len(exact):
        parts, slower = [], []
        for shape, g in exact.groupby("shape", sort=False):
            speeds = " and ".join(
                f"{r['vs_dense']:.2f}× on {int(r['threads'])} thread{'s' if r['threads'] > 1 else ''}"
                for _, r in g.sort_values("threads").iterrows())
            parts.append(f"{speeds} at the {SHAPE_LABELS.get(shape, shape)} shape")
            if (g["vs_dense"] < 1).any():
                slower.append(SHAPE_LABELS.get(shape, shape))
        out.append(f"For {methods.label(method)} at {bits} bits the exact sparse step, the "
                   "same parameters bit for bit, runs at " + "; ".join(parts)
                   + " the dense step's speed.")
        if slower:
            out.append(f"Where every row is touched every few steps ({', '.join(slower)}), "
                       "replaying the missed steps costs more than the dense pass it saves, "
                       "so training keeps the dense pass for tables of fewer than "
                       f"SPARSE_GAP = {SPARSE_GAP} rows per rating of a batch, and is "
                       "as fast there as before.")
        one = exact[exact["threads"] == 1]
        if len(one):
            r = one.loc[one["rows"].idxmax()]
            per = r["full_rows_per_step"] / max(r["touched_rows_per_step"], 1)
            out.append(
                f"At the {SHAPE_LABELS.get(r['shape'], r['shape'])} shape it replays "
                f"the arithmetic of {r['full_rows_per_step']:,.0f} row-steps per step, "
                f"about {per:.0f} for each row a step touches: a parameter goes on moving "
                f"on its first moment until its update falls below half the spacing of "
                f"float32 numbers at it or its row is touched again, whichever comes "
                f"first, and the replay steps a row's elements still moving, in blocks "
                f"of 16, the others' moments alone. That "
                f"arithmetic and the touched rows' bytes put its limit at "
                f"{r['limit_ms']:.2f} ms a step, and it runs at {r['over_limit']:.1f} times "
                f"that.")
            ceiling = _ceiling(df, r)
            if ceiling is not None:
                out.append(
                    f"So on this machine the design itself caps it: at that limit, with the "
                    f"rest of a step as it is (the batch's forward and backward passes, its "
                    f"random numbers and gathered rows: the lazy step's time beyond its own "
                    f"limit, {ceiling[1]:.2f} ms), it would run at most {ceiling[0]:.1f} "
                    f"times as fast as the dense step on one thread. Beyond that it needs "
                    f"fewer replayed steps, or a cheaper exact step of an element than the "
                    f"dense pass's square root and division, which the limit counts for "
                    f"every replayed step.")
    auto = df[(df["step"] == "auto") & (df["threads"] == 1)]
    if len(auto):
        parts = [f"{r['vs_dense']:.2f}× at the {SHAPE_LABELS.get(r['shape'], r['shape'])} shape"
                 for _, r in auto.iterrows()]
        out.append("As training runs it, each table dense or sparse by its size (sparse "
                   f"from SPARSE_GAP = {SPARSE_GAP} rows per rating of a batch), the step "
                   "runs at " + ", ".join(parts) + " the dense step's speed, on one thread.")
    lazy = df[(df["step"] == "lazy") & (df["threads"] == 1)]
    if len(lazy):
        r = lazy.loc[lazy["rows"].idxmax()]
        out.append(f"Lazy Adam, which moves the touched rows only, runs {r['vs_dense']:.1f} times "
                   f"as fast as the dense step there, on one thread.")
    return out
