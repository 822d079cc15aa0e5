"""The paper's Table 1 and Figures 1 to 5, built from stored runs.

Everything here takes runs (:class:`phdlib.results.Run`, usually from
:func:`phdlib.experiments.ensure`) and returns tables (pandas) or matplotlib
figures; nothing trains. The paper's numbers come from :mod:`phdlib.paper`.

- Table 1: :func:`table1` (ours, the paper's, the difference, the Delta% row,
  significance marks from :mod:`phdlib.stats`, mean ± std over seeds),
  :func:`format_table1`, :func:`table1_findings`.
- Figures 1-3: :func:`user_features`, :func:`per_user`, :func:`smooth_nearest`,
  :func:`plot_users`, :func:`users_findings`.
- Figure 4: :func:`sampling_table`, :func:`plot_sampling`.
- Figure 5: :func:`plot_convergence`, :func:`convergence_summary`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd

from . import paper

METRICS = ("ndcg@5", "ndcg@10", "mrr")
LABELS = {"cccf": "CCCF", "dcf": "DCF", "mf-mean": "MFmean", "mf-median": "MFmedian",
          "vh": "VH", "vh-phd": "VH_PHD", "mf": "MF", "mf-als": "MF (ALS, ours)",
          "item-mean": "item mean rating", "popularity": "item popularity",
          "random": "random (all tied)"}
COLORS = {"cccf": "tab:green", "dcf": "tab:orange", "vh": "tab:blue", "vh-phd": "tab:red",
          "mf": "black", "mf-als": "tab:gray", "item-mean": "tab:purple"}
METRIC_LABELS = {"ndcg@5": "NDCG@5", "ndcg@10": "NDCG@10", "mrr": "MRR"}


def label(method: str) -> str:
    return LABELS.get(method, method)


# --------------------------------------------------------------------------- grouping runs


def by_method(runs: dict, bits: int | None = None, plain: bool = True) -> dict[str, list]:
    """``{method: [runs over seeds]}`` from ``{Cell: Run}``.

    plain: keep only cells without sampling options (the default sampling),
    so Figure 4's variants do not mix into Table 1.
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
    """Per-user ``metric`` averaged over the runs (seeds): float64 Series indexed by user."""
    if not runs:
        raise ValueError("per_user needs at least one run")
    frames = [r.per_user.set_index("user")[metric] for r in runs]
    df = pd.concat(frames, axis=1)
    if df.isna().any().any():
        raise ValueError(f"runs of {runs[0].method!r} cover different users; cannot average per user")
    return df.mean(axis=1).sort_index()


# --------------------------------------------------------------------------- Table 1


@dataclass
class Table1:
    """Table 1 for one dataset and width.

    values: rows = methods (paper's, then ours), columns MultiIndex
    (metric, field) with fields ``ours``, ``std``, ``n``, ``paper``, ``diff``.
    marks: rows = methods, columns = metrics: ``"*"`` where the method is
    significantly better than every Hamming baseline in that column.
    pvalues: rows = (method, baseline), columns = metrics: corrected p-values.
    delta: ``{"ours": {metric: %}, "paper": {metric: %}}`` (VH_PHD over the best Hamming method).
    """

    dataset: str
    bits: int
    values: pd.DataFrame
    marks: pd.DataFrame
    pvalues: pd.DataFrame
    delta: dict
    paper_methods: list
    additions: list
    missing: list


