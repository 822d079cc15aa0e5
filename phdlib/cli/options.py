"""Helpers shared by the ``phd`` subcommands."""
from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from .. import names as _names


def add_json_flag(parser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object on stdout instead of text"
    )


def _default(o: Any):
    """``json.dump``'s ``default``: NumPy scalars and arrays, and paths.

    NumPy is imported here, not at the top: every subcommand imports this
    module, and ``phd --help`` must not pay for NumPy.
    """
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return None if not math.isfinite(float(o)) else float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if hasattr(o, "__fspath__"):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def dump_json(obj: Any, stream=None) -> None:
    """Write ``obj`` as indented JSON (NumPy scalars and arrays converted)."""
    stream = stream or sys.stdout
    json.dump(obj, stream, indent=2, default=_default)
    stream.write("\n")


def error_message(exc: BaseException) -> str:
    """The text of a user error: a KeyError's message without the quotes its str() adds."""
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


#: Longest error message shown (a longer one is cut in the middle).
MAX_MESSAGE = 800


def one_line(message) -> str:
    """``message`` on one line (whitespace runs as one space), cut in the middle beyond
    :data:`MAX_MESSAGE` characters saying how long it was."""
    text = " ".join(str(message).split())
    if len(text) > MAX_MESSAGE:
        text = f"{text[:MAX_MESSAGE - 200]} ... ({len(text):,} characters) ... {text[-150:]}"
    return text


#: Set by ``phd --debug``: errors show their traceback.
DEBUG = False


def fail(message: str, code: int = 2) -> int:
    """Print ``phd: error: message`` on stderr and return ``code``.

    Called while handling an exception under ``--debug``, re-raises it instead.
    """
    if DEBUG and sys.exc_info()[1] is not None:
        raise sys.exc_info()[1]
    print(f"phd: error: {one_line(message)}", file=sys.stderr)
    return code


def name_value(option: str, item: str, word: str = "NAME") -> tuple[str, object]:
    """``NAME=VALUE`` of a repeatable option (``--set``, ``--param``) as (name, value): the
    value read as YAML (numbers, booleans, lists), ``1e-3`` a number as in Python (YAML 1.1
    reads it as text); ``ValueError`` naming the option and the item (shown cut if long)."""
    import re

    import yaml

    shown = repr(item) if len(item) <= 80 else f"{item[:60]!r}... ({len(item):,} characters)"
    name, eq, text = item.partition("=")
    if not eq:
        raise ValueError(f"{option} expects {word}=VALUE, got {shown}")
    if not name.strip():
        raise ValueError(f"{option} expects {word}=VALUE, got {shown} (no {word.lower()})")
    try:
        value = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: an integer of over 4,300 digits
        raise ValueError(f"{option} {shown}: the value is not a YAML scalar or list "
                         f"({' '.join(str(exc).split())[:200]})") from None
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+\s*", value):
        value = float(value)
    if isinstance(value, (list, dict)) and _recursive(value):
        raise ValueError(f"{option} {shown}: the value refers to itself (a YAML alias loop)")
    return name.strip(), value


def _recursive(value, seen=()) -> bool:
    if id(value) in seen:
        return True
    items = value.values() if isinstance(value, dict) else value
    return any(isinstance(v, (list, dict)) and _recursive(v, seen + (id(value),)) for v in items)


#: The largest seed accepted (seeds are 64-bit signed integers everywhere).
MAX_SEED = 2**63 - 1
#: The widest code accepted (:data:`phdlib.names.MAX_BITS`).
MAX_BITS = _names.MAX_BITS


def int_in(lo: int, hi: int | None = None):
    """An argparse ``type``: an integer in ``lo..hi`` (no upper bound when ``hi`` is None)."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if v < lo or (hi is not None and v > hi):
            span = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise argparse.ArgumentTypeError(f"expected an integer {span}, got {text!r}")
        return v
    parse.__name__ = "integer"
    return parse


def positive_float(text: str) -> float:
    """An argparse ``type``: a finite number >= 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return v


