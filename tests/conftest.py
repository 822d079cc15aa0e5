"""Shared pytest set-up: the ``site`` marker and the repository root."""
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
