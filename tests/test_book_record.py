"""What a book build cost (``phdlib.book.record``), its report (``phdlib.report.book_build``),
``phd book build --record`` / ``phd book record`` and the memory of a process tree
(``phdlib.experiments.usage.TreeMemory``).

Two kernel executions of a tiny project (a few seconds each); the rest reads
hand-made executed notebooks.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import nbformat
import pandas as pd
import pytest

from phdlib.book import record
from phdlib.experiments.usage import TreeMemory
from phdlib.report import book_build
from test_book_driver import chapter, make_project


def executed_notebook(path, title="A chapter", durations=(0.5, 2.0, 1.0), start="2026-01-01T10:00:00",
                      seconds=3.5, params=None, exception=None, papermill=True, naive=False):
    """An executed notebook as papermill leaves it: a title, a parameters cell (and the
    cell papermill injects, given ``params``), code cells with their durations, and the
    notebook's start, end and duration (``naive``: without a UTC offset, as older
    papermill wrote them)."""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(f"# {title}\n\nText."))
    nb.cells.append(nbformat.v4.new_code_cell('seeds = 5  # model seeds\nname = "x"',
                                              metadata={"tags": ["parameters"]}))
    if params:
        nb.cells.append(nbformat.v4.new_code_cell("seeds = 1", metadata={
            "tags": ["injected-parameters"], "papermill": {"duration": 9.0}}))
    for d in durations:
        nb.cells.append(nbformat.v4.new_code_cell("pass", metadata={"papermill": {"duration": d}}))
    if papermill:
        tz = None if naive else "UTC"
        end = pd.Timestamp(start, tz=tz) + pd.Timedelta(seconds=seconds)
        nb.metadata["papermill"] = {"start_time": pd.Timestamp(start, tz=tz).isoformat(),
                                    "end_time": end.isoformat(), "duration": seconds,
                                    "parameters": params or {}, "exception": exception}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def test_a_row_reads_papermills_timing_the_longest_cell_and_the_parameters(tmp_path):
    src = tmp_path / "book" / "ch.md"
    src.parent.mkdir()
    src.write_text("# A chapter\n")
    nb = executed_notebook(tmp_path / "exec" / "ch.ipynb", params={"seeds": 1})
    row = record.chapter_row(src, nb)
    assert row["chapter"] == "ch" and row["title"] == "A chapter"
    # the injected cell (9 s here) is papermill's, not the chapter's: neither counted nor longest
    assert row["seconds"] == 3.5 and row["cells"] == 4
    # code cells: the parameters cell is the first, so the 2.0 s cell is the third
    assert row["longest_cell"] == 3 and row["longest_cell_seconds"] == 2.0
    assert row["started"] == "2026-01-01T10:00:00+00:00"
    # the value the build passed wins over the default; other defaults are kept as values
    assert row["parameters"] == {"seeds": 1, "name": "x"}
    assert row["current"] is False  # no cache key beside it
    assert row["failed"] is False


def test_an_execution_that_never_ended_is_an_unfinished_row_up_to_its_last_cell(tmp_path):
    """A partial notebook of a chapter still running, or of a build killed from outside:
    papermill wrote its start and each completed cell's end, but no end of its own."""
    src = tmp_path / "ch.md"
    src.write_text("# A chapter\n")
    nb_path = executed_notebook(tmp_path / "ch.partial.ipynb", durations=(1.0, 2.0, 4.0))
    nb = nbformat.read(str(nb_path), as_version=4)
    nb.metadata["papermill"].update(end_time=None, duration=None)
    code = [c for c in nb.cells if c.cell_type == "code" and "papermill" in c.metadata]
    code[0].metadata["papermill"]["end_time"] = "2026-01-01T10:00:01+00:00"
    code[1].metadata["papermill"]["end_time"] = "2026-01-01T10:00:03+00:00"
    code[2].metadata["papermill"].update(duration=None, status="running")   # never ended
    nbformat.write(nb, str(nb_path))
    row = record.chapter_row(src, nb_path, failed=True)
    assert row["unfinished"] is True and row["failed"] is True and row["current"] is False
    assert row["seconds"] == 3.0 and row["finished"] == "2026-01-01T10:00:03+00:00"
    # a completed execution is not unfinished; nor one with no start (refused, by name)
    assert record.chapter_row(src, executed_notebook(tmp_path / "ok.ipynb"))["unfinished"] \
        is False
    # an execution without an end is unfinished only as a partial notebook: the driver
    # writes the finished one whole, with its end
    with pytest.raises(ValueError, match=r"ch\.partial\.ipynb: no papermill timing"):
        record.chapter_row(src, nb_path)
    # the build's heartbeat saw it running later than its last completed cell: up to then
    alive = tmp_path / "ch.alive.json"
    alive.write_text(json.dumps({"chapter": "ch", "started": "2026-01-01T09:59:58+00:00",
                                 "seen": "2026-01-01T10:45:00+00:00", "seconds": 2702.0}))
    row = record.chapter_row(src, nb_path, failed=True, alive=alive)
    assert row["seconds"] == 2700.0 and row["finished"] == "2026-01-01T10:45:00+00:00"
    assert row["seen_running"] == "2026-01-01T10:45:00+00:00"
    assert record.chapter_row(src, nb_path, failed=True)["seen_running"] == ""
    # seen before its last completed cell ended: that end, and not 'seen running'
    alive.write_text(json.dumps({"started": "2026-01-01T09:59:58+00:00",
                                 "seen": "2026-01-01T10:00:02+00:00"}))
    row = record.chapter_row(src, nb_path, failed=True, alive=alive)
    assert row["seconds"] == 3.0 and row["seen_running"] == ""
    # another execution's file (begun after papermill's start, or long before), or one
    # not readable, is not this execution's: up to the last completed cell
    for began in ("2026-01-01T10:00:05+00:00", "2026-01-01T09:40:00+00:00"):
        alive.write_text(json.dumps({"started": began, "seen": "2026-01-01T10:45:00+00:00"}))
        assert record.chapter_row(src, nb_path, failed=True, alive=alive)["seconds"] == 3.0
    alive.write_text("{not json")
    assert record.chapter_row(src, nb_path, failed=True, alive=alive)["seconds"] == 3.0
    # no cell completed yet: no time
    for c in code:
        c.metadata["papermill"]["end_time"] = None
    nbformat.write(nb, str(nb_path))
    row = record.chapter_row(src, nb_path, failed=True)
    assert row["unfinished"] and row["seconds"] == 0.0 and row["finished"] == row["started"]
    nb.metadata["papermill"]["start_time"] = None
    nbformat.write(nb, str(nb_path))
    with pytest.raises(ValueError, match=r"ch\.partial\.ipynb: no papermill timing"):
        record.chapter_row(src, nb_path, failed=True)


