"""The book's staging tree and site: what :mod:`phdlib.book` stages beside the executed
chapters (configuration, bibliography, MathJax, assets, the synthetic-data banner) and
the ``jupyter-book build`` of that tree (warnings as errors)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from .project import project_root
from .. import data

STAGED_FILES = ("_config.yml", "_toc.yml", "references.bib")
STAGED_DIRS = ("_mathjax", "_theme")


class SiteBuildError(RuntimeError):
    """``jupyter-book build`` failed (a warning counts as a failure)."""


def fold_injected(nb_path: Path) -> None:
    """Tag papermill's injected-parameters cell ``remove-cell``: the page shows the chapter's own
    (folded) parameters cell, not a second "# Parameters" cell; the executed notebook keeps it."""
    import nbformat

    nb = nbformat.read(nb_path, as_version=4)
    changed = False
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.setdefault("metadata", {})["tags"] = [*tags, "remove-cell"]
            changed = True
    if changed:
        nbformat.write(nb, nb_path)


def stage_static(root: Path, stage: Path) -> None:
    for name in STAGED_FILES:
        if (root / name).exists():
            shutil.copy2(root / name, stage / name)
    for name in STAGED_DIRS:
        if (root / name).is_dir():
            dst = stage / name
            if dst.exists():
                shutil.rmtree(dst)
            shutil.copytree(root / name, dst)
    # non-chapter assets under book/ (images, bib fragments, ...)
    for f in (root / "book").rglob("*"):
        if f.is_file() and f.suffix not in (".md", ".ipynb") and ".ipynb_checkpoints" not in f.parts:
            dst = stage / f.relative_to(root)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dst)


#: The banner of every page of a book built on generated data.
SYNTHETIC_BANNER = ("Synthetic data: every number on this site was computed on generated "
                    "ratings with planted codes (dataset '{name}'), not on real data. They show "
                    "that the code runs end to end; they are not evidence for or against the "
                    "paper.")


def stage_synthetic_banner(stage: Path, dataset) -> None:
    """A book built on a synthetic dataset says so on every page (the theme's announcement)."""
    if not dataset or not data.is_synthetic(str(dataset)):
        return
    import yaml

    cfg_path = stage / "_config.yml"
    cfg = yaml.safe_load(cfg_path.read_text()) or {}
    cfg.setdefault("html", {})["announcement"] = SYNTHETIC_BANNER.format(name=dataset)
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def build_site(root: Path | None = None, log=print) -> Path:
    """Run ``jupyter-book build`` on the staging tree, warnings as errors."""
    root = project_root(root)
    stage = root / "_build" / "stage"
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", str(stage),
           "--path-output", str(root), "-W", "-n", "--keep-going"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    (root / "_build" / "site-build.log").write_text(out)
    if proc.returncode != 0:
        tail = "\n".join(out.strip().splitlines()[-40:])
        raise SiteBuildError(
            f"jupyter-book build failed (exit {proc.returncode}); full log in "
            f"_build/site-build.log; last lines:\n{tail}"
        )
    index = root / "_build" / "html" / "index.html"
    log(f"[book] site built in {time.perf_counter() - t0:.1f} s: {index}")
    return index
