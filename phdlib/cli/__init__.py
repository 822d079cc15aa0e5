"""The ``phd`` command line.

Every module in this package other than ``options`` is one subcommand: it
defines ``register(subparsers)``, which adds its parser and sets ``func`` to a
callable taking the parsed arguments and returning an exit code. New
subcommands are added by adding a module; nothing here needs to change.
Command modules import heavy libraries (NumPy, pandas, Numba, PyTorch,
:mod:`phdlib.methods`, :mod:`phdlib.experiments`) inside their functions and
take the names they offer as choices from :mod:`phdlib.names`, which imports
nothing, so ``phd --help`` and ``phd COMMAND --help`` stay fast
(``tests/test_cli_startup.py`` checks what they import).

One error boundary (:func:`main`): a user's mistake (a bad option value, a
missing or malformed file, a configuration that cannot be trained) is one
line ``phd: error: ...`` on stderr and exit code 2; anything else is one line
``phd: error: internal error ...`` and exit code 1. ``--debug`` (anywhere on
the command line) shows the traceback instead. A closed output pipe (``phd
... | head``) ends quietly with exit code 141, as for SIGPIPE.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import shlex
import sys

from .. import __version__
from .options import one_line as _one_line


class Parser(argparse.ArgumentParser):
    """argparse with its errors as one ``phd: error:`` line naming the option (exit 2)."""

    def error(self, message):  # noqa: D401 - argparse's hook
        self.exit(2, f"phd: error: {self.prog.split(' ', 1)[-1] if ' ' in self.prog else ''}"
                     f"{': ' if ' ' in self.prog else ''}{_one_line(message)} "
                     f"(see {self.prog} --help)\n")


#: Exceptions that are a user's mistake (bad values, files, configurations, resources).
USER_ERRORS = (ValueError, KeyError, TypeError, ArithmeticError, OSError, MemoryError,
               LookupError)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="phd",
        description=(
            "phd-book: data, training, evaluation, benchmarks and full reproductions of "
            "'Projected Hamming Dissimilarity for Bit-Level Importance Coding in "
            "Collaborative Filtering' (WWW '21)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"phdlib {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error (also accepted after the command)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, "register"):  # a command; options.py is what the commands share
            mod.register(sub)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"phd: warning: {_one_line(message)}", file=sys.stderr)


def main(argv=None) -> int:
    import warnings

    warnings.showwarning = _show_warning
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    from . import options

    options.DEBUG = debug
    parser = build_parser()
    args = parser.parse_args(argv)
    args.command_line = shlex.join(["phd"] + argv)  # provenance of what a command records
    try:
        code = args.func(args)
        sys.stdout.flush()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of our output went away (e.g. `| head`)
        import os

        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141
    except USER_ERRORS as exc:
        if debug:
            raise
        from .options import error_message

        print(f"phd: error: {_one_line(error_message(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the boundary: no traceback without --debug
        if debug:
            raise
        print(f"phd: error: internal error ({type(exc).__name__}: {_one_line(exc)}); run again "
              f"with --debug for the traceback", file=sys.stderr)
        return 1
    return 0 if code is None else int(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
