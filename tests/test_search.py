"""BinaryIndex and the search kernels against the NumPy reference.

Every kernel (scan, tiled batch, fused top-k, tiled top-k, two-pass top-k,
checksum scans) must give exactly the reference distances and ids, including
the tie order (smaller id first), for 1 and 2 threads, one- and multi-word
codes, and widths that leave padding bits. No timing here: speed is measured
by ``phd bench`` and the runtime chapter.
"""
from __future__ import annotations

import numba
import numpy as np
import pytest

from phdlib import bench
from phdlib import codes as C
from phdlib.serving import search as S
from phdlib.kernels import bandwidth as KB
from phdlib.kernels import search as K

THREADS = sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)})


@pytest.fixture(params=THREADS, ids=lambda t: f"{t}thr")
def threads(request):
    old = numba.get_num_threads()
    numba.set_num_threads(request.param)
    yield request.param
    numba.set_num_threads(old)


def _codes(n, m, seed, p_one=0.5):
    """PackedCodes of n random codes of m bits (biased bits give many ties)."""
    rng = np.random.default_rng(seed)
    return C.pack(rng.random((n, m)) < p_one)


def _independent(query_pm1, items_pm1, metric):
    """Distances from phdlib.codes' reference on unpacked codes (q, n)."""
    ref = C.hamming_reference if metric == "hamming" else C.phd_reference
    return ref(query_pm1, items_pm1)


# widths: sub-word with padding, one word, two words with padding, two full words
CASES = [(8, 3000), (64, 40_000), (100, 5000), (128, 5000)]


