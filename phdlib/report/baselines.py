"""The baselines chapters (MF family, DCF and CCCF): their tables and computed statements.

Every function here turns stored runs or the frames of :mod:`phdlib.report.compare`,
:mod:`phdlib.training` and :mod:`phdlib.evaluation` into something to read: a
frame for :func:`phdlib.report.page.table` (labels, not keys; metric values as
floats, four decimals when shown) or a list of sentences for
:func:`phdlib.report.page.findings` (those that check the paper start with
``AGREES:`` or ``DISAGREES:``).
"""
from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from .. import paper
from . import page
from .compare import TOLERANCE, max_abs_diff
from .style import METRIC_LABELS, METRICS, label

__all__ = ["comparison_shown", "tolerance_lines", "grid_shown", "setting", "chosen_lines",
           "grid_time_table", "als_lines", "chosen_table", "tie_table", "variants_shown",
           "variant_lines", "sanity_table", "item_mean_lines", "metric_columns",
           "diff_formats", "baselines_conclusion", "tuning_grid_shown", "time_formats",
           "dcf_runs_table", "layouts_table", "weights_lines", "defaults_rows",
           "defaults_lines", "tie_spread_lines", "cost_table", "dcf_conclusion", "blocks_text"]

_FIELD = {"ours": "ours", "paper": "paper", "diff": "Δ"}


def metric_columns(prefix: str = "") -> dict[str, str]:
    """``{prefix + metric: label}`` for the three metrics (``"test_ndcg@5"`` -> ``"NDCG@5"``)."""
    return {prefix + m: METRIC_LABELS[m] for m in METRICS}


def comparison_shown(cmp: pd.DataFrame, paper_columns: bool | None = None) -> pd.DataFrame:
    """A :func:`phdlib.report.comparison` frame for reading.

    Rows: ``(method label, "32 bits")``. Columns: MultiIndex (metric label,
    ``ours`` | ``paper`` | ``Δ`` (ours − paper)); ``ours`` is the mean ± std over
    seeds (str), ``paper`` and ``Δ`` are float64 (NaN where the
    paper has no such row: :func:`phdlib.report.page.table` shows n/a).
    paper_columns: show the paper's columns (default: when any row has one).
    """
    if paper_columns is None:
        paper_columns = bool(cmp.xs("paper", axis=1, level="field").notna().any().any())
    cols = {}
    for m in METRICS:
        lab = METRIC_LABELS[m]
        cols[(lab, "ours")] = [page.mean_std(a, s) for a, s in zip(cmp[(m, "ours")], cmp[(m, "std")])]
        if paper_columns:
            cols[(lab, "paper")] = cmp[(m, "paper")].to_numpy(dtype=float)
            cols[(lab, _FIELD["diff"])] = cmp[(m, "diff")].to_numpy(dtype=float)
    index = pd.MultiIndex.from_tuples([(label(m), f"{b} bits") for m, b in cmp.index],
                                      names=["method", "width"])
    out = pd.DataFrame(cols, index=index)
    out.columns = pd.MultiIndex.from_tuples(list(cols))
    return out


def diff_formats(shown: pd.DataFrame) -> dict:
    """``formats`` for :func:`phdlib.report.page.table`: signed differences (``+.0055``)."""
    return {c: (lambda v: page.num(v, sign=True)) for c in shown.columns if c[1] == _FIELD["diff"]}


def tolerance_lines(cmp: pd.DataFrame, tolerance: float = TOLERANCE,
                    methods: Iterable[str] | None = None) -> list[str]:
    """One sentence per method with paper values: is the largest |ours − paper| over the
    three metrics within ``tolerance`` at every width (``AGREES``) or not (``DISAGREES``)?"""
    worst = max_abs_diff(cmp).dropna()
    out = []
    for m in dict.fromkeys(worst.index.get_level_values(0)):
        if methods is not None and m not in methods:
            continue
        w = worst.xs(m, level=0)
        ok = [b for b, v in w.items() if v <= tolerance]
        off = [f"{b} bits ({page.num(v)})" for b, v in w.items() if v > tolerance]
        widths = " and ".join(f"{b}" for b in w.index)
        if not off:
            out.append(f"AGREES: {label(m)} lies within {page.num(tolerance, 3)} of the paper "
                       f"on every metric at {widths} bits (largest difference "
                       f"{page.num(float(w.max()))}).")
        else:
            out.append(f"DISAGREES: {label(m)} differs from the paper by more than "
                       f"{page.num(tolerance, 3)} at {', '.join(off)}"
                       + (f"; it lies within at {' and '.join(map(str, ok))} bits." if ok else "."))
    return out


