"""The ``phd`` command line.

Every module in this package other than ``_common`` is one subcommand: it
defines ``register(subparsers)``, which adds its parser and sets ``func`` to a
callable taking the parsed arguments and returning an exit code. New
subcommands are added by adding a module; nothing here needs to change.
Command modules import heavy libraries inside their functions, so
``phd --help`` stays fast.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from .. import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="phd",
        description=(
            "phd-book: data, training, evaluation, benchmarks and full reproductions of "
            "'Projected Hamming Dissimilarity for Bit-Level Importance Coding in "
            "Collaborative Filtering' (WWW '21)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"phdlib {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        mod.register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0 if code is None else int(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
