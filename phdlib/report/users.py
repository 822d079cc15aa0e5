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
from . import page
from .style import COLORS, MF, PHD, label

__all__ = ["ORDERS", "user_features", "smooth_nearest", "users_curves", "plot_users",
           "users_findings", "fifth_gaps", "key_range", "users_conclusion"]

#: What the order key of each figure is, in words (for sentences about its range).
KEYS = {"mf": "MF's NDCG@10 per user", "n_rated": "rated items per user",
        "avg_popularity": "average item popularity per user"}

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


def _methods_of(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c not in ("rank", "key")]


def _phd_share(frame: pd.DataFrame) -> tuple[float, list[str]]:
    """Share of users whose smoothed VH_PHD value beats every Hamming baseline's, and those baselines."""
    cols = _methods_of(frame)
    ham = [c for c in cols if c in methods.hashing_baselines()]
    if PHD not in cols or not ham:
        return np.nan, ham
    return float((frame[PHD] > frame[ham].max(axis=1)).mean()), ham


def _trend(frame: pd.DataFrame) -> tuple[str, float, float]:
    """(``"falls"`` or ``"rises"`` for most methods, mean over methods in the lowest and
    the highest fifth of users)."""
    cols = _methods_of(frame)
    n = len(frame)
    lo, hi = frame.iloc[: n // 5][cols].mean(), frame.iloc[-(n // 5):][cols].mean()
    return ("falls" if (hi < lo).mean() > 0.5 else "rises"), float(lo.mean()), float(hi.mean())


def _above(v: float) -> str:
    """``.0123 above`` / ``.0123 below``."""
    return f"{page.num(abs(v))} {'above' if v >= 0 else 'below'}"


def _mf_gap(frame: pd.DataFrame, ham: list[str]) -> str:
    """How much of the Hamming baselines' mean smoothed gap to MF VH_PHD closes (a sentence)."""
    gap_ham = float((frame[MF] - frame[ham].max(axis=1)).mean()) if ham else np.nan
    gap_phd = float((frame[MF] - frame[PHD]).mean())
    text = f"On the smoothed curves MF is on average {_above(gap_phd)} VH_PHD"
    if ham:
        text += f" and {_above(gap_ham)} the best Hamming baseline at each position"
    if gap_phd <= 0:
        return ("AGREES: " + text + "; VH_PHD is level with or above MF here, more than the "
                "paper's 'bridges a large part of the gap'.")
    if ham and gap_ham > 0 and gap_phd <= 0.5 * gap_ham:
        return ("AGREES: " + text + f", so VH_PHD closes {100 * (1 - gap_phd / gap_ham):.0f}% "
                "of the Hamming baselines' gap to MF; the paper says it closes a large part.")
    if ham and gap_ham > 0 and gap_phd < gap_ham:
        return ("DISAGREES: " + text + f", so VH_PHD closes only {100 * (1 - gap_phd / gap_ham):.0f}% "
                "of the Hamming baselines' gap to MF, less than half; the paper says it closes a "
                "large part.")
    return ("DISAGREES: " + text + ", so VH_PHD does not close the Hamming baselines' gap "
            "to MF here, unlike the paper.")


def _mf_below(frame: pd.DataFrame) -> str:
    """For what share of users the smoothed MF curve is below every other curve (a sentence)."""
    others = [c for c in _methods_of(frame) if c != MF]
    below = frame[others].min(axis=1) > frame[MF]
    n = len(frame)
    hard = float(below.iloc[: max(1, n // 5)].mean()) if n else np.nan
    return (f"The smoothed MF curve lies below every other method's for "
            f"{page.pct(100 * float(below.mean()), sign=False)} of the users, and for "
            f"{page.pct(100 * hard, sign=False)} of the hardest fifth (the paper, on ML-10M: "
            "hashing methods beat MF for the hardest users).")


def users_findings(frame: pd.DataFrame, order: str) -> list[str]:
    """Computed statements about one of Figures 1-3 (share of users where VH_PHD leads, gap to MF, trend).

    frame: :func:`users_curves`' frame; order: a key of :data:`ORDERS`.
    Returns sentences; those that check a statement of the paper start with
    ``AGREES:``, ``AGREES (partly):`` or ``DISAGREES:``. The Hamming baselines
    are the curves of :func:`phdlib.methods.hashing_baselines`.
    """
    cols = _methods_of(frame)
    out = []
    if PHD in cols:
        share, ham = _phd_share(frame)
        if ham:
            verdict = ("AGREES" if share >= 0.95 else
                       ("AGREES (partly)" if share >= 0.5 else "DISAGREES"))
            out.append(f"{verdict}: The smoothed VH_PHD curve lies above every Hamming baseline "
                       f"({', '.join(label(h) for h in ham)}) for "
                       f"{page.pct(100 * share, sign=False)} of the users; the paper: VH_PHD "
                       "outperforms all Hamming baselines across users.")
        if MF in cols:
            out.append(_mf_gap(frame, ham))
    if order == MF and MF in cols and len(cols) > 1:
        out.append(_mf_below(frame))
    if order in ("n_rated", "avg_popularity") and cols:
        trend, lo, hi = _trend(frame)
        expected = "falls" if order == "n_rated" else "rises"
        out.append(("AGREES" if trend == expected else "DISAGREES")
                   + f": NDCG@10 {trend} from the lowest to the highest fifth of users for "
                   f"most methods (mean over methods {page.num(lo)} to {page.num(hi)}); "
                   f"in the paper it {expected}.")
    return out


def fifth_gaps(frame: pd.DataFrame) -> pd.DataFrame:
    """MF minus each method, averaged over the lowest and the highest fifth of users.

    frame: :func:`users_curves`' frame with an MF column. Returns float64,
    index ``["lowest fifth", "highest fifth"]`` (of the figure's order),
    one column per other method (its label); positive means MF is higher.
    """
    n = len(frame)
    parts = {"lowest fifth": frame.iloc[: n // 5], "highest fifth": frame.iloc[-(n // 5):]}
    cols = [c for c in _methods_of(frame) if c != MF]
    return pd.DataFrame({label(m): [float((p[MF] - p[m]).mean()) for p in parts.values()]
                         for m in cols}, index=list(parts))


def key_range(frame: pd.DataFrame, order: str) -> str:
    """The range of the order key over the users of a figure, as a sentence."""
    k = frame["key"]
    if order == "n_rated":
        return (f"The number of rated items per user runs from {page.count(k.min())} to "
                f"{page.count(k.max())} (median {page.count(k.median())}).")
    what = KEYS.get(order, order)
    return (f"The {what} runs from {page.num(k.min(), 3)} to {page.num(k.max(), 3)} "
            f"(median {page.num(k.median(), 3)}).")


def users_conclusion(frames: dict[str, pd.DataFrame]) -> str:
    """One paragraph of conclusion over Figures 1-3 (Markdown).

    frames: ``{order: users_curves frame}`` for the orders of :data:`ORDERS` drawn.
    """
    shares, trends = [], []
    for order, frame in frames.items():
        share, ham = _phd_share(frame)
        if ham and not np.isnan(share):
            shares.append(page.pct(100 * share, sign=False))
        if order in ("n_rated", "avg_popularity"):
            expected = "falls" if order == "n_rated" else "rises"
            trends.append((order, _trend(frame)[0] == expected))
    text = []
    if shares:
        text.append("Across users, the smoothed VH_PHD curve lies above every Hamming "
                    f"baseline for {', '.join(shares)} of the users in the "
                    f"{'three orders' if len(shares) == 3 else 'orders drawn'}.")
    for order, ok in trends:
        what = "activity" if order == "n_rated" else "taste for popular items"
        text.append(f"The trend with {what} {'agrees' if ok else 'disagrees'} with the paper's.")
    act = frames.get("n_rated")
    if act is not None and MF in act.columns and PHD in act.columns:
        g = fifth_gaps(act)[label(PHD)]
        # the paper's gap is MF's lead: it grows only where MF is ahead and more so
        grows = g.iloc[1] > 0 and g.iloc[1] > g.iloc[0]
        text.append(f"MF is {_above(g.iloc[0])} VH_PHD for the least active fifth of users "
                    f"and {_above(g.iloc[1])} it for the most active fifth, so MF's lead "
                    f"{'grows' if grows else 'does not grow'} with activity "
                    f"({'as' if grows else 'unlike'} in the paper).")
    return " ".join(text) or "No VH_PHD curve was drawn, so this page draws no conclusion."


def users_tally(frames: dict[str, pd.DataFrame]) -> str:
    """How many of the paper's statements checked on Figures 1-3 hold, and which do not (Markdown).

    frames: ``{order: users_curves frame}``. Counts the sentences of
    :func:`users_findings` that carry a verdict; names the figure of each
    that differs from the paper.
    """
    fig = {"mf": "Figure 1", "n_rated": "Figure 2", "avg_popularity": "Figure 3"}
    checked, partly, differ = 0, 0, []
    for order, frame in frames.items():
        for line in users_findings(frame, order):
            if line.startswith(("AGREES", "DISAGREES")):
                checked += 1
                partly += line.startswith("AGREES (partly)")
                if line.startswith("DISAGREES"):
                    differ.append(f"{fig.get(order, order)}: {line.split(': ', 1)[1]}")
    if not checked:
        return "No statement of the paper could be checked on these runs."
    text = (f"Of the {checked} statements of the paper checked on this page, "
            f"{checked - len(differ)} hold in this build"
            + (f" ({partly} only in part)." if partly else "."))
    if differ:
        text += " Where it differs from the paper:\n\n" + "\n".join(f"- {d}" for d in differ)
    return text