def grid_shown(grid: pd.DataFrame, rows: str = "λ", columns: str = "passes",
               higher: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A pivoted grid (:func:`phdlib.training.grid_table`) for reading, and its best cell.

    Returns ``(shown, bold)``: ``shown`` is the grid with index and columns
    named ``rows`` and ``columns`` and their values as plain strings
    (``0.001``, ``10``); ``bold`` is True on the best value.
    """
    shown = grid.copy()
    shown.index = pd.Index([f"{v:g}" if isinstance(v, float) else str(v) for v in grid.index],
                           name=rows)
    shown.columns = pd.Index([f"{v:g}" if isinstance(v, float) else str(v)
                              for v in grid.columns], name=columns)
    best = np.nanmax(grid.to_numpy()) if higher else np.nanmin(grid.to_numpy())
    bold = pd.DataFrame(grid.to_numpy() == best, index=shown.index, columns=shown.columns)
    return shown, bold


def blocks_text(v) -> str:
    """Block sizes as ``[16, 16]`` from a list, a tuple, an array (a grid read back from
    parquet) or a string."""
    if isinstance(v, str):
        return v
    try:
        return "[" + ", ".join(str(int(x)) for x in v) + "]"
    except TypeError:
        return f"[{int(v)}]"


def setting(config: Mapping, keys: Iterable[str]) -> str:
    """A configuration in words: ``"λ = 1, 100 passes"``; keys missing from ``config`` are skipped."""
    words = {"reg": lambda v: f"λ = {v:g}", "epochs": lambda v: f"{v} passes",
             "alpha": lambda v: f"α = {v:g}", "beta": lambda v: f"β = {v:g}",
             "scope": lambda v: f"{v} thresholds", "blocks": lambda v: f"blocks {blocks_text(v)}"}
    return ", ".join(words.get(k, lambda v, k=k: f"{k} = {v}")(config[k])
                     for k in keys if k in config)


def _metrics(m: Mapping, prefix: str = "") -> str:
    return ", ".join(f"{METRIC_LABELS[k]} {page.num(m[prefix + k])}" for k in METRICS)


def chosen_lines(runs: Mapping, widths: Iterable[int], method: str = "mf",
                 defaults: Mapping | None = None) -> list[str]:
    """What validation chose for ``method`` at each width and its test metrics, and (when
    the run has a grid holding them) the test metrics of ``defaults`` (``{"reg": 0.01,
    "epochs": 10}``: the repository's settings)."""
    out = []
    for b in widths:
        r = runs[(method, b)]
        how = "validation chooses" if "chosen" in r.extra else "the profile fixes"
        line = (f"{b} dimensions: {how} {setting(r.effective_config, ('reg', 'epochs'))}; "
                f"test {_metrics(r.metrics)}.")
        g = r.grid
        if defaults and g is not None:
            sel = np.ones(len(g), dtype=bool)
            for k, v in defaults.items():
                sel &= (g[k] == v).to_numpy()
            if sel.any():
                row = g[sel].iloc[0]
                line += (f" The repository's defaults ({setting(defaults, defaults)}) give "
                         f"{_metrics(row, 'test_')}.")
        out.append(line)
    return out


def grid_time_table(runs: Mapping, widths: Iterable[int], method: str = "mf") -> pd.DataFrame:
    """Training time of a tuned run's grid: one row per width with a grid.

    Columns: ``ms per pass`` (float, median over λ at the most passes),
    ``chosen point (s)`` (float, training seconds of the chosen point),
    ``whole grid (s)`` (float, the longest fit of each λ, summed).
    """
    rows = {}
    for b in widths:
        g = runs[(method, b)].grid
        if g is None:
            continue
        last = g[g.epochs == g.epochs.max()]
        rows[f"{b} dimensions"] = {
            "ms per pass": float(last.train_seconds.median() / last.epochs.iloc[0] * 1000),
            "chosen point (s)": float(runs[(method, b)].metrics["train_seconds"]),
            "whole grid (s)": float(g.groupby("reg").train_seconds.max().sum())}
    return pd.DataFrame.from_dict(rows, orient="index")


def als_lines(runs: Mapping, widths: Iterable[int], dataset: str) -> list[str]:
    """ALS MF against the paper's MF procedure (``mf``) and against the paper's MF row."""
    out = []
    for b in widths:
        a, s = runs[("mf-als", b)].metrics, runs[("mf", b)].metrics
        c = runs[("mf-als", b)].effective_config
        conf = f"λ = {c['reg']:g}, {c['epochs']} epochs" if "reg" in c else "ALS"
        line = (f"{b} dimensions: ALS ({conf}) is "
                f"{page.num(a['ndcg@10'] - s['ndcg@10'], sign=True)} in NDCG@10 and "
                f"{page.num(a['mrr'] - s['mrr'], sign=True)} in MRR against the paper's "
                "MF procedure")
        ref = paper.table1(dataset, b).get("mf")
        if ref:
            line += (f", and {page.num(a['ndcg@10'] - ref['ndcg@10'], sign=True)} in NDCG@10 "
                     "against the paper's MF row")
        out.append(line + ".")
    return out


def chosen_table(runs: Mapping, names: Iterable[str], widths: Iterable[int],
                 keys: Iterable[str] = ("reg", "epochs", "scope")) -> pd.DataFrame:
    """The configuration each run was trained with and how it was chosen.

    One row per (method, width): ``method`` (label), ``bits`` (int),
    ``setting`` (str, :func:`setting`), ``chosen by`` (str) and
    ``validation NDCG@10`` (float64; NaN when not stored).
    """
    rows = []
    keys = tuple(keys)
    for b in widths:
        for m in names:
            r = runs[(m, b)]
            rows.append({"method": label(m), "bits": int(b),
                         "setting": setting(r.effective_config, keys),
                         "chosen by": ("validation NDCG@10" if "chosen" in r.extra
                                       else "fixed by the profile"),
                         "validation NDCG@10": float(r.metrics.get("valid_ndcg@10", np.nan))})
    return pd.DataFrame(rows)


_RULES = {"expected": "expected (random ties)", "input": "rating-file order",
          "pessimistic": "worst order", "optimistic": "best order"}


def tie_table(frames: Mapping) -> pd.DataFrame:
    """Metrics of stored models under several tie rules, for reading.

    frames: ``{(method, bits): evaluation.tie_rules frame}`` or ``{bits: frame}``
    (index: the rule; columns include the three metrics). Returns rows
    ``(method label, "32 bits", rule in words)`` with the metric labels as columns.
    """
    parts = []
    for key, f in frames.items():
        m, b = key if isinstance(key, tuple) else (None, key)
        t = f[list(METRICS)].rename(columns=METRIC_LABELS)
        idx = [((label(m),) if m else ()) + (f"{b} bits", _RULES.get(r, r)) for r in t.index]
        t.index = pd.MultiIndex.from_tuples(idx, names=(["method"] if m else [])
                                            + ["width", "ties broken by"])
        parts.append(t)
    return pd.concat(parts)


_VARIANT_COLUMNS = {"valid_ndcg@10": "valid NDCG@10", "test_ndcg@5": "NDCG@5",
                    "test_ndcg@10": "NDCG@10", "test_mrr": "MRR",
                    "user_ones": "user 1-bits", "item_ones": "item 1-bits"}


def variants_shown(t: pd.DataFrame) -> pd.DataFrame:
    """:func:`phdlib.methods.mf_methods.binarization_variants` for reading: rows (vectors,
    threshold, scope), the metric columns labelled, shares of 1 bits as floats."""
    out = t.set_index(["vectors", "threshold", "scope"]).rename(columns=_VARIANT_COLUMNS)
    return out[[c for c in _VARIANT_COLUMNS.values() if c in out.columns]]


def variant_lines(variants: Mapping[int, pd.DataFrame], dataset: str, chance: Mapping[int, float],
                  tolerance: float = TOLERANCE) -> list[str]:
    """Which binarisations land on the paper's MFmean and MFmedian, and which fall below chance.

    variants: ``{bits: binarization_variants frame}``; chance: ``{bits: test
    NDCG@10 of the random ranking}``. Empty when the paper has no numbers for
    ``dataset``.
    """
    out = []
    for b, t in variants.items():
        ref = paper.table1(dataset, b)
        if not ref:
            continue
        for th, name in (("mean", "mf-mean"), ("median", "mf-median")):
            p = ref[name]
            sub = t[t.threshold == th]
            gap = np.maximum.reduce([np.abs(sub[f"test_{k}"] - p[k]).to_numpy() for k in METRICS])
            close = sub[gap <= tolerance]
            best = sub.iloc[int(np.argmin(gap))]
            names = "; ".join(f"{r.vectors} with {r.scope} thresholds" for r in close.itertuples())
            out.append(f"{b} bits, {label(name)} (paper: {_metrics(p)}): "
                       + (f"within {page.num(tolerance, 3)} on all three metrics: {names}. "
                          if names else f"no variant lies within {page.num(tolerance, 3)}. ")
                       + f"Closest: {best.vectors} with {best.scope} thresholds (largest gap "
                       f"{page.num(float(gap.min()))}).")
        below = t[t["test_ndcg@10"] < chance[b]]
        out.append(f"{b} bits: variants below chance on test NDCG@10 "
                   f"({page.num(chance[b])}): "
                   + ("; ".join(f"{r.vectors}, {r.threshold}/{r.scope}"
                                for r in below.itertuples()) or "none") + ".")
    return out


def sanity_table(runs: Mapping, widths: Iterable[int],
                 names: Iterable[str] = ("random", "popularity", "item-mean")) -> pd.DataFrame:
    """Test metrics of the rankings that ignore the user: rows (method label, width),
    the metric labels as float64 columns."""
    rows, idx = [], []
    for b in widths:
        for m in names:
            r = runs[(m, b)].metrics
            rows.append({METRIC_LABELS[k]: float(r[k]) for k in METRICS})
            idx.append((label(m), f"{b} bits"))
    return pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(idx, names=["method", "width"]))


def item_mean_lines(runs: Mapping, widths: Iterable[int], dataset: str) -> list[str]:
    """Which of the paper's Table 1 methods the item-mean order beats on all three metrics
    (one sentence, or one per width where the answer differs between widths)."""
    per = {}
    for b in widths:
        ref = paper.table1(dataset, b)
        if not ref:
            continue
        im = runs[("item-mean", b)].metrics
        beaten = tuple(m for m, v in ref.items() if all(im[k] > v[k] for k in METRICS))
        rest = tuple(m for m in ref if m not in beaten)
        per[b] = (beaten, rest, im["ndcg@10"])
    if not per:
        return []
    groups = {}
    for b, (beaten, rest, v) in per.items():
        groups.setdefault((beaten, rest), []).append((b, v))
    out = []
    for (beaten, rest), bv in groups.items():
        vals = " and ".join(page.num(v) for _, v in bv)
        out.append(f"At {' and '.join(str(b) for b, _ in bv)} bits the item mean rating order, "
                   f"the same for every user (test NDCG@10 {vals}), is above the paper's "
                   f"{', '.join(label(m) for m in beaten) or 'no method'} on all three metrics"
                   + (f"; not above {', '.join(label(m) for m in rest)}." if rest else "."))
    return out


def baselines_conclusion(runs: Mapping, widths: Iterable[int], dataset: str,
                         tolerance: float = TOLERANCE) -> str:
    """The MF-family chapter's conclusion in a paragraph (Markdown), from the stored runs.

    runs: ``{(method, bits): Run}`` with ``mf``, ``mf-als``, ``mf-mean``,
    ``mf-median``, ``item-mean`` and ``random`` at every width.
    """
    from .compare import comparison

    widths = list(widths)
    text = []
    if paper.table1(dataset, widths[0]):
        cmp = comparison({(m, b): runs[(m, b)] for b in widths
                          for m in ("mf", "mf-mean", "mf-median")}, dataset)
        worst = max_abs_diff(cmp)
        for m in ("mf", "mf-mean", "mf-median"):
            w = worst.xs(m, level="method")
            n_ok = int((w <= tolerance).sum())
            text.append(f"{label(m)} lies within {page.num(tolerance, 3)} of the paper on every "
                        f"metric at {n_ok} of {len(w)} widths (largest gap "
                        f"{page.num(float(w.max()))}).")
    gain = [runs[("mf-als", b)].metrics["ndcg@10"] - runs[("mf", b)].metrics["ndcg@10"]
            for b in widths]
    if min(gain) > 0:
        text.append("The same MF model fitted by alternating least squares is above the "
                    f"paper's MF procedure at every width (NDCG@10 "
                    f"{', '.join(page.num(g, sign=True) for g in gain)}), so the paper's "
                    "real-valued reference point is a weak MF.")
    else:
        text.append("Alternating least squares does not beat the paper's MF procedure at "
                    f"every width here (NDCG@10 {', '.join(page.num(g, sign=True) for g in gain)}).")
    im = [runs[("item-mean", b)].metrics["ndcg@10"] for b in widths]
    rnd = [runs[("random", b)].metrics["ndcg@10"] for b in widths]
    text.append(f"Under this protocol a random order already scores NDCG@10 "
                f"{page.num(min(rnd))}, and the same item order for every user scores "
                f"{page.num(min(im))}: a method has to beat that order, not chance, to show "
                "that it models individual taste.")
    return " ".join(text)


# --- DCF and CCCF -------------------------------------------------------------------

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