def test_a_partial_notebook_read_while_the_build_replaces_it_is_read_where_it_went(
        tmp_path, monkeypatch):
    src = tmp_path / "ch.md"
    src.write_text("# A chapter\n")
    done = executed_notebook(tmp_path / "ch.ipynb", seconds=7.0)
    partial = tmp_path / "ch.partial.ipynb"
    partial.write_text('{"cells": [')   # half written
    monkeypatch.setattr(record.time, "sleep", lambda s: partial.unlink())  # then moved away
    row = record._partial_row(src, partial, done, None)
    assert row["seconds"] == 7.0 and not row["failed"] and not row["unfinished"]
    partial.write_text('{"cells": [')   # still half written a second later: said so
    monkeypatch.setattr(record.time, "sleep", lambda s: None)
    with pytest.raises(ValueError, match=r"ch\.partial\.ipynb: not a readable executed"):
        record._partial_row(src, partial, done, None)


def test_a_notebook_without_papermills_timing_is_refused_by_name(tmp_path):
    src = tmp_path / "ch.md"
    src.write_text("# A chapter\n")
    nb = executed_notebook(tmp_path / "ch.ipynb", papermill=False)
    with pytest.raises(ValueError, match=r"ch\.ipynb: no papermill timing"):
        record.chapter_row(src, nb)
    (tmp_path / "bad.ipynb").write_text("{not json")
    with pytest.raises(ValueError, match=r"bad\.ipynb: not a readable executed notebook"):
        record.chapter_row(src, tmp_path / "bad.ipynb")