def table1(runs: dict, dataset: str, bits: int, alpha: float = 0.05,
           paper_methods: Iterable[str] | None = None, additions: Iterable[str] | None = None,
           hamming: Iterable[str] | None = None) -> Table1:
    """Build Table 1 for ``dataset`` at ``bits`` from ``{Cell: Run}``.

    Our value is the mean over seeds (``std`` with ddof=1 when there are
    several). Significance follows the paper: per column, a paired
    two-tailed t-test over users of VH_PHD (and MF) against each Hamming
    method, Bonferroni-corrected over those comparisons, at ``alpha``; a mark
    means significantly better than every one of them. Per-user values are
    averaged over seeds before the test.
    """
    from . import experiments, stats

    paper_methods = list(paper_methods or experiments.PAPER_METHODS)
    additions = list(additions or experiments.ADDITIONS)
    hamming = list(hamming or experiments.HAMMING_METHODS)
    groups = by_method(runs, bits=bits)
    ref = paper.table1(dataset, bits)
    rows, missing = [], []
    for m in paper_methods + additions:
        rs = groups.get(m, [])
        if not rs:
            missing.append(m)
        row = {}
        for met in METRICS:
            vals = np.array([r.metrics[met] for r in rs], dtype=float)
            ours = float(vals.mean()) if len(vals) else np.nan
            p = ref.get(m, {}).get(met, np.nan)
            row[(met, "ours")] = ours
            row[(met, "std")] = float(vals.std(ddof=1)) if len(vals) > 1 else np.nan
            row[(met, "n")] = len(vals)
            row[(met, "paper")] = p
            row[(met, "diff")] = ours - p
        rows.append(pd.Series(row, name=m))
    values = pd.DataFrame(rows)
    values.columns = pd.MultiIndex.from_tuples(values.columns)

    # significance (phdlib.stats: paired two-tailed t-test, Bonferroni over the column)
    ham = [m for m in hamming if m in groups]
    marked = [m for m in ("vh-phd", "mf") if m in groups]
    marks = pd.DataFrame("", index=values.index, columns=list(METRICS))
    pvalues = pd.DataFrame()
    if ham and marked:
        frames = {m: pd.concat([per_user(groups[m], met) for met in METRICS], axis=1,
                               keys=list(METRICS)).rename_axis("user").reset_index()
                  for m in ham + marked}
        pvalues = stats.compare(frames, marked, ham, METRICS, correction="bonferroni",
                                family="column", alpha=alpha)
        sm = stats.significance_marks(frames, marked, ham, METRICS, correction="bonferroni",
                                      family="column", alpha=alpha)
        for m in marked:
            marks.loc[m] = sm.loc[m]

    delta = {"ours": {}, "paper": {}}
    for met in METRICS:
        present = [m for m in ham if not np.isnan(values.loc[m, (met, "ours")])]
        if "vh-phd" in groups and present:
            best = max(values.loc[m, (met, "ours")] for m in present)
            delta["ours"][met] = 100.0 * (values.loc["vh-phd", (met, "ours")] - best) / best
        pd_ref = [ref[m][met] for m in hamming if m in ref]
        if "vh-phd" in ref and pd_ref:
            best = max(pd_ref)
            delta["paper"][met] = 100.0 * (ref["vh-phd"][met] - best) / best
    return Table1(dataset, bits, values, marks, pvalues, delta, paper_methods, additions, missing)


def _fmt(v: float, std: float = np.nan, mark: str = "") -> str:
    if v is None or np.isnan(v):
        return "–"
    s = f"{v:.4f}".lstrip("0") if v >= 0 else f"-{abs(v):.4f}".replace("-0.", "-.")
    if not np.isnan(std):
        s += f" ± {std:.4f}".replace("0.", ".", 1)
    return s + mark


def format_table1(t: Table1) -> pd.DataFrame:
    """Table 1 as strings for display: one block of columns per metric (ours, paper, diff).

    The paper's methods come first, then the Delta% row, then a separator row
    and our additions (which the paper does not report).
    """
    cols = pd.MultiIndex.from_tuples([(METRIC_LABELS[m], f) for m in METRICS
                                      for f in ("ours", "paper", "ours − paper")])
    out = []
    idx = []
    for m in t.paper_methods:
        r = []
        for met in METRICS:
            v = t.values.loc[m]
            r += [_fmt(v[(met, "ours")], v[(met, "std")], t.marks.loc[m, met]),
                  _fmt(v[(met, "paper")], mark="*" if m in paper.TABLE1_STARRED and not np.isnan(v[(met, "paper")]) else ""),
                  "–" if np.isnan(v[(met, "diff")]) else f"{v[(met, 'diff')]:+.4f}"]
        out.append(r)
        idx.append(label(m) + (" (not run)" if m in t.missing else ""))
    r = []
    for met in METRICS:
        o = t.delta["ours"].get(met)
        p = t.delta["paper"].get(met)
        r += ["–" if o is None else f"{o:+.1f}%", "–" if p is None else f"{p:+.1f}%",
              "–" if o is None or p is None else f"{o - p:+.1f} pt"]
    out.append(r)
    idx.append("Δ% (VH_PHD vs best Hamming)")
    out.append([""] * len(cols))
    idx.append("— our additions (not in the paper) —")
    for m in t.additions:
        r = []
        for met in METRICS:
            v = t.values.loc[m]
            r += [_fmt(v[(met, "ours")], v[(met, "std")]), "", ""]
        out.append(r)
        idx.append(label(m) + (" (not run)" if m in t.missing else ""))
    return pd.DataFrame(out, index=idx, columns=cols)


