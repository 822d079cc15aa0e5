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

Both take one run per (method, bits) or a list of runs over model seeds. With
several seeds a method's per-user values are averaged over its seeds before
a paired test, as in Table 1, and the share of the gap that the bias closes
is also computed seed by seed, so its spread over seeds is known.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import codes, methods
from ..evaluation import stats
from ..experiments import training
from ..evaluation.fitted import evaluate
from ..evaluation.metrics import METRICS
from ..methods import BlockCodeModel, CodeModel
from ..results import derived

#: How :func:`distance_ablation` scores the test split besides the tie rule: the paper's
#: discount, NDCG at 5 and 10 (seed: of the random tie rule).
_TEST = {"discount": "paper", "ks": (5, 10), "seed": 0}

#: The distances every code method's codes are ranked by, in the order shown
#: (:data:`phdlib.codes.DISTANCE_NAMES`: Hamming, then PHD).
DISTANCES = codes.DISTANCE_NAMES


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


def _seeds(run_or_runs) -> list:
    """A run or a list of runs (seeds) as a list sorted by seed."""
    runs = list(run_or_runs) if isinstance(run_or_runs, (list, tuple)) else [run_or_runs]
    if not runs:
        raise ValueError("an empty list of runs")
    return sorted(runs, key=lambda r: r.seed)


def distance_ablation(runs: dict, split, ties: str = "expected") -> tuple[pd.DataFrame, dict]:
    """Each code method's test metrics under both distances, averaged over its seeds.

    runs: ``{(method, bits): Run or [Run, ...]}`` (with arrays; a list holds one
    run per model seed). Returns ``(table, per_user)``: table rows
    ``method``, ``bits``, ``learned for`` (the method's distance), ``ranked
    by``, ``stored`` (True where this is how the method ranks, whose value
    must equal the mean of the stored test metrics), ``seeds`` (int) and one
    column per metric (mean over seeds); per_user maps ``(method, bits,
    distance)`` to the per-user frame averaged over seeds (``user`` and one
    float column per metric). Runs without plain codes are left out (and
    listed in ``table.attrs["skipped"]``). Each stored run's frames are
    computed once per split (:func:`phdlib.results.derived.frame`): the
    landing page reads what the ablation chapter computed.
    """
    rows, per_user, skipped = [], {}, []
    for (m, b), group in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        seeds = _seeds(group)
        codes = [as_codes(training.fitted(r)) for r in seeds]
        if any(c is None for c in codes):
            skipped.append(f"{methods.label(m)} {b} bits")
            continue
        for d in DISTANCES:
            pu = stats.mean_over_seeds([
                derived.frame(r, split, {"frame": "test", "distance": d, "ties": ties, **_TEST},
                              lambda c=c, d=d: evaluate(c.with_distance(d), split.test,
                                                        ties=ties, **_TEST))
                for r, c in zip(seeds, codes)])
            per_user[(m, b, d)] = pu
            rows.append({"method": m, "bits": b, "learned for": methods.get(m).ranks_by,
                         "ranked by": d, "stored": d == methods.get(m).ranks_by,
                         "seeds": len(seeds), **{k: float(pu[k].mean()) for k in METRICS}})
    table = pd.DataFrame(rows)
    table.attrs["skipped"] = skipped
    return table, per_user


def stored_gap(table: pd.DataFrame, runs: dict) -> float:
    """The largest difference between :func:`distance_ablation`'s rows ranked the way their
    method ranks and the mean of the runs' stored test metrics (0 up to rounding: the same
    evaluation path). ``runs``: as given to :func:`distance_ablation`."""
    gap = 0.0
    for _, r in table[table["stored"]].iterrows():
        group = _seeds(runs[(r["method"], r["bits"])])
        for k in METRICS:
            gap = max(gap, abs(r[k] - float(np.mean([x.metrics[k] for x in group]))))
    return gap


def distance_tests(per_user: dict, alpha: float = 0.05) -> pd.DataFrame:
    """PHD ranking minus Hamming ranking of the same codes, per (method, bits) and metric.

    Paired two-tailed t-test over users (per-user values averaged over seeds),
    Bonferroni over the three metrics of one (method, bits). Columns: method,
    bits, metric, mean_diff (PHD - Hamming), ci_low, ci_high, p_adj, verdict.
    """
    rows = []
    for m, b in sorted({(m, b) for m, b, _ in per_user}, key=lambda k: (k[1], k[0])):
        new, old = codes.PHD.name, codes.HAMMING.name
        cmp = stats.compare({d: per_user[(m, b, d)] for d in (new, old)},
                            [new], [old], METRICS, family="all", alpha=alpha)
        for _, c in cmp.iterrows():
            worse = c["mean_diff"] < 0 and c["p_adj"] < alpha
            rows.append({"method": m, "bits": b, "metric": c["metric"], "mean_diff": c["mean_diff"],
                         "ci_low": c["ci_low"], "ci_high": c["ci_high"], "p_adj": c["p_adj"],
                         "verdict": "PHD better" if c["better"] else "Hamming better" if worse
                         else "no significant difference"})
    return pd.DataFrame(rows)


