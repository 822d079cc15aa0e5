"""Your own ratings file: CSV, TSV, Parquet with a column mapping; errors that locate."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from phdlib import data
from phdlib.cli import main
from phdlib.data import own

COLS = "user=customer,item=sku,rating=stars,time=ts"


@pytest.fixture()
def frame():
    rng = np.random.default_rng(0)
    n = 5000
    return pd.DataFrame({"customer": [f"cust {x}" for x in rng.integers(0, 80, n)],
                         "sku": [f"S{x}" for x in rng.integers(0, 60, n)],
                         "stars": rng.integers(1, 6, n), "ts": rng.integers(0, 10**9, n)})


def test_csv_tsv_and_parquet_give_one_dataset_with_the_original_string_ids(frame, tmp_path):
    frame.to_csv(tmp_path / "r.csv", index=False)
    frame.to_csv(tmp_path / "r.tsv", index=False, sep="\t")
    frame.to_parquet(tmp_path / "r.parquet")
    got = [data.load_file(tmp_path / f, COLS, "1,5") for f in ("r.csv", "r.tsv", "r.parquet")]
    assert len({d.fingerprint for d in got}) == 1
    assert len({data.split_dataset(d, 0).fingerprint for d in got}) == 1
    ds = got[0]
    assert ds.name == "file-r" and ds.user_ids.dtype.kind == "U"
    # every kept rating maps back to a row of the file
    rows = set(zip(frame["customer"], frame["sku"]))
    r = ds.ratings
    assert all((ds.user_ids[u], ds.item_ids[i]) in rows for u, i in zip(r.user[:500], r.item[:500]))
    # the first rating (by time) of a repeated pair is the one kept
    f = frame.sort_values("ts", kind="stable").drop_duplicates(["customer", "sku"])
    counts_i = f["sku"].value_counts()
    f = f[f["sku"].isin(counts_i[counts_i >= 10].index)]
    counts_u = f["customer"].value_counts()
    f = f[f["customer"].isin(counts_u[counts_u >= 10].index)]
    assert ds.n_ratings == len(f)


def test_the_mapping_and_scale_are_part_of_the_fingerprint(frame, tmp_path):
    frame.to_csv(tmp_path / "r.csv", index=False)
    a = data.split_dataset(data.load_file(tmp_path / "r.csv", COLS, "1,5"), 0)
    b = data.split_dataset(data.load_file(tmp_path / "r.csv", COLS, "0,5"), 0)
    assert a.fingerprint != b.fingerprint


@pytest.mark.parametrize("edit,match", [
    (lambda f: f.assign(stars=f["stars"].where(f.index != 41, 9)), r"line 43: rating .*1\.\.5"),
    (lambda f: f.assign(stars=f["stars"].astype(str).where(f.index != 7, "x")),
     "line 9: rating .* not a number"),
    (lambda f: f.assign(customer=f["customer"].where(f.index != 3, "")), "line 5: user column"),
    (lambda f: f.assign(ts=f["ts"].astype(str).where(f.index != 5, "yesterday")),
     "line 7: time column 'ts' is neither"),
])
def test_a_bad_row_is_named_by_its_line(frame, tmp_path, edit, match):
    edit(frame).to_csv(tmp_path / "r.csv", index=False)
    with pytest.raises(data.DataFormatError, match=match):
        data.load_file(tmp_path / "r.csv", COLS, "1,5")


def test_parquet_rows_are_named_by_row(frame, tmp_path):
    frame.assign(stars=frame["stars"].where(frame.index != 10, 0)).to_parquet(tmp_path / "r.pq")
    with pytest.raises(data.DataFormatError, match="Parquet row 11"):
        data.load_file(tmp_path / "r.pq", COLS, "1,5")


def test_dates_are_accepted_as_times(frame, tmp_path):
    f = frame.assign(ts=pd.to_datetime(frame["ts"], unit="s").dt.strftime("%Y-%m-%d %H:%M:%S"))
    f.to_csv(tmp_path / "r.csv", index=False)
    frame.to_csv(tmp_path / "s.csv", index=False)
    assert data.load_file(tmp_path / "r.csv", COLS, "1,5").n_ratings == \
        data.load_file(tmp_path / "s.csv", COLS, "1,5").n_ratings


@pytest.mark.parametrize("columns,scale,match", [
    ("user=customer,item=sku", "1,5", "no column for rating"),
    ("user=customer,item=sku,rating=stars,color=x", "1,5", "unknown role 'color'"),
    ("user=customer,item=sku,rating", "1,5", "not ROLE=COLUMN"),
    ("user=customer,item=nope,rating=stars", "1,5", "no column 'nope'; the file has"),
    (COLS, "5,1", "LOW < HIGH"),
    (COLS, "one,five", "expected LOW,HIGH"),
])
def test_bad_mappings_and_scales_say_what_was_expected(frame, tmp_path, columns, scale, match):
    frame.to_csv(tmp_path / "r.csv", index=False)
    with pytest.raises(ValueError, match=match):
        data.load_file(tmp_path / "r.csv", columns, scale)


def test_unknown_suffix_and_empty_file(tmp_path):
    (tmp_path / "r.xlsx").write_text("a")
    with pytest.raises(data.DataError, match="unknown file type '.xlsx'"):
        data.load_file(tmp_path / "r.xlsx", COLS, "1,5")
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(data.DataFormatError, match="empty"):
        data.load_file(tmp_path / "e.csv", COLS, "1,5")
    assert own.dataset_name("My Ratings (2024).CSV") == "file-my-ratings-2024"


@pytest.mark.parametrize("extra,fragment", [
    (["--columns", "user=customer,item=sku,rating=stars"], "--scale"),
    (["--columns", "user=a,item=b,rating=c", "--scale", "1,5"], "no column 'a'"),
    (["--columns", COLS, "--scale", "1,5", "--dataset", "ml-1m"], "not both"),
])
def test_cli_errors_for_own_files_are_one_line(frame, tmp_path, capsys, monkeypatch, extra,
                                               fragment):
    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path / "res"))
    frame.to_csv(tmp_path / "r.csv", index=False)
    code = main(["train", "--method", "popularity", "--ratings", str(tmp_path / "r.csv"), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("phd: error: ") and fragment in err[0]


@pytest.mark.parametrize("text,match", [
    (b"u,i,r\na,x,1\n\nb,y,9\n", "line 3: user column 'u' is empty"),
    (b"u,i,r\na,x,1\nb,y\nc,z,2\n", "line 3: 2 fields; expected 3"),
    (b'u,i,r\na,"x\nq",1\nb,y,7\n', "line 4: rating .* outside"),
    (b"u,i,r\na,x,1\nb,\xff,2\n", "line 3: not valid UTF-8"),
])
def test_blank_lines_short_rows_quoted_newlines_and_bad_bytes_are_located(tmp_path, text, match):
    (tmp_path / "r.csv").write_bytes(text)
    with pytest.raises(data.DataFormatError, match=match):
        data.load_file(tmp_path / "r.csv", "user=u,item=i,rating=r", "1,5", min_ratings=0)


def test_phd_train_says_how_many_rows_of_the_file_preprocessing_kept(tmp_path, capsys,
                                                                    monkeypatch):
    from phdlib.cli import main

    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path / "results"))
    rows = [(u, i, (u * i) % 5 + 1) for u in range(30) for i in range(20)]
    rows += [(0, 0, 5), (99, 1, 3)]   # a repeated (user, item) and a user with one rating
    csv = tmp_path / "r.csv"
    csv.write_text("u,i,r\n" + "".join(f"{u},{i},{r}\n" for u, i, r in rows))
    code = main(["train", "--method", "popularity", "--ratings", str(csv), "--columns",
                 "user=u,item=i,rating=r", "--scale", "1,5", "--bits", "8"])
    err = capsys.readouterr().err
    assert code == 0 and "602 rating rows read; 600 kept (30 users, 20 items)" in err, err


@pytest.mark.parametrize("name,write,match", [
    ("dup.csv", lambda p: p.write_text("u,i,r,r\na,x,1,2\n"),
     r"the header names column 'r' 2 times \(columns 3 and 4\)"),
    ("dup.parquet", lambda p: __import__("pyarrow.parquet").parquet.write_table(
        __import__("pyarrow").table([[1], [2], [3], [4]], names=["u", "i", "r", "r"]), p),
     r"column 'r' 2 times \(columns 3 and 4\)"),
    ("nested.parquet", lambda p: pd.DataFrame({"u": [1], "i": [2], "r": [{"a": 1}]})
     .to_parquet(p), "rating column 'r' has type struct<a: int64>; expected numbers or text"),
    ("list.parquet", lambda p: pd.DataFrame({"u": [[1]], "i": [2], "r": [3]}).to_parquet(p),
     "user column 'u' has type list<element: int64>"),
    ("ts.csv", lambda p: p.write_text("u,i,r,t\na,x,1,5\nb,y,2,99999999999999999999\n"),
     "line 3: time column 't' is beyond 64-bit integers"),
    ("date.csv", lambda p: p.write_text("u,i,r,t\na,x,1,2020-01-02\nb,y,2,2020-13-45\n"),
     "line 3: time column 't' is not a real date or time"),
    ("u64.parquet", lambda p: __import__("pyarrow.parquet").parquet.write_table(
        __import__("pyarrow").table({"u": [1, 2], "i": [2, 3], "r": [3, 4],
                                     "t": __import__("pyarrow").array([1, 2**63], "uint64")}),
        p), r"line 2: time column 't' is beyond 2\^63 - 1"),
    ("date.csv", lambda p: p.write_text("u,i,r,t\na,x,1,2020-01-02\nb,y,2,2020-02-30\n"),
     "line 3: time column 't' is not a real date or time"),
    ("date.csv", lambda p: p.write_text("u,i,r,t\na,x,1,2020-01-02 10:00\nb,y,2,2021-01-01 10:61\n"),
     "line 3: time column 't' is not a real date or time"),
    ("nul.csv", lambda p: p.write_text("u,i,r\na,x,1\na\x00,y,2\n"),
     "line 3: user column 'u' holds a NUL character"),
    ("head.csv", lambda p: p.write_text("u,i,r"), "line 2: no rating rows after the header"),
    ("cr.csv", lambda p: p.write_bytes(b"u,i,r\ra,x,1\rb,y,9\r"),
     r"line 3: rating .* outside the dataset's scale .* the line reads 'b,y,9'"),
])
def test_ambiguous_nested_and_out_of_range_files_are_named(tmp_path, name, write, match):
    """Each of these was accepted silently or was an internal error."""
    path = tmp_path / name
    write(path)
    cols = "user=u,item=i,rating=r" + (",time=t" if name.split(".")[0] in ("ts", "date", "u64")
                                       else "")
    with pytest.raises(data.DataError, match=match) as info:
        data.load_file(path, cols, "1,5", min_ratings=0)
    assert str(path) in str(info.value)


def test_cr_only_line_endings_read_like_lf(frame, tmp_path):
    frame.to_csv(tmp_path / "lf.csv", index=False)
    (tmp_path / "cr.csv").write_bytes((tmp_path / "lf.csv").read_bytes().replace(b"\n", b"\r"))
    a, b = (data.load_file(tmp_path / f, COLS, "1,5") for f in ("lf.csv", "cr.csv"))
    assert a.fingerprint == b.fingerprint and a.n_ratings == b.n_ratings


def test_any_other_failure_reading_a_file_names_the_file(tmp_path, monkeypatch):
    """The boundary: an unexpected exception while reading is a DataError naming the file."""
    path = tmp_path / "r.csv"
    path.write_text("u,i,r\na,x,1\n")

    def boom(*a, **k):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(own, "_check_ratings", boom)
    with pytest.raises(data.DataError, match=r"r.csv: unreadable as a ratings file "
                                             r"\(RuntimeError: unexpected\)"):
        data.load_file(path, "user=u,item=i,rating=r", "1,5", min_ratings=0)


def test_a_fifo_is_not_read_as_a_ratings_file(tmp_path):
    import os

    os.mkfifo(tmp_path / "r.csv")
    with pytest.raises(data.DataError, match="is not a regular file"):
        data.load_file(tmp_path / "r.csv", "user=u,item=i,rating=r", "1,5")


def test_too_few_ratings_to_split_is_one_line_naming_the_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path / "res"))
    (tmp_path / "one.csv").write_text("u,i,r\n1,2,3\n")
    code = main(["train", "--method", "vh-phd", "--ratings", str(tmp_path / "one.csv"),
                 "--columns", "user=u,item=i,rating=r", "--scale", "1,5", "--min-ratings", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith(f"phd: error: --ratings {tmp_path / 'one.csv'}: the train")