def _hamming_ceiling_finding(t: Table1, have) -> list[str]:
    """Finding (3): the best Hamming methods (CCCF, DCF, VH) score alike.

    Compares the spread of their NDCG@10 with VH_PHD's lead over the best of
    them; the paper's spread is quoted where the paper has numbers.
    """
    v = t.values
    best3 = [m for m in ("cccf", "dcf", "vh") if have(m)]
    if len(best3) < 2 or not have("vh-phd"):
        return [f"{t.bits} bits: finding 3 needs VH_PHD and at least two of CCCF, DCF, VH."]
    nd = v.loc[best3, ("ndcg@10", "ours")]
    spread = float(nd.max() - nd.min())
    paper = v.loc[best3, ("ndcg@10", "paper")]
    quoted = "" if paper.isna().any() else f" (paper {float(paper.max() - paper.min()):.4f})"
    gap = float(v.loc["vh-phd", ("ndcg@10", "ours")] - nd.max())
    verdict = ("AGREES (finding 3): they are closer to each other than to VH_PHD."
               if spread < abs(gap) else
               "DISAGREES (finding 3): their spread is not smaller than VH_PHD's gap.")
    return [f"NDCG@10 of {', '.join(label(m) for m in best3)} spans {spread:.4f}{quoted} at "
            f"{t.bits} bits; VH_PHD is {gap:+.4f} above the best of them. {verdict}"]


