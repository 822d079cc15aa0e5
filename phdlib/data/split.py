"""The per-user split of Section 5.1 (rule pinned down in protocol.md).

For each user with ``n`` ratings, in a seeded random order: the first
``test = ceil(n / 2)`` go to test; of the remaining ``r = n - test``, the next
``train = floor(0.85 r)`` (= ``(85 r) div 100``) go to training and the last
``r - train`` to validation. On ML-1M this gives exactly the released code's
420,336 / 77,436 / 500,767, for every seed (the sizes depend only on each
user's count).

The random order is a per-user permutation drawn with
``numpy.random.default_rng(seed)`` (PCG64, platform independent):
``rank = rng.permutation(r)`` gives every rating (in dataset order) a distinct
random rank, and ratings are sorted by (user, rank). The sort keys are
distinct, so the result does not depend on the sort algorithm either.
"""
from __future__ import annotations

import numpy as np

TRAIN, VALID, TEST = 0, 1, 2
RULE = ("per-user: test=ceil(n/2), train=floor(0.85*(n-test)), valid=rest; "
        "order=(user, default_rng(seed).permutation(r))")


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
    rank0 = np.random.default_rng(seed).permutation(r).astype(np.int64)
    order = np.argsort((user.astype(np.int64) << 32) | rank0)  # distinct keys
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
