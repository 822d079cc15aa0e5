"""Tables and figures of the chapter "Variational hashing".

- :func:`chance_level`: a metric of the all-tied ranking (the plateau VH can stall on);
- :func:`variants_table`, :func:`variants_findings`: what each variant of
  :data:`phdlib.studies.variants.VARIANTS` did;
- :func:`paired_tests`: VH_PHD against VH, paired t-test over users, Bonferroni;
- :func:`reached_cap`: whether a run's training ended at its iteration cap;
- :func:`plot_curves`: validation NDCG@10 against iterations or seconds.

Our test metrics beside the paper's are :func:`phdlib.report.comparison`.

For reading (the chapter shows these through :mod:`phdlib.report.page`):
:func:`runs_table`, :func:`grid_table`, :func:`variants_view`,
:func:`comparison_view`, :func:`paired_view`, :func:`step_table`; the computed
sentences :func:`cap_finding`, :func:`released_finding`,
:func:`seed_noise_findings`, :func:`paper_findings`, :func:`paired_findings`,
:func:`headline_findings`; :func:`p_text` formats a p-value.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..evaluation import stats
from ..methods.loop import CAP_REASON
from ..evaluation.metrics import METRIC_LABELS, METRICS
from .compare import within
from .page import mean_std, num, p_text
from .style import label
from .vh_variants import (chance_level, released_finding, variants_findings,  # noqa: F401
                          variants_reading, variants_table, variants_view)

__all__ = ["chance_level", "variants_table", "variants_findings", "paired_tests", "plot_curves",
           "reached_cap", "p_text", "runs_table", "cap_finding", "grid_table", "variants_view",
           "released_finding", "seed_noise_findings", "comparison_view", "paper_findings",
           "paired_view", "paired_findings", "step_table", "headline_findings",
           "variants_reading", "curves_caption", "budget_findings", "conclusion"]


def reached_cap(run) -> bool:
    """Whether a VH-family run's training ended at its cap (``max_iterations``)
    instead of by early stopping, so that it may have gone on improving on
    validation. Read from the run's ``extra["stop_reason"]``; a run stored
    without one counts as capped when its ``iterations`` reached the cap."""
    reason = run.extra.get("stop_reason")
    if reason:
        return str(reason).startswith(CAP_REASON)
    cap = run.effective_config.get("max_iterations")
    return cap is not None and int(run.metrics.get("iterations", 0)) >= int(cap)


def paired_tests(phd_runs: list, vh_runs: list) -> pd.DataFrame:
    """VH_PHD against VH per metric: paired two-tailed t-test over users, Bonferroni.

    phd_runs, vh_runs: runs (seeds) of each method at one width. Several
    seeds: each user's metric is first averaged over the seeds of a method.
    The correction runs over the three metrics of one width. Returns
    :func:`phdlib.evaluation.stats.compare`'s rows (``metric``, ``n``, ``mean_diff``,
    ``p``, ``p_adj``, ``better``, ...), one per metric.
    """

    per_user = {"vh-phd": stats.mean_over_seeds([r.per_user for r in phd_runs]),
                "vh": stats.mean_over_seeds([r.per_user for r in vh_runs])}
    return stats.compare(per_user, ["vh-phd"], ["vh"], metrics=METRICS, correction="bonferroni",
                         family="all")


def plot_curves(logs: dict, ax=None, x: str = "iteration", title: str = ""):
    """Validation NDCG@10 against ``x`` (``iteration`` or ``seconds``), one line per name.

    logs: ``{line name: training log}`` (frames with ``x`` and
    ``valid_ndcg@10``). Returns the axes.
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7.5, 3.8))
    for name, log in logs.items():
        ax.plot(log[x], log["valid_ndcg@10"], lw=1.3, label=name)
    ax.set_xlabel("training iterations (batches of 400)" if x == "iteration" else "seconds")
    ax.set_ylabel("validation NDCG@10")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return ax