#: The longest cell limit the kernel client can wait for (its waits take whole
#: seconds and overflow past about 24 days).
MAX_CELL_SECONDS = 2_000_000


def float_above_zero(text: str) -> float:
    """An argparse ``type``: a finite number above 0 (e.g. seconds of a time limit)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number above 0, got {text!r}")
    return v


def seconds_above_zero(text: str) -> int:
    """An argparse ``type``: whole seconds, 1 to :data:`MAX_CELL_SECONDS` (a
    fraction is rounded up: the notebook client takes whole seconds)."""
    try:
        v = float_above_zero(text)
    except argparse.ArgumentTypeError:
        v = math.nan
    if not v <= MAX_CELL_SECONDS:
        raise argparse.ArgumentTypeError(
            f"expected seconds from 1 to {MAX_CELL_SECONDS:,}, got {text!r}")
    return math.ceil(v)


SEED = int_in(0, MAX_SEED)
BITS = int_in(1, MAX_BITS)


def input_file_problem(option: str, path, expected: str) -> str | None:
    """Why ``path`` cannot be read as the user's file for ``option``, as ``OPTION PATH:
    ...; expected EXPECTED``, or None (an empty path, none there, a folder, a device
    or FIFO, which would block or never end)."""
    import os
    import stat
    from pathlib import Path

    if str(path) in ("", "."):
        return f"{option} {str(path)!r}: empty; expected {expected}"
    p = Path(path)
    if not p.exists():
        return f"{option} {path}: file not found (expected {expected})"
    if p.is_dir():
        return f"{option} {path}: is a folder; expected {expected}"
    if not stat.S_ISREG(os.stat(p).st_mode):
        return f"{option} {path}: is not a regular file (a device, FIFO or socket); expected {expected}"
    return None


def output_file_problem(option: str, path, make_folders: bool = True) -> str | None:
    """Why ``path`` cannot be written as a file, as ``OPTION PATH: ...`` (checked
    before long work, so that it does not fail at the end), or None.
    make_folders: the writer creates missing folders (:func:`phdlib.io.atomic_write`
    does), so the nearest folder that exists must take them; otherwise the
    file's own folder must exist."""
    import os
    from pathlib import Path

    p = Path(path)
    if str(path) in ("", "."):
        return f"{option} {path!r}: empty; give a file path"
    if p.is_dir():
        return f"{option} {path}: is a folder; give a file path"
    if os.path.lexists(p) and p.exists() and not p.is_file():
        return (f"{option} {path}: is not a regular file (a device, FIFO or socket), which "
                f"the output would replace; give a file path")
    parent = p.absolute().parent
    if make_folders:
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
    if not parent.exists():
        return f"{option} {path}: the folder {parent} does not exist"
    if not parent.is_dir():
        return f"{option} {path}: {parent} is a file, not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{option} {path}: cannot write in the folder {parent}"
    return None


def dask_address(text: str) -> str:
    """An argparse ``type``: a Dask scheduler address ``[SCHEME://]HOST:PORT``
    (``tcp``, the default, ``tls``, ``ws``, ``wss``, ``ucx`` or ``ucxx``; the
    port 1 to 65535; an IPv6 host in brackets) or ``inproc://...``."""
    import re

    if re.fullmatch(r"(?i)inproc://\S+", text):
        return text
    m = re.fullmatch(r"(?i)(?:(tcp|tls|ws|wss|ucx|ucxx)://)?"
                     r"(\[[0-9a-fA-F:.]+(?:%\w+)?\]|[A-Za-z0-9_.-]+):(\d+)", text)
    if not m or not 1 <= int(m.group(3)) <= 65535:
        raise argparse.ArgumentTypeError(
            f"expected a scheduler address tcp://HOST:PORT (e.g. tcp://10.0.0.5:8786), "
            f"got {text!r}")
    return text
