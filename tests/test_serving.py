"""Serving PHD codes: the padded reduction, faiss and Milvus Lite against BinaryIndex,
exported codes files, and the CSV-to-recommendations path of the CLI."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from phdlib import codes as C
from phdlib.serving import engines, codes_file
from phdlib.codes import padding
from phdlib.cli import main
from phdlib.serving.search import BinaryIndex

WIDTHS = [1, 7, 16, 32, 64, 100, 128]


def _codes(rng, n, m, skew=True):
    p = rng.random((n, 1)) if skew else 0.5
    return C.pack(rng.random((n, m)) < p).words


@pytest.mark.parametrize("m", WIDTHS)
def test_padded_hamming_is_twice_phd_plus_m_minus_popcount(m):
    rng = np.random.default_rng(m)
    u, i = _codes(rng, 30, m), _codes(rng, 200, m)
    pu, pi = padding.pad_users(u, m), padding.pad_items(i, m)
    assert pu.shape == pi.shape[1:] or pu.shape[1] == padding.padded_bytes(m)
    h = np.unpackbits(pu[:, None, :] ^ pi[None, :, :], axis=2).sum(axis=2)
    phd = C.phd_reference(C.unpack(C.PackedCodes(u, m)), C.unpack(C.PackedCodes(i, m)))
    pop = padding.popcounts(u, m)
    assert np.array_equal(h, 2 * phd + m - pop[:, None])
    assert np.array_equal(padding.phd_from_padded(h, pop, m), phd)


def _engines(m, metric, tmp_path):
    out = [("faiss", engines.FaissIndex(m, metric))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # milvus_lite's pkg_resources notice
        out.append(("milvus", engines.MilvusIndex(m, str(tmp_path / "m.db"),
                                                  collection=f"c{m}{metric}", metric=metric)))
    return out


@pytest.mark.parametrize("m", [8, 32, 64, 100])
@pytest.mark.parametrize("metric", ["phd", "hamming"])
def test_exact_engines_return_binaryindex_topk_ties_included(m, metric, tmp_path):
    rng = np.random.default_rng(3)
    u, i = _codes(rng, 25, m), _codes(rng, 1500, m)
    ref = BinaryIndex(m, metric)
    ref.add(i)
    d0, i0 = ref.search(u, 10)
    assert (d0[:, :-1] == d0[:, 1:]).any()  # the test has ties to get right
    for name, index in _engines(m, metric, tmp_path):
        index.add(i)
        d1, i1 = index.search(u, 10)
        assert np.array_equal(d0, d1) and np.array_equal(i0, i1), name


def test_faiss_k_beyond_the_codes_pads_like_binaryindex():
    rng = np.random.default_rng(4)
    u, i = _codes(rng, 3, 16), _codes(rng, 5, 16)
    ref, fi = BinaryIndex(16, "phd"), engines.FaissIndex(16, "phd")
    ref.add(i)
    fi.add(i)
    for a, b in zip(ref.search(u, 8), fi.search(u, 8)):
        assert np.array_equal(a, b)


def test_ivf_probing_every_list_is_exact_and_hnsw_recall_is_measured():
    rng = np.random.default_rng(5)
    m = 32
    u, i = _codes(rng, 40, m), _codes(rng, 4000, m)
    ref = BinaryIndex(m, "phd")
    ref.add(i)
    d0, _ = ref.search(u, 10)
    ivf = engines.FaissIndex(m, "phd", kind="ivf", nlist=16, nprobe=16, exact_ties=True)
    ivf.add(i)
    assert np.array_equal(ivf.search(u, 10)[0], d0)
    hnsw = engines.FaissIndex(m, "phd", kind="hnsw", M=16, ef_search=16)
    hnsw.add(i)
    d1, i1 = hnsw.search(u, 10)
    assert d1.shape == (40, 10) and (i1 >= 0).all()
    assert (d1 >= d0).all()  # an approximate k-th neighbour is never nearer than the true one
    assert hnsw.memory_bytes() > ivf.memory_bytes() // 100 > 0


def test_ivf_needs_enough_codes_to_train():
    with pytest.raises(ValueError, match="nlist=64"):
        engines.FaissIndex(16, "phd", kind="ivf", nlist=64).add(
            _codes(np.random.default_rng(0), 10, 16))


# ---------------------------------------------------------------- CSV to recommendations
@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    import pandas as pd

    d = tmp_path_factory.mktemp("shop")
    rng = np.random.default_rng(0)
    n = 12_000
    u, i = rng.integers(0, 150, n), rng.integers(0, 120, n)
    pd.DataFrame({"customer": [f"c-{x:03d}" for x in u], "sku": [f"SKU {x}" for x in i],
                  "stars": rng.integers(1, 6, n)}).to_csv(d / "shop.csv", index=False)
    return d


def _cli(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


VH_SETS = ["tune=false", "max_iterations=300", "min_iterations=300"]
DCF_SETS = ["tune=false", "max_iterations=10"]


@pytest.mark.parametrize("method,metric,sets", [("vh-phd", "phd", VH_SETS),
                                                ("vh", "hamming", VH_SETS),
                                                ("dcf-phd", "phd", DCF_SETS)])
def test_csv_with_string_ids_to_train_export_recommend_and_three_engines(
        shop, capsys, monkeypatch, tmp_path, method, metric, sets):
    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path / "results"))
    csv = str(shop / "shop.csv")
    trained = json.loads(_cli(capsys, [
        "train", "--method", method, "--ratings", csv, "--columns",
        "user=customer,item=sku,rating=stars", "--scale", "1,5", "--bits", "32",
        *sum((["--set", x] for x in sets), []), "--json"]))
    assert trained["method"] == method
    assert trained["dataset"] == "file-shop"
    out = tmp_path / "codes.npz"
    _cli(capsys, ["export", "--run", trained["path"], "--out", str(out), "--json"])
    codes = codes_file.load_codes(out)
    assert codes.distance == metric and codes.bits == 32
    assert codes.user_ids.dtype.kind == "U" and codes.user_ids[0].startswith("c-")
    assert codes.provenance["method"] == method
    assert codes.provenance["columns"]["user"] == "customer"
    users = [str(x) for x in codes.user_ids[:12]]
    got = json.loads(_cli(capsys, ["recommend", "--codes", str(out), "--k", "10", "--json",
                                   *sum((["--user", x] for x in users), [])]))["users"]
    rows = codes.user_rows(users)
    ref = BinaryIndex(32, metric)
    ref.add(codes.item_codes)
    d0, i0 = ref.search(codes.user_codes[rows], 10)
    for a, r in enumerate(got):
        assert r["user"] == users[a]
        assert r["items"] == [str(x) for x in codes.item_ids[i0[a]]]
        assert r["distances"] == d0[a].tolist()
    for name, index in _engines(32, metric, tmp_path):
        index.add(codes.item_codes)
        d1, i1 = index.search(codes.user_codes[rows], 10)
        assert np.array_equal(d0, d1) and np.array_equal(i0, i1), name


def test_recommend_leaves_out_seen_items(shop, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path / "results"))
    csv = str(shop / "shop.csv")
    run = json.loads(_cli(capsys, [
        "train", "--method", "vh-phd", "--ratings", csv, "--columns",
        "user=customer,item=sku,rating=stars", "--scale", "1,5", "--bits", "16",
        "--set", "tune=false", "--set", "max_iterations=200", "--set", "min_iterations=200",
        "--json"]))["path"]
    out = tmp_path / "c.npz"
    _cli(capsys, ["export", "--run", run, "--out", str(out)])
    import pandas as pd

    df = pd.read_csv(csv)
    user = "c-007"
    seen = set(df.loc[df["customer"] == user, "sku"])
    r = json.loads(_cli(capsys, ["recommend", "--codes", str(out), "--user", user, "--k", "20",
                                 "--exclude-seen", csv, "--json"]))["users"][0]
    assert len(r["items"]) == 20 and not seen & set(r["items"])
    assert r["distances"] == sorted(r["distances"])


def test_a_changed_codes_file_is_refused(shop, tmp_path):
    rng = np.random.default_rng(0)
    c = codes_file.Codes(np.array(["a", "b"]), np.array([10, 20, 30]), _codes(rng, 2, 16),
                     _codes(rng, 3, 16), 16, "phd", {"method": "x"})
    p = codes_file.save_codes(c, tmp_path / "c.npz")
    back = codes_file.load_codes(p)
    assert np.array_equal(back.item_ids, [10, 20, 30]) and back.user_ids.dtype.kind == "U"
    with np.load(p) as z:
        f = dict(z)
    f["item_codes"] = f["item_codes"].copy()
    f["item_codes"][0, 0] ^= np.uint64(1)
    np.savez(tmp_path / "bad.npz", **f)
    with pytest.raises(codes_file.CodesFileError, match="bad.npz.*sha256"):
        codes_file.load_codes(tmp_path / "bad.npz")
    del f["bits"]
    np.savez(tmp_path / "bad2.npz", **f)
    with pytest.raises(codes_file.CodesFileError, match="no field bits"):
        codes_file.load_codes(tmp_path / "bad2.npz")
    with pytest.raises(KeyError, match="'zz' is not in the codes"):
        back.user_rows(["zz"])


def test_ties_are_completed_only_for_the_users_whose_cut_falls_inside_a_tie():
    rng = np.random.default_rng(0)
    u, i = _codes(rng, 6, 16, skew=False), _codes(rng, 3000, 16, skew=False)
    u[0] = 0  # PHD 0 to every item: one tie of all 3,000
    fi = engines.FaissIndex(16, "phd")
    fi.add(i)
    calls, raw = [], fi.index.search
    fi.index.search = lambda x, k: (calls.append((len(x), k)), raw(x, k))[1]
    d, ids = fi.search(u, 10)
    ref = BinaryIndex(16, "phd")
    ref.add(i)
    d0, i0 = ref.search(u, 10)
    assert np.array_equal(d, d0) and np.array_equal(ids, i0)
    assert calls[0] == (6, 11) and all(n < 6 for n, _ in calls[1:])
    assert calls[-1] == (1, 3000)  # only the all-tied user goes to the end


def test_a_heavily_tied_user_does_not_widen_every_users_answer(monkeypatch):
    # one user tied with all 3,000 items used to make the answer (users, 3000)
    # for every user; it is (users, k + 1), asked again TIE_ROWS rows at a time
    rng = np.random.default_rng(1)
    u, i = _codes(rng, 40, 16, skew=False), _codes(rng, 3000, 16, skew=False)
    u[::7] = 0
    fi = engines.FaissIndex(16, "phd")
    fi.add(i)
    q, _ = fi._queries(u)
    h, ids = fi._with_ties(lambda x, kk: fi.index.search(x, kk), q, 10, fi.ntotal)
    assert h.shape == ids.shape == (40, 11)
    monkeypatch.setattr(engines, "TIE_ROWS", 2)
    d, got = fi.search(u, 10)
    ref = BinaryIndex(16, "phd")
    ref.add(i)
    d0, i0 = ref.search(u, 10)
    assert np.array_equal(d, d0) and np.array_equal(got, i0)