#: The arms of :func:`bias_gap` for VH: (learned for Hamming, with a per-user bias in
#: training, learned for PHD). DCF's are :data:`phdlib.studies.travel.ARMS`.
BIAS_ARMS = ("vh", "vh-bias", "vh-phd")


def bias_gap(runs: dict, bits: int, alpha: float = 0.05, arms: tuple = BIAS_ARMS) -> pd.DataFrame:
    """How much of the Hamming -> PHD gap a per-user training bias closes, per metric.

    runs: ``{(method, bits): Run or [Run, ...]}`` with the three ``arms``
    ``(base, bias, phd)`` (default VH, VH+bias, VH_PHD; lists: one run per
    model seed). One row per metric; columns: metric; one per arm (test
    metric, mean over seeds); closed (``(bias - base) / (phd - base)`` of those
    means; NaN when the gap is 0); seeds (seeds present in all three),
    closed_std, closed_min, closed_max (the same share computed seed by seed
    over the seeds all three share; std with ddof=1, NaN for one seed); and
    the Bonferroni-adjusted p-values of the paired tests over users (per-user
    values averaged over seeds) ``"p {bias} vs {base}"`` and ``"p {phd} vs
    {bias}"``. ``attrs["arms"]`` is ``arms``.
    """
    base, bias, phd = arms
    need = [(m, bits) for m in arms]
    missing = [k for k in need if k not in runs]
    if missing:
        raise KeyError(f"bias_gap needs runs {need}; missing {missing}")
    group = {m: _seeds(runs[(m, bits)]) for m in arms}
    pu = {m: stats.mean_over_seeds([r.per_user for r in g]) for m, g in group.items()}
    t1 = stats.compare(pu, [bias], [base], METRICS, family="all", alpha=alpha)
    t2 = stats.compare(pu, [phd], [bias], METRICS, family="all", alpha=alpha)
    shared = sorted(set.intersection(*({r.seed for r in g} for g in group.values())))
    by_seed = {m: {r.seed: r for r in g} for m, g in group.items()}
    rows = []
    for k in METRICS:
        v = {m: float(np.mean([float(r.metrics[k]) for r in g])) for m, g in group.items()}
        gap = v[phd] - v[base]
        per_seed = []
        for s in shared:
            x = {m: float(by_seed[m][s].metrics[k]) for m in arms}
            g = x[phd] - x[base]
            per_seed.append((x[bias] - x[base]) / g if g != 0 else np.nan)
        ps = np.asarray(per_seed, dtype=float)
        ok = ps[np.isfinite(ps)]
        rows.append({"metric": k, **v,
                     "closed": (v[bias] - v[base]) / gap if gap != 0 else np.nan,
                     "seeds": len(shared),
                     "closed_std": float(ok.std(ddof=1)) if len(ok) > 1 else np.nan,
                     "closed_min": float(ok.min()) if len(ok) else np.nan,
                     "closed_max": float(ok.max()) if len(ok) else np.nan,
                     f"p {bias} vs {base}": float(t1.loc[t1.metric == k, "p_adj"].iloc[0]),
                     f"p {phd} vs {bias}": float(t2.loc[t2.metric == k, "p_adj"].iloc[0])})
    out = pd.DataFrame(rows)
    out.attrs["arms"] = tuple(arms)
    return out


def _p(p: float) -> str:
    """A p-value for a sentence: ``p < 0.001``, ``p = 0.003``, ``p = 0.41``; ``p n/a``."""
    if p is None or not np.isfinite(p):
        return "p n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}" if p < 0.1 else f"p = {p:.2f}"


def share_range(row, arms: tuple = BIAS_ARMS) -> tuple[float, float] | None:
    """The range of the share of the base -> PHD gap that the bias arm closes (default VH ->
    VH_PHD, VH+bias): (min, max) over seeds, or (share, share) for one seed; None where there
    is no gain to close (the PHD arm not above the base, or no share). ``row``: one metric's
    row of :func:`bias_gap` with these ``arms``."""
    base, _, phd = arms
    if not (row[phd] > row[base]) or not np.isfinite(row["closed"]):
        return None
    if np.isfinite(row["closed_min"]) and np.isfinite(row["closed_max"]):
        return float(row["closed_min"]), float(row["closed_max"])
    return float(row["closed"]), float(row["closed"])


