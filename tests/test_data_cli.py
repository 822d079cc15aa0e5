"""``phd data stats``: the acceptance numbers through the command line."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from phdlib.cli import main as phd_main

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PHD_DATA_DIR") or ROOT.parent / "shared" / "data")


@pytest.fixture(autouse=True)
def _env(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cli-cache"))
    if not (SHARED / "ml-1m/ratings.dat").is_file():
        pytest.skip(f"MovieLens not present at {SHARED} (set PHD_DATA_DIR)")
    monkeypatch.setenv("PHD_DATA_DIR", str(SHARED))


@pytest.mark.parametrize("seed", [0, 7])
def test_stats_ml1m_json(capsys, seed):
    assert phd_main(["data", "stats", "--dataset", "ml-1m", "--seed", str(seed), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["users"], s["items"], s["ratings"]) == (6040, 3260, 998_539)
    assert s["split"] == {"train": 420_336, "valid": 77_436, "test": 500_767}
    assert s["split"] == s["released_split"] and s["seed"] == seed
    assert s["paper"]["users"] == 6040 and s["synthetic"] is False
    assert sum(s["histogram"].values()) == 998_539 and set(s["histogram"]) == {"1", "2", "3", "4", "5"}
    assert s["fingerprint"].startswith("2dad134c8b49")


def test_stats_ml100k_text(capsys):
    assert phd_main(["data", "stats", "--dataset", "ml-100k", "--data-dir", str(SHARED)]) == 0
    out = capsys.readouterr().out
    for text in ("943", "1,152", "97,953", "9.02%", "41,009", "7,735", "49,209", "histogram"):
        assert text in out, text


def test_stats_errors(capsys):
    assert phd_main(["data", "stats", "--dataset", "nope"]) == 2
    assert "unknown dataset 'nope'" in capsys.readouterr().err
    assert phd_main(["data", "stats", "--dataset", "ml-10m"]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and "phd data fetch --dataset ml-10m" in err
