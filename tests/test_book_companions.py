"""Real datasets a build's chapters read besides its own (``phdlib.book.companions``):
left out of a book on generated data when missing, an error at once for a book on real data."""
from __future__ import annotations

from pathlib import Path

import pytest

from phdlib.book import companions, project, selection
from phdlib.book import driver as book

from test_book_driver import chapter, make_project

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def declared():
    return selection._declared(project.chapters(ROOT))


def nowhere(name, data_dir):
    return False


def test_the_book_reads_ml_100k_in_travel_and_cost_at_scale(declared):
    found = {(c.chapter, c.name): c.real for c in companions.companions({}, declared)}
    assert found == {("travel", "second"): ("ml-100k",),
                     ("scale", "sweep_datasets"): ("ml-100k",)}
    # a value of the build replaces the default; generated data is no companion
    found = companions.companions({"second": "synthetic", "sweep_datasets": ["ml-1m"]},
                                  declared)
    assert [(c.chapter, c.name, c.real) for c in found] == [
        ("scale", "sweep_datasets", ("ml-1m",))]


def test_a_book_on_generated_data_leaves_a_missing_companion_out_and_says_so(declared):
    params = {"dataset": "synthetic-ml-10m", "profile": "full"}
    out, lines = companions.settle(params, declared, available=nowhere)
    assert out == {**params, "second": "", "sweep_datasets": []}
    assert params == {"dataset": "synthetic-ml-10m", "profile": "full"}  # not changed
    assert len(lines) == 2 and all("ml-100k not on this machine" in s for s in lines)
    assert "chapter 'travel' runs without it" in lines[0] + lines[1]
    # only the missing one of a list goes; a present companion stays
    out, lines = companions.settle({**params, "sweep_datasets": ["ml-100k", "ml-1m",
                                                                 "synthetic"]},
                                   declared, available=lambda n, d: n == "ml-1m")
    assert out["sweep_datasets"] == ["ml-1m", "synthetic"] and out["second"] == ""
    assert companions.settle(params, declared, available=lambda n, d: True) == (params, [])


def test_a_book_on_real_data_stops_at_once_naming_chapter_parameter_and_fixes(declared):
    with pytest.raises(ValueError) as err:
        companions.settle({"dataset": "ml-1m"}, declared, available=nowhere)
    msg = str(err.value)
    assert "reads dataset 'ml-100k' (parameter sweep_datasets=['ml-100k'])" in msg \
        or "reads dataset 'ml-100k' (parameter second='ml-100k')" in msg
    assert "phd data fetch --dataset ml-100k" in msg and "PHD_DATA_DIR" in msg
    assert "--param \"second=''\"" in msg or "--param \"sweep_datasets=[]\"" in msg
    # a chapter that does not run needs nothing
    srcs = project.chapters(ROOT)
    running = {k: v for k, v in selection._declared(srcs).items() if k == "vh"}
    assert companions.settle({"dataset": "ml-1m"}, running, available=nowhere) == (
        {"dataset": "ml-1m"}, [])


def test_the_build_passes_the_settled_value_to_the_chapter(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PHD_DATA_DIR", str(empty))
    monkeypatch.setenv("PHD_CACHE_DIR", str(empty))
    a = chapter("A", "print(repr(second))",
                params='dataset = "ml-1m"\nsecond = "ml-100k"')
    (tmp_path / "p").mkdir()
    root = make_project(tmp_path / "p", {"a": a})
    logged = []
    with pytest.raises(ValueError, match="chapter 'a' reads dataset 'ml-100k'"):
        book.build(root=root, parameters={"dataset": "ml-1m"}, site=False,
                   log=logged.append)
    assert not (root / "_build").exists()   # refused before anything ran or was staged
    res = book.build(root=root, parameters={"dataset": "synthetic"}, site=False,
                     log=logged.append)
    assert res[0].parameters == {"dataset": "synthetic", "second": ""}
    assert any("ml-100k not on this machine" in s for s in logged)
    out = (root / "_build/exec/book/a.ipynb").read_text()
    assert "''" in out
