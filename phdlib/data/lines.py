"""Finding the line of a rating file that an error is on (error paths only).

The readers of :mod:`phdlib.data.formats` parse a file in one vectorised
pass; when that pass rejects the file, these helpers walk its lines in
Python to name the first offending line: by number, by a predicate, or by
record index (JSON lines, where blank lines are not records).
"""
from __future__ import annotations

import itertools
from pathlib import Path

from .errors import DataFormatError


def line_at(path: Path, lineno: int) -> str:
    """Text of 1-based line ``lineno`` (error path only)."""
    with open(path, "rb") as f:
        for raw in itertools.islice(f, lineno - 1, lineno):
            return raw.rstrip(b"\r\n").decode("utf-8", "replace")
    return ""


def first_bad_line(path: Path, ok, start: int = 1):
    """First (lineno, text) from line ``start`` on for which ``ok(bytes)`` is false."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if lineno < start:
                continue
            line = raw.rstrip(b"\r\n")
            if not ok(line):
                return lineno, line.decode("utf-8", "replace")
    return None


def is_utf8(line: bytes) -> bool:
    """Whether the bytes of one line decode as UTF-8."""
    try:
        line.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def raise_if_not_utf8(path: Path) -> None:
    """A :class:`DataFormatError` at the first line that is not UTF-8 text, if any."""
    found = first_bad_line(path, is_utf8)
    if found is not None:
        raise DataFormatError(path, found[0], found[1], "not valid UTF-8 text") from None


def nth_record(path: Path, row: int):
    """(lineno, text) of the 0-based ``row``-th non-blank line (error path only)."""
    k = -1
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip(b"\r\n")
            if line.strip():
                k += 1
                if k == row:
                    return lineno, line.decode("utf-8", "replace")
    return 0, ""  # pragma: no cover


def one_record_per_line(path: Path, records: int) -> bool:
    """Whether ``records`` equals the non-blank lines of ``path`` (fast newline count first)."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    if records == n + (last != b"\n"):
        return True
    with open(path, "rb") as f:  # blank lines, or objects sharing a line: count exactly
        return records == sum(1 for raw in f if raw.strip())
