"""IVFIndex: exact at nprobe = nlist (ids and distances, ties included), its list
layout, its errors, and recall@10 that rises with nprobe."""
from __future__ import annotations

import numba
import numpy as np
import pytest

from phdlib.codes.packed import PackedCodes, pack
from phdlib.kernels import ivf as K
from phdlib.serving.ivf import IVFIndex
from phdlib.serving.search import BinaryIndex


def _random_codes(rng, n, m):
    """uint64 (n, ceil(m/64)) random m-bit codes, padding 0."""
    return pack(rng.random((n, m)) < 0.5).words


def _clustered(rng, n, m, centres=40, flip=0.08):
    """Codes near ``centres`` planted centres (each bit flipped with prob ``flip``)."""
    c = rng.random((centres, m)) < 0.5
    pick = rng.integers(0, centres, n)
    return pack(c[pick] ^ (rng.random((n, m)) < flip)).words


def _recall(found_d, true_d, k):
    kth = true_d[:, k - 1][:, None]
    return float(((found_d[:, :k] <= kth)).sum() / found_d[:, :k].size)


@pytest.mark.parametrize("m", [8, 32, 64, 100])
@pytest.mark.parametrize("metric", ["phd", "hamming"])
def test_all_lists_probed_equals_binaryindex(m, metric):
    rng = np.random.default_rng(m)
    items = _random_codes(rng, 1500, m)  # m=8: 256 values, so many ties
    queries = _random_codes(rng, 40, m)
    ivf = IVFIndex(m, metric, nlist=12, nprobe=12, seed=3)
    ivf.add(items[:500])
    ivf.add(PackedCodes(items[500:], m))  # a second add re-lays the lists
    ref = BinaryIndex(m, metric)
    ref.add(items)
    assert ivf.ntotal == 1500
    for k in (1, 10, 1600):  # 1600 > n: padded slots
        d, i = ivf.search(queries, k)
        d0, i0 = ref.search(queries, k)
        assert d.dtype == np.int32 and i.dtype == np.int64 and d.shape == (40, k)
        np.testing.assert_array_equal(i, i0)
        np.testing.assert_array_equal(d, d0)
    assert (i[:, 1500:] == -1).all() and (d[:, 1500:] == np.iinfo(np.int32).max).all()


def test_ties_order_by_smallest_id_across_lists():
    rng = np.random.default_rng(1)
    items = _random_codes(rng, 2000, 8)
    ivf = IVFIndex(8, "phd", nlist=16, nprobe=16)
    ivf.add(items)
    d, i = ivf.search(items[:30], 50)
    for row_d, row_i in zip(d, i):
        order = np.lexsort((row_i, row_d))
        np.testing.assert_array_equal(order, np.arange(50))
    assert (ivf.list_sizes() > 0).sum() > 1  # the answer spans lists


def test_list_layout_is_contiguous_and_complete():
    rng = np.random.default_rng(2)
    items = _clustered(rng, 3000, 100)
    ivf = IVFIndex(100, "phd", nlist=25, seed=0)
    ivf.add(items)
    assert ivf.offsets[0] == 0 and ivf.offsets[-1] == 3000 and (np.diff(ivf.offsets) >= 0).all()
    np.testing.assert_array_equal(np.sort(ivf.ids), np.arange(3000))
    for j in range(25):
        lo, hi = ivf.offsets[j], ivf.offsets[j + 1]
        assert (np.diff(ivf.ids[lo:hi]) > 0).all()
    np.testing.assert_array_equal(ivf.stored, ~items[ivf.ids])  # PHD stores NOT items
    assert ivf.stored.shape == (3000, 2) and ivf.stored.dtype == np.uint64
    # ids 0..2999 take 2 bytes each: codes + ids + offsets + centroids, every array counted
    assert ivf.id_bytes.shape == (3000, 2) and ivf.id_bytes.dtype == np.uint8
    assert ivf.memory_bytes() == 3000 * 16 + 3000 * 2 + 26 * 8 + 25 * 16
    ivf.nprobe = 25
    ref = BinaryIndex(100, "phd")
    ref.add(items)
    d, i = ivf.search(items[7], 3)  # one code (w,) is one query
    assert d.shape == i.shape == (1, 3)
    np.testing.assert_array_equal(i, ref.search(items[7], 3)[1])