@pytest.mark.slow
def test_a_recorded_build_writes_what_it_ran_and_measured(tmp_path, monkeypatch):
    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path / "store"))
    (tmp_path / "p").mkdir()
    root = make_project(tmp_path / "p", {
        "fast": chapter("Fast one", "x = 1", params="seeds = 5  # seeds"),
        "slow": chapter("Slow one", "import time\ntime.sleep(1.5)", "y = 2"),
    })
    out = tmp_path / "rec" / "build.json"
    res = record.build_recorded(out, command="test", root=root, parameters={"seeds": 2},
                                site=False, log=lambda *a: None, interval=0.2)
    assert [r.name for r in res] == ["fast", "slow"]
    rec = record.load(out)
    rows = rec["rows"].set_index("chapter")
    assert list(rows.index) == ["fast", "slow"]  # (the root page has no code: no row)
    assert rows.loc["slow", "seconds"] >= 1.5 and rows.loc["slow", "title"] == "Slow one"
    assert rows.loc["fast", "parameters"] == {"seeds": 2}
    assert rows["current"].all() and not rows["failed"].any()
    m = rec["build"]["measured"]
    assert m["executed"] == ["fast", "slow"] and m["cached"] == [] and m["failed"] is None
    assert m["store_runs_before"] == 0 == m["store_runs_after"] and m["site"] is False
    assert m["wall_seconds"] >= rec["build"]["chapter_seconds"] >= 1.5
    # the kernels are children of the build: the tree holds more than this process alone
    assert m["peak_total_rss_mb"] > m["peak_process_rss_mb"] > 0 and m["memory_samples"] >= 3
    assert rec["provenance"]["command"] == "test"
    assert book_build.whole(rec)
    assert book_build.findings(rec, "Tiny")[0].startswith(
        "**The whole book on Tiny ran to the end in one build: ")

    # a rebuild reuses both from the cache and says so; their timing is from when they ran
    record.build_recorded(out, root=root, parameters={"seeds": 2}, site=False,
                          log=lambda *a: None)
    again = record.load(out)
    assert again["build"]["measured"]["cached"] == ["fast", "slow"]
    assert again["build"]["measured"]["executed"] == []
    assert again["rows"]["seconds"].tolist() == rec["rows"]["seconds"].tolist()
    assert not book_build.whole(again)
    assert "Reused from an earlier build: Fast one and Slow one." in book_build.findings(
        again, "Tiny")

    # a bad option is refused before anything runs, and the record is left as it was
    kept = out.read_bytes()
    with pytest.raises(ValueError, match="unknown chapter"):
        record.build_recorded(out, root=root, only=["nope"], site=False, log=lambda *a: None)
    assert out.read_bytes() == kept

    # a changed source makes the recorded execution stale, and the report says so
    (root / "book" / "fast.md").write_text(chapter("Fast one", "x = 3", params="seeds = 5"))
    stale = record.from_executed(root)
    assert stale["rows"][0]["current"] is False and stale["rows"][1]["current"] is True
    lines = book_build.findings({**stale, "rows": pd.DataFrame(stale["rows"])}, "Tiny")
    assert "Executed before their source or the library last changed: Fast one." in lines
    assert lines[-1].startswith("The chapters' times are papermill's; the build itself was "
                                "not measured")