# --------------------------------------------------------------------------- for reading

def runs_table(runs: dict) -> pd.DataFrame:
    """The training runs of the chapter, one row per run.

    runs: ``{(method, bits): [Run, ...]}``. Index: (method label, bits, seed).
    Columns: ``learning rate`` (float), ``training sampling`` (str),
    ``iterations``, ``best iteration`` (int), ``seconds to best``,
    ``training seconds``, ``ms / iteration`` (float, training time only) and
    ``validation NDCG@10`` (float).
    """

    rows, index = [], []
    for (method, bits), rs in runs.items():
        for r in rs:
            m, cfg = r.metrics, r.effective_config
            index.append((label(method), int(bits), int(r.seed)))
            rows.append({"learning rate": float(cfg["lr"]),
                         "training sampling": str(cfg["train_sampling"]),
                         "iterations": int(m["iterations"]),
                         "best iteration": int(m["best_iteration"]),
                         "seconds to best": float(m["seconds_to_best"]),
                         "training seconds": float(m["train_seconds"]),
                         "ms / iteration": float(m["ms_per_iteration"]),
                         "validation NDCG@10": float(m["valid_ndcg@10"])})
    out = pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(index, names=["method", "bits", "seed"]))
    return out


def cap_finding(every_run: list, profile: str) -> str:
    """Whether early stopping or the iteration cap ended the runs (:func:`reached_cap`)."""

    cap = max(int(r.effective_config["max_iterations"]) for r in every_run)
    if profile == "quick":
        return f"The quick profile trains every run a fixed {cap:,} iterations."
    capped = [r for r in every_run if reached_cap(r)]
    if not capped:
        return (f"All {len(every_run)} runs were ended by early stopping, none by the cap of "
                f"{cap:,} iterations.")
    return (f"{len(capped)} of {len(every_run)} runs reached the cap of {cap:,} iterations before "
            "early stopping ended them ("
            + ", ".join(f"{label(r.method)} {r.bits} bits seed {r.seed}" for r in capped)
            + "); they may have gone on improving on validation. The paper sets no cap.")


def grid_table(grid: pd.DataFrame) -> pd.DataFrame:
    """A tuning grid (``Run.grid``) for reading: one row per point, index
    (learning rate, training sampling); columns validation and test NDCG@10
    and MRR (float), training seconds (float) and ``chosen`` (``chosen`` or empty)."""
    out = pd.DataFrame({
        "validation NDCG@10": grid["valid_ndcg@10"].astype(float).to_numpy(),
        "validation MRR": grid["valid_mrr"].astype(float).to_numpy(),
        "test NDCG@10": grid["test_ndcg@10"].astype(float).to_numpy(),
        "test MRR": grid["test_mrr"].astype(float).to_numpy(),
        "training seconds": grid["train_seconds"].astype(float).to_numpy(),
        "chosen": ["chosen" if c else "" for c in grid["chosen"]],
    }, index=pd.MultiIndex.from_arrays([grid["lr"].astype(float).to_numpy(),
                                        grid["train_sampling"].astype(str).to_numpy()],
                                       names=["learning rate", "training sampling"]))
    return out


def seed_noise_findings(phd_runs: list, variants: dict) -> list[str]:
    """VH_PHD's alternatives against its default, in units of the default's spread over seeds.

    phd_runs: VH_PHD's runs (seeds) at 64 bits; variants: :func:`phdlib.studies.variants.run_variants`.
    Empty with fewer than two seeds.
    """

    if len(phd_runs) < 2 or "VH_PHD (default)" not in variants:
        return []
    sd = float(np.std([r.metrics["valid_ndcg@10"] for r in phd_runs], ddof=1))
    base = variants["VH_PHD (default)"].metrics["valid_ndcg@10"]
    out = []
    for k in ("VH_PHD lr 0.001", "VH_PHD deterministic training"):
        if k in variants:
            d = variants[k].metrics["valid_ndcg@10"] - base
            out.append(f"{k}: best validation NDCG@10 {num(d, sign=True)} against the default, "
                       f"whose standard deviation over {len(phd_runs)} seeds is {num(sd)}"
                       + (" (within that spread)." if abs(d) <= sd else "."))
    return out


