"""The book driver (``phdlib.book``) on a tiny project in a temporary folder.

A few kernel executions (a Python kernel start is a few seconds each) plus one
small ``jupyter-book build`` of plain Markdown pages.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from phdlib.book import driver as book
from phdlib.book import heartbeat

ROOT = Path(__file__).resolve().parents[1]

HEADER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def chapter(title: str, *cells: str, params: str | None = None) -> str:
    """A MyST notebook chapter: optional ``parameters`` cell, then code cells."""
    out = [HEADER, f"# {title}\n", "Some narrative.\n"]
    if params is not None:
        out.append("```{code-cell} ipython3\n:tags: [parameters]\n\n" + params.strip() + "\n```\n")
    for c in cells:
        out.append("```{code-cell} ipython3\n" + textwrap.dedent(c).strip() + "\n```\n")
    return "\n".join(out)


def make_project(tmp: Path, chapters: dict[str, str], parts: list[tuple[str, list[str], bool]] | None = None) -> Path:
    """A project folder: the real _config.yml and references.bib, a _toc.yml, book/*.md."""
    shutil.copy(ROOT / "_config.yml", tmp / "_config.yml")
    shutil.copy(ROOT / "references.bib", tmp / "references.bib")
    (tmp / "_mathjax").mkdir()  # html_static_path must exist; the site tests check MathJax itself
    (tmp / "book").mkdir()
    (tmp / "book" / "index.md").write_text("# Tiny book\n\nLanding page.\n")
    for name, text in chapters.items():
        (tmp / "book" / f"{name}.md").write_text(text)
    parts = parts or [("Chapters", list(chapters), True)]
    toc = {"format": "jb-book", "root": "book/index", "parts": [
        {"caption": cap, **({"numbered": True} if numbered else {}),
         "chapters": [{"file": f"book/{n}"} for n in names]}
        for cap, names, numbered in parts
    ]}
    (tmp / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    return tmp


def outputs(nb_path: Path) -> str:
    nb = json.loads(nb_path.read_text())
    return "".join(
        "".join(o.get("text", "")) for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
    )


def injected(nb_path: Path) -> list[str]:
    nb = json.loads(nb_path.read_text())
    return ["".join(c["source"]) for c in nb["cells"]
            if "injected-parameters" in c.get("metadata", {}).get("tags", [])]


def test_parameters_only_where_declared_and_execution_cache(tmp_path):
    a = chapter("With parameters", "print('dataset is', dataset, 'seed is', seed)",
                params='dataset = "ml-1m"  # the data\nseed = 0  # the seed')
    b = chapter("Other parameters", "print('b version 1')",
                params='profile = "quick"  # declared here only')
    root = make_project(tmp_path, {"a": a, "b": b})
    log: list[str] = []
    # a parameter no chapter declares fails before anything runs
    with pytest.raises(ValueError, match="parameter 'sede': no chapter declares it"):
        book.build(root=root, parameters={"dataset": "ml-100k", "sede": 3},
                   site=False, log=log.append)
    assert not (root / "_build/exec/book/a.ipynb").exists()
    params = {"dataset": "ml-100k"}

    # 1st build: both execute; a gets dataset only, b nothing
    res = {r.name: r for r in book.build(root=root, parameters=params, site=False, log=log.append)}
    assert res["a"].executed and res["b"].executed
    assert res["a"].parameters == {"dataset": "ml-100k"}
    assert res["b"].parameters == {}
    exec_a, exec_b = root / "_build/exec/book/a.ipynb", root / "_build/exec/book/b.ipynb"
    assert "dataset is ml-100k seed is 0" in outputs(exec_a)
    assert injected(exec_a) and "ml-100k" in injected(exec_a)[0] and "profile" not in injected(exec_a)[0]
    assert injected(exec_b) == []
    assert any(re.search(r"book/a\.md: executed in \d+\.\d s", m) for m in log), log
    # the staging tree holds the executed notebooks, not the sources
    assert (root / "_build/stage/book/a.ipynb").is_file() and not (root / "_build/stage/book/a.md").exists()
    assert (root / "_build/stage/book/index.md").is_file()

    # 2nd build, nothing changed: both reused
    mtime = exec_a.stat().st_mtime_ns
    res = {r.name: r for r in book.build(root=root, parameters=params, site=False, log=log.append)}
    assert not res["a"].executed and not res["b"].executed
    assert res["a"].cached and res["b"].cached
    assert res["a"].parameters == {"dataset": "ml-100k"}
    assert exec_a.stat().st_mtime_ns == mtime

    # 3rd build: b's source changed, and a parameter that a does not declare
    # changed: b re-executes, a is reused
    (root / "book/b.md").write_text(b.replace("b version 1", "b version 2"))
    res = {r.name: r for r in book.build(root=root, parameters={**params, "profile": "full"},
                                         site=False, log=log.append)}
    assert res["b"].executed and not res["a"].executed
    assert "b version 2" in outputs(exec_b)
    assert "b version 2" in outputs(root / "_build/stage/book/b.ipynb")


def test_a_chapter_runs_again_when_a_file_its_parameters_name_changes(tmp_path):
    """A recorded measurement (``book/recorded/...``) is an input of the chapter that reads
    it: a page is never served from an execution of the file's old contents."""
    a = chapter("Reads a record", "print(open(recorded).read(), [open(f).read() for f in more])",
                params='recorded = "recorded/r.json"  # a file\nmore = []  # more files\n'
                       'name = "ml-1m"  # not a file')
    b = chapter("Reads nothing", "print('b')")
    root = make_project(tmp_path, {"a": a, "b": b})
    (root / "book" / "recorded").mkdir()
    (root / "book" / "recorded" / "r.json").write_text("first")
    (root / "book" / "recorded" / "s.json").write_text("other")
    log: list[str] = []
    book.build(root=root, site=False, log=log.append)
    res = {r.name: r for r in book.build(root=root, site=False, log=log.append)}
    assert res["a"].cached and res["b"].cached
    (root / "book" / "recorded" / "r.json").write_text("second")
    res = {r.name: r for r in book.build(root=root, site=False, log=log.append)}
    assert res["a"].executed and res["b"].cached
    assert "second" in outputs(root / "_build/exec/book/a.ipynb")
    # a file named by a value passed over the default counts too, in a list as well
    params = {"more": ["recorded/s.json"]}
    assert book.build(root=root, parameters=params, site=False, log=log.append)[0].executed
    (root / "book" / "recorded" / "s.json").write_text("changed")
    res = {r.name: r for r in book.build(root=root, parameters=params, site=False,
                                         log=log.append)}
    assert res["a"].executed and "changed" in outputs(root / "_build/exec/book/a.ipynb")
    key = json.loads((root / "_build/exec/book/a.key.json").read_text())
    assert sorted(key["files"]) == ["recorded/r.json", "recorded/s.json"]
    assert "files" not in json.loads((root / "_build/exec/book/b.key.json").read_text())


def test_the_root_page_runs_last_and_again_when_a_chapter_changed(tmp_path):
    """The landing page summarises what the chapters stored: it executes after them, and a
    changed chapter makes it execute again even though its own source did not change."""
    stamp = tmp_path / "order.txt"
    a = chapter("A", f"open({str(stamp)!r}, 'a').write('a version 1\\n')")
    root = make_project(tmp_path / "p", {"a": a}) if (tmp_path / "p").mkdir() is None else None
    (root / "book" / "index.md").write_text(chapter(
        "Landing", f"open({str(stamp)!r}, 'a').write('index\\n')"))
    log: list[str] = []
    res = book.build(root=root, site=False, log=log.append)
    assert stamp.read_text().split() == ["a", "version", "1", "index"]
    assert [r.name for r in res] == ["index", "a"]  # reported in table-of-contents order
    book.build(root=root, site=False, log=log.append)  # nothing changed: nothing runs
    assert stamp.read_text().count("index") == 1
    (root / "book" / "a.md").write_text(a.replace("version 1", "version 2"))
    res = {r.name: r for r in book.build(root=root, site=False, log=log.append)}
    assert res["a"].executed and res["index"].executed
    assert stamp.read_text().split()[-1] == "index"


def test_failing_chapter_names_chapter_and_cell(tmp_path):
    bad = chapter("Broken", "y = 2", "z = y + 1\nratio = z / 0", params="dataset = 'ml-1m'  # the data")
    root = make_project(tmp_path, {"broken": bad})
    with pytest.raises(book.ChapterError) as err:
        book.build(root=root, parameters={"dataset": "ml-100k"}, site=False, log=lambda *a: None)
    msg = str(err.value)
    # the parameters cell is not counted by papermill's injected cell: code
    # cell 3 is the third code cell of the .md (parameters, y = 2, the raise)
    line = (root / "book/broken.md").read_text().splitlines().index("z = y + 1") + 1
    assert f"chapter 'broken' ({root / 'book/broken.md'}) failed in code cell 3 (line {line} of broken.md)" in msg, msg
    assert "ZeroDivisionError: division by zero" in msg, msg
    assert "cell starts with: z = y + 1" in msg, msg
    partial = root / "_build/exec/book/broken.partial.ipynb"
    assert str(partial) in msg and partial.is_file()
    # nothing is cached for the failed chapter: the next build retries it
    assert not (root / "_build/exec/book/broken.ipynb").exists()
    assert not (root / "_build/exec/book/broken.key.json").exists()


def test_selection_errors_need_no_kernel(tmp_path):
    """--chapter with an unknown name fails before executing; so does a site build that
    leaves out a never-executed chapter, even one after the selected chapter, naming each."""
    root = make_project(tmp_path, {"a": chapter("A", "1"), "b": chapter("B", "2"),
                                   "c": chapter("C", "3")})
    with pytest.raises(ValueError, match=r"unknown chapter\(s\) \['nope'\]"):
        book.build(root=root, only=["nope"], site=False, log=lambda *a: None)
    with pytest.raises(book.ChapterNotBuilt,
                       match="--chapter leaves out 2 chapters never executed: 'b', 'c'; .* --no-site"):
        book.build(root=root, only=["a"], site=True, log=lambda *a: None)
    assert not (root / "_build/exec/book/a.ipynb").exists()


def test_selected_chapter_runs_alone_without_a_site(tmp_path):
    """--chapter X --no-site on a fresh checkout executes X alone: the chapters never
    executed are left out, said in the log, not refused; one executed before is kept; a
    site build then still needs every one; a record of nothing executed is refused."""
    from phdlib.book import record

    root = make_project(tmp_path, {"a": chapter("A", "1"), "b": chapter("B", "2"),
                                   "c": chapter("C", "3")})
    out = tmp_path / "rec.json"
    with pytest.raises(ValueError, match="not written: no chapter .* has been executed"):
        record.build_recorded(out, root=root, only=["index"], site=False, log=lambda *a: None)
    assert not out.exists()
    lines = []
    res = book.build(root=root, only=["b"], site=False, log=lines.append)
    assert [r.name for r in res] == ["b"] and res[0].executed
    assert (root / "_build/exec/book/b.ipynb").is_file()
    assert not (root / "_build/exec/book/a.ipynb").exists()
    for name in ("a", "c"):
        assert any(f"book/{name}.md: not selected and never executed: left out" in ln
                   for ln in lines), lines
    lines = []
    res = book.build(root=root, only=["c"], site=False, log=lines.append)
    assert [(r.name, r.executed) for r in res] == [("b", False), ("c", True)]
    assert any("book/b.md: cached" in ln for ln in lines), lines
    with pytest.raises(book.ChapterNotBuilt, match="leaves out 1 chapter never executed: 'a'"):
        book.build(root=root, only=["b"], site=True, log=lambda *a: None)


def test_site_numbers_chapters_across_parts_and_fails_on_warnings(tmp_path):
    """Plain Markdown pages (no kernel), one site build: warnings (here a broken
    cross-reference and a script from a CDN) fail it, and the pages it still
    writes (``--keep-going``) number chapters on across parts, with an
    unnumbered References page."""
    pages = {
        "one": "# One\n\nFirst chapter, citing {cite:p}`hansen2021phd`.\n",
        "two": "# Two\n\nSecond chapter.\n\n## A section\n\nSee {doc}`no-such-page`.\n",
        "references": "# References\n\n```{bibliography}\n```\n",
    }
    root = make_project(tmp_path, pages, parts=[("Part A", ["one"], True), ("Part B", ["two"], True),
                                                 ("Back matter", ["references"], False)])
    # a script from a CDN is a warning too (phdlib.book.offline): the site must be self-contained
    cfg = yaml.safe_load((root / "_config.yml").read_text())
    cfg["sphinx"]["config"]["html_js_files"] = ["https://cdn.example.org/lib.js"]
    (root / "_config.yml").write_text(yaml.safe_dump(cfg))
    with pytest.raises(book.SiteBuildError) as err:
        book.build(root=root, site=True, log=lambda *a: None)
    msg = str(err.value)
    assert "jupyter-book build failed" in msg and "no-such-page" in msg, msg
    assert "loads https://cdn.example.org/lib.js from another host" in msg, msg
    html = root / "_build/html/book"

    def title(f):
        return [h for h in re.findall(r"<h1>(.*?)</h1>", (html / f).read_text(), re.S) if "headerlink" in h][0]

    assert '<span class="section-number">1. </span>One' in title("one.html")
    assert '<span class="section-number">2. </span>Two' in title("two.html")
    assert '<span class="section-number">2.1. </span>A section' in (html / "two.html").read_text()
    assert "section-number" not in title("references.html")
    assert "Projected Hamming dissimilarity" in (html / "references.html").read_text()
    assert 'href="references.html#' in (html / "one.html").read_text()


def _pins(lines) -> dict[str, str]:
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            out[name.strip().lower().replace("_", "-")] = version.strip()
    return out


def test_environment_yml_has_the_pins_of_requirements_in():
    """Conda users get the same top-level pins as `make venv`, on Python 3.11, plus phdlib itself."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["name"] == "phd-book"
    deps = env["dependencies"]
    assert "python=3.11" in deps
    pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    assert "-e ." in pip
    want = _pins((ROOT / "requirements.in").read_text().splitlines())
    have = _pins(pip)
    missing = {k: v for k, v in want.items() if have.get(k) != v}
    extra = sorted(set(have) - set(want))
    assert not missing and not extra, (
        f"environment.yml's pip section differs from requirements.in: add or fix "
        f"{[f'{k}=={v}' for k, v in missing.items()]}, remove {extra}"
    )
    # and every top-level pin is what the lock installs
    lock = _pins((ROOT / "requirements.txt").read_text().splitlines())
    differ = {k: (v, lock.get(k)) for k, v in want.items() if lock.get(k) != v}
    assert not differ, f"requirements.in pin vs requirements.txt lock: {differ}"


@pytest.mark.slow
def test_lab_opens_chapters_as_notebooks(tmp_path):
    """What `make lab` serves: a chapter .md is a notebook (Jupytext), Markdown opens in the
    notebook viewer by default, and saving writes the chapter back unchanged."""
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    proj = tmp_path / "proj"
    (proj / "book").mkdir(parents=True)
    shutil.copy(ROOT / "jupytext.toml", proj / "jupytext.toml")
    chapter_md = (ROOT / "book" / "hamming.md").read_text()
    (proj / "book" / "hamming.md").write_text(chapter_md)
    settings = tmp_path / "settings" / "overrides.d"  # as `make lab` installs it into the venv
    settings.mkdir(parents=True)
    shutil.copy(ROOT / ".jupyter" / "phd-book-lab.json", settings / "phd-book.json")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "phd-book-test"
    cmd = [str(Path(sys.executable).with_name("jupyter")), "lab", "--no-browser", "--ip=127.0.0.1",
           f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={proj}",
           f"--LabApp.app_settings_dir={settings.parent}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"), "JUPYTER_DATA_DIR": str(tmp_path / "data")}
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"

    def call(path, method="GET", body=None):
        req = urllib.request.Request(base + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"token {token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"null")

    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                call("/api/status")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"jupyter lab did not start: {(tmp_path / 'lab.log').read_text()[-2000:]}")
                time.sleep(0.5)
        model = call("/api/contents/book/hamming.md")
        assert model["type"] == "notebook", model["type"]
        cells = model["content"]["cells"]
        assert any("parameters" in c["metadata"].get("tags", []) for c in cells)
        assert sum(c["cell_type"] == "code" for c in cells) >= 3
        plugin = call("/lab/api/settings/@jupyterlab/docmanager-extension:plugin")
        # the override becomes the schema's default (the user's own settings still win)
        viewers = plugin["schema"]["properties"]["defaultViewers"]["default"]
        assert viewers.get("markdown") == "Jupytext Notebook" and viewers.get("myst") == "Jupytext Notebook"
        call("/api/contents/book/saved.md", "PUT",
             {"type": "notebook", "format": "json", "content": model["content"]})
        assert (proj / "book" / "saved.md").read_text() == chapter_md
        assert not list(proj.rglob("*.ipynb")), "a paired .ipynb was written beside the chapter"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.mark.parametrize("dataset,banner", [("synthetic", True), ("synthetic-ml-10m", True),
                                            ("ml-1m", False), (None, False)])
def test_a_book_on_synthetic_data_says_so_on_every_page(tmp_path, dataset, banner):
    (tmp_path / "_config.yml").write_text("title: t\nhtml:\n  use_download_button: true\n")
    book.stage_synthetic_banner(tmp_path, dataset)
    cfg = yaml.safe_load((tmp_path / "_config.yml").read_text())
    assert cfg["html"]["use_download_button"] is True
    got = cfg["html"].get("announcement", "")
    assert (f"dataset '{dataset}'" in got and "not on real data" in got) if banner else not got


def test_a_cell_may_run_as_long_as_it_takes_unless_a_timeout_is_given(tmp_path, monkeypatch):
    """Training cells at the paper's settings on a large dataset run for hours: no
    limit by default; ``cell_timeout`` (``--cell-timeout``) fails the chapter."""
    proj = make_project(tmp_path, {"slow": chapter("Slow", "import time\ntime.sleep(3)\nprint('done')")})
    with pytest.raises(book.ChapterError, match="slow.*(Timeout|timed out)"):
        book.build(root=proj, site=False, log=lambda *a: None, cell_timeout=1)
    lines = []
    res = book.build(root=proj, site=False, log=lines.append, heartbeat=0.5)
    assert [r.executed for r in res] == [True]
    assert "done" in outputs(proj / "_build" / "exec" / "book" / "slow.ipynb")
    # a long chapter says, while it runs, that it still does and what it stored so far
    beats = [x for x in lines if "still executing" in x]
    assert beats and "book/slow.md" in beats[0] and "runs since it started" in beats[0]
    # the limit reaches papermill as whole seconds; none by default
    import papermill

    seen = []

    def fake(*a, **k):
        seen.append(k["execution_timeout"])
        raise RuntimeError("stop here")

    monkeypatch.setattr(papermill, "execute_notebook", fake)
    for limit in (None, 1.5):
        with pytest.raises(book.ChapterError, match="stop here"):
            book.build(root=proj, site=False, log=lambda *a: None, cell_timeout=limit,
                       force=True)
    assert seen == [None, 2]
    for bad in (0, -5):  # not a limit: said, not taken as none
        with pytest.raises(ValueError, match="cell_timeout: seconds above 0"):
            book.build(root=proj, site=False, log=lambda *a: None, cell_timeout=bad)


def test_the_heartbeat_keeps_a_file_of_when_it_last_saw_the_chapter_running(tmp_path,
                                                                            monkeypatch):
    from phdlib import results

    monkeypatch.setattr(results, "count", lambda root=None: 7)
    alive = tmp_path / "x.alive.json"
    alive.write_text("{}")   # a killed build's, left behind: not this execution's
    with heartbeat.beating("book/x.md", print, 60.0, alive=alive):
        assert not alive.exists()
    alive.write_text("{}")
    with heartbeat.beating("book/x.md", print, 0, alive=alive):   # no heartbeat: no file
        assert not alive.exists()
    seen = []
    with heartbeat.beating("book/x.md", seen.append, 0.05, alive=alive):
        time.sleep(0.4)
        obj = json.loads(alive.read_text())
    assert obj["chapter"] == "x" and obj["seconds"] > 0
    assert obj["seen"] > obj["started"]
    assert not alive.exists()   # the execution ended: nothing left to say
    # a log that fails stops the lines, not the file
    def broken(line):
        raise BrokenPipeError("closed")
    with heartbeat.beating("book/x.md", broken, 0.05, alive=alive):
        time.sleep(0.3)
        first = json.loads(alive.read_text())["seconds"]
        time.sleep(0.3)
        assert json.loads(alive.read_text())["seconds"] > first


def test_the_progress_line_survives_a_store_it_cannot_list_and_a_log_that_fails(monkeypatch):
    from phdlib import results

    def unlistable(root=None):
        raise OSError("listing failed")

    monkeypatch.setattr(results, "count", unlistable)
    lines = []
    with heartbeat.beating("book/x.md", lines.append, 0.05):
        time.sleep(0.3)
    assert lines and "an unknown number of runs" in lines[0]

    def broken(line):
        raise BrokenPipeError("closed")

    import threading

    escaped = []
    old_hook = threading.excepthook
    threading.excepthook = lambda a: escaped.append(a.exc_value)
    try:
        with heartbeat.beating("book/x.md", broken, 0.05):  # the thread stops, nothing raised
            time.sleep(0.2)
    finally:
        threading.excepthook = old_hook
    assert escaped == []


def test_parameter_values_are_checked_against_the_chapters_defaults_before_anything_runs(
        tmp_path):
    a = chapter("A", "print(seeds, profile, dataset, widths, note)",
                params='dataset = "ml-1m"\nprofile = "full"\nseeds = 5\nwidths = [32, 64]\n'
                       'note = None')
    root = make_project(tmp_path, {"a": a})
    bad = [({"seeds": "abc"}, "parameter seeds='abc': chapter 'a' expects an integer "
                              r"\(its default is 5\), got a text"),
           ({"seeds": 1.5}, "expects an integer"),
           ({"seeds": True}, "expects an integer"),
           ({"widths": 32}, "expects a list"),
           ({"profile": "bogus"}, "parameter profile='bogus': expected one of full, quick"),
           ({"dataset": "nosuch"}, "parameter dataset='nosuch': unknown dataset")]
    for params, msg in bad:
        with pytest.raises(ValueError, match=msg):
            book.build(root=root, parameters=params, site=False, log=lambda *a: None)
        assert not (root / "_build/exec/book/a.ipynb").exists()
    res = book.build(root=root, parameters={"seeds": 1, "note": [1, "x"],
                                            "dataset": "synthetic"},
                     site=False, log=lambda *a: None)
    assert res[0].parameters == {"seeds": 1, "note": [1, "x"], "dataset": "synthetic"}


def test_a_bad_option_fails_at_once_while_another_build_holds_the_lock(tmp_path):
    import fcntl
    import threading

    root = make_project(tmp_path, {"a": chapter("A", "print(1)", params="seeds = 5")})
    (root / "_build").mkdir()
    raised = []

    def bad():
        try:
            book.build(root=root, parameters={"seeds": "abc"}, site=False, log=lambda *a: None)
        except ValueError as exc:
            raised.append(exc)

    with open(root / "_build" / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)      # another build is running
        th = threading.Thread(target=bad, daemon=True)
        th.start()
        th.join(timeout=30)
        assert not th.is_alive(), "a bad parameter waited for the other build"
    assert raised and "expects an integer" in str(raised[0])
    assert not (root / "_build" / "stage").exists()   # nothing staged
    (tmp_path / "p2").mkdir()
    two = make_project(tmp_path / "p2", {"a": chapter("A", "print(1)", params="seeds = 5"),
                                         "b": chapter("B", "print(2)", params="x = (1,")})
    with pytest.raises(ValueError, match="b.md: its parameters cell is not valid Python"):
        book.build(root=two, site=False, log=lambda *a: None, only=["a"])


def test_cli_build_json_lists_left_out_chapters(tmp_path):
    """``phd book build --chapter b --no-site --json``: every chapter with code, in the
    book's order; b executed, a and c left out (not silently missing)."""
    root = make_project(tmp_path, {"a": chapter("A", "1"), "b": chapter("B", "2"),
                                   "c": chapter("C", "3")})
    r = subprocess.run([sys.executable, "-m", "phdlib.cli", "book", "build", "--chapter", "b",
                        "--no-site", "--json"], cwd=root, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert list(got) == ["a", "b", "c"]
    assert got["b"]["executed"] and not got["b"]["left_out"] and got["b"]["seconds"] > 0
    for name in ("a", "c"):
        assert got[name] == {"seconds": 0.0, "executed": False, "parameters": {},
                             "left_out": True}