@pytest.mark.slow
def test_a_build_writes_its_record_after_each_chapter_so_a_killed_one_leaves_it(
        tmp_path, monkeypatch):
    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path / "store"))
    out = tmp_path / "build.json"
    monkeypatch.setenv("PHD_TEST_RECORD", str(out))
    (tmp_path / "p").mkdir()
    # the second chapter keeps the record as it stood while the build was in it
    root = make_project(tmp_path / "p", {
        "one": chapter("One", "x = 1"),
        "two": chapter("Two", "import os, shutil\n"
                              "shutil.copy(os.environ['PHD_TEST_RECORD'], "
                              "os.environ['PHD_TEST_RECORD'] + '.mid')"),
        "three": chapter("Three", "y = 3"),
    })
    record.build_recorded(out, root=root, site=False, log=lambda *a: None)
    mid = record.load(str(out) + ".mid")
    m = mid["build"]["measured"]
    assert mid["rows"]["chapter"].tolist() == ["one"]
    assert m["ended"] is False and m["upto"] == "one" and m["not_reached"] == ["two", "three"]
    assert m["executed"] == ["one"] and m["failed"] is None and m["site"] is False
    assert not book_build.whole(mid)
    lines = book_build.findings(mid, "Tiny")
    assert ("The build had not ended when this record was last written, after One: still "
            "running then, or killed since; not reached: Two and Three.") in lines
    assert any(x.startswith("The build ran for ") for x in lines)
    final = record.load(out)
    assert final["build"]["measured"]["ended"] is True and book_build.whole(final)
    assert "not_reached" not in final["build"]["measured"]
    # a record that cannot be written after a chapter does not stop the build
    said = []
    monkeypatch.setattr(record, "write_json", lambda *a: (_ for _ in ()).throw(OSError("full")))
    with pytest.raises(OSError, match="full"):   # the last one, after the build, is an error
        record.build_recorded(tmp_path / "other.json", root=root, site=False, log=said.append,
                              force=True)
    assert [x for x in said if "could not be written" in x] == [
        f"[book] the build record {tmp_path / 'other.json'} could not be written after {c}: full"
        for c in ("one", "two", "three", "index")]   # every page, the root one last


@pytest.mark.slow
def test_a_failing_build_still_writes_its_record_then_raises(tmp_path, monkeypatch):
    from phdlib.book import ChapterError

    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path / "store"))
    (tmp_path / "p").mkdir()
    root = make_project(tmp_path / "p", {"bad": chapter("Bad", "raise RuntimeError('boom')")})
    out = tmp_path / "build.json"
    with pytest.raises(ChapterError):
        record.build_recorded(out, root=root, site=False, log=lambda *a: None)
    rec = record.load(out)
    m = rec["build"]["measured"]
    assert "RuntimeError: boom" in m["failed"] and "\n" not in m["failed"]
    # the failed chapter is read from the partial notebook the driver leaves
    assert rec["rows"]["chapter"].tolist() == ["bad"] and rec["rows"]["failed"].all()
    assert m["executed"] == ["bad"] and rec["build"]["missing"] == []
    lines = book_build.findings(rec, "Tiny")
    assert lines[0].startswith("**The book on Tiny: ") and "Failed: Bad." in lines
    assert not any(x.startswith("Executed before") for x in lines)

    # a record that cannot be written leaves the build's own error, with a note
    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(record, "from_executed", broken)
    with pytest.raises(ChapterError) as info:
        record.build_recorded(out, root=root, site=False, log=lambda *a: None)
    assert any("could not be written: disk full" in n for n in info.value.__notes__)


def test_from_executed_names_the_chapters_never_executed_and_mixes_time_zones(tmp_path):
    root = make_project(tmp_path, {"a": chapter("A", "x = 1"), "b": chapter("B", "x = 2"),
                                   "c": chapter("C", "x = 3")})
    executed_notebook(root / "_build" / "exec" / "book" / "a.ipynb", title="A")
    # an older papermill wrote times without an offset: they are UTC, and compare
    executed_notebook(root / "_build" / "exec" / "book" / "c.ipynb", title="C",
                      start="2026-01-01T10:00:10", naive=True)
    rec = record.from_executed(root, command="c")
    assert [r["chapter"] for r in rec["rows"]] == ["a", "c"]
    assert rec["build"]["missing"] == ["b"] and rec["build"]["measured"] is None
    assert rec["build"]["span_seconds"] == 13.5 and rec["build"]["chapter_seconds"] == 7.0
    assert rec["rows"][1]["started"] == "2026-01-01T10:00:10+00:00"
    lines = book_build.findings({**rec, "rows": pd.DataFrame(rec["rows"])}, "Tiny")
    assert lines[0].startswith("**The book on Tiny: 7 s** of chapter execution for the "
                               "2 chapters recorded")
    assert "Never executed in this checkout: B." in lines   # by its title
    assert rec["build"]["titles"] == {"b": "B"}


