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


@pytest.mark.parametrize("keys", [
    (np.array([2 ** 31 - 1, 0, 5, 5]), np.array([2 ** 32 - 1, 7, 7, 0])),   # 31 + 32 = 63 bits
    (np.array([0, 0, 3]), np.array([1, 0, 1])),                               # a zero-width key
    (np.zeros(5, np.int8), np.array([3, 1, 2, 1, 0], np.uint16)),             # small, mixed
    (np.array([], np.int64), np.array([], np.int64)),                          # empty
])
def test_lexsort_packed_sorts_packable_keys_itself(monkeypatch, keys):
    """Keys that fit in 63 bits are sorted by the packed key, not by np.lexsort (made to
    fail here), and give np.lexsort's order."""
    import phdlib.kernels.order as O

    want = np.lexsort(keys)
    if keys[0].shape[0]:
        monkeypatch.setattr(O.np, "lexsort", lambda *a, **k: (_ for _ in ()).throw(
            AssertionError("fell back to np.lexsort")))
    assert np.array_equal(O.lexsort_packed(keys), want)


def test_lexsort_packed_falls_back_at_64_bits_and_on_other_kinds():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 2 ** 32, 300), rng.integers(0, 2 ** 32, 300)
    a[0], b[0] = 2 ** 32 - 1, 2 ** 32 - 1                   # 32 + 32 = 64 bits: numpy's sort
    huge = np.array([2 ** 63 + 5, 3, 2 ** 63, 3], np.uint64)
    flags = np.array([True, False, True, False])
    for keys in ((a, b), (huge, huge[::-1].copy()), (flags, np.arange(4))):
        assert np.array_equal(lexsort_packed(keys), np.lexsort(keys))
    one = np.array([3, 1, 2])                                 # an array is one key to numpy
    assert np.array_equal(lexsort_packed(one), np.lexsort(one))
    with pytest.raises(ValueError):                            # numpy's own error
        lexsort_packed((np.arange(3), np.arange(1)))
