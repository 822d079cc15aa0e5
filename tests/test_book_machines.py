"""The same book on other machines (:mod:`phdlib.report.book_machines`): builds set
beside one build chapter by chapter, one build or several in parts."""
from __future__ import annotations

import json

import numpy as np
import pytest

from phdlib.book import record
from phdlib.report import book_machines
from test_book_record import MEASURED, ROW, _write_record


def test_a_build_on_another_machine_is_set_beside_the_first_chapter_by_chapter(tmp_path):
    rows = [dict(ROW, chapter="a", title="Alpha", seconds=600.0),
            dict(ROW, chapter="b", title="Beta", seconds=1200.0),
            dict(ROW, chapter="c", title="Gamma", seconds=300.0)]
    base = json.loads(_write_record(tmp_path / "base.json", rows, measured=MEASURED).read_text())
    base["provenance"]["commit"] = "1111111111aaaa"
    (tmp_path / "base.json").write_text(json.dumps(base))
    # the other machine: Alpha and Beta to the end, Gamma cut short, at other code
    there = [dict(ROW, chapter="a", title="Alpha", seconds=1200.0),
             dict(ROW, chapter="b", title="Beta", seconds=1800.0),
             dict(ROW, chapter="c", title="Gamma", seconds=60.0, failed=True)]
    other = json.loads(_write_record(tmp_path / "other.json", there,
                                     measured=dict(MEASURED, failed="KeyboardInterrupt"))
                       .read_text())
    other["provenance"].update(commit="2222222222bbbb", cpu="Intel(R) Xeon(R) Processor "
                                                            "(family 6, model 207)")
    (tmp_path / "other.json").write_text(json.dumps(other))
    base, other = record.load(tmp_path / "base.json"), record.load(tmp_path / "other.json")
    t = book_machines.machines(base, [other])
    assert t["chapter"].tolist() == ["Alpha", "Beta", "Gamma"]
    assert t["minutes"].tolist() == pytest.approx([10.0, 20.0, 5.0])
    assert t["minutes 1"].tolist()[:2] == pytest.approx([20.0, 30.0])
    assert t["ratio 1"].tolist()[:2] == pytest.approx([2.0, 1.5])
    assert np.isnan(t["minutes 1"].iloc[2]) and np.isnan(t["ratio 1"].iloc[2])  # cut short
    lines = book_machines.machines_findings(base, other, "Tiny")
    assert "on 2 cores of an Intel(R) Xeon(R) Processor (family 6, model 207)" in lines[0]
    assert "Interrupted in Gamma, by hand (unfinished, not failed)." in lines
    assert lines[-1] == (
        "For the 2 chapters run to the end in one piece on both machines, this build took "
        "1.67 times as long as the build above (50 min against 30 min; from 1.50 to 2.00 times by chapter, 1.50 "
        "in the longest, Beta). The two ran different code (2222222222 here, 1111111111 "
        "above), so the ratios are the machines' and the code's together.")
    # other parameters: not compared, and said so; another store, or one not known: said so
    other["rows"].at[0, "parameters"] = {"seeds": 1}
    t = book_machines.machines(base, [other])
    assert np.isnan(t["minutes 1"].iloc[0]) and t["minutes 1"].iloc[1] == pytest.approx(30.0)
    lines = book_machines.machines_findings(base, other, "Tiny")
    assert "Ran with other parameters than the build above, so not compared: Alpha." in lines
    assert lines[-1].startswith("For the 1 chapter run to the end in one piece on both "
                                "machines, this build took 1.50 times as long as the build "
                                "above (30 min against 20 min).")
    other["rows"].at[0, "parameters"] = {}
    other["build"]["measured"]["store_runs_before"] = 639
    assert ("The builds started on different results stores (639 runs here, 0 above)"
            in book_machines.machines_findings(base, other, "Tiny")[-1])
    other["build"]["measured"] = None   # a record of executions only (phd book record)
    assert ("A record does not say which results store its build started on"
            in book_machines.machines_findings(base, other, "Tiny")[-1])
    other["build"]["measured"] = dict(MEASURED, failed="KeyboardInterrupt")
    # the same code: no such caveat; code that cannot be told: said so
    other["provenance"]["commit"] = base["provenance"]["commit"]
    assert "different code" not in book_machines.machines_findings(base, other, "Tiny")[-1]
    for commit in (base["provenance"]["commit"] + "+dirty", None):
        other["provenance"]["commit"] = commit
        assert "cannot be told" in book_machines.machines_findings(base, other, "Tiny")[-1]
    # a chapter reused from an earlier build, or run from older source, is not compared;
    # nor is one that took no time on the first machine
    other["build"]["measured"]["cached"] = ["a"]
    other["rows"] = other["rows"].assign(current=[True, False, True])
    assert book_machines.machines(base, [other])["minutes 1"].isna().all()
    other["build"]["measured"]["cached"] = []
    other["rows"] = other["rows"].assign(current=True)
    base["rows"] = base["rows"].assign(seconds=[0.0, 1200.0, 300.0])
    t = book_machines.machines(base, [other])
    assert np.isnan(t["ratio 1"].iloc[0]) and t["ratio 1"].iloc[1] == pytest.approx(1.5)
    assert "For the 1 chapter run" in book_machines.machines_findings(base, other, "Tiny")[-1]
    other["rows"] = other["rows"].assign(failed=True)
    assert not any(x.startswith("For the") for x in
                   book_machines.machines_findings(base, other, "Tiny"))