def _write_record(path, rows, **build):
    obj = {"format": record.FORMAT, "version": 1, "provenance": {"cpus": 2},
           "build": {"span_seconds": 10.0, "chapter_seconds": 9.0, "missing": [],
                     "measured": None, **build}, "rows": rows}
    path.write_text(json.dumps(obj))
    return path


ROW = {"chapter": "a", "title": "A", "started": "2026-01-01T00:00:00+00:00",
       "finished": "2026-01-01T00:01:00+00:00", "seconds": 60.0, "parameters": {},
       "cells": 3, "longest_cell": 2, "longest_cell_seconds": 50.0, "current": True,
       "failed": False}


MEASURED = {"started": "2026-01-01T00:00:00+00:00", "wall_seconds": 6300.0, "site": True,
            "peak_total_rss_mb": 3072.0, "peak_process_rss_mb": 1024.0, "memory_samples": 9,
            "sample_interval_s": 1.0, "store_runs_before": 0, "store_runs_after": 1234,
            "executed": ["a", "b", "c"], "cached": [], "failed": None}


@pytest.mark.parametrize("change, message", [
    (lambda o: o.update(format="other"), "not a book build record"),
    (lambda o: o.update(version=2), "version 2 of the record; this phdlib reads version 1"),
    (lambda o: o.pop("build"), "field 'build' must be a dict"),
    (lambda o: o.update(rows=[]), "field 'rows' is empty"),
    (lambda o: o["rows"][0].pop("seconds"), r"row 0 lacks \['seconds'\]"),
    (lambda o: o["rows"][0].update(seconds=-1), r"row 0 \(a\): seconds must be a number >= 0"),
    (lambda o: o["rows"][0].update(seconds=True), r"row 0 \(a\): seconds must be a number"),
    (lambda o: o["rows"][0].update(seconds=float("inf")), r"row 0 \(a\): seconds must be a number >= 0, got inf"),
    (lambda o: o["rows"][0].update(current="false"), r"row 0 \(a\): current must be true or false"),
    (lambda o: o["rows"][0].update(parameters=[]), r"row 0 \(a\): parameters must be an object"),
    (lambda o: o["rows"][0].update(cells=None), r"row 0 \(a\): cells must be an integer"),
    (lambda o: o["rows"][0].update(longest_cell_seconds=None), r"row 0 \(a\): longest_cell_seconds must be"),
    (lambda o: o["rows"][0].update(title=3), r"row 0 \(a\): title must be text"),
    (lambda o: o["rows"][0].update(started="yesterday"), r"row 0 \(a\): started must be an ISO 8601 time"),
    (lambda o: o["build"].update(span_seconds="x"), "build.span_seconds must be a number"),
    (lambda o: o["build"].update(missing="ab"), "build.missing must be a list of chapter names"),
    (lambda o: o["build"].update(titles={"b": 3}), "build.titles must map chapter names to titles"),
    (lambda o: o["build"].update(measured={**MEASURED, "ended": "no"}),
     "build.measured.ended must be true or false, got 'no'"),
    (lambda o: o["build"].update(measured=[]), "build.measured must be an object or null"),
    (lambda o: o["build"].update(measured={**MEASURED, "wall_seconds": None}),
     "build.measured.wall_seconds must be a number"),
    (lambda o: o["build"].update(measured={**MEASURED, "store_runs_after": 1.5}),
     "build.measured.store_runs_after must be a count or null"),
    (lambda o: o["build"].update(measured={**MEASURED, "cached": "a"}),
     "build.measured.cached must be a list of chapter names"),
])
def test_load_names_the_file_and_what_is_wrong(tmp_path, change, message):
    path = _write_record(tmp_path / "r.json", [dict(ROW)])
    obj = json.loads(path.read_text())
    change(obj)
    path.write_text(json.dumps(obj))
    with pytest.raises(ValueError, match=f"r.json: {message}"):
        record.load(path)
    (tmp_path / "t.json").write_text("[1")
    with pytest.raises(ValueError, match="t.json: not a readable book build record"):
        record.load(tmp_path / "t.json")


