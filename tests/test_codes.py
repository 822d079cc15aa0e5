"""Packing, Hamming and PHD kernels against the NumPy reference; bad input."""
import numpy as np
import pytest

from phdlib import codes as C

WIDTHS = [8, 32, 63, 64, 100, 128]


def _codes(rng, n, m, p=0.5):
    return np.where(rng.random((n, m)) < p, 1, -1).astype(np.int8)


@pytest.mark.parametrize("m", WIDTHS)
def test_pack_unpack_roundtrip_all_encodings(m):
    rng = np.random.default_rng(m)
    x = _codes(rng, 37, m)
    p = C.pack(x)
    assert p.words.dtype == np.uint64 and p.words.shape == (37, C.n_words(m))
    assert np.array_equal(C.unpack(p), x)
    assert np.array_equal(C.pack(x == 1).words, p.words)                 # bool
    assert np.array_equal(C.pack((x == 1).astype(np.uint8)).words, p.words)  # 0/1
    assert np.array_equal(C.pack(x.astype(np.float32)).words, p.words)   # float ±1
    assert np.array_equal(C.unpack(p, "01"), (x == 1).astype(np.uint8))
    assert np.array_equal(C.unpack(p.negate().negate()), x)
    assert np.array_equal(C.unpack(p.negate()), x)  # unpack un-negates
    # one code packs to a 1-d word array
    one = C.pack(x[0])
    assert one.single and one.words.shape == (C.n_words(m),)
    assert np.array_equal(C.unpack(one), x[0])


def test_bit_layout_is_dimension_j_on_bit_j():
    m = 100
    for j in (0, 1, 63, 64, 99):
        x = np.zeros(m, dtype=np.uint8)
        x[j] = 1
        w = C.pack(x).words
        expect = np.zeros(2, dtype=np.uint64)
        expect[j // 64] = np.uint64(1) << np.uint64(j % 64)
        assert np.array_equal(w, expect)


def test_padding_bits_stay_clear_and_negation_sets_them():
    p = C.pack(np.ones((2, 70), dtype=np.int8))
    assert int(p.words[0, 1]) == (1 << 6) - 1
    assert int(p.negate().words[0, 1]) == ~((1 << 6) - 1) & (2**64 - 1)


@pytest.mark.parametrize("m", WIDTHS)
def test_distances_match_reference_one_query_and_batches(m):
    rng = np.random.default_rng(100 + m)
    users, items = _codes(rng, 9, m, 0.3), _codes(rng, 501, m)
    pu, pi = C.pack(users), C.pack(items)
    pin = pi.negate()
    h_ref = C.hamming_reference(users, items)
    p_ref = C.phd_reference(users, items)
    # batch of queries
    assert np.array_equal(C.hamming(pu, pi), h_ref)
    assert np.array_equal(C.phd(pu, pi), p_ref)
    assert np.array_equal(C.phd(pu, pin), p_ref)
    # one query at a time
    for a in range(users.shape[0]):
        q = C.pack(users[a])
        assert np.array_equal(C.hamming(q, pi), h_ref[a])
        assert np.array_equal(C.phd(q, pi), p_ref[a])
        assert np.array_equal(C.phd(q, pin), p_ref[a])
    assert C.hamming(pu, pi).dtype == np.int32 and C.phd(pu, pin).dtype == np.int32
    assert np.array_equal(C.popcount(pu), (users == 1).sum(1))
    assert np.array_equal(C.popcount(pu.negate()), (users == 1).sum(1))
    assert np.array_equal(C.inner_product_pm1(pu, pi), users.astype(np.int32) @ items.T.astype(np.int32))


def test_references_on_hand_made_codes():
    u = np.array([1, 1, -1, -1])
    i = np.array([[1, -1, 1, -1]])
    assert C.hamming_reference(u, i).tolist() == [2]
    assert C.phd_reference(u, i).tolist() == [1]    # only bit 1: u=+1, i=-1
    assert C.phd_reference(i[0], u[None]).tolist() == [1]  # bit 2
    assert C.phd(C.pack(u), C.pack(i)).tolist() == [1]


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "bad, exc, match",
    [
        (np.array([["a", "b"]]), TypeError, r"dtype <U1"),
        (np.array([[1 + 1j, 1]]), TypeError, r"dtype complex128"),
        (np.array([[1, -1]], dtype=object), TypeError, r"dtype object"),
        (np.ones((2, 3, 4)), ValueError, r"shape \(m,\) or \(n, m\), got shape \(2, 3, 4\)"),
        (np.array(1), ValueError, r"got shape \(\)"),
        (np.ones((3, 0)), ValueError, r"m must be positive, got m=0"),
        (np.zeros((0,)), ValueError, r"m must be positive, got m=0"),
    ],
)
def test_pack_rejects_bad_dtype_and_shape(bad, exc, match):
    with pytest.raises(exc, match=match):
        C.pack(bad)


