"""Where a result came from: the git commit of the checkout that computed it.

Light on purpose (the standard library only): the pages' provenance blocks, the grid
manifests and the cost measurements all record it.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["git_commit"]


def git_commit() -> str | None:
    """The commit of the checkout ``phdlib`` is imported from, or None outside git."""
    try:
        here = Path(__file__).resolve().parent.parent
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                              text=True, timeout=5).stdout.strip() or None
    except Exception:
        return None