def test_the_report_gives_shares_the_longest_chapters_and_what_was_measured(tmp_path):
    rows = [dict(ROW, chapter="a", title="Alpha", seconds=600.0, longest_cell_seconds=500.0,
                 parameters={"profile": "full", "seeds": 5, "jobs": 2}),
            dict(ROW, chapter="b", title="Beta", seconds=5400.0, longest_cell_seconds=5000.0,
                 parameters={"seeds": 1}),
            dict(ROW, chapter="c", title="", seconds=0.0, longest_cell_seconds=0.0,
                 parameters={"seeds": 1})]
    rec = record.load(_write_record(tmp_path / "r.json", rows, span_seconds=6060.0,
                                    measured=MEASURED))
    costs = book_build.chapter_costs(rec)
    assert costs["chapter"].tolist() == ["Alpha", "Beta", "c"]  # no title: the file's name
    assert costs["share"].tolist() == pytest.approx([10.0, 90.0, 0.0])
    assert costs["minutes"].tolist() == pytest.approx([10.0, 90.0, 0.0])
    # seeds: the value most chapters ran with, then the others and where
    assert book_build.parameter_text(rec, "seeds") == "seeds = 1 (5 in Alpha)"
    assert book_build.parameter_text(rec, "nothing") == ""
    lines = book_build.findings(rec, "Tiny", top=1)
    assert lines[0] == ("**The whole book on Tiny ran to the end in one build: 1 h 40 min** of "
                        "chapter execution for its 3 chapters (profile = full; seeds = 1 (5 in "
                        "Alpha); jobs = 2) on 2 cores, one after another: 1 h 41 min from the "
                        "first one's start to the last one's end.")
    assert lines[1].startswith("Beta (1 h 30 min) took 90% of it; the longest single cell ran "
                               "1 h 23 min (in Beta)")
    assert lines[2] == ("The build took 1 h 45 min of wall time with the site; at most 3.00 GiB "
                        "of resident memory summed over the build, its kernels and their "
                        "workers (sampled every "
                        "1 s), the largest one process 1.00 GiB; the results store held 0 runs "
                        "before and 1,234 after.")
    # a record that names its CPU says which
    named = json.loads((tmp_path / "r.json").read_text())
    named["provenance"]["cpu"] = "AMD EPYC 9454 48-Core Processor (family 25, model 17)"
    (tmp_path / "named.json").write_text(json.dumps(named))
    assert ("jobs = 2) on 2 cores of an AMD EPYC 9454 48-Core Processor (family 25, model 17), "
            "one after another") in book_build.findings(record.load(tmp_path / "named.json"),
                                                        "Tiny")[0]
    # a chapter whose execution never ended: unfinished, with what it had done
    still = [dict(r) for r in rows] + [dict(ROW, chapter="d", title="Delta", seconds=720.0,
                                            failed=True, unfinished=True, current=False)]
    lines = book_build.findings(record.load(_write_record(tmp_path / "u.json", still)), "Tiny")
    assert ("Never ran to the end (still running when recorded, or killed): Delta (12 min to "
            "its last completed cell).") in lines
    still[3]["seen_running"] = "2026-01-01T10:45:00+00:00"   # seen running after it
    lines = book_build.findings(record.load(_write_record(tmp_path / "u.json", still)), "Tiny")
    assert ("Never ran to the end (still running when recorded, or killed): Delta (at least "
            "12 min: seen running then).") in lines
    del still[3]["seen_running"]
    assert not any(x.startswith("Failed") for x in lines)
    # a record from before the field reads as finished; a wrong type is named
    assert not record.load(tmp_path / "r.json")["rows"]["unfinished"].any()
    still[3]["unfinished"] = "yes"
    with pytest.raises(ValueError, match=r"row 3 \(d\): unfinished must be true or false"):
        record.load(_write_record(tmp_path / "u.json", still))
    rows[1]["failed"] = True
    rows[2]["parameters"] = {"dataset": "ml-1m"}
    rows[1]["parameters"] = {"dataset": "ml-100k"}
    lines = book_build.findings(record.load(_write_record(tmp_path / "r.json", rows,
                                                          measured=MEASURED)), "Tiny")
    assert lines[0].startswith("**The book on Tiny: ") and "Failed: Beta." in lines
    assert "Chapters ran on different datasets: ml-100k in Beta; ml-1m in c." in lines
    # a build interrupted by hand: its last chapter is unfinished, not failed, and the
    # wall time is how long it ran, without a site
    lines = book_build.findings(record.load(_write_record(
        tmp_path / "i.json", rows, measured={**MEASURED, "failed": "KeyboardInterrupt"})), "Tiny")
    assert "Interrupted in Beta, by hand (unfinished, not failed)." in lines, lines
    assert not any(x.startswith(("Failed", "The build stopped")) for x in lines), lines
    assert any(x.startswith("The build ran for 1 h 45 min of wall time;") for x in lines), lines