def test_one_thread_and_many_agree_and_seed_decides():
    rng = np.random.default_rng(4)
    items, queries = _clustered(rng, 4000, 64), _clustered(rng, 64, 64)
    a = IVFIndex(64, "phd", nlist=30, nprobe=3, seed=7)
    a.add(items)
    b = IVFIndex(64, "phd", nlist=30, nprobe=3, seed=7)
    b.add(items)
    np.testing.assert_array_equal(a.centroids, b.centroids)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = a.search(queries, 10)
    finally:
        numba.set_num_threads(before)
    many = a.search(queries, 10)
    np.testing.assert_array_equal(one[0], many[0])
    np.testing.assert_array_equal(one[1], many[1])
    c = IVFIndex(64, "phd", nlist=30, nprobe=3, seed=8)
    c.train(items)
    assert not np.array_equal(a.centroids, c.centroids)


def test_id_bytes_widen_as_codes_are_added_and_stay_exact():
    rng = np.random.default_rng(9)
    items = _clustered(rng, 70_000, 64, centres=60)
    queries = _clustered(rng, 30, 64, centres=60)
    ivf = IVFIndex(64, "phd", nlist=20, nprobe=20, seed=1)
    ref = BinaryIndex(64, "phd")
    widths = []
    for lo, hi in ((0, 256), (256, 257), (257, 65_536), (65_536, 70_000)):
        ivf.add(items[lo:hi])
        ref.add(items[lo:hi])
        widths.append(ivf.id_bytes.shape[1])
        np.testing.assert_array_equal(np.sort(ivf.ids), np.arange(hi))
        for got, want in zip(ivf.search(queries, 10), ref.search(queries, 10)):
            np.testing.assert_array_equal(got, want)
    # ids up to 255 fit 1 byte, up to 65535 2 bytes, then 3
    assert widths == [1, 2, 2, 3], f"id bytes after each add: {widths}, expected [1, 2, 2, 3]"
    assert ivf.memory_bytes() == 70_000 * (8 + 3) + 21 * 8 + 20 * 8


@pytest.mark.parametrize("nprobe", [1, 2, 7])
def test_kernel_results_do_not_depend_on_query_chunks(nprobe):
    rng = np.random.default_rng(10)
    items, queries = _clustered(rng, 5000, 100), _clustered(rng, 50, 100)
    ivf = IVFIndex(100, "phd", nlist=16, nprobe=nprobe, seed=2)
    ivf.add(items)
    out = []
    for chunks in (1, 3, 50):
        keys = np.empty((50, 10), dtype=np.int64)
        K.search(ivf.op, K.PROBE_PHD, queries, ivf.centroids, ivf.stored, ivf.id_bytes,
                 ivf.offsets, nprobe, chunks, np.empty((50, nprobe), dtype=np.int64), keys)
        out.append(keys)
    np.testing.assert_array_equal(out[0], out[1])
    np.testing.assert_array_equal(out[0], out[2])
    d, i = ivf.search(queries, 10)
    np.testing.assert_array_equal(i, out[0] & ((1 << K.ID_BITS) - 1))
    np.testing.assert_array_equal(d, out[0] >> K.ID_BITS)