@pytest.mark.parametrize("metric", ["hamming", "phd"])
@pytest.mark.parametrize("m,n", CASES)
def test_search_matches_reference(metric, m, n, threads):
    items = _codes(n, m, seed=m + n, p_one=0.7)
    queries = _codes(40, m, seed=m + n + 1, p_one=0.6)
    idx = S.BinaryIndex(m, metric)
    idx.add(items[: n // 3])
    idx.add(items[n // 3:])  # ids continue across add() calls
    assert idx.ntotal == n
    # independent check of the stored form and the distances
    dist_all = idx.distances(queries)
    indep = _independent(C.unpack(queries), C.unpack(items), metric)
    np.testing.assert_array_equal(dist_all, indep)
    np.testing.assert_array_equal(idx.distances(queries[:1]), indep[:1])
    for k in (1, 10, 100, n + 5):
        ref_d, ref_i = S.reference_search(queries.rows(), idx.stored, k, metric)
        # one query at a time (fused kernel) and all at once (tiled kernel)
        d1, i1 = idx.search(queries[:3], k)
        np.testing.assert_array_equal(d1, ref_d[:3])
        np.testing.assert_array_equal(i1, ref_i[:3])
        d, i = idx.search(queries, k)
        np.testing.assert_array_equal(d, ref_d)
        np.testing.assert_array_equal(i, ref_i)
        # tie order: the reference is a stable sort, so ids ascend within a distance
        kk = min(k, n)
        same = ref_d[:, 1:kk] == ref_d[:, : kk - 1]
        assert np.all(ref_i[:, 1:kk][same] > ref_i[:, : kk - 1][same])


def test_many_ties_and_padding(threads):
    # 4-bit codes over 20k items: every distance value shared by thousands
    items = _codes(20_000, 4, seed=3)
    q = _codes(20, 4, seed=4)
    for metric in ("hamming", "phd"):
        idx = S.BinaryIndex(4, metric)
        idx.add(items)
        for k in (1, 7, 5000, 20_000, 20_010):
            d, i = idx.search(q, k)
            rd, ri = S.reference_search(q.rows(), idx.stored, k, metric)
            np.testing.assert_array_equal(d, rd)
            np.testing.assert_array_equal(i, ri)
        # padded slots follow faiss: id -1, distance int32 max
        d, i = idx.search(q[:1], 20_010)
        assert np.all(i[0, 20_000:] == -1) and np.all(d[0, 20_000:] == np.iinfo(np.int32).max)


@pytest.mark.parametrize("metric", ["hamming", "phd"])
def test_two_pass_topk_matches_reference(metric, threads, monkeypatch):
    monkeypatch.setattr(S, "_BUCKET_LIMIT", 1)  # force the large-k kernel
    items = _codes(30_000, 64, seed=11, p_one=0.8)
    q = _codes(3, 64, seed=12)
    idx = S.BinaryIndex(64, metric)
    idx.add(items)
    for k in (1, 10, 2345, 30_003):
        d, i = idx.search(q, k)
        rd, ri = S.reference_search(q.rows(), idx.stored, k, metric)
        np.testing.assert_array_equal(d, rd)
        np.testing.assert_array_equal(i, ri)


@pytest.mark.parametrize("w", [1, 2])
def test_checksum_and_scan_kernels(w, threads):
    rng = np.random.default_rng(w)
    cds = rng.integers(0, np.iinfo(np.uint64).max, size=(70_001, w), dtype=np.uint64,
                       endpoint=True)
    q = cds[17].copy()
    nc = S.n_chunks(cds.shape[0])
    ref = {
        K.OP_XOR: np.bitwise_count(cds ^ q).sum(axis=1),
        K.OP_AND: np.bitwise_count(cds & q).sum(axis=1),
        K.OP_XOR_AND: np.bitwise_count(q ^ (cds & q)).sum(axis=1),
    }
    for op, r in ref.items():
        assert K.scan_sum(op, q, cds, nc) == int(r.sum())
        out = np.empty(cds.shape[0], dtype=np.int32)
        K.scan(op, q, cds, out, nc)
        np.testing.assert_array_equal(out, r)
        outb = np.empty((3, cds.shape[0]), dtype=np.int32)
        K.batch_tiled(op, np.stack([q, cds[5], cds[-1]]), cds, outb)
        np.testing.assert_array_equal(outb[0], r)
    # PHD on stored NOT codes equals PHD in the XOR-AND form on plain codes
    assert K.scan_sum(K.OP_AND, q, np.bitwise_not(cds), nc) == K.scan_sum(K.OP_XOR_AND, q, cds, nc)
    assert KB.read_sum(cds.reshape(-1), nc) == cds.sum(dtype=np.uint64)


def test_ip_kernel():
    x = bench.random_vectors(5000, seed=1)
    q = bench.random_vectors(1, seed=2)[0]
    got = KB.ip_sum(x, q, S.n_chunks(5000))
    np.testing.assert_allclose(got, float((x.astype(np.float64) @ q).sum()), rtol=1e-4, atol=1e-2)


def test_faiss_agrees_on_distances():
    faiss = pytest.importorskip("faiss")
    items = bench.random_codes(50_000, seed=5)
    q = bench.random_codes(4, seed=6)
    idx = S.BinaryIndex(64)
    idx.add(items)
    f = faiss.IndexBinaryFlat(64)
    f.add(items.view(np.uint8).reshape(-1, 8))
    for k in (1, 10, 100):
        d, i = idx.search(q, k)
        fd, fi = f.search(q.view(np.uint8).reshape(-1, 8), k)
        np.testing.assert_array_equal(d, fd)


def test_c_loop_checksums():
    cl, why = bench.compile_c()
    if cl is None:
        pytest.skip(why)
    cds = bench.random_codes(12_345, seed=9)
    q = int(bench.random_codes(1, seed=10)[0, 0])
    qa = np.array([q], dtype=np.uint64)
    assert cl.call("hamming_sum", cds, q) == K.scan_sum(K.OP_XOR, qa, cds, 1)
    assert cl.call("phd_sum", ~cds, q) == K.scan_sum(K.OP_XOR_AND, qa, cds, 1)
    assert cl.call("hamming_overwrite", cds, q) == 0


def test_bench_runs_small():
    res = bench.run(profile="quick", n=50_000, n_topk=40_000, ip_n=10_000, repeats=3,
                    sweep=(10_000, 50_000), threads=1, sweep_min_seconds=0.0, topk_min_seconds=0.0, min_seconds=0.0,
                    log=lambda *a: None)
    js = res.to_json()
    for name in ("read", "hamming", "phd", "phd_xor_and", "hamming_numpy", "ip_numba",
                 "ip_blas", "topk10", "topk10_phd"):
        assert name in js, name
        assert js[name]["threads"][1]["seconds"] > 0
    assert set(res.sweep["N"]) == {10_000, 50_000}
    assert res.ratios["phd/hamming (table rounds)@1"]["rounds"] == 3
    assert res.ratios["phd/hamming@1"]["rounds"] >= 2 * bench.ACCEPT["min_rounds"] + 1
    assert res.checks["ip_agree@1"]
    assert not bench.batch_table(res).empty and not bench.topk_table(res).empty
    tab = res.table(1)
    assert {"GB/s", "% of read bandwidth", "items/s"} <= set(tab.columns)


def test_bad_input():
    with pytest.raises(ValueError, match="metric"):
        S.BinaryIndex(64, "cosine")
    idx = S.BinaryIndex(100, "phd")
    with pytest.raises(ValueError, match="shape"):
        idx.add(np.zeros((3, 1), dtype=np.uint64))
    with pytest.raises(TypeError, match="uint64"):
        idx.add(np.zeros((3, 2), dtype=np.int64))
    bad = np.zeros((3, 2), dtype=np.uint64)
    bad[2, 1] = np.uint64(1) << np.uint64(40)  # bit 104 > m - 1 = 99
    with pytest.raises(ValueError, match="row 2 has bits set above bit 99"):
        idx.add(bad)
    with pytest.raises(ValueError, match="m=64 bits, the index has m=100"):
        idx.add(_codes(3, 64, 0))
    with pytest.raises(ValueError, match="negated"):
        idx.add(_codes(3, 100, 0).negate())
    idx.add(_codes(3, 100, 0))
    with pytest.raises(ValueError, match="k must be a positive integer"):
        idx.search(_codes(1, 100, 1), 0)
    with pytest.raises(ValueError, match="profile"):
        bench.run(profile="huge")
    empty = S.BinaryIndex(64)
    d, i = empty.search(_codes(2, 64, 0), 3)
    assert np.all(i == -1)


def test_cli_bench_json(capsys):
    import json

    from phdlib.cli import main

    code = main(["bench", "--n", "20000", "--n-topk", "20000", "--ip-n", "5000", "--repeats", "2",
                 "--threads", "1", "--min-seconds", "0", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert {"hamming", "phd", "topk10", "_run"} <= set(out)
    assert out["_run"]["config"]["sweep"] == [20000]
    assert main(["bench", "--threads", "999", "--n", "1000"]) == 2
    assert main(["bench", "--n", "20000", "--n-topk", "20000", "--ip-n", "5000", "--repeats", "2",
                 "--threads", "1", "--min-seconds", "0"]) == 0
    text = capsys.readouterr().out
    for needle in ("Table 2 beside the paper's", "Acceptance:", "Top-k, one query:",
                   "measured read bandwidth, 1 thread(s)", "Time (s) against N:"):
        assert needle in text, needle
