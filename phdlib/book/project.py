"""The book's project: its root folder, its table of contents and its chapters.

The root is the folder holding ``_toc.yml`` and ``_config.yml``
(:func:`project_root`); the chapters are the ``.md`` files ``_toc.yml``
lists, in its order (:func:`chapters`); a chapter with a ``kernelspec`` in
its front matter is a notebook to execute (:func:`is_notebook`).

Both the driver (:mod:`phdlib.book`) and the site build
(:mod:`phdlib.book.site`) import this module; it imports neither.
"""
from __future__ import annotations

from pathlib import Path

import yaml


def project_root(start: Path | None = None) -> Path:
    """The directory holding ``_toc.yml``, searched upwards from ``start``."""
    p = Path(start or Path.cwd()).resolve()
    for d in (p, *p.parents):
        if (d / "_toc.yml").is_file() and (d / "_config.yml").is_file():
            return d
    raise FileNotFoundError(
        f"no _toc.yml and _config.yml found in {p} or any parent: run from the phd-book checkout"
    )


def toc_files(node) -> list[str]:
    """The ``file`` and ``root`` entries of a parsed ``_toc.yml`` (or part of it), in order."""
    out: list[str] = []
    if isinstance(node, dict):
        if "file" in node:
            out.append(node["file"])
        if "root" in node:
            out.append(node["root"])
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key, []) or []:
                out.extend(toc_files(child))
    elif isinstance(node, list):
        for child in node:
            out.extend(toc_files(child))
    return out


def chapters(root: Path) -> list[Path]:
    """Chapter sources (``.md``) in table-of-contents order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = []
    for entry in toc_files(toc):
        path = root / (entry if entry.endswith(".md") else entry + ".md")
        if not path.is_file():
            raise FileNotFoundError(f"_toc.yml lists {entry!r} but {path} does not exist")
        files.append(path)
    return files


def is_notebook(text: str) -> bool:
    """Whether a chapter's text is a notebook (a ``kernelspec`` in its front matter)."""
    head = text.split("\n---", 2)
    return text.startswith("---") and "kernelspec" in (head[0] if head else "")