def table1_findings(t: Table1, tolerance: float = 0.015) -> list[str]:
    """Plain statements of where our Table 1 agrees with the paper's findings, computed.

    Checks the paper's findings (1) VH_PHD beats every hashing baseline,
    (2) its gain is larger for MRR than for NDCG, (3) the best Hamming methods
    score alike, (4) MF beats every hashing method; and, where the paper has numbers, which of our values lie within
    ``tolerance`` of them.
    """
    v = t.values
    have = lambda m: m in v.index and not np.isnan(v.loc[m, ("ndcg@10", "ours")])  # noqa: E731
    out = []
    ham = [m for m in ("cccf", "dcf", "mf-mean", "mf-median", "vh") if have(m)]
    if have("vh-phd") and ham:
        lost = [(met, m) for met in METRICS for m in ham
                if v.loc[m, (met, "ours")] >= v.loc["vh-phd", (met, "ours")]]
        if not lost:
            out.append(f"AGREES (finding 1): VH_PHD is the best hashing method on all three metrics "
                       f"at {t.bits} bits (against {', '.join(label(m) for m in ham)}).")
        else:
            out.append(f"DISAGREES (finding 1): at {t.bits} bits VH_PHD is not above "
                       + "; ".join(f"{label(m)} on {METRIC_LABELS[met]}" for met, m in lost) + ".")
        sig = [met for met in METRICS if t.marks.loc["vh-phd", met] == "*"]
        fam = int((t.pvalues["metric"] == "ndcg@10").sum()) if len(t.pvalues) else 0
        out.append(f"Significance (paired two-tailed t-test over users, Bonferroni over the {fam} "
                   f"comparisons of each column, against {len(ham)} Hamming methods): VH_PHD is "
                   f"significantly better than all of them on "
                   f"{', '.join(METRIC_LABELS[m] for m in sig) if sig else 'no metric'}"
                   f" (the paper marks all three).")
        d = t.delta["ours"]
        if d:
            bigger = d["mrr"] > max(d["ndcg@5"], d["ndcg@10"])
            out.append(("AGREES" if bigger else "DISAGREES")
                       + f" (finding 2): our Δ% is {d['ndcg@5']:+.1f}% / {d['ndcg@10']:+.1f}% / "
                       f"{d['mrr']:+.1f}% (NDCG@5 / NDCG@10 / MRR); the gain is "
                       + ("larger" if bigger else "not larger") + " for MRR than for NDCG.")
    out.extend(_hamming_ceiling_finding(t, have))
    hashing = ham + (["vh-phd"] if have("vh-phd") else [])
    if have("mf") and hashing:
        below = [(met, m) for met in METRICS for m in hashing
                 if v.loc[m, (met, "ours")] >= v.loc["mf", (met, "ours")]]
        out.append(("AGREES (finding 4): MF beats every hashing method on every metric."
                    if not below else
                    "DISAGREES (finding 4): MF is not above " +
                    "; ".join(f"{label(m)} on {METRIC_LABELS[met]}" for met, m in below) + "."))
    close, far = [], []
    for m in t.paper_methods:
        if not have(m):
            continue
        for met in METRICS:
            d = v.loc[m, (met, "diff")]
            if np.isnan(d):
                continue
            (close if abs(d) <= tolerance else far).append(f"{label(m)} {METRIC_LABELS[met]} ({d:+.4f})")
    if close or far:
        out.append(f"Within {tolerance} of the paper: {len(close)} of {len(close) + len(far)} values."
                   + (f" Further away: {', '.join(far)}." if far else ""))
    elif not paper.table1(t.dataset, t.bits):
        out.append(f"The paper reports no numbers for {t.dataset}; only our values are shown.")
    if t.missing:
        out.append("NOT RUN (method not available in this build): "
                   + ", ".join(label(m) for m in t.missing) + ".")
    return out


# --------------------------------------------------------------------------- Figures 1-3


def user_features(split) -> pd.DataFrame:
    """Per-user ordering keys for Figures 2 and 3, over all of the user's ratings.

    Returns a frame indexed by user with ``n_rated`` (int64: ratings in train,
    validation and test) and ``avg_popularity`` (float64: mean over the
    user's rated items of the item's popularity, the fraction of users who
    rated the item, in [0, 1]).
    """
    users = np.concatenate([split.train.user, split.valid.user, split.test.user]).astype(np.int64)
    items = np.concatenate([split.train.item, split.valid.item, split.test.item]).astype(np.int64)
    n_users, n_items = split.dataset.n_users, split.dataset.n_items
    n_rated = np.bincount(users, minlength=n_users)
    pop = np.bincount(items, minlength=n_items) / float(n_users)
    s = np.bincount(users, weights=pop[items], minlength=n_users)
    with np.errstate(invalid="ignore", divide="ignore"):
        avg = s / n_rated
    return pd.DataFrame({"n_rated": n_rated, "avg_popularity": avg},
                        index=pd.Index(np.arange(n_users), name="user"))


