"""The baselines chapter (the MF family): its tables and computed statements, and the helpers
the DCF and CCCF chapter shares (:mod:`phdlib.report.baselines_dcf`).

Every function here turns stored runs or the frames of :mod:`phdlib.report.compare`,
:mod:`phdlib.experiments.training` and :mod:`phdlib.evaluation` into something to read: a
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
from .compare import TOLERANCE, comparison, max_abs_diff
from .style import METRIC_LABELS, METRICS, label

__all__ = ["comparison_shown", "tolerance_lines", "grid_shown", "setting", "chosen_lines", "grid_time_table", "als_lines", "chosen_table", "tie_table", "variants_shown", "variant_lines", "sanity_table", "item_mean_lines", "metric_columns", "diff_formats", "baselines_conclusion", "blocks_text"]

_FIELD = {"ours": "ours", "paper": "paper", "diff": "Δ"}


#: The SGD fit the page reads beyond MF's grid, at the largest width: lambda 0.3
#: (between the grid's 0.1 and 1) to these pass counts, the repository's step and start.
CURVE_REG, CURVE_PASSES = 0.3, (50, 100, 200, 400, 800)
#: The repository's SGD (``MF.m``): its step size and its start, uniform in [0, 1].
REPO_SGD = {"lr": 0.001, "init": "uniform01"}
#: ``MF.m`` as shipped: its lambda and its number of passes.
REPO_DEFAULTS = {"reg": 0.01, "epochs": 10}


def page_fits(runs: Mapping, widths: Iterable[int], seed: int, curve: bool) -> dict:
    """The SGD fits the page trains itself (none is a stored run), as
    :func:`phdlib.methods.mf_methods.fit_paths` takes them.

    ``("curve", b)`` at the largest width ``b`` (when ``curve``: the full profile), and
    per width: ``("defaults", b)`` (:data:`REPO_DEFAULTS`),
    ``("codes", b)`` (the point MFmean chose: its stored run keeps codes, not factors)
    and ``("zero-centred", b)`` (the same with a Gaussian start).
    """
    widths = list(widths)
    out = {}
    if curve:
        out[("curve", max(widths))] = ("sgd", max(widths), seed, CURVE_REG, CURVE_PASSES,
                                       REPO_SGD)
    for b in widths:
        c = runs[("mf-mean", b)].effective_config
        out[("defaults", b)] = ("sgd", b, seed, REPO_DEFAULTS["reg"],
                                (REPO_DEFAULTS["epochs"],), REPO_SGD)
        out[("codes", b)] = ("sgd", b, seed, c["reg"], (c["epochs"],), REPO_SGD)
        out[("zero-centred", b)] = ("sgd", b, seed, c["reg"], (c["epochs"],),
                                    {**REPO_SGD, "init": "normal"})
    return out


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
    """A pivoted grid (:func:`phdlib.experiments.training.grid_table`) for reading, and its best cell.

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
                    f"{', '.join(page.num(g, sign=True) for g in gain)})"
                    + (", so the paper's real-valued reference point is a weak MF."
                       if min(gain) > TOLERANCE else
                       ", by less than the reproduction's tolerance of "
                       f"{TOLERANCE}."))
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