def test_builds_one_after_another_are_put_together_chapter_by_chapter(tmp_path):
    """An interrupted build, then one of the chapters it did not reach on its store:
    each chapter once, from the build that finished it; the interrupted time is named."""
    first = [dict(ROW, chapter="a", title="Alpha", seconds=3000.0),
             dict(ROW, chapter="b", title="Beta", seconds=4500.0, longest_cell_seconds=4000.0),
             dict(ROW, chapter="r", title="Runtime", seconds=90.0, failed=True)]
    second = [dict(ROW, chapter="i", title="Index", seconds=60.0,   # the book's first page,
                   started="2026-01-01T05:00:00+00:00"),              # run last
              dict(ROW, chapter="r", title="Runtime", seconds=600.0,
                   started="2026-01-01T01:00:00+00:00"),
              dict(ROW, chapter="s", title="Scale", seconds=900.0,
                   started="2026-01-01T02:00:00+00:00")]
    one = record.load(_write_record(
        tmp_path / "1.json", first, missing=["s", "z"],
        measured={**MEASURED, "failed": "KeyboardInterrupt", "peak_total_rss_mb": 8192.0}))
    two = record.load(_write_record(
        tmp_path / "2.json", second, missing=["a", "b", "z"],
        measured={**MEASURED, "store_runs_before": 639, "executed": ["r", "s"]}))
    table = book_build.across([one, two])
    assert table["chapter"].tolist() == ["Alpha", "Beta", "Runtime", "Scale", "Index"]
    assert table["build"].tolist() == ["first", "first", "second", "second", "second"]
    assert table["minutes"].tolist() == pytest.approx([50.0, 75.0, 10.0, 15.0, 1.0])
    assert table["share"].sum() == pytest.approx(100.0) and table["finished"].all()
    lines = book_build.across_findings([one, two], "Tiny")
    assert lines[0].startswith(
        "**Chapter by chapter over 2 builds, the book on Tiny took 2 h 31 min of chapter "
        "execution**, each chapter counted once, from the build that ran it to the end (the "
        "first 2 h 6 min for 3 chapters from an empty results store; the second 26 min for 3 "
        "chapters on a store of 639 runs)."), lines[0]
    assert "not a build that ran in one go" in lines[0]
    assert "Cut short and run again later: Runtime in the first build, after 1.5 min." in lines
    assert "No build executed z." in lines
    # the last build's chapter that never ended is cut short, and not run again
    last = record.load(_write_record(
        tmp_path / "2u.json", second + [dict(ROW, chapter="u", title="Upsilon", seconds=0.0,
                                             failed=True, unfinished=True, current=False,
                                             started="2026-01-01T03:00:00+00:00")],
        missing=["a", "b", "z"], measured={**MEASURED, "store_runs_before": 639}))
    assert ("Cut short and not run again: Upsilon in the second build (no cell completed)."
            in book_build.across_findings([one, last], "Tiny"))
    assert any(x.startswith("The most memory any of them held: 8.00 GiB") and
               x.endswith("in the first.") for x in lines), lines
    assert "Beta (1 h 15 min), Alpha (50 min) and Scale (15 min) took 93% of it." in lines
    # a chapter no build finished is shown from its last try, and said so
    table = book_build.across([one])
    assert table["finished"].tolist() == [True, True, False]
    assert book_build.across_findings([one], "Tiny") == []
    assert book_build.started_on(one) == "from an empty results store"
    assert book_build.started_on(two) == "on a store of 639 runs"
    assert book_build.started_on({"build": {}}) == ""
    three = record.load(_write_record(tmp_path / "3.json", [dict(second[2])],
                                      measured={**MEASURED, "store_runs_before": 700}))
    lines = book_build.across_findings([one, three], "Tiny")
    assert "No build finished Runtime." in lines
    assert not any(x.startswith("Beta (") for x in lines)   # no ranking of a partial book


