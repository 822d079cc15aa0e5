"""Sorting by several integer keys: ``numpy.lexsort``'s order from one stable sort.

``numpy.lexsort`` sorts by each key in turn. Where the keys are non-negative
integers whose bit lengths add up to at most 63, they fit side by side in one
int64 (the primary key in the high bits), and one stable sort of that gives
the same order, index for index: equal packed values are exactly the equal
key tuples, and both sorts keep those in input order. On 4-5 million
(user, item) or (user, distance, rank) rows, already grouped by user as our
splits are, that is 5 to 11 times as fast (measured on ML-10M's shape).
"""
from __future__ import annotations

import numpy as np

__all__ = ["lexsort_packed"]


def lexsort_packed(keys) -> np.ndarray:
    """``numpy.lexsort(keys)`` (the last key primary) of integer keys, each ``(N,)``;
    int64 ``(N,)`` indices.

    Sorted as one packed int64 key (the module docstring) where every key is a
    non-negative integer array and their bit lengths add up to at most 63;
    otherwise ``numpy.lexsort`` itself.
    """
    keys = [np.asarray(k) for k in keys]
    if not keys or any(k.dtype.kind not in "iu" for k in keys) or keys[0].shape[0] == 0:
        return np.lexsort(keys)
    if any(int(k.min()) < 0 for k in keys):
        return np.lexsort(keys)
    widths = [int(k.max()).bit_length() for k in keys]
    if sum(widths) > 63:
        return np.lexsort(keys)
    packed, shift = np.zeros(keys[0].shape[0], np.int64), 0
    for k, w in zip(keys, widths):
        packed |= k.astype(np.int64) << shift
        shift += w
    return np.argsort(packed, kind="stable")
