"""The results store's rule for symbolic links: never write or find a run through one out of its root.

The store's root is resolved once (the root itself may be a link). A link at
``<dataset>``, ``<method>`` or ``<key>`` that resolves outside it
(:func:`phdlib.io.link_out`) is refused by a save (:func:`outside_error`: a
:class:`LinkOutsideStore`, an ``OSError`` naming the run, the link and its
target, checked just before the folders are made; a store that cannot be
written only warns in :func:`phdlib.experiments.training.store_run`), and a
reader that finds one reports it and treats the run as absent
(:func:`reached_from_outside`). Links that stay inside the root are followed.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

from .. import io as _io

__all__ = ["LinkOutsideStore", "outside_error", "reached_from_outside"]


class LinkOutsideStore(OSError):
    """A folder of the store that is a symbolic link leading out of the store's root.

    Attributes ``path`` (the run), ``link``, ``target`` (where it points) and
    ``root`` (the store's resolved root)."""

    path = link = target = root = None


def outside_error(path, link, target, root, doing: str = "write") -> LinkOutsideStore:
    """The :class:`LinkOutsideStore` for ``doing`` (``"write"``, ``"read"``) the run at
    ``path``, which ``link`` (a symbolic link to ``target``) leads out of store ``root``."""
    exc = LinkOutsideStore(
        f"cannot {doing} the run {path}: {link} is a symbolic link to {target}, outside the "
        f"results store {root}; expected a folder inside the store (replace the link by a "
        f"folder, or make the store's root itself the link)")
    exc.path, exc.link, exc.target, exc.root = Path(path), Path(link), Path(target), Path(root)
    return exc


def reached_from_outside(path: Path, root: Path, then: str = "", base: Path | None = None,
                         memo: dict | None = None) -> bool:
    """Whether the run folder ``path`` is reached through a symbolic link out of store
    ``root``; if so, a ``RuntimeWarning`` names the link, followed by ``then`` (what the
    reader does instead, e.g. ``"; it will be recomputed"``), at the reader's caller.

    base, memo: :func:`phdlib.io.link_out`'s resolved root and cache, for a reader
    that checks many runs (None: resolved here)."""
    out = _io.link_out(path, Path(root), base, memo)
    if out is None:
        return False
    exc = outside_error(path, *out, os.path.realpath(root), "read")
    warnings.warn(f"phdlib.results: {exc}{then}", RuntimeWarning, stacklevel=3)
    return True
