"""Synthetic ratings from planted codes: the embedded default with no real data.

It is always labelled synthetic (``Dataset.synthetic`` is True and its name is
``"synthetic"``); nothing presents it as real data.

Generative model, all from ``numpy.random.default_rng(seed)``:

- user and item codes: ``bits`` independent fair bits each (the *planted*
  codes, returned packed in ``Dataset.truth``);
- ratings per user: ``min_ratings`` plus a log-normal share of the rest, so
  that the total is ``density * n_users * n_items`` (ML-1M-like skew), at
  most ``n_items``;
- which items: drawn without replacement with log-normal item popularity
  (Efraimidis-Spirakis keys), then items short of ``min_ratings`` get extra random users,
  so the usual filter removes nothing;
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
VERSION = 4

DEFAULTS = dict(n_users=6040, n_items=3260, density=0.0507, bits=32, noise=0.5,
                mean_rating=3.6, spread=1.0, data_seed=0, rating_scale=(1.0, 5.0))


def _pack(bits: np.ndarray) -> np.ndarray:
    """bool (n, m<=64) -> uint64 (n, 1), bit j of the word = dimension j."""
    w = np.left_shift(np.uint64(1), np.arange(bits.shape[1], dtype=np.uint64))
    return (bits.astype(np.uint64) * w).sum(axis=1, dtype=np.uint64)[:, None]


def _sample_pairs(rng, counts: np.ndarray, pop: np.ndarray):
    """``counts[u]`` distinct items for every user, drawn with probability growing with ``pop``.

    Efraimidis-Spirakis: the c largest log(U)/pop are a popularity-weighted
    sample without replacement; users in order of their count, so that each
    chunk needs only a partial sort up to its largest count. Returns (user,
    item) int64 (r,) arrays.
    """
    n_users, n_items = counts.shape[0], pop.shape[0]
    users, items = [], []
    by_count = np.argsort(counts, kind="stable")
    chunk = max(1, 2_000_000 // n_items)
    for s in range(0, n_users, chunk):
        rows = by_count[s:s + chunk]
        c = counts[rows]
        kmax = int(c.max())
        # float64 keys: ties (whose order a SIMD partition may resolve differently
        # on another CPU) have probability ~1e-9 per user
        keys = np.log1p(-rng.random((rows.size, n_items))) / pop[None, :]
        if kmax < n_items:
            part = np.argpartition(-keys, kmax - 1, axis=1)[:, :kmax]
        else:
            part = np.broadcast_to(np.arange(n_items), (rows.size, n_items))
        sub = np.take_along_axis(keys, part, axis=1)
        top = np.take_along_axis(part, np.argsort(-sub, axis=1, kind="stable"), axis=1)
        take = np.arange(kmax)[None, :] < c[:, None]
        users.append(np.repeat(rows, c))
        items.append(top[take])
    return np.concatenate(users), np.concatenate(items)


def _fill_items(rng, user, item, n_users: int, n_items: int, k: int):
    """Items short of ``k`` ratings get random extra users who have not rated them."""
    ic_count = np.bincount(item, minlength=n_items)
    short = np.flatnonzero(ic_count < k)
    if not short.size:
        return user, item
    add_u, add_i = [], []
    sel = np.isin(item, short)
    su, si = user[sel], item[sel]
    for it in short:
        has = np.zeros(n_users, dtype=bool)
        has[su[si == it]] = True
        new_users = rng.permutation(np.flatnonzero(~has))[: k - int(ic_count[it])]
        add_u.append(new_users)
        add_i.append(np.full(new_users.size, it))
    return np.concatenate([user] + add_u), np.concatenate([item] + add_i)


def generate(n_users: int = 6040, n_items: int = 3260, density: float = 0.0507, bits: int = 32,
             noise: float = 0.5, mean_rating: float = 3.6, spread: float = 1.0,
             data_seed: int = 0, min_ratings: int = 10, rating_scale=(1.0, 5.0)):
    """Planted-code ratings.

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
    w = rng.lognormal(0.0, 1.0, n_users)
    counts = k + np.floor(extra * w / w.sum()).astype(np.int64)
    counts = np.minimum(counts, n_items)
    pop = rng.lognormal(0.0, 1.0, n_items)

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
