"""Figures 1 to 3: per-user NDCG@10, users ordered three ways, smoothed over neighbours.

:func:`user_features` gives two of the orders (ratings per user, average item
popularity), the third is MF's own per-user NDCG@10 (:func:`phdlib.report.per_user`);
:func:`users_curves` sorts and smooths (:func:`smooth_nearest`), :func:`plot_users`
draws and :func:`users_findings` checks the paper's statements.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import methods
from .style import COLORS, MF, PHD, label

__all__ = ["ORDERS", "user_features", "smooth_nearest", "users_curves", "plot_users", "users_findings"]

#: x-axis wording of each order: ``"mf"`` (Figure 1), ``"n_rated"`` (2), ``"avg_popularity"`` (3).
ORDERS = {"mf": "users ordered by MF NDCG@10", "n_rated": "users ordered by number of rated items",
          "avg_popularity": "users ordered by average item popularity"}


def user_features(split) -> pd.DataFrame:
    """Per-user ordering keys for Figures 2 and 3, over all of the user's ratings.

    Returns a frame indexed by user with ``n_rated`` (int64: ratings in train,
    validation and test) and ``avg_popularity`` (float64: mean over the
    user's rated items of the item's popularity, the fraction of users who
    rated the item, in [0, 1]; NaN for a user without ratings).
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


def users_curves(curves: dict[str, pd.Series], order_key: pd.Series, window: int = 500) -> pd.DataFrame:
    """Smoothed per-user curves: users sorted by ``order_key`` (ascending, ties by user id).

    curves: ``{method: per-user values}`` (float Series indexed by user); only
    users present in every curve and in ``order_key`` are kept. Returns a
    frame indexed by user with ``rank`` (int, 0..n-1), ``key`` (the order
    key) and one smoothed float64 column per method.
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


def _mf_gap(frame: pd.DataFrame, ham: list[str]) -> str:
    """How much of the Hamming baselines' mean smoothed gap to MF VH_PHD closes."""
    gap_ham = float((frame[MF] - frame[ham].max(axis=1)).mean()) if ham else np.nan
    gap_phd = float((frame[MF] - frame[PHD]).mean())
    if gap_phd <= 0:
        note = " (VH_PHD is level with or above MF here: more than the paper's 'closes a large part')."
    elif gap_phd < gap_ham:
        note = (f" (VH_PHD closes {100 * (1 - gap_phd / gap_ham):.0f}% of the Hamming baselines' gap, "
                "as the paper says it closes a large part)." if gap_ham > 0 else ".")
    else:
        note = " (VH_PHD does not close the gap here, unlike the paper)."
    return (f"Mean smoothed gap to MF (MF minus method): best Hamming baseline {gap_ham:+.4f}, "
            f"VH_PHD {gap_phd:+.4f}" + note)


def users_findings(frame: pd.DataFrame, order: str) -> list[str]:
    """Computed statements about one of Figures 1-3 (share of users where VH_PHD leads, gap to MF, trend).

    The Hamming baselines are the curves of :func:`phdlib.methods.hashing_baselines`.
    """
    cols = [c for c in frame.columns if c not in ("rank", "key")]
    out = []
    if PHD in cols:
        baselines = methods.hashing_baselines()
        ham = [c for c in cols if c in baselines]
        if ham:
            share = float((frame[PHD] > frame[ham].max(axis=1)).mean())
            verdict = "AGREES" if share >= 0.95 else ("PARTLY AGREES" if share >= 0.5 else "DISAGREES")
            out.append(f"{verdict}: the smoothed VH_PHD curve lies above every Hamming baseline "
                       f"({', '.join(label(h) for h in ham)}) for {100 * share:.1f}% of the users "
                       f"(the paper: VH_PHD outperforms all Hamming baselines across users).")
        if MF in cols:
            out.append(_mf_gap(frame, ham))
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
