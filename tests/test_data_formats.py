"""Every raw format on files the tests write; every malformed-input case; duplicates."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from phdlib import data
from phdlib.data import formats


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PHD_DATA_DIR", raising=False)


def write(root, rel, text):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def sha_lines(triples):
    return hashlib.sha256("".join(f"{u}::{i}::{r}\n" for u, i, r in triples).encode()).hexdigest()


def load(name, root, **kw):
    kw.setdefault("min_ratings", 1)
    kw.setdefault("verify", False)
    return data.load_dataset(name, data_dir=root, **kw)


def as_triples(ds):
    r = ds.ratings
    return [(ds.user_ids[u], ds.item_ids[i], float(x)) for u, i, x in zip(r.user, r.item, r.rating)]


# ---------------------------------------------------------------- each format
def test_udata_ml100k(tmp_path):
    write(tmp_path, "ml-100k/u.data", "196\t242\t3\t881250949\n186\t302\t3\t891717742\n22\t377\t1\t878887116\n")
    ds = load("ml-100k", tmp_path)
    assert (ds.n_users, ds.n_items, ds.n_ratings) == (3, 3, 3)
    assert as_triples(ds) == [(196, 242, 3.0), (186, 302, 3.0), (22, 377, 1.0)]
    assert list(ds.user_ids) == [22, 186, 196]  # re-indexed in order of the original ids
    assert ds.fingerprint == sha_lines([(196, 242, 3), (186, 302, 3), (22, 377, 1)])
    assert ds.ratings.user.dtype == np.int32 and ds.ratings.rating.dtype == np.float32
    assert ds.rating_scale == (1.0, 5.0) and ds.raw_rows == 3 and not ds.synthetic


@pytest.mark.parametrize("with_ts", [False, True])
def test_dat_ml1m_with_and_without_timestamps(tmp_path, with_ts):
    rows = [(1, 1193, 5, 978300760), (1, 661, 3, 978302109), (2, 1193, 4, 978298413)]
    text = "".join(f"{u}::{i}::{r}" + (f"::{t}" if with_ts else "") + "\n" for u, i, r, t in rows)
    write(tmp_path, "ml-1m/ratings.dat", text)
    ds = load("ml-1m", tmp_path)
    assert as_triples(ds) == [(1, 1193, 5.0), (1, 661, 3.0), (2, 1193, 4.0)]
    # timestamps never enter the fingerprint: both forms give the same one
    assert ds.fingerprint == sha_lines([r[:3] for r in rows])
    if not with_ts:  # without timestamps the fingerprint is the file's sha256
        assert ds.fingerprint == hashlib.sha256(text.encode()).hexdigest()


def test_dat_ml10m_half_stars_doubled(tmp_path):
    write(tmp_path, "ml-10M100K/ratings.dat", "1::122::5::838985046\n1::185::3.5::838983525\n2::122::0.5::838983392\n")
    ds = load("ml-10m", tmp_path)
    assert ds.rating_scale == (1.0, 10.0)
    assert sorted(ds.ratings.rating.tolist()) == [1.0, 7.0, 10.0]
    assert ds.preprocessing["double_half_stars"] is True
    ds2 = load("ml-10m", tmp_path, double_half_stars=False)
    assert ds2.rating_scale == (0.5, 5.0)
    assert sorted(ds2.ratings.rating.tolist()) == [0.5, 3.5, 5.0]
    assert ds.fingerprint == ds2.fingerprint == sha_lines([(1, 122, 5), (1, 185, 3.5), (2, 122, 0.5)])


def test_movielens_csv(tmp_path):
    write(tmp_path, "ml-20m/ratings.csv",
          "userId,movieId,rating,timestamp\n1,2,3.5,1112486027\n1,29,4.0,1112484676\n7,2,0.5,1094785740\n")
    ds = load("ml-20m", tmp_path, double_half_stars=False)
    assert as_triples(ds) == [(1, 2, 3.5), (1, 29, 4.0), (7, 2, 0.5)]
    assert ds.fingerprint == sha_lines([(1, 2, "3.5"), (1, 29, "4.0"), (7, 2, "0.5")])
    assert load("ml-20m", tmp_path).rating_scale == (1.0, 10.0)


def test_yelp_json(tmp_path):
    recs = [
        {"review_id": "r1", "user_id": "uA", "business_id": "bX", "stars": 5, "date": "2016-03-09", "text": "good"},
        {"review_id": "r2", "user_id": "uB", "business_id": "bX", "stars": 2, "date": "2015-01-01 10:00:00", "text": ""},
        {"review_id": "r3", "user_id": "uA", "business_id": "bY", "stars": 4, "date": "2014-12-31", "useful": 3},
    ]
    write(tmp_path, "yelp/review.json", "\n".join(json.dumps(r) for r in recs) + "\n")
    ds = load("yelp", tmp_path)
    assert as_triples(ds) == [("uA", "bX", 5.0), ("uB", "bX", 2.0), ("uA", "bY", 4.0)]
    assert list(ds.user_ids) == ["uA", "uB"]
    assert ds.fingerprint == sha_lines([("uA", "bX", 5), ("uB", "bX", 2), ("uA", "bY", 4)])


def test_yelp_academic_file_name(tmp_path):
    write(tmp_path, "yelp/yelp_academic_dataset_review.json",
          '{"user_id": "u", "business_id": "b", "stars": 3.0, "date": "2016-01-01"}\n')
    assert load("yelp", tmp_path).n_ratings == 1


def test_amazon_csv(tmp_path):
    write(tmp_path, "amazon/ratings_Books.csv",
          "AH2L9G3DQHHAJ,0000000116,4.0,1019865600\nA2IIIDRK3PRRZY,0000000116,1.0,1395619200\n"
          "AH2L9G3DQHHAJ,0000013714,5.0,1387670400\n")
    ds = load("amazon", tmp_path)
    assert as_triples(ds) == [("AH2L9G3DQHHAJ", "0000000116", 4.0), ("A2IIIDRK3PRRZY", "0000000116", 1.0),
                              ("AH2L9G3DQHHAJ", "0000013714", 5.0)]
    assert ds.item_ids.tolist() == ["0000000116", "0000013714"]  # leading zeros kept: ids are strings
    assert ds.fingerprint == sha_lines([("AH2L9G3DQHHAJ", "0000000116", "4.0"),
                                        ("A2IIIDRK3PRRZY", "0000000116", "1.0"),
                                        ("AH2L9G3DQHHAJ", "0000013714", "5.0")])


def test_dat_crlf_line_endings(tmp_path):
    write(tmp_path, "ml-1m/ratings.dat", "1::2::3\r\n4::5::1\r\n")
    ds = load("ml-1m", tmp_path)
    assert as_triples(ds) == [(1, 2, 3.0), (4, 5, 1.0)]


def test_fast_reader_on_a_large_file(tmp_path):
    """200,000 lines parse through the vectorised path, identically to a Python reference."""
    rng = np.random.default_rng(1)
    n = 200_000
    u, i, r = rng.integers(1, 5000, n), rng.integers(1, 3000, n), rng.integers(1, 6, n)
    text = "".join(f"{a}::{b}::{c}\n" for a, b, c in zip(u, i, r))
    p = write(tmp_path, "ml-1m/ratings.dat", text)
    raw = formats.read_ratings(p, "dat")
    assert len(raw) == n
    np.testing.assert_array_equal(raw.user_ids[raw.user], u)
    np.testing.assert_array_equal(raw.item_ids[raw.item], i)
    np.testing.assert_array_equal(raw.rating, r)
    assert raw.fingerprint == hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------- duplicates
def test_duplicates_keep_earliest_timestamp(tmp_path):
    # (1, 10) rated three times: the second line has the earliest timestamp
    write(tmp_path, "ml-100k/u.data", "1\t10\t2\t300\n1\t10\t5\t100\n1\t10\t4\t200\n2\t10\t3\t50\n")
    ds = load("ml-100k", tmp_path)
    assert as_triples(ds) == [(1, 10, 5.0), (2, 10, 3.0)]
    assert ds.raw_rows == 4


def test_duplicates_equal_timestamps_keep_first_in_file(tmp_path):
    write(tmp_path, "ml-100k/u.data", "1\t10\t2\t100\n1\t10\t5\t100\n")
    assert as_triples(load("ml-100k", tmp_path)) == [(1, 10, 2.0)]


def test_duplicates_without_timestamps_keep_first_in_file(tmp_path):
    write(tmp_path, "ml-1m/ratings.dat", "3::7::1\n1::7::4\n3::7::5\n1::8::2\n")
    ds = load("ml-1m", tmp_path)
    assert as_triples(ds) == [(3, 7, 1.0), (1, 7, 4.0), (1, 8, 2.0)]


def test_duplicates_yelp_by_date(tmp_path):
    recs = [{"user_id": "u", "business_id": "b", "stars": 1, "date": "2016-05-01"},
            {"user_id": "u", "business_id": "b", "stars": 5, "date": "2012-05-01 08:00:00"}]
    write(tmp_path, "yelp/review.json", "\n".join(json.dumps(r) for r in recs) + "\n")
    assert as_triples(load("yelp", tmp_path)) == [("u", "b", 5.0)]


# ---------------------------------------------------------------- malformed input
BAD = [
    # (dataset, relative path, content, bad line number, expected text in reason)
    ("ml-1m", "ml-1m/ratings.dat", "1::2::3\n1::3\n", 2, "wrong number of fields"),
    ("ml-1m", "ml-1m/ratings.dat", "1::2::3\n1::3::4::5::6\n", 2, "wrong number of fields"),
    ("ml-1m", "ml-1m/ratings.dat", "1::2::3::9\n1::3::4\n", 2, "wrong number of fields"),
    ("ml-1m", "ml-1m/ratings.dat", "1::2::3\n1:3::4\n", 2, "wrong number of fields"),
    ("ml-1m", "ml-1m/ratings.dat", "1::2::3\nx7::3::4\n", 2, "user id is not"),
    ("ml-1m", "ml-1m/ratings.dat", "1::2::3\n5::3::4\n6::abc::4\n", 3, "item id is not"),
    ("ml-1m", "ml-1m/ratings.dat", "1::2::3\n1::3::6\n", 2, "outside the dataset's scale"),
    ("ml-1m", "ml-1m/ratings.dat", "1::2::0\n", 1, "outside the dataset's scale"),
    ("ml-1m", "ml-1m/ratings.dat", "1::2::3\n1::3::3.5\n", 2, "outside the dataset's scale"),
    ("ml-1m", "ml-1m/ratings.dat", "1::2::3\n1::3::four\n", 2, "not a number"),
    ("ml-1m", "ml-1m/ratings.dat", "1::2::3\n\n1::3::4\n", 2, "wrong number of fields"),
    ("ml-1m", "ml-1m/ratings.dat", "1::2::3::97x\n", 1, "timestamp"),
    ("ml-100k", "ml-100k/u.data", "1\t2\t3\t4\n1\t2\t3\n", 2, "wrong number of fields"),
    ("ml-100k", "ml-100k/u.data", "1\t2\t3\t4\n1 2 3 4\n", 2, "wrong number of fields"),
    ("ml-100k", "ml-100k/u.data", "1\t2\t3\t4\n-1\t2\t3\t4\n", 2, "user id is not"),
    ("ml-100k", "ml-100k/u.data", "1\t2\t3\t4\n2\t2\t7\t4\n", 2, "outside the dataset's scale"),
    ("ml-10m", "ml-10m/ratings.dat", "1::2::3.5::4\n1::3::3.25::4\n", 2, "outside the dataset's scale"),
    ("ml-10m", "ml-10m/ratings.dat", "1::2::3.5::4\n1::3::5.5::4\n", 2, "outside the dataset's scale"),
    ("ml-20m", "ml-20m/ratings.csv", "userId,movieId,rating,timestamp\n1,2,3.5,4\n1,x,3,4\n", 3, "movieId is not"),
    ("ml-20m", "ml-20m/ratings.csv", "userId,movieId,rating,timestamp\n1,2,3.5,4\n1,2,3\n", 3, "wrong number of fields"),
    ("ml-20m", "ml-20m/ratings.csv", "user,item,rating,timestamp\n1,2,3.5,4\n", 1, "expected the header"),
    ("ml-20m", "ml-20m/ratings.csv", "1,2,3.5,4\n", 1, "expected the header"),
    ("amazon", "amazon/ratings_Books.csv", "A,B,4.0,1\nA,C,9.0,1\n", 2, "outside the dataset's scale"),
    ("amazon", "amazon/ratings_Books.csv", "A,B,4.0,1\nA,C,4.0\n", 2, "wrong number of fields"),
    ("amazon", "amazon/ratings_Books.csv", "A,B,4.0,1\n,C,4.0,1\n", 2, "user id is empty"),
    ("yelp", "yelp/review.json", '{"user_id":"u","business_id":"b","stars":5,"date":"2016-01-01"}\n{"user_id":"u",\n', 2,
     "expected one JSON object"),
    ("yelp", "yelp/review.json", '{"user_id":"u","business_id":"b","stars":5,"date":"2016-01-01"}\n'
     '{"user_id":"v","business_id":"b","stars":"five","date":"2016-01-01"}\n', 2, "JSON object"),
    ("yelp", "yelp/review.json", '{"user_id":"u","business_id":"b","stars":5,"date":"2016-01-01"}\n'
     '{"user_id":"v","stars":3,"date":"2016-01-01"}\n', 2, "'business_id' missing"),
    ("yelp", "yelp/review.json", '{"user_id":"u","business_id":"b","stars":5,"date":"2016-01-01"}\n\n'
     '{"user_id":"v","business_id":"b","stars":6,"date":"2016-01-01"}\n', 3, "outside the dataset's scale"),
    ("yelp", "yelp/review.json", '{"user_id":"u","business_id":"b","stars":5,"date":"yesterday"}\n', 1, "date"),
]


@pytest.mark.parametrize("name,rel,text,lineno,reason", BAD, ids=[f"{b[0]}-{k}" for k, b in enumerate(BAD)])
def test_malformed_line_names_file_line_and_text(tmp_path, name, rel, text, lineno, reason):
    path = write(tmp_path, rel, text)
    with pytest.raises(data.DataFormatError) as ei:
        load(name, tmp_path)
    err = ei.value
    line = text.split("\n")[lineno - 1]
    assert err.path == path and err.lineno == lineno and err.line == line
    msg = str(err)
    assert str(path) in msg and f"line {lineno}" in msg and repr(line) in msg and reason in msg


@pytest.mark.parametrize("name,rel", [("ml-1m", "ml-1m/ratings.dat"), ("ml-100k", "ml-100k/u.data"),
                                      ("ml-20m", "ml-20m/ratings.csv"), ("yelp", "yelp/review.json"),
                                      ("amazon", "amazon/ratings_Books.csv")])
def test_empty_file(tmp_path, name, rel):
    path = write(tmp_path, rel, "")
    with pytest.raises(data.DataFormatError, match="empty") as ei:
        load(name, tmp_path)
    assert ei.value.path == path and ei.value.lineno == 1 and str(path) in str(ei.value)


def test_header_only_csv(tmp_path):
    write(tmp_path, "ml-20m/ratings.csv", "userId,movieId,rating,timestamp\n")
    with pytest.raises(data.DataFormatError, match="line 2: no rating lines"):
        load("ml-20m", tmp_path)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(data.DataNotFoundError, match="not found"):
        formats.read_ratings(tmp_path / "nope" / "ratings.dat", "dat")
    with pytest.raises(FileNotFoundError) as ei:
        load("ml-1m", tmp_path / "empty-dir")
    msg = str(ei.value)
    assert "ml-1m/ratings.dat" in msg and str(tmp_path / "empty-dir") in msg
    # the three ways to provide it
    assert "data_dir" in msg and "PHD_DATA_DIR" in msg and "phd data fetch --dataset ml-1m" in msg


def test_yelp_missing_says_how_to_get_it(tmp_path):
    with pytest.raises(data.DataNotFoundError) as ei:
        load("yelp", tmp_path)
    assert "https://www.yelp.com/dataset" in str(ei.value) and "yelp/review.json" in str(ei.value)
    with pytest.raises(data.DataNotFoundError, match="cannot be downloaded"):
        data.fetch("yelp")


def test_unknown_dataset_and_format():
    with pytest.raises(KeyError, match="unknown dataset 'ml-2m'"):
        data.load_dataset("ml-2m")
    with pytest.raises(ValueError, match="unknown rating file format"):
        formats.read_ratings("x", "xml")


def test_no_row_dropped_silently(tmp_path):
    """Every line of a valid file is a row; every row of the raw file is accounted for."""
    lines = ["5::1::3", "5::1::4", "6::2::1", "7::2::5"]
    write(tmp_path, "ml-1m/ratings.dat", "\n".join(lines) + "\n")
    raw = formats.read_ratings(tmp_path / "ml-1m/ratings.dat", "dat")
    assert len(raw) == len(lines)
    ds = load("ml-1m", tmp_path)
    assert ds.raw_rows == 4 and ds.n_ratings == 3  # exactly the one duplicate removed


# ------------------------------------------------------------ hostile inputs (issue 12)
from phdlib.data import formats as _F  # noqa: E402
from phdlib.data.errors import DataFormatError as _DFE  # noqa: E402


def _bad(tmp_path, name, body: bytes, fmt, match, line):
    p = tmp_path / name
    p.write_bytes(body)
    with pytest.raises(_DFE, match=match) as ei:
        _F.read_ratings(p, fmt)
    assert ei.value.lineno == line, str(ei.value)
    assert len(str(ei.value)) < 600
    return ei.value


def test_ids_and_timestamps_beyond_int64_name_the_line(tmp_path):
    _bad(tmp_path, "u.data", b"1\t2\t3\t4\n1\t99999999999999999999\t3\t4\n", "u.data",
         "beyond 2\\^63", 2)
    _bad(tmp_path, "r.dat", b"1::2::3::4\n2::3::4::99999999999999999999\n", "dat",
         "timestamp is beyond", 2)
    ok = tmp_path / "ok.dat"
    ok.write_bytes(b"1::9223372036854775807::3::4\n000000000000000000000001::2::3::4\n")
    assert len(_F.read_ratings(ok, "dat")) == 2


def test_invalid_utf8_names_its_line(tmp_path):
    _bad(tmp_path, "r.dat", b"1::2::3::4\n1::2::3::4\n\xff\xfe::2::3::4\n", "dat", "UTF-8", 3)


def test_two_yelp_objects_on_one_line_name_that_line(tmp_path):
    rec = b'{"user_id": "u", "business_id": "b", "stars": 4, "date": "2016-01-01"}'
    _bad(tmp_path, "review.json", rec + b"\n" + rec + b"\n" + rec + rec + b"\n" + rec + b"\n",
         "yelp-json", "one JSON object per line", 3)
    ok = tmp_path / "ok.json"
    ok.write_bytes(rec + b"\n\n \t\n" + rec + b"\n")
    assert len(_F.read_ratings(ok, "yelp-json")) == 2


def test_a_huge_field_is_shown_cut(tmp_path):
    e = _bad(tmp_path, "u.data", b"1\t2\t3\t4\n" + b"x" * 2_000_000 + b"\t2\t3\t4\n", "u.data",
             "user", 2)
    assert "2,000,006 characters" in str(e)
