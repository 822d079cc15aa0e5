"""A user sample of a split: where a tuning grid is chosen on data too large to tune on.

:func:`sample_users` keeps whole users (their train, validation and test
ratings, as the paper's per-user split made them), drawn in a seeded random
order until the next user would pass ``max_ratings`` ratings. Items keep
their ids, so a point chosen on the sample names the same model on the full
data; users are re-indexed 0..k-1 in the order of their old ids.

Why a user sample (and not a rating sample): every evaluated user keeps the
profile length, and every split part the proportions, that the full data
gives it, so the validation metric a grid chooses on is the same quantity,
measured on fewer users. What changes is the amount of training data per
item (about ``max_ratings / n_ratings`` of it), which the chapter "Cost at
scale" measures on ML-1M, where the full grid can be run beside it.
"""
from __future__ import annotations

import numpy as np

from .cache import short_hash
from .tables import Dataset, Ratings, Split

__all__ = ["sample_users", "needs_sample"]


def _n(split: Split) -> int:
    return sum(int(np.shape(r.user)[0]) for r in (split.train, split.valid, split.test))


def needs_sample(split: Split, max_ratings) -> bool:
    """Whether ``split`` holds more than ``max_ratings`` ratings (None: never)."""
    return max_ratings is not None and _n(split) > _check(max_ratings)


def _check(max_ratings) -> int:
    if isinstance(max_ratings, (bool, np.bool_)) or not isinstance(max_ratings, (int, np.integer)) \
            or int(max_ratings) < 1:
        raise ValueError(f"tune_ratings must be a positive integer (ratings) or None, "
                         f"got {max_ratings!r}")
    return int(max_ratings)


def sample_users(split: Split, max_ratings: int, seed: int = 0) -> Split:
    """The users of ``split`` drawn (``default_rng(seed)`` order) while their ratings fit.

    Parameters
    ----------
    split : the full split.
    max_ratings : the most ratings (train + validation + test) the sample may hold.
    seed : the draw's seed.

    Returns
    -------
    Split: ``train``/``valid``/``test`` hold the sampled users' rows, users
    re-indexed to 0..k-1 (int32), items unchanged (``n_items`` as before);
    ``dataset.preprocessing["user_sample"]`` and ``fingerprint`` say which
    sample it is. The split itself when it already fits.
    """
    cap = _check(max_ratings)
    if _n(split) <= cap:
        return split
    ds = split.dataset
    counts = sum(np.bincount(r.user, minlength=ds.n_users)
                 for r in (split.train, split.valid, split.test))
    order = np.random.default_rng(seed).permutation(ds.n_users)
    fits = np.cumsum(counts[order]) <= cap
    keep = np.sort(order[fits])  # the draw's prefix that fits (cumsum is monotone)
    if keep.size == 0:
        raise ValueError(f"tune_ratings={cap} is smaller than the first sampled user's "
                         f"{int(counts[order[0]])} ratings in {ds.name}")
    new_id = np.full(ds.n_users, -1, dtype=np.int64)
    new_id[keep] = np.arange(keep.size)

    def part(r: Ratings) -> Ratings:
        m = new_id[r.user] >= 0
        return Ratings(new_id[r.user[m]], r.item[m], r.rating[m])

    info = {"of": split.fingerprint, "users": int(keep.size), "max_ratings": cap,
            "seed": int(seed)}
    fp = short_hash({"user_sample": info})
    kept = int(counts[keep].sum())
    sub = Dataset(name=ds.name, ratings=part(ds.ratings), n_users=int(keep.size),
                  n_items=ds.n_items, rating_scale=ds.rating_scale,
                  user_ids=np.asarray(ds.user_ids)[keep], item_ids=ds.item_ids,
                  fingerprint=ds.fingerprint, synthetic=ds.synthetic,
                  preprocessing={**ds.preprocessing,
                                 "user_sample": {**info, "ratings": kept,
                                                 "of_users": int(ds.n_users),
                                                 "of_ratings": _n(split)}},
                  source=ds.source, raw_rows=ds.raw_rows, truth=None)
    return Split(dataset=sub, train=part(split.train), valid=part(split.valid),
                 test=part(split.test), seed=split.seed, fingerprint=fp)
