"""Synthetic ratings from planted codes: the embedded default with no real data.

It is always labelled synthetic (``Dataset.synthetic`` is True and its name is
``"synthetic"``); nothing presents it as real data.

Generative model, all from ``numpy.random.default_rng(seed)``:

- user and item codes: ``bits`` independent fair bits each (the *planted*
  codes, returned packed in ``Dataset.truth``);
- ratings per user: ``min_ratings`` plus a log-normal share of the rest, so
  that the total is ``density * n_users * n_items``, at most ``n_items``; the
  log-normal shapes of user counts and item popularity are fit to ML-1M
  (:data:`USER_SIGMA`, :data:`ITEM_SIGMA`);
- which items: drawn by log-normal item popularity, without repeats within a
  user (rejection rounds; exact Efraimidis-Spirakis keys for the few users who
  rate a large share of the items), then items short of ``min_ratings`` get
  extra random users, so the usual filter removes nothing. Time and memory
  grow with the number of ratings, never with users x items;
- the rating falls linearly with PHD: with ``p = popcount(u)`` (the user's
  "on" bits) and ``d = PHD(u, i)`` (those of them the item lacks),
  ``z = (p - 2 d) / sqrt(p)`` is the standardised agreement (mean 0, variance
  1 over random items) and the rating is
  ``clip(round(mean_rating + spread * z + noise * N(0, 1)), r_min, r_max)``.
  The defaults (3.6, 1.0, 0.5) give ML-1M's mean rating and spread. A smaller
  PHD always means a higher expected rating for the same user.

Defaults give ML-1M's shape after filtering: 6,040 users, 3,260 items,
density 5.07% (about 998,500 ratings), 1..5 stars.
"""
from __future__ import annotations

import numpy as np

#: Bump when the generator's output for given parameters changes (part of the cache key).
VERSION = 5

#: Log-normal shapes fit to ML-1M after filtering: the standard deviation of
#: ``log(count - 10 + 1)`` over users (1.124) and over items (1.537)
#: (``tests/test_data_synthetic.py`` recomputes them when ML-1M is present).
USER_SIGMA, ITEM_SIGMA = 1.124, 1.537

DEFAULTS = dict(n_users=6040, n_items=3260, density=0.0507, bits=32, noise=0.5,
                mean_rating=3.6, spread=1.0, data_seed=0, rating_scale=(1.0, 5.0),
                user_sigma=USER_SIGMA, item_sigma=ITEM_SIGMA)


def _pack(bits: np.ndarray) -> np.ndarray:
    """bool (n, m<=64) -> uint64 (n, 1), bit j of the word = dimension j."""
    w = np.left_shift(np.uint64(1), np.arange(bits.shape[1], dtype=np.uint64))
    return (bits.astype(np.uint64) * w).sum(axis=1, dtype=np.uint64)[:, None]