def share_words(lo: float, hi: float) -> str:
    """How much of a gain a share in ``[lo, hi]`` is, in words that hold for the whole range:
    ``"more than half of"``, ``"a quarter to half of"``, ``"less than a quarter of"``,
    ``"none of"``, or the range itself (``"23% to 62% of"``) where it straddles those
    bounds."""
    if lo >= 0.5:
        return "more than half of"
    if lo >= 0.25 and hi < 0.5:
        return "a quarter to half of"
    if lo > 0 and hi < 0.25:
        return "less than a quarter of"
    if hi <= 0:
        return "none of"
    return f"{100 * lo:.0f}% to {100 * hi:.0f}% of".replace("-", "−")


def _distance_lines(tests: pd.DataFrame) -> list[str]:
    out = []
    for (m, b), g in tests.groupby(["method", "bits"], sort=False):
        nd = g.set_index("metric").loc["ndcg@10"]
        better = (g["verdict"] == "PHD better").sum()
        worse = (g["verdict"] == "Hamming better").sum()
        how = ("PHD ranks them better on every metric" if better == len(g) else
               "Hamming ranks them better on every metric" if worse == len(g) else
               f"PHD is better on {better}, Hamming on {worse}, and neither on "
               f"{len(g) - better - worse} of the {len(g)} metrics")
        out.append(f"{methods.label(m)} codes at {b} bits ranked by PHD instead of Hamming: "
                   f"NDCG@10 {nd['mean_diff']:+.4f} ({_p(nd['p_adj'])}); {how}.")
    return out


def phd_reach(table: pd.DataFrame, target: str = "vh-phd", metric: str = "ndcg@10") -> pd.DataFrame:
    """How close each Hamming-trained code, ranked by PHD, comes to ``target`` (ranked by PHD).

    table: :func:`distance_ablation`'s table. One row per (bits, method) whose
    codes were learned for the Hamming distance: ``hamming`` and ``phd``
    (``metric`` of its codes ranked each way), ``target`` (the target's stored
    value) and ``below_target`` (target - phd, in metric units).
    """
    rows = []
    for b, g in table.groupby("bits"):
        t = g[(g["method"] == target) & g["stored"]]
        if t.empty:
            continue
        tv = float(t[metric].iloc[0])
        for m, h in g[g["learned for"] == "hamming"].groupby("method"):
            by = h.set_index("ranked by")[metric]
            rows.append({"bits": int(b), "method": m, "hamming": float(by["hamming"]),
                         "phd": float(by["phd"]), "target": tv,
                         "below_target": tv - float(by["phd"])})
    return pd.DataFrame(rows)


def _share(g: pd.Series) -> str:
    s = f"{100 * g['closed']:.0f}%"
    if np.isfinite(g["closed_std"]):
        s += (f" (over {int(g['seeds'])} seeds: {100 * g['closed_min']:.0f}% to "
              f"{100 * g['closed_max']:.0f}%, std {100 * g['closed_std']:.0f} points)")
    return s


def findings(tests: pd.DataFrame, gaps: dict[int, pd.DataFrame], alpha: float = 0.05) -> list[str]:
    """Plain sentences, computed from :func:`distance_tests` and :func:`bias_gap` tables."""
    out = _distance_lines(tests)
    for b, t in gaps.items():
        nd = t.set_index("metric").loc["ndcg@10"]
        rng = share_range(nd)
        if rng is None:
            out.append(f"{b} bits: VH_PHD is not above VH on NDCG@10 "
                       f"({nd['vh-phd']:.4f} against {nd['vh']:.4f}); there is no gain to close.")
            continue
        what = f"a per-user bias gives {share_words(*rng)} PHD's gain"
        rest = ("VH_PHD stays significantly above VH+bias, so the rest of its gain is not the bias"
                if nd["p vh-phd vs vh-bias"] < alpha and nd["vh-phd"] > nd["vh-bias"] else
                "VH_PHD is not significantly above VH+bias")
        out.append(f"{b} bits: VH+bias closes {_share(nd)} of the NDCG@10 gap from VH to VH_PHD: "
                   f"{what}; {rest} (VH+bias against VH {_p(nd['p vh-bias vs vh'])}, VH_PHD "
                   f"against VH+bias {_p(nd['p vh-phd vs vh-bias'])}).")
    return out