def smooth_nearest(values: np.ndarray, window: int = 500) -> np.ndarray:
    """Mean over the ``window`` nearest positions of each position (values already ordered).

    values: float (n,). For position i the window is the ``window``
    consecutive positions centred on i, shifted inwards at both ends so it
    always holds ``min(window, n)`` values (the paper's "averaging the 500
    nearest users"). Returns float64 (n,).
    """
    x = np.asarray(values, dtype=np.float64)
    n = x.shape[0]
    if n == 0:
        return x.copy()
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    w = min(int(window), n)
    c = np.concatenate([[0.0], np.cumsum(x)])
    start = np.clip(np.arange(n) - (w - 1) // 2, 0, n - w)
    return (c[start + w] - c[start]) / w


ORDERS = {"mf": "users ordered by MF NDCG@10", "n_rated": "users ordered by number of rated items",
          "avg_popularity": "users ordered by average item popularity"}


def users_curves(curves: dict[str, pd.Series], order_key: pd.Series, window: int = 500) -> pd.DataFrame:
    """Smoothed per-user curves: users sorted by ``order_key`` (ascending, ties by user id).

    curves: ``{method: per-user values}`` (Series indexed by user); only users
    present in every curve and in ``order_key`` are kept. Returns a frame
    with ``rank`` (0..n-1), ``key`` and one smoothed column per method.
    """
    common = order_key.index
    for s in curves.values():
        common = common.intersection(s.index)
    key = order_key.reindex(common)
    order = np.lexsort((common.to_numpy(), key.to_numpy()))
    users = common.to_numpy()[order]
    out = {"rank": np.arange(len(users)), "key": key.to_numpy()[order]}
    for m, s in curves.items():
        out[m] = smooth_nearest(s.reindex(users).to_numpy(), window)
    return pd.DataFrame(out, index=pd.Index(users, name="user"))


def plot_users(frame: pd.DataFrame, order: str, title: str = "", ax=None):
    """Draw one of Figures 1-3 from :func:`users_curves`' frame; returns the axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for m in [c for c in frame.columns if c not in ("rank", "key")]:
        ax.plot(frame["rank"], frame[m], label=label(m), color=COLORS.get(m), lw=1.4)
    ax.set_xlabel(ORDERS.get(order, order) + " (rank)")
    ax.set_ylabel("NDCG@10 (mean of nearest users)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def users_findings(frame: pd.DataFrame, order: str) -> list[str]:
    """Computed statements about one of Figures 1-3 (share of users where VH_PHD leads)."""
    cols = [c for c in frame.columns if c not in ("rank", "key")]
    out = []
    if "vh-phd" in cols:
        ham = [c for c in cols if c in ("cccf", "dcf", "vh")]
        if ham:
            best_ham = frame[ham].max(axis=1)
            share = float((frame["vh-phd"] > best_ham).mean())
            verdict = "AGREES" if share >= 0.95 else ("PARTLY AGREES" if share >= 0.5 else "DISAGREES")
            out.append(f"{verdict}: the smoothed VH_PHD curve lies above every Hamming baseline "
                       f"({', '.join(label(h) for h in ham)}) for {100 * share:.1f}% of the users "
                       f"(the paper: VH_PHD outperforms all Hamming baselines across users).")
        if "mf" in cols:
            gap_ham = float((frame["mf"] - frame[ham].max(axis=1)).mean()) if ham else np.nan
            gap_phd = float((frame["mf"] - frame["vh-phd"]).mean())
            if gap_phd <= 0:
                note = " (VH_PHD is level with or above MF here: more than the paper's 'closes a large part')."
            elif gap_phd < gap_ham:
                note = (f" (VH_PHD closes {100 * (1 - gap_phd / gap_ham):.0f}% of the Hamming baselines' gap, "
                        "as the paper says it closes a large part)." if gap_ham > 0 else ".")
            else:
                note = " (VH_PHD does not close the gap here, unlike the paper)."
            out.append(f"Mean smoothed gap to MF (MF minus method): best Hamming baseline {gap_ham:+.4f}, "
                       f"VH_PHD {gap_phd:+.4f}" + note)
    if order in ("n_rated", "avg_popularity") and cols:
        n = len(frame)
        lo, hi = frame.iloc[: n // 5][cols].mean(), frame.iloc[-(n // 5):][cols].mean()
        trend = "falls" if (hi < lo).mean() > 0.5 else "rises"
        expected = "falls" if order == "n_rated" else "rises"
        out.append(("AGREES" if trend == expected else "DISAGREES")
                   + f": NDCG@10 {trend} from the lowest to the highest fifth of users for most methods "
                   f"(mean over methods {float(lo.mean()):.4f} -> {float(hi.mean()):.4f}); the paper: it "
                   f"{expected}.")
    return out


# --------------------------------------------------------------------------- Figure 4


def sampling_table(runs: dict, bits: int = 64, method: str = "vh-phd",
                   metric: str = "ndcg@10") -> pd.DataFrame:
    """Mean and std (over seeds) of ``metric`` for each (train, eval) sampling combination."""
    rows = {}
    for cell, run in runs.items():
        if cell.method != method or cell.bits != bits:
            continue
        ov = cell.overrides
        if "train_sampling" not in ov or "eval_sampling" not in ov:
            continue
        rows.setdefault((ov["train_sampling"], ov["eval_sampling"]), []).append(run.metrics[metric])
    out = [{"train": t, "eval": e, "mean": float(np.mean(v)),
            "std": float(np.std(v, ddof=1)) if len(v) > 1 else np.nan, "seeds": len(v)}
           for (t, e), v in rows.items()]
    df = pd.DataFrame(out, columns=["train", "eval", "mean", "std", "seeds"])
    return df.sort_values("mean", ascending=False).reset_index(drop=True)


def plot_sampling(table: pd.DataFrame, metric: str = "ndcg@10", title: str = "", ax=None):
    """Figure 4: bars of the four sampling combinations; returns the axes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    t = table.sort_values(["train", "eval"], ascending=[False, True])
    names = [f"train {a[:5]}.\neval {b[:5]}." for a, b in zip(t["train"], t["eval"])]
    ax.bar(names, t["mean"], yerr=t["std"].fillna(0).to_numpy(), capsize=4,
           color=["tab:red" if (a, b) == ("stochastic", "deterministic") else "tab:gray"
                  for a, b in zip(t["train"], t["eval"])])
    lo = float(np.nanmin(t["mean"])) if len(t) else 0.0
    ax.set_ylim(max(0.0, lo - 0.05), None)
    for i, v in enumerate(t["mean"]):
        ax.text(i, v, f"{v:.4f}", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel(METRIC_LABELS.get(metric, metric))
    ax.set_title(title)
    return ax


def sampling_findings(table: pd.DataFrame) -> list[str]:
    """The paper's Figure 4 findings checked on our numbers."""
    if len(table) < 4:
        return [f"only {len(table)} of the 4 sampling combinations are available"]
    m = {(a, b): v for a, b, v in zip(table["train"], table["eval"], table["mean"])}
    rank = table.sort_values("mean", ascending=False)
    order = [(a, b) for a, b in zip(rank["train"], rank["eval"])]
    out = []
    out.append(("AGREES" if order[0] == ("stochastic", "deterministic") else "DISAGREES")
               + f": best combination is train {order[0][0]} / eval {order[0][1]} "
               "(the paper: stochastic training, deterministic evaluation).")
    out.append(("AGREES" if order[1] == ("deterministic", "deterministic") else "DISAGREES")
               + f": second is train {order[1][0]} / eval {order[1][1]} (the paper: deterministic / deterministic).")
    det_eval = min(m[("stochastic", "deterministic")], m[("deterministic", "deterministic")])
    sto_eval = max(m[("stochastic", "stochastic")], m[("deterministic", "stochastic")])
    out.append(("AGREES" if sto_eval < det_eval else "DISAGREES")
               + f": stochastic evaluation (best {sto_eval:.4f}) is below deterministic evaluation "
               f"(worst {det_eval:.4f}).")
    worse = m[("deterministic", "stochastic")] < m[("stochastic", "stochastic")]
    out.append(("AGREES" if worse else "DISAGREES")
               + ": with stochastic evaluation, deterministic training is "
               + ("worse" if worse else "not worse") + " than stochastic training (the paper: even worse).")
    return out


# --------------------------------------------------------------------------- Figure 5


def _log_columns(log: pd.DataFrame) -> tuple[str, str, str]:
    it = "iteration"
    sec = next((c for c in ("seconds", "wall_seconds", "train_seconds") if c in log.columns), None)
    val = next((c for c in ("valid_ndcg@10", "valid:ndcg@10") if c in log.columns), None)
    if it not in log.columns or sec is None or val is None:
        raise ValueError(f"training log lacks iteration / seconds / validation NDCG@10 columns; "
                         f"has {list(log.columns)}")
    return it, sec, val


def plot_convergence(logs: dict[str, list[pd.DataFrame]], title: str = "", axes=None):
    """Figure 5: validation NDCG@10 against iterations (left) and wall seconds (right).

    logs: ``{method: [training logs, one per seed]}``; each seed is one line.
    Returns the two axes.
    """
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for m, lst in logs.items():
        for j, log in enumerate(lst):
            it, sec, val = _log_columns(log)
            kw = dict(color=COLORS.get(m), lw=1.3, alpha=1.0 if j == 0 else 0.5,
                      label=label(m) if j == 0 else None)
            axes[0].plot(log[it], log[val], **kw)
            axes[1].plot(log[sec], log[val], **kw)
    axes[0].set_xlabel("training iterations (batches)")
    axes[1].set_xlabel("wall time (s, this machine)")
    axes[0].set_ylabel("validation NDCG@10")
    for a in axes:
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    if title:
        axes[0].figure.suptitle(title)
    return axes


def convergence_summary(logs: dict[str, list[pd.DataFrame]], fractions=(0.5, 0.9, 0.99),
                        target: float | None = None) -> pd.DataFrame:
    """When each run first reaches common validation levels.

    The levels lie between ``start`` (the lowest first logged validation
    NDCG@10 of all runs) and ``target`` (default: the lowest best value of
    all runs, a level every run reaches): ``start + f (target - start)`` for
    each f in ``fractions``. One row per (method, run, fraction): ``method``,
    ``run``, ``fraction``, ``level``, ``iterations``, ``seconds`` (NaN if the
    run never reaches it), ``best_valid_ndcg@10``, ``best_iteration``.
    """
    cols = {}
    for m, lst in logs.items():
        for j, log in enumerate(lst):
            cols[(m, j)] = (log, *_log_columns(log))
    if not cols:
        return pd.DataFrame(columns=["method", "run", "fraction", "level", "iterations", "seconds",
                                     "best_valid_ndcg@10", "best_iteration"])
    if target is None:
        target = min(float(log[val].max()) for log, _, _, val in cols.values())
    start = min(float(log[val].iloc[0]) for log, _, _, val in cols.values())
    rows = []
    for (m, j), (log, it, sec, val) in cols.items():
        best_row = log.loc[log[val].idxmax()]
        for f in fractions:
            level = start + f * (target - start)
            hit = log[log[val] >= level]
            rows.append({"method": m, "run": j, "fraction": f, "level": level,
                         "iterations": float(hit.iloc[0][it]) if len(hit) else np.nan,
                         "seconds": float(hit.iloc[0][sec]) if len(hit) else np.nan,
                         "best_valid_ndcg@10": float(best_row[val]), "best_iteration": int(best_row[it])})
    return pd.DataFrame(rows)


def convergence_findings(summary: pd.DataFrame) -> list[str]:
    """Does VH_PHD reach the common validation levels sooner than VH (the paper's Figure 5)?"""
    if not {"vh", "vh-phd"} <= set(summary["method"]):
        return ["needs both VH and VH_PHD logs"]
    g = summary.groupby(["fraction", "method"])[["level", "iterations", "seconds"]].mean()
    out = []
    for f in sorted(summary["fraction"].unique()):
        a, b = g.loc[(f, "vh-phd")], g.loc[(f, "vh")]
        faster = a["iterations"] < b["iterations"] and a["seconds"] < b["seconds"]
        out.append(("AGREES" if faster else "DISAGREES")
                   + f": validation NDCG@10 {a['level']:.4f} ({100 * f:.0f}% of the way to the common level) "
                   f"is reached by VH_PHD after {a['iterations']:.0f} iterations / {a['seconds']:.1f} s, "
                   f"by VH after {b['iterations']:.0f} / {b['seconds']:.1f} s"
                   + (f" ({b['iterations'] / a['iterations']:.1f}x the iterations)." if a["iterations"] > 0 else "."))
    best = summary.groupby("method")["best_valid_ndcg@10"].mean()
    d = best["vh-phd"] - best["vh"]
    out.append(("AGREES" if d > 0.001 else "DISAGREES" if d < -0.001 else "NEITHER (within 0.001)")
               + f": best validation NDCG@10 VH_PHD {best['vh-phd']:.4f} vs VH {best['vh']:.4f} "
               "(the paper's PHD curves end higher).")
    return out
