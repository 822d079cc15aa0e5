"""JupyterLab, tried as a reader would: ``make lab`` headless, a chapter opened as a
notebook in Chromium, Run All, no cell fails.

Marked ``site`` (it needs Chromium, like the browser check of the site). The
server runs from ``make lab`` with a token, on a free port of 127.0.0.1, with
its own runtime and user-settings folders (so the reader's own JupyterLab
settings are neither used nor touched); the only setting added is the
notebook's ``windowingMode: none``, so that every cell is in the page for the
check. A cell counts as run when its prompt shows an execution count; a cell
fails when it shows an error output (JupyterLab's Run All also stops there,
leaving the later cells without a count).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from test_book_driver import HEADER
from test_site import chromium

pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = "book/hamming.md"
START_TIMEOUT_S = 180
RUN_TIMEOUT_S = 300

#: Per code cell: execution count text, running or not, error output text.
_CELLS_JS = r"""
return Array.from(document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell'))
  .map(c => {
    const p = c.querySelector('.jp-InputArea-prompt');
    const errs = Array.from(c.querySelectorAll(
        '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
      .map(e => e.innerText).filter(t => /Traceback|Error/.test(t));
    return {prompt: p ? p.innerText.trim() : '', errors: errs.map(t => t.slice(0, 400))};
  });
"""


NOT_RUN = ("", "[ ]:", "[*]:")
#: A notebook that fails in its second cell (written under _build/, never committed).
BROKEN = ROOT / "_build" / "lab-check" / "broken.md"
BROKEN_TEXT = HEADER + """
# Broken on purpose

```{code-cell} ipython3
x = 1
```

```{code-cell} ipython3
raise RuntimeError("this cell fails on purpose")
```

```{code-cell} ipython3
y = 2
```
"""


def _run_all(drv, url: str, log: Path) -> list[dict]:
    """Open ``url`` as a notebook, Run All, wait until every cell ran or one failed."""
    drv.get(url)
    t0 = time.time()
    while time.time() - t0 < START_TIMEOUT_S and not drv.execute_script(_CELLS_JS):
        time.sleep(1)
    assert drv.execute_script(_CELLS_JS), (f"{url} did not open as a notebook (no code cells "
                                           f"in the page):\n{log.read_text()[-2000:]}")
    time.sleep(3)  # let the kernel start
    _click_menu(drv, "Run", "runmenu:run-all")
    t0 = time.time()
    while time.time() - t0 < RUN_TIMEOUT_S:
        cells = drv.execute_script(_CELLS_JS)
        if any(c["errors"] for c in cells) or all(c["prompt"] not in NOT_RUN for c in cells):
            time.sleep(2)  # let the last outputs render
            return drv.execute_script(_CELLS_JS)
        time.sleep(2)
    return drv.execute_script(_CELLS_JS)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_up(url: str, proc, log: Path) -> None:
    t0 = time.time()
    while time.time() - t0 < START_TIMEOUT_S:
        if proc.poll() is not None:
            pytest.fail(f"make lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    pytest.fail(f"JupyterLab did not answer {url} in {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


def _click_menu(drv, menu: str, command: str) -> None:
    from selenium.webdriver.common.by import By

    for item in drv.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item"):
        if item.text.strip() == menu:
            item.click()
            break
    else:
        pytest.fail(f"no menu {menu!r} in JupyterLab's menu bar")
    time.sleep(0.5)
    entries = drv.find_elements(By.CSS_SELECTOR, f'.lm-Menu-item[data-command="{command}"]')
    if not entries:
        have = [e.get_attribute("data-command") for e in
                drv.find_elements(By.CSS_SELECTOR, ".lm-Menu-item[data-command]")]
        pytest.fail(f"no entry {command!r} in the {menu!r} menu; it has {have}")
    entries[0].click()


def test_a_chapter_runs_all_cells_in_jupyterlab(tmp_path):
    port, token = _free_port(), os.urandom(16).hex()
    settings = tmp_path / "user-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "user-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces")}
    args = (f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} "
            f"--ServerApp.port_retries=0 --IdentityProvider.token={token}")
    log = tmp_path / "lab.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(["make", "-s", "lab", f"LAB_ARGS={args}"], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    drv = None
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_up(f"{base}/api/status?token={token}", proc, log)
        drv = chromium(tmp_path / "chromium-profile")
        cells = _run_all(drv, f"{base}/lab/tree/{CHAPTER}?token={token}", log)
        failed = [(n, c["errors"]) for n, c in enumerate(cells) if c["errors"]]
        assert not failed, f"cells of {CHAPTER} failed in JupyterLab: {failed}"
        not_run = [n for n, c in enumerate(cells) if c["prompt"] in NOT_RUN]
        assert not not_run, (f"code cells {not_run} of {len(cells)} in {CHAPTER} did not run "
                             f"within {RUN_TIMEOUT_S} s; prompts: {[c['prompt'] for c in cells]}")
        assert len(cells) >= 5
        # the check itself can fail: a notebook whose second cell raises
        BROKEN.parent.mkdir(parents=True, exist_ok=True)
        BROKEN.write_text(BROKEN_TEXT)
        cells = _run_all(drv, f"{base}/lab/tree/{BROKEN.relative_to(ROOT)}?token={token}", log)
        assert [bool(c["errors"]) for c in cells] == [False, True, False]
        assert cells[0]["prompt"] not in NOT_RUN and cells[2]["prompt"] in NOT_RUN
    finally:
        if drv is not None:
            drv.quit()
        _stop(proc)


def _stop(proc) -> None:
    """Stop make, JupyterLab and its kernels (one process group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=30)
            return
        except subprocess.TimeoutExpired:
            continue
