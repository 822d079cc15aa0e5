"""Your own ratings: any CSV, TSV or Parquet file, with a column mapping and a rating scale.

::

    ds = load_file("ratings.csv", {"user": "customer", "item": "sku", "rating": "stars"},
                   scale=(1, 5))
    split = split_dataset(ds, seed=0)

The file goes through the same steps as the named datasets (the first rating
of a repeated (user, item) kept, users and items with fewer than
``min_ratings`` ratings removed, re-indexed; the content fingerprint over
``user::item::rating`` lines), and every malformed row is an error naming the
file, the line (CSV/TSV: the line number in the file, header included;
Parquet: the row number; quoted fields may span lines, blank lines count as
rows), the column and what was expected. Ids may be any
strings (CSV/TSV ids are read as text and kept as text) or, in Parquet,
integers; ``Dataset.user_ids[k]`` / ``item_ids[k]`` map the new dense ids back.

The dataset is named ``file-<stem>`` after the file, and its preprocessing
records the column mapping and the scale (so they are part of the split's
fingerprint and of every run's key).
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import DataError, DataFormatError, DataNotFoundError
from .lines import raise_if_not_utf8
from .formats import (RawRatings, _check_ratings, _check_rows, _encode, _fits_int64,
                      content_fingerprint)

#: The roles a column can play; ``time`` is optional.
ROLES = ("user", "item", "rating", "time")
REQUIRED = ("user", "item", "rating")
#: File suffixes and how they are read.
SUFFIXES = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".parquet": None, ".pq": None}


def parse_columns(text: str, required=REQUIRED) -> dict[str, str]:
    """``"user=a,item=b,rating=c[,time=d]"`` -> ``{"user": "a", ...}``; ``ValueError`` naming
    the part that is wrong. required: the roles that must be mapped (a list of seen items
    needs only ``("user", "item")``)."""
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        role, eq, col = part.partition("=")
        role, col = role.strip(), col.strip()
        if not eq or not col:
            raise ValueError(f"--columns: {part!r} is not ROLE=COLUMN (e.g. user=userId)")
        if role not in ROLES:
            raise ValueError(f"--columns: unknown role {role!r}; expected {', '.join(ROLES)}")
        if role in out:
            raise ValueError(f"--columns: role {role!r} given twice")
        other = next((r for r, c in out.items() if c == col), None)
        if other is not None:
            raise ValueError(f"--columns: column {col!r} is mapped to both {other} and {role}; "
                             f"each role needs its own column")
        out[role] = col
    missing = [r for r in required if r not in out]
    if missing:
        raise ValueError(f"--columns: no column for {', '.join(missing)} (expected "
                         + ",".join(f"{r}=..." for r in required)
                         + ("[,time=...]" if "rating" in required else "") + ")")
    return out


def parse_scale(text: str) -> tuple[float, float]:
    """``"1,5"`` -> ``(1.0, 5.0)``; ``ValueError`` unless two finite numbers, low < high."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        lo, hi = (float(p) for p in parts)
    except ValueError:
        raise ValueError(f"--scale {text!r}: expected LOW,HIGH such as 1,5") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"--scale {text!r}: expected two finite numbers with LOW < HIGH")
    return lo, hi


def dataset_name(path) -> str:
    """``file-<stem>``: the file's stem, lower case, other than ``[a-z0-9_-]`` as ``-``."""
    stem = re.sub(r"[^a-z0-9_-]+", "-", Path(path).stem.lower()).strip("-_") or "ratings"
    return f"file-{stem[:60]}"


