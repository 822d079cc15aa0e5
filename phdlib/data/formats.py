"""Readers for the raw rating files, one per format, all built on pyarrow.

Every reader returns a :class:`RawRatings`: all rows of the file, in file
order, nothing dropped, with users and items coded densely (codes follow the
sorted original ids) and the *content fingerprint*: the sha256 of the lines
``user::item::rating\\n`` in file order, where each field is the text of the
file (for JSON: the value as pyarrow prints it, e.g. ``5`` or ``4.5``).
Timestamps never enter the fingerprint, so a copy of ML-1M without its
timestamp field has the same fingerprint as the official file.

Formats (``fmt``):

- ``"u.data"``: ML-100K, tab separated ``user item rating timestamp``;
- ``"dat"``: ML-1M / ML-10M ``ratings.dat``, ``user::item::rating[::timestamp]``
  (three or four fields, fixed by the first line);
- ``"movielens-csv"``: ``ratings.csv`` with the header
  ``userId,movieId,rating,timestamp`` (ml-latest, ML-20M, ML-25M);
- ``"yelp-json"``: Yelp ``review.json``, JSON lines with ``user_id``,
  ``business_id``, ``stars`` and ``date`` (other keys ignored; blank lines
  are not records);
- ``"amazon-csv"``: ``user,item,rating,timestamp`` without a header.

Parsing is vectorised (pyarrow's multi-threaded CSV and JSON readers); the
files are only walked line by line in Python to *locate* an error that the
vectorised pass detected, so that the error names the line number and the
line (:class:`~phdlib.data.errors.DataFormatError`).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import DataFormatError, DataNotFoundError
from .lines import first_bad_line as _first_bad_line
from .lines import line_at as _line_at
from .lines import nth_record as _nth_record
from .lines import one_record_per_line as _one_record_per_line
from .lines import raise_if_not_utf8 as _raise_if_not_utf8

FORMATS = ("u.data", "dat", "movielens-csv", "yelp-json", "amazon-csv")
_BLOCK = 1 << 24
_NUM_RE = r"^[0-9]+(\.[0-9]+)?$"


@dataclass
class RawRatings:
    """Every row of one raw file (file order).

    ``user``/``item``: int32 (n,) dense codes into ``user_ids``/``item_ids``
    (the sorted distinct original ids: int64 for MovieLens, str objects for
    Yelp/Amazon). ``rating``: float64 (n,) as in the file. ``timestamp``:
    int64 (n,) seconds since the epoch, or None when the file has none.
    """

    path: Path
    fmt: str
    user: np.ndarray
    item: np.ndarray
    user_ids: np.ndarray
    item_ids: np.ndarray
    rating: np.ndarray
    timestamp: np.ndarray | None
    fingerprint: str

    def __len__(self) -> int:
        return int(self.user.shape[0])


# ---------------------------------------------------------------- helpers
def content_fingerprint(user, item, rating) -> str:
    """sha256 (hex) of ``user::item::rating\n`` lines built from three string arrays
    (``pa.Array`` or ``pa.ChunkedArray``), hashed chunk by chunk."""
    h = hashlib.sha256()
    if len(user) == 0:
        return h.hexdigest()
    rating_nl = pc.binary_join_element_wise(rating, pa.scalar(""), "\n")  # short: cheap
    line = pc.binary_join_element_wise(user, item, rating_nl, "::")
    chunks = line.chunks if isinstance(line, pa.ChunkedArray) else [line]
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        wide = chunk.type == pa.large_string()
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64 if wide else np.int32)
        offsets = offsets[chunk.offset: chunk.offset + len(chunk) + 1]
        h.update(memoryview(chunk.buffers()[2])[int(offsets[0]): int(offsets[-1])])
    return h.hexdigest()


def _encode(ids: pa.Array):
    """Dense int32 codes following the sorted distinct values, and those values."""
    if pa.types.is_integer(ids.type):
        v = ids.to_numpy(zero_copy_only=False)
        top = int(v.max()) if v.size else 0
        if 0 <= int(v.min(initial=0)) and top < max(16 * v.size, 1 << 20):
            present = np.zeros(top + 1, dtype=bool)
            present[v] = True
            rank = np.cumsum(present, dtype=np.int64) - 1
            return rank[v].astype(np.int32), np.flatnonzero(present).astype(np.int64)
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    enc = pc.dictionary_encode(ids)
    dictionary = enc.dictionary
    order = pc.array_sort_indices(dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    codes = rank[enc.indices.to_numpy(zero_copy_only=False)]
    values = dictionary.take(pa.array(order)).to_numpy(zero_copy_only=False)
    return codes.astype(np.int32, copy=False), values


def _check_rows(path, arr: pa.Array, valid: pa.Array, header: int, reason: str, rows_to_line=None):
    """Raise for the first row where ``valid`` is false (or null)."""
    bad = np.flatnonzero(~valid.fill_null(False).to_numpy(zero_copy_only=False))
    if bad.size:
        row = int(bad[0])
        if rows_to_line is not None:
            lineno, text = rows_to_line(row)
        else:
            lineno = row + 1 + header
            text = _line_at(path, lineno)
        raise DataFormatError(path, lineno, text, reason)


def _check_ratings(path, text: pa.Array, scale, step, header, rows_to_line=None, what="rating"):
    """Parse the rating column (text) to float64 and check it against the scale."""
    lo, hi = scale
    if pa.types.is_string(text.type) or pa.types.is_large_string(text.type):
        try:  # fast path; forms such as 'nan' or '-1' fail the range check below
            values = pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            _check_rows(path, text, pc.match_substring_regex(text, _NUM_RE), header,
                        f"{what} is not a number (expected a {what} in {lo:g}..{hi:g})", rows_to_line)
            raise  # pragma: no cover - the regex accepts only what the cast accepts
    else:
        _check_rows(path, text, pc.is_valid(text), header, f"{what} is missing", rows_to_line)
        values = pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False)
    def in_scale(v):
        ok = (v >= lo) & (v <= hi)
        if step:
            ok &= np.abs(v / step - np.rint(v / step)) < 1e-9
        return ok

    if in_scale(_distinct(values)).all():  # checks the few distinct values only
        return values.astype(np.float64, copy=False)
    ok = in_scale(values)
    _check_rows(path, None, pa.array(ok), header,
                f"{what} outside the dataset's scale (expected {lo:g}..{hi:g}" + (f" in steps of {step:g})" if step else ")"),
                rows_to_line)
    return values.astype(np.float64, copy=False)


def _distinct(values: np.ndarray) -> np.ndarray:
    """Distinct values of a float array (hash-based, no sort of the whole array)."""
    return pc.unique(pa.array(values, from_pandas=False)).to_numpy(zero_copy_only=False)


def _open_check(path: Path) -> None:
    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"rating file not found: {path}")
    if path.stat().st_size == 0:
        raise DataFormatError(path, 1, "", "the file is empty (expected rating lines)")


def _read_delimited(path: Path, delimiter: str, ncols: int, skip_rows: int = 0):
    """All columns of a delimited file as string arrays; column-count errors located."""
    import pyarrow.csv as pacsv

    ro = pacsv.ReadOptions(autogenerate_column_names=True, block_size=_BLOCK, skip_rows=skip_rows)
    po = pacsv.ParseOptions(delimiter=delimiter, quote_char=False, ignore_empty_lines=False)
    co = pacsv.ConvertOptions(column_types={f"f{i}": pa.string() for i in range(ncols)},
                              strings_can_be_null=False, quoted_strings_can_be_null=False)
    try:
        table = pacsv.read_csv(path, ro, po, co)
    except pa.ArrowInvalid as exc:
        sep = delimiter.encode()
        found = _first_bad_line(path, lambda line: line.count(sep) == ncols - 1, start=skip_rows + 1)
        if found is None and "Empty CSV" in str(exc):
            raise DataFormatError(path, skip_rows + 1, "", "no rating lines (expected at least one)") from None
        if found is None:
            _raise_if_not_utf8(path)
            raise DataFormatError(path, 0, "", f"unreadable: {exc}") from exc  # pragma: no cover
        raise DataFormatError(path, found[0], found[1], _field_reason(delimiter, ncols)) from None
    if table.num_columns != ncols:
        raise DataFormatError(path, skip_rows + 1, _line_at(path, skip_rows + 1), _field_reason(delimiter, ncols))
    if table.num_rows == 0:
        raise DataFormatError(path, skip_rows + 1, "", "no rating lines (expected at least one)")
    cols = [table.column(i) for i in range(ncols)]  # chunked: combining costs a full copy
    # pyarrow reads an empty line as a row of empty fields: it is an error here
    empty = pc.and_(pc.equal(pc.utf8_length(cols[0]), 0), pc.equal(pc.utf8_length(cols[-1]), 0))
    _check_rows(path, None, pc.invert(empty), skip_rows,
                "empty line: " + _field_reason(delimiter, ncols))
    return cols


#: The largest int64, as text: ids and timestamps must fit.
_INT64_MAX = str(2**63 - 1)


def _fits_int64(arr) -> pa.Array:
    """Whether each decimal string is at most 2^63 - 1 (leading zeros ignored)."""
    t = pc.utf8_ltrim(arr, "0")
    n = pc.utf8_length(t)
    return pc.or_(pc.less(n, len(_INT64_MAX)),
                  pc.and_(pc.equal(n, len(_INT64_MAX)), pc.less_equal(t, _INT64_MAX)))


def _field_reason(delimiter: str, ncols: int) -> str:
    if delimiter == ":":
        return f"wrong number of fields (expected {(ncols + 1) // 2} fields separated by '::')"
    name = {"\t": "tab", ",": "comma"}.get(delimiter, repr(delimiter))
    return f"wrong number of fields (expected {ncols} {name}-separated fields)"


def _finish(path, fmt, u_text, i_text, r_text, rating, timestamp, int_ids: bool) -> RawRatings:
    fp = content_fingerprint(u_text, i_text, r_text)
    if int_ids:
        u_arr, i_arr = pc.cast(u_text, pa.int64()), pc.cast(i_text, pa.int64())
    else:
        u_arr, i_arr = u_text, i_text
    user, user_ids = _encode(u_arr)
    item, item_ids = _encode(i_arr)
    return RawRatings(Path(path), fmt, user, item, user_ids, item_ids, rating, timestamp, fp)


def _int_ids(path, cols, names, header):
    for arr, name in zip(cols, names):
        _check_rows(path, arr, pc.ascii_is_decimal(arr), header,
                    f"{name} is not a non-negative integer id")
        _check_rows(path, arr, _fits_int64(arr), header,
                    f"{name} is beyond 2^63 - 1 (expected an id that fits 64-bit integers)")


def _timestamps(path, arr, header):
    _check_rows(path, arr, pc.ascii_is_decimal(arr), header,
                "timestamp is not an integer (seconds since 1970)")
    _check_rows(path, arr, _fits_int64(arr), header,
                "timestamp is beyond 2^63 - 1 (expected seconds since 1970)")
    return pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False)


# ---------------------------------------------------------------- readers
def read_udata(path, scale=(1, 5), step=1.0) -> RawRatings:
    """ML-100K ``u.data``: ``user<TAB>item<TAB>rating<TAB>timestamp``."""
    path = Path(path)
    _open_check(path)
    u, i, r, t = _read_delimited(path, "\t", 4)
    _int_ids(path, (u, i), ("user id", "item id"), 0)
    rating = _check_ratings(path, r, scale, step, 0)
    return _finish(path, "u.data", u, i, r, rating, _timestamps(path, t, 0), True)


def read_dat(path, scale=(1, 5), step=1.0) -> RawRatings:
    """``ratings.dat`` of ML-1M / ML-10M: ``user::item::rating[::timestamp]``.

    The number of fields (3 or 4) is taken from the first line; every line
    must have the same.
    """
    path = Path(path)
    _open_check(path)
    first = _line_at(path, 1)
    n = len(first.split("::"))
    if n not in (3, 4) or ":" in first.replace("::", ""):
        raise DataFormatError(path, 1, first, "wrong number of fields (expected user::item::rating "
                              "or user::item::rating::timestamp)")
    cols = _read_delimited(path, ":", 2 * n - 1)
    for k in range(1, 2 * n - 1, 2):  # the empty columns between the two colons of '::'
        _check_rows(path, cols[k], pc.equal(cols[k], ""), 0,
                    f"wrong number of fields (expected {n} fields separated by '::')")
    u, i, r = cols[0], cols[2], cols[4]
    _int_ids(path, (u, i), ("user id", "item id"), 0)
    rating = _check_ratings(path, r, scale, step, 0)
    ts = _timestamps(path, cols[6], 0) if n == 4 else None
    return _finish(path, "dat", u, i, r, rating, ts, True)


MOVIELENS_CSV_HEADER = "userId,movieId,rating,timestamp"


def read_movielens_csv(path, scale=(0.5, 5), step=0.5) -> RawRatings:
    """MovieLens ``ratings.csv`` with the header ``userId,movieId,rating,timestamp``."""
    path = Path(path)
    _open_check(path)
    head = _line_at(path, 1)
    if head.strip().lstrip("\ufeff") != MOVIELENS_CSV_HEADER:
        raise DataFormatError(path, 1, head, f"expected the header {MOVIELENS_CSV_HEADER!r}")
    u, i, r, t = _read_delimited(path, ",", 4, skip_rows=1)
    _int_ids(path, (u, i), ("userId", "movieId"), 1)
    rating = _check_ratings(path, r, scale, step, 1)
    return _finish(path, "movielens-csv", u, i, r, rating, _timestamps(path, t, 1), True)


def read_amazon_csv(path, scale=(1, 5), step=1.0) -> RawRatings:
    """Amazon ratings CSV ``user,item,rating,timestamp`` (no header; string ids)."""
    path = Path(path)
    _open_check(path)
    u, i, r, t = _read_delimited(path, ",", 4)
    for arr, name in ((u, "user id"), (i, "item id")):
        _check_rows(path, arr, pc.greater(pc.utf8_length(arr), 0), 0, f"{name} is empty")
    rating = _check_ratings(path, r, scale, step, 0)
    return _finish(path, "amazon-csv", u, i, r, rating, _timestamps(path, t, 0), False)


_YELP_FIELDS = ("user_id", "business_id", "stars", "date")


def _yelp_line_ok(line: bytes) -> bool:
    if not line.strip():
        return True
    try:
        rec = json.loads(line)
    except ValueError:
        return False
    if not isinstance(rec, dict):
        return False
    return (isinstance(rec.get("user_id"), str) and isinstance(rec.get("business_id"), str)
            and isinstance(rec.get("stars"), (int, float)) and not isinstance(rec.get("stars"), bool)
            and isinstance(rec.get("date"), str))


def read_yelp_json(path, scale=(1, 5), step=1.0) -> RawRatings:
    """Yelp ``review.json``: JSON lines with ``user_id``, ``business_id``, ``stars``, ``date``."""
    import pyarrow.json as pajson

    path = Path(path)
    _open_check(path)
    schema = pa.schema([("user_id", pa.string()), ("business_id", pa.string()),
                        ("stars", pa.float64()), ("date", pa.string())])
    po = pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        table = pajson.read_json(path, pajson.ReadOptions(block_size=_BLOCK), po)
    except pa.ArrowInvalid as exc:
        found = _first_bad_line(path, _yelp_line_ok)
        if found is None:  # pragma: no cover
            raise DataFormatError(path, 0, "", f"unreadable JSON lines: {exc}") from exc
        raise DataFormatError(path, found[0], found[1],
                              "expected one JSON object with string user_id, business_id, date "
                              "and numeric stars") from None
    if table.num_rows == 0:
        raise DataFormatError(path, 1, _line_at(path, 1), "no review records (expected JSON lines)")
    if not _one_record_per_line(path, table.num_rows):  # objects sharing a line: locate it
        found = _first_bad_line(path, _yelp_line_ok)
        raise DataFormatError(path, found[0] if found else 0, found[1] if found else "",
                              "expected one JSON object per line") from None
    locate = lambda row: _nth_record(path, row)  # noqa: E731
    cols = {k: table.column(k).combine_chunks() for k in _YELP_FIELDS}
    for k in ("user_id", "business_id", "date"):
        valid = pc.and_(pc.is_valid(cols[k]), pc.greater(pc.utf8_length(cols[k].fill_null("")), 0))
        _check_rows(path, cols[k], valid, 0, f"field {k!r} missing or empty", locate)
    rating = _check_ratings(path, cols["stars"], scale, step, 0, locate, what="stars")
    try:
        ts = pc.cast(cols["date"], pa.timestamp("s"))
    except pa.ArrowInvalid:
        ok = []
        for v in cols["date"].to_pylist():
            try:
                pc.cast(pa.array([v]), pa.timestamp("s"))
                ok.append(True)
            except pa.ArrowInvalid:
                ok.append(False)
        _check_rows(path, None, pa.array(ok), 0, "date is not 'YYYY-MM-DD[ HH:MM:SS]'", locate)
        raise  # pragma: no cover
    ts = ts.cast(pa.int64()).to_numpy(zero_copy_only=False)
    r_text = pc.cast(cols["stars"], pa.string())
    return _finish(path, "yelp-json", cols["user_id"], cols["business_id"], r_text, rating, ts, False)


READERS = {
    "u.data": read_udata,
    "dat": read_dat,
    "movielens-csv": read_movielens_csv,
    "yelp-json": read_yelp_json,
    "amazon-csv": read_amazon_csv,
}


def read_ratings(path, fmt: str, scale=(1, 5), step=1.0) -> RawRatings:
    """Read ``path`` in format ``fmt`` (one of :data:`FORMATS`), checking ratings against ``scale``."""
    if fmt not in READERS:
        raise ValueError(f"unknown rating file format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return READERS[fmt](path, scale=scale, step=step)
