"""USearchIndex (usearch HNSW with Numba cfunc metrics over the native packed codes)
against BinaryIndex: exhaustive mode equal to it, ties included; the graph's recall
measured and rising with expansion_search; bad inputs refused by name."""
from __future__ import annotations

import numpy as np
import pytest

from phdlib.bench.serving import recall_at_k, synthetic_codes
from phdlib.codes.packed import pack
from phdlib.serving.search import BinaryIndex
from phdlib.serving.usearch_engine import USearchIndex, compiled_metric

MAX = np.iinfo(np.int32).max


def _codes(rng, n, m, p=0.5):
    return pack(rng.random((n, m)) < p).words


@pytest.mark.parametrize("m", [8, 32, 64, 100])
@pytest.mark.parametrize("metric", ["phd", "hamming"])
def test_exact_mode_equals_binaryindex_ties_included(m, metric):
    rng = np.random.default_rng(m)
    items, queries = _codes(rng, 700, m), _codes(rng, 60, m)
    ref = BinaryIndex(m, metric)
    ref.add(items)
    us = USearchIndex(m, metric, exact=True, seed=3)
    us.add(items[:450])  # ids continue across adds, whatever order each add inserts in
    us.add(items[450:])
    assert us.ntotal == len(us) == 700
    for k in (1, 10, 64, 699, 700, 705):
        d0, i0 = ref.search(queries, k)
        d1, i1 = us.search(queries, k)
        assert d1.dtype == np.int32 and i1.dtype == np.int64 and d1.shape == (60, k)
        np.testing.assert_array_equal(d1, d0, err_msg=f"m={m} {metric} k={k}")
        np.testing.assert_array_equal(i1, i0, err_msg=f"m={m} {metric} k={k}")


def test_m8_ties_are_cut_at_the_smallest_ids():
    # 8 bits, 3000 items: hundreds of items share each distance, so the k-th is tied
    rng = np.random.default_rng(0)
    items, queries = _codes(rng, 3000, 8), _codes(rng, 100, 8)
    us = USearchIndex(8, "phd", exact=True)
    us.add(items)
    d, i = us.search(queries, 10)
    full = BinaryIndex(8, "phd")
    full.add(items)
    all_d = full.distances(queries)
    for r in range(len(queries)):
        kth = d[r, -1]
        assert (all_d[r] < kth).sum() < 10 < (all_d[r] <= kth).sum()  # a real tie at the cut
        tied = np.flatnonzero(all_d[r] == kth)
        kept = i[r][d[r] == kth]
        np.testing.assert_array_equal(kept, tied[:kept.size])


def test_the_query_is_the_user_and_the_stored_code_the_item():
    # PHD(u, i) = popcount(u AND NOT i): asymmetric, so the orientation shows
    u = np.array([[0b1111_0000]], dtype=np.uint64)
    items = np.array([[0b1111_1111], [0b0000_1111], [0b0000_0000], [0b0111_0000]],
                     dtype=np.uint64)
    for exact in (True, False):
        us = USearchIndex(8, "phd", exact=exact)
        us.add(items)
        d, i = us.search(u, 4)
        np.testing.assert_array_equal(d, [[0, 1, 4, 4]])
        np.testing.assert_array_equal(i, [[0, 3, 1, 2]])


def _clustered(n=20_000, q=300):
    users, items = synthetic_codes(n, q, 64, seed=5)
    ref = BinaryIndex(64, "phd")
    ref.add(items)
    return users, items, ref.search(users, 10)


def test_graph_recall_rises_with_expansion_search_and_answers_are_true_distances():
    users, items, (true_d, _) = _clustered()
    us = USearchIndex(64, "phd", seed=0)
    us.add(items)
    recall = {}
    for ef in (10, 16, 64, 256):  # usearch keeps at least k candidates
        us.expansion_search = ef
        d, i = us.search(users, 10)
        recall[ef] = recall_at_k(d, true_d, 10)
        # what the graph returns is sorted by (distance, id) and its distances are the PHDs
        assert (i >= 0).all() and (i < len(items)).all()
        assert all(len(set(r)) == 10 for r in i.tolist())
        key = d.astype(np.int64) * len(items) + i
        assert (np.diff(key, axis=1) > 0).all()
        exact = np.bitwise_count(users[:, None, 0] & ~items[i][:, :, 0]).astype(np.int32)
        np.testing.assert_array_equal(d, exact)
    assert recall[10] < recall[16] < recall[64] <= recall[256], recall
    assert recall[256] >= 0.95, recall
    assert recall[10] < 0.95, recall  # the sweep measures something