def _add_keys(keys: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Sorted distinct union of sorted distinct ``keys`` and any int64 ``new``."""
    new = np.sort(new, kind="stable")
    if new.size:
        new = new[np.concatenate(([True], new[1:] != new[:-1]))]
    if keys.size and new.size:
        pos = np.minimum(np.searchsorted(keys, new), keys.size - 1)
        new = new[keys[pos] != new]
    return np.sort(np.concatenate([keys, new]), kind="stable")


def _es_sample(rng, rows: np.ndarray, counts: np.ndarray, pop: np.ndarray):
    """Exact popularity-weighted sampling without replacement (Efraimidis-Spirakis) for ``rows``.

    Per-pair work (``len(rows) x n_items`` keys): used only for the few users
    who rate a large share of the catalogue. Returns (user, item) int64 arrays.
    """
    n_items = pop.shape[0]
    users, items = [], []
    chunk = max(1, 2_000_000 // n_items)
    for s in range(0, rows.size, chunk):
        r = rows[s:s + chunk]
        c = counts[r]
        keys = np.log1p(-rng.random((r.size, n_items))) / pop[None, :]
        order = np.argsort(-keys, axis=1, kind="stable")
        take = np.arange(n_items)[None, :] < c[:, None]
        users.append(np.repeat(r, c))
        items.append(order[take])
    if not users:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(users), np.concatenate(items)


def _sample_pairs(rng, counts: np.ndarray, pop: np.ndarray, heavy_share: float = 0.25,
                  rounds: int = 60):
    """``counts[u]`` distinct items for every user, drawn with probability growing with ``pop``.

    Work and memory grow with the number of ratings, never with users x
    items: every rating draws an item from the popularity distribution
    (inverse CDF), repeats within a user are dropped and redrawn, round after
    round. Users who rate more than ``heavy_share`` of the items (few; their
    redraws would take many rounds) and any user still short after
    ``rounds`` rounds are sampled exactly by :func:`_es_sample`.
    Returns (user, item) int64 (r,) arrays.
    """
    n_users, n_items = counts.shape[0], pop.shape[0]
    cdf = np.cumsum(pop / pop.sum())
    cdf[-1] = 1.0
    heavy = counts > heavy_share * n_items
    need = np.where(heavy, 0, counts)
    keys = np.empty(0, np.int64)
    for _ in range(rounds):
        total = int(need.sum())
        if total == 0:
            break
        u = np.repeat(np.arange(n_users, dtype=np.int64), need)
        it = np.minimum(np.searchsorted(cdf, rng.random(total), side="right"), n_items - 1)
        keys = _add_keys(keys, u * n_items + it)
        got = np.bincount(keys // n_items, minlength=n_users)
        need = np.where(heavy, 0, counts - got)
    short = np.flatnonzero(need > 0)
    if short.size:  # give up the rejection rounds for these: draw them exactly
        keys = keys[~np.isin(keys // n_items, short)]
        heavy[short] = True
    eu, ei = _es_sample(rng, np.flatnonzero(heavy), counts, pop)
    return (np.concatenate([keys // n_items, eu]), np.concatenate([keys % n_items, ei]))


def _fill_items(rng, user, item, n_users: int, n_items: int, k: int, rounds: int = 60):
    """Items short of ``k`` ratings get random extra users who have not rated them.

    Vectorised rejection: every missing rating draws a uniform user, repeats
    are dropped and redrawn (work grows with the ratings added, not with
    users x items).
    """
    keys = _add_keys(np.empty(0, np.int64), user.astype(np.int64) * n_items + item)
    for _ in range(rounds):
        count = np.bincount(keys % n_items, minlength=n_items)
        need = np.maximum(k - count, 0)
        total = int(need.sum())
        if total == 0:
            break
        it = np.repeat(np.arange(n_items, dtype=np.int64), need)
        u = rng.integers(0, n_users, total)
        keys = _add_keys(keys, u * n_items + it)
    else:  # pragma: no cover - only when n_users is barely above k
        raise ValueError(f"synthetic data: could not give every item {k} distinct users")
    return keys // n_items, keys % n_items


def generate(n_users: int = 6040, n_items: int = 3260, density: float = 0.0507, bits: int = 32,
             noise: float = 0.5, mean_rating: float = 3.6, spread: float = 1.0,
             data_seed: int = 0, min_ratings: int = 10, rating_scale=(1.0, 5.0),
             user_sigma: float = USER_SIGMA, item_sigma: float = ITEM_SIGMA):
    """Planted-code ratings.

    user_sigma, item_sigma: log-normal shapes of the per-user rating counts
    (above ``min_ratings``) and of the item popularity (fit to ML-1M:
    :data:`USER_SIGMA`, :data:`ITEM_SIGMA`). Time and memory grow with the
    number of ratings, not with users x items.

    Returns ``(user, item, rating, truth)``: int32 (r,), int32 (r,), float32
    (r,) sorted by user then item, and ``{"user_codes": uint64 (n_users, 1),
    "item_codes": uint64 (n_items, 1), "bits": bits}``.
    """
    n_users, n_items, bits = int(n_users), int(n_items), int(bits)
    if not 1 <= bits <= 64:
        raise ValueError(f"synthetic data: bits={bits}; expected 1..64")
    if n_users < 1 or n_items < 1:
        raise ValueError(f"synthetic data: n_users={n_users}, n_items={n_items}; expected >= 1")
    if not 0 < density <= 1:
        raise ValueError(f"synthetic data: density={density}; expected a fraction in (0, 1]")
    k = max(int(min_ratings), 1)
    if n_items < k or n_users < k:
        raise ValueError(f"synthetic data: n_users={n_users}, n_items={n_items} cannot give every "
                         f"user and item min_ratings={k} ratings; lower min_ratings or grow the sizes")
    lo, hi = float(rating_scale[0]), float(rating_scale[1])
    rng = np.random.default_rng(data_seed)
    ub = rng.random((n_users, bits)) < 0.5
    ib = rng.random((n_items, bits)) < 0.5
    uc, ic = _pack(ub), _pack(ib)

    target = int(round(density * n_users * n_items))
    extra = max(target - n_users * k, 0)
    w = rng.lognormal(0.0, float(user_sigma), n_users)
    counts = k + np.floor(extra * w / w.sum()).astype(np.int64)
    counts = np.minimum(counts, n_items)
    pop = rng.lognormal(0.0, float(item_sigma), n_items)

    user, item = _sample_pairs(rng, counts, pop)
    user, item = _fill_items(rng, user, item, n_users, n_items, k)
    order = np.lexsort((item, user))
    user, item = user[order].astype(np.int32), item[order].astype(np.int32)

    ucw, icw = uc[:, 0][user], ic[:, 0][item]
    d = np.bitwise_count(ucw & ~icw).astype(np.float64)
    p = np.bitwise_count(ucw).astype(np.float64)
    z = (p - 2.0 * d) / np.sqrt(np.maximum(p, 1.0))
    r = mean_rating + spread * z + noise * rng.standard_normal(user.shape[0])
    rating = np.clip(np.rint(r), lo, hi).astype(np.float32)
    return user, item, rating, {"user_codes": uc, "item_codes": ic, "bits": bits}