def _table(path: Path, columns: dict, sep: str | None):
    wanted = list(dict.fromkeys(columns.values()))
    suffix = path.suffix.lower()
    if sep is None and suffix not in SUFFIXES:
        raise DataError(f"{path}: unknown file type {suffix!r}; expected one of "
                        f"{', '.join(SUFFIXES)} (or give the separator)")
    if sep is None and SUFFIXES[suffix] is None:
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise DataError(f"{path}: not a readable Parquet file ({exc})") from None
        _check_present(path, wanted, schema.names)
        return pq.read_table(path, columns=wanted), True
    import pyarrow.csv as pacsv

    delim = sep or SUFFIXES[suffix]
    names = _header(path, delim)
    _check_present(path, wanted, names)
    try:
        t = pacsv.read_csv(
            path, parse_options=pacsv.ParseOptions(delimiter=delim, ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(
                include_columns=wanted, column_types={c: pa.string() for c in wanted},
                strings_can_be_null=False))
    except pa.ArrowInvalid as exc:
        if "Empty CSV" in str(exc):
            raise DataFormatError(path, 2, "", "no rating rows after the header") from None
        raise_if_not_utf8(path)
        for lineno, _, fields in _records(path, delim):
            if len(fields) != len(names):
                raise DataFormatError(path, lineno, _line(path, lineno),
                                      f"{len(fields)} fields; expected "
                                      f"{len(names)} like the header") from None
        raise DataFormatError(path, 0, "", f"unreadable ({' '.join(str(exc).split())})") \
            from None
    return t, False


def _records(path: Path, delim: str):
    """(first line number, text, fields) of every record after the header, as the csv
    module reads them (quoted fields may span lines; a blank line is a record)."""
    import csv

    with open(path, encoding="utf-8-sig", newline="") as f:
        lines = iter(f)
        reader = csv.reader(lines, delimiter=delim)
        next(reader, None)
        end = reader.line_num
        for fields in reader:
            start, end = end + 1, reader.line_num
            yield start, "", fields


def _record_line(path: Path, delim: str, row: int) -> tuple[int, str]:
    """(line number, text) of the 0-based data ``row`` (error path only)."""
    for k, (lineno, _, _) in enumerate(_records(path, delim)):
        if k == row:
            return lineno, _line(path, lineno)
    return 0, ""


def _line(path: Path, lineno: int) -> str:
    """Text of 1-based line ``lineno`` as the csv module counts lines (LF, CRLF or CR
    alone end a line; error path only)."""
    import itertools

    with open(path, encoding="utf-8-sig", errors="replace", newline=None) as f:
        for text in itertools.islice(f, lineno - 1, lineno):
            return text.rstrip("\n")
    return ""


def _header(path: Path, delim: str) -> list[str]:
    """The column names of a delimited file's header (its first record, read as the csv
    module does: LF, CRLF or CR line endings, quoted names)."""
    import csv

    try:  # bad bytes after the header are located later, by line
        with open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as f:
            names = next(csv.reader(f, delimiter=delim), [])
    except csv.Error as exc:
        raise DataFormatError(path, 1, "", f"unreadable header ({exc})") from None
    if any("\udc80" <= ch <= "\udcff" for name in names for ch in name):
        raise DataFormatError(path, 1, "", "the header line is not UTF-8 text")
    return names


def _check_present(path, wanted, names) -> None:
    """Every wanted column is in ``names`` exactly once (a repeated name is ambiguous)."""
    missing = [c for c in wanted if c not in names]
    if missing:
        raise DataError(f"{path}: no column {', '.join(map(repr, missing))}; the file has "
                        f"{', '.join(map(repr, names)) or 'no columns'}")
    for c in wanted:
        at = [k + 1 for k, n in enumerate(names) if n == c]
        if len(at) > 1:
            raise DataError(f"{path}: the header names column {c!r} {len(at)} times (columns "
                            f"{' and '.join(map(str, at))}); expected each mapped column once: "
                            f"rename the others")


def read_file(path, columns: dict, scale, sep: str | None = None) -> RawRatings:
    """Read ``path`` with ``columns`` (role -> column name) and ``scale`` (low, high).

    Returns :class:`~phdlib.data.formats.RawRatings` whose ids are the file's
    (strings for CSV/TSV). Raises :class:`DataFormatError` naming the line (row)
    and column of the first bad value, :class:`DataError` for a missing column
    or an unreadable file, :class:`DataNotFoundError` when there is no file.
    """
    path = Path(path)
    _check_file(path, sep)
    if path.stat().st_size == 0:
        raise DataFormatError(path, 1, "", "the file is empty (expected a header and rating rows)")
    with _boundary(path):
        return _read(path, columns, scale, sep)


def _check_file(path: Path, sep) -> None:
    """A regular file is there and ``sep`` is one character; else an error naming it."""
    what = "a ratings file (CSV, TSV or Parquet)"
    if path.is_dir():
        raise DataError(f"{path}: is a folder; expected {what}")
    if not path.exists():
        raise DataNotFoundError(f"ratings file not found: {path}")
    if not path.is_file():
        raise DataError(f"{path}: is not a regular file (a device, FIFO or socket); expected "
                        f"{what}")
    _check_sep(sep)


@contextmanager
def _boundary(path: Path):
    """The error boundary of reading a user's file: our own errors pass; any other
    failure becomes a :class:`DataError` naming the file (never an internal error)."""
    try:
        yield
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - the boundary
        text = " ".join(str(exc).split())[:300]
        raise DataError(f"{path}: unreadable as a ratings file ({type(exc).__name__}: {text})") \
            from exc


def _check_sep(sep) -> None:
    if sep is not None and len(sep) != 1:
        raise ValueError(f"--sep {sep!r}: expected one character (e.g. ',' or ';'; a tab as "
                         f"$'\\t' in bash)")


def read_pairs(path, columns: dict, sep: str | None = None) -> tuple[list, list]:
    """The (user, item) pairs of a ratings file, ids as text in file order (e.g. the
    items each user has seen). ``columns`` maps ``user`` and ``item`` (other roles are
    ignored). Errors as :func:`read_file`: a missing value or an unreadable file names
    the file, the line (row) and the column."""
    path = Path(path)
    cols = {r: c for r, c in columns.items() if r in ("user", "item")}
    if set(cols) != {"user", "item"}:
        raise ValueError(f"{path}: the columns name no {' or '.join(sorted({'user', 'item'} - set(cols)))} "
                         f"column (expected user=...,item=...)")
    _check_file(path, sep)
    with _boundary(path):
        table, parquet = _table(path, cols, sep)
        delim = sep or SUFFIXES.get(path.suffix.lower())

        def rows_to_line(row):
            return (row + 1, f"(Parquet row {row + 1})") if parquet else \
                _record_line(path, delim, row)

        out = []
        for role in ("user", "item"):
            arr = _column(path, table, cols, role, 0 if parquet else 1, rows_to_line)
            out.append((arr if pa.types.is_string(arr.type) else pc.cast(arr, pa.string()))
                       .to_pylist())
        return out[0], out[1]


#: What each role's column may hold (pyarrow type predicates), and its words for errors.
_TYPES = {
    "user": ((pa.types.is_integer, pa.types.is_string, pa.types.is_large_string),
             "text or integers"),
    "item": ((pa.types.is_integer, pa.types.is_string, pa.types.is_large_string),
             "text or integers"),
    "rating": ((pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal,
                pa.types.is_string, pa.types.is_large_string), "numbers or text"),
    "time": ((pa.types.is_integer, pa.types.is_timestamp, pa.types.is_date,
              pa.types.is_string, pa.types.is_large_string),
             "integers (seconds since 1970), dates, date-times or text"),
}


def _column(path, table, columns, role, header, rows_to_line) -> pa.Array:
    """The role's column, dictionary-decoded, of an allowed type and with no missing value."""
    arr = table.column(columns[role]).combine_chunks()
    if pa.types.is_dictionary(arr.type):  # pandas categoricals
        arr = arr.dictionary_decode()
    what = f"{role} column {columns[role]!r}"
    ok, expected = _TYPES[role]
    if not any(f(arr.type) for f in ok):
        raise DataError(f"{path}: {what} has type {arr.type}; expected {expected}")
    _check_rows(path, arr, pc.is_valid(arr), header, f"{what} is missing", rows_to_line)
    return arr


def _read(path: Path, columns: dict, scale, sep) -> RawRatings:
    table, parquet = _table(path, columns, sep)
    delim = sep or SUFFIXES.get(path.suffix.lower())
    if table.num_rows == 0:
        raise DataFormatError(path, 2, "", "no rating rows after the header")
    header = 0 if parquet else 1

    def rows_to_line(row):
        if not parquet:
            return _record_line(path, delim, row)
        vals = {r: table.column(c)[row].as_py() for r, c in columns.items()}
        return row + 1, f"(Parquet row {row + 1}) {vals}"

    def text(role):
        arr = _column(path, table, columns, role, header, rows_to_line)
        what = f"{role} column {columns[role]!r}"
        s = arr if pa.types.is_string(arr.type) else pc.cast(arr, pa.string())
        if role in ("user", "item"):
            _check_rows(path, s, pc.greater(pc.utf8_length(pc.utf8_trim_whitespace(s)), 0),
                        header, f"{what} is empty", rows_to_line)
            _check_rows(path, s, pc.invert(pc.match_substring(s, "\x00")), header,
                        f"{what} holds a NUL character (expected printable text)", rows_to_line)
        return arr, s

    u_arr, u_text = text("user")
    i_arr, i_text = text("item")
    _, r_text = text("rating")
    rating = _check_ratings(path, r_text, scale, 0.0, header, rows_to_line,
                            what=f"rating (column {columns['rating']!r})")
    stamp = _times(path, table, columns, header, rows_to_line) if "time" in columns else None
    user, user_ids = _encode(u_arr if pa.types.is_integer(u_arr.type) else u_text)
    item, item_ids = _encode(i_arr if pa.types.is_integer(i_arr.type) else i_text)
    fp = content_fingerprint(u_text, i_text, r_text)
    return RawRatings(path, "parquet" if parquet else "delimited", user, item,
                      user_ids.astype(str) if user_ids.dtype == object else user_ids,
                      item_ids.astype(str) if item_ids.dtype == object else item_ids,
                      rating, stamp, fp)


def _times(path, table, columns, header, rows_to_line) -> np.ndarray:
    """The time column as int64 seconds (integers as given; dates and date-times converted).

    Every bad row is located: an integer beyond int64, a text that is neither an
    integer nor a date, a date that does not exist (2020-13-45)."""
    arr = _column(path, table, columns, "time", header, rows_to_line)
    what = f"time column {columns['time']!r}"
    if pa.types.is_integer(arr.type):
        if pa.types.is_unsigned_integer(arr.type):
            _check_rows(path, arr, pc.less_equal(arr, pa.scalar(2**63 - 1, arr.type)), header,
                        f"{what} is beyond 2^63 - 1 (expected seconds since 1970)", rows_to_line)
        return arr.to_numpy(zero_copy_only=False).astype(np.int64)
    if pa.types.is_timestamp(arr.type) or pa.types.is_date(arr.type):
        seconds = pc.cast(arr, pa.timestamp("s"), safe=False)  # sub-second parts dropped
        return pc.cast(seconds, pa.int64()).to_numpy(zero_copy_only=False)
    s = arr if pa.types.is_string(arr.type) else pc.cast(arr, pa.string())
    s = pc.utf8_trim_whitespace(s)
    integer = pc.match_substring_regex(s, r"^-?\d+$")
    date = pc.match_substring_regex(s, r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2})?)?$")
    # the first row decides which the column holds; a row of the other kind is an error
    ints = bool(integer[0].as_py())
    _check_rows(path, s, integer if ints else date, header,
                f"{what} is neither an integer nor a date (expected "
                + ("seconds since 1970 like the first row" if ints else
                   "YYYY-MM-DD[ HH:MM[:SS]] like the first row") + ")", rows_to_line)
    if ints:
        _check_rows(path, s, _fits_int64(pc.utf8_ltrim(s, "-")), header,
                    f"{what} is beyond 64-bit integers (expected seconds since 1970)",
                    rows_to_line)
        return pc.cast(s, pa.int64()).to_numpy(zero_copy_only=False)
    parsed = []
    for f in _DATE_FORMATS:  # a form counts only where it reads back the same text:
        p = pc.strptime(s, format=f, unit="s", error_is_null=True)  # Feb 30 parses as Mar 1
        same = pc.equal(pc.strftime(p, format=f), s).fill_null(False)
        parsed.append(pc.if_else(same, p, pa.scalar(None, p.type)))
    stamp = pc.coalesce(*parsed)
    _check_rows(path, s, pc.is_valid(stamp), header,
                f"{what} is not a real date or time (expected YYYY-MM-DD[ HH:MM[:SS]])",
                rows_to_line)
    return pc.cast(stamp, pa.int64()).to_numpy(zero_copy_only=False)


#: The date and date-time forms of a text time column (tried in turn on each row).
_DATE_FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M",
                 "%Y-%m-%dT%H:%M")
