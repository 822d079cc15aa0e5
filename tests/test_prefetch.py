"""The software prefetch intrinsic compiles, changes nothing and never faults."""
from __future__ import annotations

import numba as nb
import numpy as np
import pytest

from phdlib.kernels.prefetch import prefetch


@nb.njit
def _touch(a, idx):
    total = 0.0
    for i in idx:
        prefetch(a, i)          # a hint: anywhere, even far past the end
    for i in range(a.shape[0]):
        total += a[i]
    return total


@nb.njit
def _touch_rows(a, r):
    prefetch(a, r * a.shape[1])
    return a[r].sum()


def test_prefetch_leaves_the_array_as_it_is_even_past_its_end():
    a = np.arange(1000, dtype=np.float32)
    before = a.copy()
    idx = np.array([0, 17, 999, 1000, 10**6, -5], dtype=np.int64)
    assert _touch(a, idx) == float(before.sum())
    assert np.array_equal(a, before)
    b = np.arange(12, dtype=np.float64).reshape(3, 4)
    assert _touch_rows(b, 2) == 8 + 9 + 10 + 11


def test_prefetch_of_something_not_an_array_does_not_compile():
    @nb.njit
    def bad(x):
        prefetch(x, 0)

    with pytest.raises(nb.core.errors.TypingError):
        bad(3.0)
