"""The per-user split of Section 5.1 (rule pinned down in protocol.md).

For each user with ``n`` ratings, in a seeded random order: the first
``test = ceil(n / 2)`` go to test; of the remaining ``r = n - test``, the next
``train = floor(0.85 r)`` (= ``(85 r) div 100``) go to training and the last
``r - train`` to validation. On ML-1M this gives exactly the released code's
420,336 / 77,436 / 500,767, for every seed (the sizes depend only on each
user's count).

The random order is a per-user permutation drawn with
``numpy.random.default_rng(seed)`` (PCG64, platform independent): one
uniform key per rating in dataset order, ratings sorted by (user, key).
"""
from __future__ import annotations

import numpy as np

TRAIN, VALID, TEST = 0, 1, 2
RULE = "per-user: test=ceil(n/2), train=floor(0.85*(n-test)), valid=rest; keys=default_rng(seed).random(r)"


def split_sizes(n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(train, valid, test) counts for users with ``n`` ratings (int arrays)."""
    n = np.asarray(n, dtype=np.int64)
    test = (n + 1) // 2
    rest = n - test
    train = (85 * rest) // 100
    return train, rest - train, test


def assign(user: np.ndarray, n_users: int, seed: int) -> np.ndarray:
    """int8 (r,) part of each rating: 0 train, 1 validation, 2 test.

    ``user``: int (r,) user id of each rating, in dataset order.
    """
    r = user.shape[0]
    rng = np.random.default_rng(seed)
    keys = rng.random(r)
    order = np.lexsort((keys, user))
    counts = np.bincount(user, minlength=n_users)
    starts = np.cumsum(counts) - counts
    rank = np.empty(r, dtype=np.int64)
    rank[order] = np.arange(r, dtype=np.int64) - np.repeat(starts, counts)
    train_n, _, test_n = split_sizes(counts)
    tu, tr = test_n[user], train_n[user]
    out = np.full(r, VALID, dtype=np.int8)
    out[rank < tu] = TEST
    out[(rank >= tu) & (rank < tu + tr)] = TRAIN
    return out
