"""Errors raised by :mod:`phdlib.data`, each naming what was wrong and where."""
from __future__ import annotations

from pathlib import Path


class DataError(ValueError):
    """Base class of the data errors (a ``ValueError``)."""


class DataFormatError(DataError):
    """A malformed rating file: names the file, the 1-based line number and the line.

    Attributes: ``path`` (Path), ``lineno`` (int, 1-based; 0 when no line applies),
    ``line`` (str, without its newline), ``reason`` (str: what was expected).
    """

    #: Lines longer than this are shown cut (their start and end, and their length).
    SHOW = 160

    def __init__(self, path, lineno: int, line: str, reason: str):
        self.path = Path(path)
        self.lineno = int(lineno)
        if len(line) > self.SHOW:
            line = f"{line[:100]}...({len(line):,} characters)...{line[-40:]}"
        self.line = line
        self.reason = reason
        super().__init__(f"{self.path}, line {self.lineno}: {reason}; the line reads {line!r}")


class FingerprintMismatch(DataError):
    """The content fingerprint of a file is not the known one for its dataset."""


class DataNotFoundError(FileNotFoundError):
    """No copy of a dataset was found in any of the places searched."""
