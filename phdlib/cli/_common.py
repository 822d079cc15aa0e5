"""Helpers shared by the ``phd`` subcommands."""
from __future__ import annotations

import json
import math
import sys
from typing import Any

import numpy as np


def add_json_flag(parser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object on stdout instead of text"
    )


def _default(o: Any):
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


def fail(message: str, code: int = 2) -> int:
    """Print ``phd: error: message`` on stderr and return ``code``."""
    print(f"phd: error: {message}", file=sys.stderr)
    return code