def test_pack_pm1_rejects_values_outside_pm1_and_names_them():
    x = np.array([[1, -1, 1], [1, 2, -1]])
    with pytest.raises(ValueError, match=r"values in \{-1, 1\}; found 2 at index \(1, 1\)"):
        C.pack(x)
    with pytest.raises(ValueError, match=r"found 0 at index \(0, 2\) \(mixed -1 and 0 values\?\)"):
        C.pack(np.array([[1, -1, 0]]))
    with pytest.raises(ValueError, match=r"values in \{-1, 1\}; found 0"):
        C.pack(np.array([[1, 0, 1]]), encoding="pm1")
    with pytest.raises(ValueError, match=r"values in \{0, 1\}; found 3"):
        C.pack(np.array([[1, 0, 3]]))
    with pytest.raises(ValueError, match=r"found 0.5"):
        C.pack(np.array([[1.0, 0.5]]), encoding="01")
    with pytest.raises(ValueError, match=r"encoding must be one of"):
        C.pack(np.array([[1, -1]]), encoding="signs")
    with pytest.raises(TypeError, match=r"encoding='bool' expects a bool array"):
        C.pack(np.array([[1, 0]]), encoding="bool")


def test_width_mismatch_is_an_error():
    a, b = C.pack(np.ones((1, 32))), C.pack(np.ones((4, 33)))
    with pytest.raises(ValueError, match=r"hamming: code widths differ: query has m=32 bits, items have m=33"):
        C.hamming(a, b)
    with pytest.raises(ValueError, match=r"phd: code widths differ: query has m=32 bits, items have m=33"):
        C.phd(a, b.negate())
    # same word count, different m: still caught
    c = C.pack(np.ones((4, 40)))
    with pytest.raises(ValueError, match="m=32 bits, items have m=40"):
        C.hamming(a, c)


def test_m_nonpositive_and_bad_packed_words():
    for m in (0, -3):
        with pytest.raises(ValueError, match=rf"m must be positive, got m={m}"):
            C.n_words(m)
        with pytest.raises(ValueError, match=rf"m must be positive, got m={m}"):
            C.PackedCodes(np.zeros((2, 1), np.uint64), m)
    with pytest.raises(TypeError, match="must be an integer"):
        C.n_words(3.5)
    with pytest.raises(TypeError, match="packed code words must be uint64, got dtype int64"):
        C.PackedCodes(np.zeros((2, 1), np.int64), 64)
    with pytest.raises(ValueError, match=r"m=100 bits need 2 uint64 words, got 1"):
        C.PackedCodes(np.zeros((2, 1), np.uint64), 100)
    with pytest.raises(TypeError, match="query must be PackedCodes"):
        C.hamming(np.zeros(1, np.uint64), C.pack(np.ones((2, 64))))
    with pytest.raises(ValueError, match="items are negated"):
        C.hamming(C.pack(np.ones(64)), C.pack(np.ones((2, 64))).negate())
    with pytest.raises(ValueError, match="query must be a plain code"):
        C.phd(C.pack(np.ones(64)).negate(), C.pack(np.ones((2, 64))))