@pytest.mark.parametrize("minutes, text", [(0.4, "24 s"), (7.54, "7.5 min"), (47.4, "47 min"),
                                           (112.4, "1 h 52 min"), (119.6, "2 h 0 min")])
def test_hours_minutes(minutes, text):
    assert book_build.hours_minutes(minutes) == text


def test_tree_memory_counts_a_child_and_refuses_a_bad_interval():
    with pytest.raises(ValueError, match="interval: seconds above 0"):
        TreeMemory(0)
    code = "import time; x = bytearray(200 * 2**20); x[::4096] = b'1' * len(x[::4096]); time.sleep(2)"
    with TreeMemory(interval=0.1) as mem:
        child = subprocess.Popen([sys.executable, "-c", code])
        child.wait()
    assert child.returncode == 0
    # the child's 200 MB were seen as its own, and in the tree's total with this process's
    assert mem.peaks[child.pid] >= 190
    assert mem.peak_total_mb >= mem.peaks[child.pid] + 0.9 * mem.peaks[os.getpid()]
    assert mem.peak_process_mb >= mem.peaks[child.pid] and mem.samples >= 5


def test_tree_memory_tells_the_trees_cpu_time_from_other_work_on_the_machine(tmp_path):
    # one second of CPU time, however busy the machine is
    spin = "import time\nwhile time.process_time() < 1.0: pass"
    with TreeMemory(interval=0.1) as mem:
        subprocess.run([sys.executable, "-c", spin + "\ntime.sleep(0.3)"], check=True)
    assert mem.tree_cpu_seconds >= 0.9 and mem.machine_cpu_seconds >= 0.9
    # the same work outside the tree (a new session, its parent gone): other work
    done = tmp_path / "done"
    with TreeMemory(interval=0.1) as mem:
        subprocess.run(["setsid", "-f", sys.executable, "-c",
                        spin + f"\nopen({str(done)!r}, 'w').close()"], check=True)
        for _ in range(600):   # until it is done (at most a minute)
            if done.exists():
                break
            time.sleep(0.1)
        time.sleep(0.3)
    assert done.exists()
    assert mem.other_cpu_seconds >= 0.9 and mem.tree_cpu_seconds < 0.5


def test_cli_record_errors_are_one_line(tmp_path, monkeypatch):
    (tmp_path / "p").mkdir()
    root = make_project(tmp_path / "p", {"a": chapter("A", "x = 1")})
    monkeypatch.chdir(root)
    phd = [sys.executable, "-m", "phdlib.cli"]
    r = subprocess.run(phd + ["book", "record", "--out", str(tmp_path / "r.json")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("phd: error: ") and \
        "no executed chapter to record" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run(phd + ["book", "build", "--record", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip() == (
        f"phd: error: --record {tmp_path}: is a folder; give a file path")
    executed_notebook(root / "_build" / "exec" / "book" / "a.ipynb", title="A")
    r = subprocess.run(phd + ["book", "record", "--out", str(tmp_path / "r.json"), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["chapters"] == 1
    assert record.load(tmp_path / "r.json")["rows"]["chapter"].tolist() == ["a"]