def _record(tmp_path, name, rows, commit, measured=None, cpu=None):
    path = _write_record(tmp_path / name, rows, measured=measured)
    obj = json.loads(path.read_text())
    obj["provenance"].update(commit=commit, **({"cpu": cpu} if cpu else {}))
    path.write_text(json.dumps(obj))
    return record.load(path)


def _at(minute):
    """A row's start, ``minute`` minutes into the day."""
    return f"2026-01-02T{minute // 60:02d}:{minute % 60:02d}:00+00:00"


def test_a_machine_that_built_the_book_in_two_parts_is_compared_chapter_by_chapter(tmp_path):
    names = {"a": "Alpha", "b": "Beta", "c": "Gamma", "d": "Delta"}
    base = _record(tmp_path, "base.json",
                   [dict(ROW, chapter=c, title=t, seconds=600.0) for c, t in names.items()],
                   "1111111111aaaa", measured=MEASURED)
    cpu = "Intel(R) Xeon(R) Processor (family 6, model 207)"
    # the first build: Alpha and Beta to the end, killed in Gamma (30 s to its last cell)
    first_rows = [
        dict(ROW, chapter="a", title="Alpha", seconds=1200.0, started=_at(0)),
        dict(ROW, chapter="b", title="Beta", seconds=900.0, started=_at(20)),
        dict(ROW, chapter="c", title="Gamma", seconds=30.0, failed=True, unfinished=True,
             started=_at(35))]
    first = _record(tmp_path, "first.json", first_rows, "2222222222bbbb", cpu=cpu)
    # the second, on the store the first left: Alpha and Beta reused (their rows are the
    # first build's executions, whatever the record says of them), Gamma and Delta run
    second_rows = [
        dict(ROW, chapter="a", title="Alpha", seconds=1.0, started=_at(0)),
        dict(ROW, chapter="b", title="Beta", seconds=1.0, started=_at(20)),
        dict(ROW, chapter="c", title="Gamma", seconds=900.0, started=_at(100)),
        dict(ROW, chapter="d", title="Delta", seconds=1800.0, started=_at(115))]
    second = _record(tmp_path, "second.json", second_rows, "2222222222bbbb",
                     measured=dict(MEASURED, cached=["a", "b"], executed=["c", "d"],
                                   store_runs_before=639), cpu=cpu)
    assert book_machines.builds(first) == [first]
    assert book_machines.in_parts([first, second]) == {"c": ([0.5], 15.0)}
    t = book_machines.machines(base, [[first, second], first])
    assert t["minutes 1"].tolist()[:2] == pytest.approx([20.0, 15.0])
    assert np.isnan(t["minutes 1"].iloc[2])          # Gamma: in two parts, not compared
    assert t["minutes 1"].iloc[3] == pytest.approx(30.0)
    assert t["ratio 1"].tolist()[:2] == pytest.approx([2.0, 1.5])
    assert t["minutes 2"].isna().tolist() == [False, False, True, True]  # one build alone
    lines = book_machines.machines_findings(base, [first, second], "Tiny")
    assert lines[0].startswith(
        "**Chapter by chapter over 2 builds, the book on Tiny took 1 h 20 min of chapter "
        "execution**, each chapter counted once, from the build that ran it to the end (the "
        "first 36 min for 3 chapters; the second 45 min for 2 chapters on a store of 639 "
        "runs).")
    assert lines[1] == f"The 2 builds ran on 2 cores of an {cpu}."
    assert ("Not compared, as executed more than once (the last going on from the runs the "
            "earlier tries had stored): Gamma (15 min in the last, after 1 earlier try "
            "recorded as 30 s).") in lines
    assert lines[-1].startswith(
        "For the 3 chapters run to the end in one piece on both machines, these builds took "
        "2.17 times as long as the build above (1 h 5 min against 30 min; from 1.50 to 3.00 "
        "times by chapter, 2.00 in the longest, Alpha). The two ran different code "
        "(2222222222 here, 1111111111 above)")
    # the first build's record does not say which store it started on: said so
    assert "A record does not say which results store" in lines[-1]
    # the second recorded by phd book record (no measured block): the rows it repeats
    # from the first build are still the first build's, by their start
    again = _record(tmp_path, "again.json", second_rows, "2222222222bbbb", cpu=cpu)
    assert book_machines.in_parts([first, again]) == {"c": ([0.5], 15.0)}
    assert book_machines.machines(base, [[first, again]])["minutes 1"].tolist()[:2] == \
        pytest.approx([20.0, 15.0])
    assert "the second 45 min for 2 chapters" in \
        book_machines.machines_findings(base, [first, again], "Tiny")[0]
    # a first build whose own record stopped after Beta (killed in Gamma, no row for it)
    killed = _record(tmp_path, "killed.json", first_rows[:2], "2222222222bbbb", cpu=cpu,
                     measured=dict(MEASURED, ended=False, upto="b", not_reached=["c", "d"]))
    parts = book_machines.in_parts([killed, second])
    assert list(parts) == ["c"] and np.isnan(parts["c"][0][0]) and parts["c"][1] == 15.0
    assert any(x.endswith("Gamma (15 min in the last, after 1 earlier try).") for x in
               book_machines.machines_findings(base, [killed, second], "Tiny"))
    # a chapter executed again and failed: not compared (its last try did not end), and
    # not from the earlier execution either
    third = _record(tmp_path, "third.json", [
        dict(ROW, chapter="d", title="Delta", seconds=60.0, failed=True, started=_at(200))],
        "2222222222bbbb", cpu=cpu, measured=MEASURED)
    t = book_machines.machines(base, [[first, second, third]])
    assert np.isnan(t["minutes 1"].iloc[3]) and "d" not in book_machines.in_parts(
        [first, second, third])
    # executed to the end twice: the second read what the first stored, not compared
    fourth = _record(tmp_path, "fourth.json", [
        dict(ROW, chapter="d", title="Delta", seconds=60.0, started=_at(200))],
        "2222222222bbbb", cpu=cpu, measured=MEASURED)
    assert book_machines.in_parts([first, second, fourth])["d"] == ([30.0], 1.0)
    # builds at different commits: the code cannot be named
    second["provenance"]["commit"] = "3333333333cccc"
    assert "cannot be told" in book_machines.machines_findings(base, [first, second], "Tiny")[-1]
    # on different machines: each named
    second["provenance"]["cpu"] = "AMD EPYC 9B14"
    lines = book_machines.machines_findings(base, [first, second], "Tiny")
    assert lines[1].startswith("The builds ran on different machines: the first on 2 cores "
                               f"of an {cpu}; the second on 2 cores of an AMD EPYC")