def test_a_graph_linked_by_hamming_finds_more_than_one_linked_by_phd():
    # the module doc's claim: PHD's symmetrisation (Hamming) links items better
    users, items, (true_d, _) = _clustered()
    recall = {}
    for bm in ("hamming", "phd"):
        us = USearchIndex(64, "phd", build_metric=bm, expansion_search=16)
        us.add(items)
        recall[bm] = recall_at_k(us.search(users, 10)[0], true_d, 10)
    assert recall["hamming"] > recall["phd"] + 0.05, recall


def test_one_thread_and_one_seed_give_the_same_graph():
    users, items, _ = _clustered(n=5000, q=100)
    out = []
    for seed in (1, 1, None):
        us = USearchIndex(64, "phd", seed=seed, expansion_search=8, connectivity=4)
        us.add(items)
        out.append(us.search(users, 10))
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][0], out[1][0])
    assert not np.array_equal(out[0][1], out[2][1])  # the seed orders the insertion


def test_empty_index_no_queries_and_k_beyond_the_codes():
    us = USearchIndex(64, "phd")
    q = np.zeros((3, 1), dtype=np.uint64)
    d, i = us.search(q, 4)
    assert (d == MAX).all() and (i == -1).all() and d.shape == (3, 4)
    us.add(np.array([[1], [2]], dtype=np.uint64))
    d, i = us.search(q, 4)
    np.testing.assert_array_equal(i, [[0, 1, -1, -1]] * 3)
    np.testing.assert_array_equal(d, [[0, 0, MAX, MAX]] * 3)
    d, i = us.search(np.empty((0, 1), dtype=np.uint64), 4)
    assert d.shape == i.shape == (0, 4)
    us.add(np.empty((0, 1), dtype=np.uint64))
    assert us.ntotal == 2


def test_memory_grows_with_the_codes():
    rng = np.random.default_rng(1)
    us = USearchIndex(100, "phd")
    us.add(_codes(rng, 100, 100))
    small = us.memory_bytes()
    us.add(_codes(rng, 5000, 100))
    assert us.memory_bytes() > small + 5000 * 16  # at least the 16 bytes of each code
    assert us.allocated_bytes() >= us.memory_bytes()


def test_compiled_metric_is_query_first():
    from usearch.index import Index, ScalarKind

    idx = Index(ndim=64, metric=compiled_metric("phd", 64), dtype=ScalarKind.B1)
    idx.add(np.array([7], dtype=np.uint64), np.array([[0b0011]], dtype=np.uint64).view(np.uint8))
    m = idx.search(np.array([[0b0101]], dtype=np.uint64).view(np.uint8), 1, exact=True)
    assert m.distances[0] == 1  # popcount(0101 AND NOT 0011); the reverse would be 1 too
    m = idx.search(np.array([[0b1111]], dtype=np.uint64).view(np.uint8), 1, exact=True)
    assert m.distances[0] == 2  # popcount(1111 AND NOT 0011); reversed it would be 0


@pytest.mark.parametrize("kwargs, word", [
    (dict(metric="cosine"), "cosine"),
    (dict(bits=0), "0"),
    (dict(build_metric="l2"), "l2"),
    (dict(metric="hamming", build_metric="phd"), "build_metric='phd'"),
    (dict(connectivity=1), "connectivity"),
    (dict(expansion_add=0), "expansion_add"),
    (dict(expansion_search=-3), "-3"),
    (dict(exact="yes"), "'yes'"),
    (dict(seed=-1), "seed"),
    (dict(threads=-1), "threads"),
])
def test_bad_parameters_are_refused_by_name(kwargs, word):
    args = {"bits": 64, **kwargs}
    with pytest.raises(ValueError, match=word):
        USearchIndex(args.pop("bits"), **args)


def test_bad_codes_and_k_are_refused_by_name():
    us = USearchIndex(100, "phd")
    with pytest.raises(ValueError, match=r"shape \(n, 2\).*\(3, 1\)"):
        us.add(np.zeros((3, 1), dtype=np.uint64))
    with pytest.raises(ValueError, match="row 1 has bits set above bit 99"):
        us.add(np.array([[0, 0], [0, 1 << 40]], dtype=np.uint64))
    with pytest.raises(TypeError, match="dtype int64"):  # as BinaryIndex
        us.add(np.zeros((3, 2), dtype=np.int64))
    us.add(np.zeros((3, 2), dtype=np.uint64))
    for k in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match=f"k must be a positive integer, got {k!r}"):
            us.search(np.zeros((1, 2), dtype=np.uint64), k)
    with pytest.raises(ValueError, match="USearchIndex.search"):
        us.search(np.zeros((1, 3), dtype=np.uint64), 1)
    with pytest.raises(ValueError, match="expansion_search must be an integer >= 1, got 0"):
        us.expansion_search = 0
