"""Tables and figures of the chapter "Variational hashing", from the results store.

- :data:`VARIANTS`: the VH configurations tried to close VH's gap to the paper
  (each a set of config overrides), trained for a fixed number of iterations so
  their validation curves can be compared; :func:`run_variants` trains or
  reuses them through :func:`phdlib.methods.run`;
- :func:`comparison` lays out our test metrics (mean and std over seeds)
  beside the paper's Table 1 values;
- :func:`paired_tests`: VH_PHD against VH, paired t-test over users, Bonferroni;
- :func:`plot_curves`: validation NDCG@10 against iterations.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

METRICS = ("ndcg@5", "ndcg@10", "mrr")

#: Fixed budget of the variant study (iterations; no early stopping).
VARIANT_ITERATIONS = 24_000

#: Iterations of every variant in the quick profile (a check that the code runs).
QUICK_ITERATIONS = 1500

#: name -> (method, overrides, fixed budget?, what it tests). The first entry
#: is the released code's training as is (early stopping from the first
#: evaluation); a fixed budget trains VARIANT_ITERATIONS without early stop,
#: otherwise the default budget rule applies.
VARIANTS: dict[str, tuple[str, dict, bool, str]] = {
    "released": ("vh", {"lr": 0.001, "train_sampling": "stochastic", "min_iterations": 0}, False,
                 "the released code: lr 0.001, stochastic training, patience from the first evaluation"),
    "lr 0.001": ("vh", {"lr": 0.001, "train_sampling": "stochastic"}, True,
                 "the paper's learning rate"),
    "lr 0.005": ("vh", {"lr": 0.005, "train_sampling": "stochastic"}, True,
                 "the largest learning rate of the paper's grid"),
    "lr 0.005, no noise": ("vh", {"lr": 0.005, "train_sampling": "stochastic", "noise_std": 0.0}, True,
                           "no noise injection"),
    "lr 0.005, deterministic training": ("vh", {"lr": 0.005, "train_sampling": "deterministic"}, True,
                                         "mu = 0.5 in training too"),
    "VH_PHD (default)": ("vh-phd", {}, False, "VH_PHD: lr 0.001, stochastic training, default budget rule"),
    "VH_PHD lr 0.005": ("vh-phd", {"lr": 0.005}, False, "VH_PHD with the larger learning rate"),
    "VH_PHD deterministic training": ("vh-phd", {"train_sampling": "deterministic"}, False,
                                      "VH_PHD with mu = 0.5 in training too"),
}


def variant_overrides(name: str, profile: str = "full") -> tuple[str, dict]:
    """(method, overrides) of variant ``name`` under ``profile``."""
    if name not in VARIANTS:
        raise KeyError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    method, ov, fixed, _ = VARIANTS[name]
    ov = dict(ov)
    if fixed:
        ov.update(min_iterations=VARIANT_ITERATIONS, max_iterations=VARIANT_ITERATIONS)
    if profile == "quick":
        ov["max_iterations"] = QUICK_ITERATIONS
        ov["min_iterations"] = min(ov.get("min_iterations", QUICK_ITERATIONS), QUICK_ITERATIONS)
    elif profile != "full":
        raise ValueError(f"profile must be 'full' or 'quick', got {profile!r}")
    return method, ov


def run_variants(split, bits: int = 64, seed: int = 0, profile: str = "full",
                 names=None, progress: bool = False) -> dict:
    """Train (or reuse from the store) every variant; returns name -> Run."""
    from .. import methods

    out = {}
    for name in names or VARIANTS:
        method, ov = variant_overrides(name, profile)
        out[name] = methods.run(method, split, bits, seed=seed, overrides=ov, progress=progress)
    return out


def chance_level(ratings, metric: str = "ndcg@10") -> float:
    """``metric`` of an all-tied ranking (every item at the same distance), expected over ties."""
    from .. import metrics

    per_user = metrics.evaluate(ratings.user, ratings.rating, np.zeros(len(ratings.user)))
    return float(per_user[metric].mean())


def variants_table(runs: dict, chance: float) -> pd.DataFrame:
    """One row per variant: iterations, when validation NDCG@10 first exceeds
    ``chance + 0.01`` (``chance``: :func:`chance_level` of the validation split),
    the best validation point and values, and the code statistics at the end."""
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


def variants_findings(table: pd.DataFrame) -> list[str]:
    """Plain sentences, computed from :func:`variants_table`, on what each variant did."""
    out = []
    for name, row in table.iterrows():
        leave = row["leaves plateau at"]
        leave_s = ("never rose 0.01 above chance" if leave is None or pd.isna(leave)
                   else f"first 0.01 above chance at iteration {int(leave):,}")
        out.append(f"{name}: {leave_s}; best validation NDCG@10 {row['valid ndcg@10']:.4f} "
                   f"(MRR {row['valid mrr']:.4f}) at iteration {int(row['best iteration']):,} "
                   f"of {int(row['iterations']):,}.")
    vh_rows = table[table["method"] == "vh"]
    if len(vh_rows):
        best = vh_rows["valid ndcg@10"].idxmax()
        out.append(f"Best VH variant on validation NDCG@10: {best}.")
    return out


def comparison(runs: dict, dataset: str = "ml-1m", discount_prefix: str = "") -> pd.DataFrame:
    """Our test metrics (mean, std over seeds) beside the paper's Table 1.

    runs: ``{(method, bits): [Run, ...]}``. ``discount_prefix`` selects the
    metrics stored under another discount (``"released:"``; MRR has none).
    Columns per metric: ours, std, paper, diff (ours - paper), within 0.015.
    """
    from .. import paper

    rows = []
    for (method, bits), rs in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        pv = paper.TABLE1.get(dataset, {}).get(bits, {}).get(method)
        row = {"method": method, "bits": bits, "seeds": len(rs)}
        for j, m in enumerate(METRICS):
            key = m if m == "mrr" else discount_prefix + m
            vals = np.array([r.metrics[key] for r in rs], dtype=float)
            row[f"{m}"] = vals.mean()
            row[f"{m} std"] = vals.std(ddof=1) if len(vals) > 1 else np.nan
            if pv is not None:
                row[f"{m} paper"] = pv[j]
                row[f"{m} diff"] = vals.mean() - pv[j]
        rows.append(row)
    return pd.DataFrame(rows).set_index(["method", "bits"])


def within(table: pd.DataFrame, tol: float = 0.015) -> pd.Series:
    """Per row: are all three metrics within ``tol`` of the paper's?"""
    cols = [f"{m} diff" for m in METRICS]
    return table[cols].abs().le(tol).all(axis=1)


def paired_tests(phd_runs: list, vh_runs: list) -> pd.DataFrame:
    """VH_PHD against VH per metric: paired two-tailed t-test over users, Bonferroni.

    Several seeds: each user's metric is first averaged over the seeds of a
    method. The correction runs over the three metrics of one width.
    """
    from .. import stats

    def mean_frame(rs):
        f = pd.concat([r.per_user[["user", *METRICS]] for r in rs])
        return f.groupby("user", as_index=False)[list(METRICS)].mean()

    per_user = {"vh-phd": mean_frame(phd_runs), "vh": mean_frame(vh_runs)}
    return stats.compare(per_user, ["vh-phd"], ["vh"], metrics=METRICS, correction="bonferroni",
                         family="method")


def plot_curves(logs: dict, ax=None, x: str = "iteration", title: str = ""):
    """Validation NDCG@10 against ``x`` (``iteration`` or ``seconds``), one line per name."""
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