METRIC_LABELS_ = METRIC_LABELS


def comparison_view(table: pd.DataFrame, metrics=METRICS) -> pd.DataFrame:
    """A :func:`phdlib.report.comparison` table for reading: index (method label,
    bits), columns (metric label, ``ours`` / ``paper`` / ``ours − paper``);
    ours as ``mean ± std`` strings (:func:`phdlib.report.page.mean_std`),
    paper and difference as floats (NaN where the paper has no value)."""

    cols, data = [], {}
    for m in metrics:
        lab = METRIC_LABELS_.get(m, m)
        ours = [mean_std(a, b) for a, b in zip(table[(m, "ours")], table[(m, "std")])]
        data[(lab, "ours")] = ours
        data[(lab, "paper")] = table[(m, "paper")].astype(float).to_numpy()
        data[(lab, "ours − paper")] = [num(v, sign=True) for v in table[(m, "diff")]]
        cols += [(lab, "ours"), (lab, "paper"), (lab, "ours − paper")]
    out = pd.DataFrame(data, index=pd.MultiIndex.from_tuples(
        [(label(a), int(b)) for a, b in table.index], names=["method", "bits"]))
    out.columns = pd.MultiIndex.from_tuples(cols)
    return out


def _finding(agrees: bool, claim: str, head: str, text: str) -> str:
    """One finding sentence: ``"AGREES (claim): head: text"`` or ``"DISAGREES (...)..."``
    (the form :func:`phdlib.report.page.verdict` renders)."""
    return f"{'AGREES' if agrees else 'DISAGREES'} ({claim}): {head}: {text}"


def paper_findings(table: pd.DataFrame, tol: float, what: str = "") -> list[str]:
    """One verdict per row of a :func:`phdlib.report.comparison` table: every metric
    within ``tol`` of the paper's (AGREES) or not (DISAGREES, with the largest gap)."""

    ok = within(table, tol)
    diffs = table.xs("diff", axis=1, level="field")
    out = []
    for (method, bits), good in ok.items():
        d = diffs.loc[(method, bits)]
        if d.isna().all():
            continue
        worst = d.abs().idxmax()
        head = f"{label(method)}, {bits} bits{', ' + what if what else ''}"
        gap = num(d[worst], sign=True)
        text = (f"all three metrics within {tol} of the paper's (largest gap {gap} in "
                f"{METRIC_LABELS_[worst]})." if good else
                f"{METRIC_LABELS_[worst]} differs from the paper's by {gap}, outside the band "
                f"of ±{tol}.")
        out.append(_finding(good, "Table 1", head, text))
    return out


def paired_view(t: pd.DataFrame) -> pd.DataFrame:
    """:func:`paired_tests` for reading: index the metric label; columns users,
    mean of VH_PHD and of VH (float), difference (signed string), t (float, two
    decimals in the table), adjusted p (``p < 0.001``) and the verdict."""

    out = pd.DataFrame({
        "users": t["n"].astype(int).to_numpy(),
        "VH_PHD": t["mean_method"].astype(float).to_numpy(),
        "VH": t["mean_baseline"].astype(float).to_numpy(),
        "difference": [num(v, sign=True) for v in t["mean_diff"]],
        "t": t["t"].astype(float).to_numpy(),
        "adjusted p": [p_text(p) for p in t["p_adj"]],
        "VH_PHD better": ["yes" if b else "no" for b in t["better"]],
    }, index=[METRIC_LABELS_.get(m, m) for m in t["metric"]])
    out.index.name = "metric"
    return out


