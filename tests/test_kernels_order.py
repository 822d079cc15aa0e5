"""phdlib.kernels.order: numpy.lexsort's order from one packed stable sort."""
import numpy as np
import pytest

from phdlib.kernels.order import lexsort_packed


@pytest.mark.parametrize("seed", range(6))
def test_lexsort_packed_is_numpys_lexsort_index_for_index(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    user = np.sort(rng.integers(0, 7, n)).astype(np.int32)
    dist = rng.integers(0, 5, n).astype(np.int32)          # many ties
    rank = rng.integers(0, 9, n).astype(np.int64)          # ties on every key
    keys = (rank, dist, user)
    assert np.array_equal(lexsort_packed(keys), np.lexsort(keys))
    shuffled = tuple(k[rng.permutation(n)] for k in keys)  # users not grouped
    assert np.array_equal(lexsort_packed(shuffled), np.lexsort(shuffled))


def test_lexsort_packed_falls_back_where_keys_do_not_pack():
    rng = np.random.default_rng(9)
    big = rng.integers(0, 2 ** 40, 200)                    # 40 + 40 bits > 63
    neg = rng.integers(-5, 5, 200)
    flt = rng.random(200)
    for keys in ((big, big[::-1].copy()), (neg, big), (flt, neg)):
        assert np.array_equal(lexsort_packed(keys), np.lexsort(keys))
