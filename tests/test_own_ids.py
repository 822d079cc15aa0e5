"""Ids of any width round-trip from ``--ratings`` through training, export and
``recommend``; ids that match nothing are counted and reported, never dropped."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from phdlib.serving import codes_file
from phdlib.cli import main

N_USERS, N_ITEMS = 40, 30
#: Ids at the edges of what each file type holds.
ID_KINDS = {
    # 19-digit ids that fit int64 (hashed ids), written as Parquet int64
    "int64": (lambda u: 1234567890123456789 + u, lambda i: 9 * 10**18 + i, pa.int64()),
    # beyond int64: uint64 up to 2^64 - 1
    "uint64": (lambda u: 2**64 - 1 - u, lambda i: 10**19 + i, pa.uint64()),
    # integer-looking text beyond any integer type, in a CSV
    "text": (lambda u: 10**30 + u, lambda i: 10**25 + i, None),
}


def _pairs():
    rng = np.random.default_rng(0)
    rows = [(u, int(i), int(rng.integers(1, 6))) for u in range(N_USERS)
            for i in rng.choice(N_ITEMS, 12, replace=False)]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def _write(tmp_path, kind):
    fu, fi, typ = ID_KINDS[kind]
    u, i, r = _pairs()
    uid, iid = [fu(x) for x in u], [fi(x) for x in i]
    if typ is None:
        path = tmp_path / "big.csv"
        path.write_text("u,i,r\n" + "".join(f"{a},{b},{c}\n" for a, b, c in zip(uid, iid, r)))
    else:
        path = tmp_path / "big.parquet"
        pq.write_table(pa.table({"u": pa.array(uid, typ), "i": pa.array(iid, typ), "r": r}), path)
    return path, uid, iid


def _cli(capsys, argv, code=0):
    got = main(argv)
    out = capsys.readouterr()
    assert got == code, out.err
    return out


@pytest.fixture(params=sorted(ID_KINDS))
def trained(request, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path / "results"))
    path, uid, iid = _write(tmp_path, request.param)
    run = json.loads(_cli(capsys, [
        "train", "--method", "vh-phd", "--ratings", str(path), "--columns",
        "user=u,item=i,rating=r", "--scale", "1,5", "--bits", "8", "--min-ratings", "1",
        "--set", "tune=false", "--set", "max_iterations=20", "--set", "min_iterations=20",
        "--json"]).out)
    out = tmp_path / "codes.npz"
    _cli(capsys, ["export", "--run", run["path"], "--out", str(out)])
    return request.param, path, out, uid, iid


def test_ids_round_trip_exactly_through_train_export_and_recommend(trained, capsys):
    kind, path, out, uid, iid = trained
    codes = codes_file.load_codes(out)
    want_u, want_i = sorted(set(uid)), sorted(set(iid))
    got_u = [int(x) for x in codes.user_ids.tolist()]
    assert sorted(got_u) == want_u and sorted(int(x) for x in codes.item_ids.tolist()) == want_i
    if kind != "text":
        assert codes.user_ids.dtype == np.dtype(kind)   # kept as the file's integers
    user = max(want_u)                                  # the widest id of the file
    got = json.loads(_cli(capsys, ["recommend", "--codes", str(out), "--user", str(user),
                                   "--k", "5", "--json"]).out)["users"][0]
    assert got["user"] == str(user) and len(got["items"]) == 5
    assert {int(x) for x in got["items"]} <= set(want_i)


def test_exclude_seen_applies_to_wide_ids_and_counts_what_matches_nothing(trained, capsys,
                                                                         tmp_path):
    kind, path, out, uid, iid = trained
    user = uid[0]
    seen = {b for a, b in zip(uid, iid) if a == user}
    got = json.loads(_cli(capsys, ["recommend", "--codes", str(out), "--user", str(user),
                                   "--k", str(N_ITEMS), "--exclude-seen", str(path),
                                   "--json"]).out)
    items = {int(x) for x in got["users"][0]["items"]}
    assert items and not items & seen and len(items) == N_ITEMS - len(seen)
    assert got["exclude_seen"]["applied"] == len(uid)
    assert got["exclude_seen"]["unknown_user_pairs"] == 0
    # a seen file naming a user and an item the codes do not have: counted, warned
    other = tmp_path / "seen.csv"
    other.write_text(f"u,i\n{user},{iid[0]}\n7,{iid[1]}\n{user},8\n")
    res = _cli(capsys, ["recommend", "--codes", str(out), "--user", str(user), "--json",
                        "--exclude-seen", str(other), "--columns", "user=u,item=i"])
    ex = json.loads(res.out)["exclude_seen"]
    assert (ex["pairs"], ex["applied"], ex["unknown_user_pairs"], ex["unknown_item_pairs"]) \
        == (3, 1, 1, 1)
    assert ex["first_unknown_user"] == "7" and ex["first_unknown_item"] == "8"
    assert "phd: warning: --exclude-seen" in res.err and "1 of 3 rows applied" in res.err


def test_unknown_users_are_counted_and_located(trained, capsys, tmp_path):
    kind, path, out, uid, iid = trained
    users = tmp_path / "users.txt"
    users.write_text(f"{uid[0]}\n\n5\n{uid[-1]}\n6\n")
    err = _cli(capsys, ["recommend", "--codes", str(out), "--users", str(users)], code=2).err
    assert err.count("\n") == 1 and f"--users {users}, line 3: user id '5' is not in the codes" \
        in err and "2 of the 4 user ids given are unknown" in err
    users.write_text("")
    err = _cli(capsys, ["recommend", "--codes", str(out), "--users", str(users)], code=2).err
    assert f"--users {users}: no user ids (the file is empty" in err
    # an integer outside the ids' own range is unknown, never wrapped onto another id
    codes = codes_file.load_codes(out)
    if codes.user_ids.dtype.kind in "iu":
        beyond = int(np.iinfo(codes.user_ids.dtype).max) + 1
        wrapped = beyond - 2**64 if codes.user_ids.dtype.kind == "u" else beyond
        assert codes.user_rows([str(beyond), str(-1), str(wrapped)], strict=False).tolist() \
            [:2] == [-1, -1]


def test_row_lookup_is_exact_at_the_edges_of_int64_and_uint64():
    for dtype, ids in ((np.int64, [-2**63, -1, 0, 2**63 - 1]),
                       (np.uint64, [0, 2**63, 2**64 - 2, 2**64 - 1])):
        known = np.array(ids, dtype=dtype)
        c = codes_file.Codes(known, np.array([1]), np.zeros((4, 1), np.uint64),
                         np.zeros((1, 1), np.uint64), 8, "phd", {})
        assert c.user_rows([str(x) for x in ids]).tolist() == [0, 1, 2, 3]
        assert c.user_rows(ids).tolist() == [0, 1, 2, 3]
        assert c.user_rows(["x", "1.0", str(2**64), str(-2**63 - 1)], strict=False).tolist() \
            == [-1] * 4


def test_odd_user_lists_are_named_by_line(trained, capsys, tmp_path):
    kind, path, out, uid, iid = trained
    users = tmp_path / "u.txt"
    users.write_bytes(f"{uid[0]}\x0c\n999\n".encode())   # a form feed is not a line end
    err = _cli(capsys, ["recommend", "--codes", str(out), "--users", str(users)], code=2).err
    assert "line 2: user id '999'" in err
    users.write_bytes(f"{uid[0]}\0\n".encode())
    err = _cli(capsys, ["recommend", "--codes", str(out), "--users", str(users)], code=2).err
    assert "line 1: holds a NUL character" in err
    users.write_text("9" * 5000 + "\n")                  # past Python's 4,300-digit limit
    err = _cli(capsys, ["recommend", "--codes", str(out), "--users", str(users)], code=2).err
    assert "is not in the codes" in err and "Exceeds the limit" not in err