def paired_findings(tests: dict) -> list[str]:
    """One sentence per ``{(bits, what): paired_tests frame}``: on which metrics
    VH_PHD is significantly better than VH, worse, or neither."""

    out = []
    for (bits, what), t in tests.items():
        better = [METRIC_LABELS_[m] for m, b in zip(t["metric"], t["better"]) if b]
        worse = [METRIC_LABELS_[m] for m, d, p in zip(t["metric"], t["mean_diff"], t["p_adj"])
                 if d < 0 and p < 0.05]
        diffs = ", ".join(f"{METRIC_LABELS_[m]} {num(d, sign=True)}"
                          for m, d in zip(t["metric"], t["mean_diff"]))
        good = len(better) == len(t)
        if good:
            text = (f"VH_PHD is better on all three metrics ({diffs}; largest adjusted "
                    f"{p_text(t['p_adj'].max())}).")
        elif worse:
            text = f"VH_PHD is significantly worse on {', '.join(worse)} ({diffs})."
        else:
            text = (f"VH_PHD is significantly better on {', '.join(better) or 'no metric'} "
                    f"only ({diffs}).")
        out.append(_finding(good, "VH_PHD beats VH", f"{bits} bits, {what}", text))
    return out


def step_table(steps: pd.DataFrame) -> pd.DataFrame:
    """:func:`phdlib.bench.train.run`'s table for reading: index (method label,
    step, threads); columns ms per iteration, speedup over autograd (``2.4×``),
    the floor (ms) and the ratio to it (``1.5×``), memory bandwidth (GB/s) and
    the dense Adam pass with 15% subnormal rows, as is and flushed (ms)."""

    names = {"autograd": "autograd", "dense": "fused, dense Adam",
             "exact": "fused, exact sparse Adam", "lazy": "fused, lazy Adam"}
    out = pd.DataFrame({
        "ms / iteration": steps["ms_per_iteration"].astype(float).to_numpy(),
        "speedup": [f"{v:.1f}×" for v in steps["speedup"]],
        "floor (ms)": steps["limit_ms"].astype(float).to_numpy(),
        "× floor": [f"{v:.1f}×" for v in steps["over_limit"]],
        "GB/s": steps["bandwidth_gbs"].astype(float).to_numpy(),
        "subnormal Adam (ms)": steps["subnormal_ms"].astype(float).to_numpy(),
        "flushed Adam (ms)": steps["flushed_ms"].astype(float).to_numpy(),
    }, index=pd.MultiIndex.from_arrays(
        [[label(m) for m in steps["method"]], [names.get(s, s) for s in steps["step"]],
         steps["threads"].astype(int).to_numpy()], names=["method", "step", "threads"]))
    return out


def headline_findings(vt: pd.DataFrame, chance: float, comp: pd.DataFrame | None,
                      tests: dict, tol: float) -> list[str]:
    """The chapter's findings in a few sentences: VH as released against chance,
    the best VH variant, VH_PHD against VH (:func:`paired_findings`) and
    against the paper (:func:`paper_findings`)."""

    out = []
    if "released" in vt.index:
        r = vt.loc["released"]
        left = r["leaves plateau at"]
        out.append("Trained exactly as released, VH "
                   + ("never rises 0.01 above" if left is None or pd.isna(left)
                      else f"first rises 0.01 above at iteration {int(left):,}")
                   + f" the validation NDCG@10 of an all-tied ranking ({num(chance)}); its best is "
                   f"{num(r['valid ndcg@10'])} at iteration {int(r['best iteration']):,}.")
    vh_rows = vt[vt["method"] == "vh"]
    if len(vh_rows):
        best = vh_rows["valid ndcg@10"].idxmax()
        out.append(f"The best VH variant on validation is '{best}' (NDCG@10 "
                   f"{num(vh_rows.loc[best, 'valid ndcg@10'])}).")
    out += paired_findings(tests)
    if comp is not None:
        out += paper_findings(comp, tol)
    return out