def test_recall_rises_with_nprobe_and_phd_probing_beats_hamming():
    rng = np.random.default_rng(5)
    items, queries = _clustered(rng, 20000, 64, centres=200), _clustered(rng, 200, 64, centres=200)
    ref = BinaryIndex(64, "phd")
    ref.add(items)
    true_d, _ = ref.search(queries, 10)
    recalls = {}
    for probe in ("phd", "hamming"):
        ivf = IVFIndex(64, "phd", nlist=64, seed=0, probe=probe)
        ivf.add(items)
        recalls[probe] = []
        for p in (1, 2, 4, 8, 16, 64):
            ivf.nprobe = p
            recalls[probe].append(_recall(ivf.search(queries, 10)[0], true_d, 10))
    r = recalls["phd"]
    assert all(a <= b for a, b in zip(r, r[1:])), r
    assert r[0] < 0.95 and r[-1] == 1.0, r
    assert sum(r[:-1]) > sum(recalls["hamming"][:-1]), recalls


def test_fewer_distinct_codes_than_lists_and_empty_index():
    rng = np.random.default_rng(6)
    items = _random_codes(rng, 600, 8)  # at most 256 distinct codes for 300 lists
    ivf = IVFIndex(8, "hamming", nlist=300, nprobe=300)
    ivf.train(items)
    d, i = ivf.search(items[:5], 3)  # trained, nothing added
    assert (i == -1).all() and (d == np.iinfo(np.int32).max).all()
    ivf.add(items)
    ref = BinaryIndex(8, "hamming")
    ref.add(items)
    for got, want in zip(ivf.search(items[:20], 7), ref.search(items[:20], 7)):
        np.testing.assert_array_equal(got, want)


def test_default_nlist_is_chosen_at_training():
    rng = np.random.default_rng(7)
    ivf = IVFIndex(32, "phd")
    assert ivf.nlist is None
    ivf.add(_random_codes(rng, 400, 32))
    assert ivf.nlist == 80  # round(4 sqrt(400))
    assert ivf.centroids.shape == (80, 1)


def test_bad_inputs_raise_naming_the_value():
    rng = np.random.default_rng(8)
    items = _random_codes(rng, 100, 64)
    with pytest.raises(ValueError, match="nprobe must be an integer in 1..10, got 11"):
        IVFIndex(64, nlist=10, nprobe=11)
    with pytest.raises(ValueError, match="nlist must be an integer >= 1, got 0"):
        IVFIndex(64, nlist=0)
    with pytest.raises(ValueError, match="metric must be one of .*'cosine'"):
        IVFIndex(64, metric="cosine")
    with pytest.raises(ValueError, match="probe must be one of .*'l2'"):
        IVFIndex(64, probe="l2")
    ivf = IVFIndex(64, nlist=10, nprobe=2)
    with pytest.raises(ValueError, match="not trained"):
        ivf.search(items[:2], 5)
    with pytest.raises(ValueError, match="at least nlist=10 codes, got 5"):
        ivf.train(items[:5])
    ivf.add(items)
    with pytest.raises(ValueError, match="nprobe must be an integer in 1..10, got 0"):
        ivf.nprobe = 0
    with pytest.raises(ValueError, match="got 11"):
        ivf.nprobe = 11
    assert ivf.nprobe == 2
    with pytest.raises(ValueError, match="k must be a positive integer, got 0"):
        ivf.search(items[:2], 0)
    with pytest.raises(ValueError, match=r"shape \(n, 1\), got shape \(2, 2\)"):
        ivf.search(np.zeros((2, 2), dtype=np.uint64), 5)
    with pytest.raises(ValueError, match="m=32 bits, the index has m=64"):
        ivf.add(PackedCodes(items[:3] & np.uint64(0xFFFFFFFF), 32))
    small = IVFIndex(8, nlist=4)
    with pytest.raises(ValueError, match="row 0 has bits set above bit 7"):
        small.add(np.full((5, 1), 256, dtype=np.uint64))
    late = IVFIndex(64, nprobe=50)  # nlist chosen at training: 4 sqrt(100) = 40 < 50
    with pytest.raises(ValueError, match=r"nprobe must be an integer in 1..40 \(nlist\), got 50"):
        late.add(items)
