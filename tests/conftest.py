"""Shared pytest set-up: the ``site`` marker, the repository root, a tiny synthetic split."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "site: checks the built site (_build/html); `make test` builds the book, then runs `pytest -m site`",
    )


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout's top folder (holds _config.yml, _toc.yml, book/, phdlib/)."""
    return ROOT


#: The small synthetic split the method tests train on (80 users, 50 items).
SYNTHETIC = dict(n_users=80, n_items=50, density=0.3, bits=32, noise=0.5, data_seed=0)


@pytest.fixture(scope="session")
def synthetic_split():
    """``data.load_split("synthetic", **SYNTHETIC)``: a tiny real split (a second to build)."""
    from phdlib import data

    return data.load_split("synthetic", **SYNTHETIC)