def curves_caption(runs: dict, chance: float, widths) -> str:
    """The caption of the validation curves: when each run first rises 0.01 above chance.

    runs: ``{(method, bits): [Run, ...]}``.
    """

    parts = []
    for (m, b), rs in runs.items():
        for r in rs:
            first = r.log.loc[r.log["valid_ndcg@10"] > chance + 0.01, "iteration"]
            parts.append(f"{label(m)} {b} bits seed {r.seed} "
                         + (f"at {int(first.iloc[0]):,}" if len(first) else "never"))
    return ("First iteration at which validation NDCG@10 exceeds that of an all-tied ranking by "
            "0.01: " + "; ".join(parts) + ".")


def budget_findings(runs: dict, min_iterations: int, bits: int = 64) -> list[str]:
    """For the first seed of each method at ``bits``: its best validation NDCG@10 up to
    ``min_iterations`` against its best overall (the cost of starting early stopping there)."""

    out = []
    for (method, b), rs in runs.items():
        if b != bits or not rs:
            continue
        log = rs[0].log
        last = int(log["iteration"].max())
        if last < min_iterations:
            out.append(f"{label(method)}, {bits} bits: trained {last:,} iterations, fewer than "
                       f"{min_iterations:,}.")
            continue
        early = float(log.loc[log["iteration"] <= min_iterations, "valid_ndcg@10"].max())
        top = log.loc[log["valid_ndcg@10"].idxmax()]
        out.append(f"{label(method)}, {bits} bits, seed {rs[0].seed}: best validation NDCG@10 "
                   f"{num(early)} by iteration {min_iterations:,}, {num(top['valid_ndcg@10'])} "
                   f"overall (at iteration {int(top['iteration']):,} of {last:,}).")
    return out


def conclusion(vt: pd.DataFrame, chance: float, tests: dict, comp: pd.DataFrame | None,
               tol: float) -> str:
    """The chapter's conclusion as one paragraph from the variant study, the paired
    tests (``{(bits, what): paired_tests frame}``) and the comparison with the paper."""

    parts = []
    if "released" in vt.index:
        r = vt.loc["released"]
        gap = r["valid ndcg@10"] - chance
        parts.append(f"Trained as released, VH's best validation NDCG@10 is "
                     f"{num(r['valid ndcg@10'])}, against {num(chance)} for an all-tied ranking"
                     + (": it stops at chance." if gap < 0.01 else
                        f": {num(gap, sign=True)} above chance."))
    vh_rows = vt[vt["method"] == "vh"]
    if len(vh_rows) and "released" in vt.index:
        b = vh_rows["valid ndcg@10"].idxmax()
        parts.append(f"The configuration that gets VH furthest on validation is '{b}', "
                     f"{num(vh_rows.loc[b, 'valid ndcg@10'] - vt.loc['released', 'valid ndcg@10'], sign=True)}"
                     " over the released one.")
    wins = [(bits, what) for (bits, what), t in tests.items() if bool(t["better"].all())]
    if tests:
        parts.append(f"VH_PHD beats VH significantly on all three test metrics in {len(wins)} of "
                     f"{len(tests)} comparisons"
                     + (" (" + "; ".join(f"{b} bits, {w}" for b, w in wins) + ")." if wins else "."))
    if comp is not None:
        ok = within(comp, tol)
        has_paper = comp.xs("paper", axis=1, level="field").notna().any(axis=1)
        ok = ok[has_paper]
        if len(ok):
            inside = [f"{label(m)} {b} bits" for (m, b), g in ok.items() if g]
            outside = [f"{label(m)} {b} bits" for (m, b), g in ok.items() if not g]
            parts.append(f"Against the paper's Table 1 (band ±{tol}): "
                         + (f"within for {', '.join(inside)}" if inside else "none within")
                         + (f"; outside for {', '.join(outside)}." if outside else "."))
    return " ".join(parts)
