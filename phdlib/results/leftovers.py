"""What a killed or losing save leaves in the results store, and the rule that removes it.

A save (:func:`phdlib.results.store.save`) writes a run into a temporary folder
``.<key>.<random>.tmp`` beside its place and renames it into place; it sets a
corrupt copy already there aside as ``.<key>.corrupt-<random>``. A save killed
half-way leaves its temporary folder behind, and set-aside copies stay until
removed. :func:`clean`, called by every save on its ``<dataset>/<method>``
folder, removes:

- a temporary folder once no one holds its lock (its writer is gone: a save
  holds an exclusive ``flock`` on it until the run is published, which the
  kernel drops when the process dies, even by SIGKILL) and it is older than
  :data:`phdlib.io.GRACE_SECONDS`; never a live save's. Where the lock cannot
  be tested (a file system without ``flock``): once older than
  :data:`STALE_SECONDS`;
- a set-aside copy once older than :data:`STALE_SECONDS`.

Only those two name patterns (:data:`TEMPORARY`, :data:`SET_ASIDE`) are
touched, never other files, links or names. Folders whose names start with
``.`` are never runs.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import time
from pathlib import Path

from .. import io as _io

__all__ = ["STALE_SECONDS", "TEMPORARY", "SET_ASIDE", "clean"]

#: Set-aside folders, and temporary folders whose lock cannot be tested, older than
#: this (seconds) are removed by :func:`clean`.
STALE_SECONDS = 3600
#: Names of a save's temporary folder and of a set-aside corrupt copy (``tempfile``'s
#: random part); :func:`clean` touches no other name.
TEMPORARY = re.compile(rf"\.[0-9a-f]{{16}}\.{_io.RANDOM}\.tmp")
SET_ASIDE = re.compile(rf"\.[0-9a-f]{{16}}\.corrupt-{_io.RANDOM}")


def clean(folder: Path, older_than: float = STALE_SECONDS,
          grace: float | None = None) -> list[Path]:
    """Remove the leftovers of killed saves and the old set-aside copies in ``folder``.

    - ``.<key>.<random>.tmp``: a save's temporary folder, removed when no one
      holds its lock (its writer is gone) and it is older than ``grace``
      seconds (default :data:`phdlib.io.GRACE_SECONDS`); a live save's is never
      removed. Where the lock cannot be tested: when older than ``older_than``.
    - ``.<key>.corrupt-<random>``: a corrupt copy set aside by :func:`~phdlib.results.store.save`,
      removed when older than ``older_than`` seconds.

    Nothing else (another name, a link, a file) is touched. Returns the removed paths.
    """
    removed = _io.clean_temporaries(folder, TEMPORARY, directory=True, grace=grace,
                                    stale=older_than)
    now = time.time()
    try:
        names = [n for n in os.listdir(folder) if SET_ASIDE.fullmatch(n)]
    except OSError:
        return removed
    for n in names:
        p = Path(folder) / n
        try:
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode) and now - st.st_mtime > older_than:
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p)
        except OSError:
            continue
    return removed
