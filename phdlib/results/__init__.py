"""The results store (above the methods): every trained run, content-addressed.

:mod:`~phdlib.results.store` saves and loads runs under a key of method,
dataset, bits, seed, config and data fingerprint, verifies every file on read,
and never serves a corrupt one; :mod:`~phdlib.results.leftovers` removes what
killed saves leave behind (:func:`clean`), :mod:`~phdlib.results.links` holds the
rule for symbolic links out of the store (:class:`LinkOutsideStore`), and
:mod:`~phdlib.results.provenance` records where a result came from (the git
commit). Their names are re-exported here so that ``from phdlib import results``
reads as before.
"""
from .leftovers import SET_ASIDE, STALE_SECONDS, TEMPORARY, clean
from .links import LinkOutsideStore
from .store import (FILES, CorruptRun, Run, check_name, count, find, index, load, results_dir,
                    run_key, run_path, save, stored, verify)

__all__ = ["FILES", "SET_ASIDE", "STALE_SECONDS", "TEMPORARY", "CorruptRun",
           "LinkOutsideStore", "Run", "check_name", "clean", "count", "find", "index", "load",
           "results_dir", "run_key", "run_path", "save", "stored", "verify"]