def test_other_work_on_a_machine_during_a_build_is_said(tmp_path):
    base = _record(tmp_path, "base.json", [dict(ROW, chapter="a", title="Alpha", seconds=600.0)],
                   "1111111111aaaa", measured=MEASURED)
    # 6300 s of wall time on 2 cores: 12,600 CPU-seconds; other work took 1,260 (10%)
    there = _record(tmp_path, "there.json", [dict(ROW, chapter="a", title="Alpha",
                                                  seconds=1200.0)], "1111111111aaaa",
                    measured=dict(MEASURED, machine_cpu_seconds=9000.0,
                                  other_cpu_seconds=1260.0))
    lines = book_machines.machines_findings(base, there, "Tiny")
    assert lines[-1].endswith("Other work shared the machine during the build here (at least "
                              "2% of its cores' time), so some of its chapters' times include "
                              "that contention.")
    assert ("Other work used 21 min of CPU time on the machine while it ran, 10% of its 2 "
            "cores' time: the chapters' times include that contention.") in lines
    # under the threshold: its share said, no contention claimed; not measured (older
    # records): nothing said
    there["build"]["measured"]["other_cpu_seconds"] = 100.0
    lines = book_machines.machines_findings(base, there, "Tiny")
    assert ("Other work used 1.7 min of CPU time on the machine while it ran, 0.8% of its 2 "
            "cores' time, below the 2% at which these findings call a machine shared.") in lines
    # just under the threshold: cut, not rounded up to it
    there["build"]["measured"]["other_cpu_seconds"] = 0.0199 * 12600
    assert any("1.9% of its 2 cores' time, below the 2%" in x
               for x in book_machines.machines_findings(base, there, "Tiny"))
    there["build"]["measured"]["other_cpu_seconds"] = 100.0
    assert not any("contention" in x for x in lines)
    del there["build"]["measured"]["other_cpu_seconds"]
    assert not any("Other work" in x for x in book_machines.machines_findings(base, there,
                                                                              "Tiny"))
    # a bad value is refused by name
    obj = json.loads((tmp_path / "there.json").read_text())
    obj["build"]["measured"]["other_cpu_seconds"] = -1
    (tmp_path / "bad.json").write_text(json.dumps(obj))
    with pytest.raises(ValueError, match="build.measured.other_cpu_seconds must be a number"):
        record.load(tmp_path / "bad.json")
