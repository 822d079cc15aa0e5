"""The built site, checked statically and in a real browser (issue 2, items 4 and 7).

Every test here is marked ``site``: ``make test`` runs them after the book is
built (``pytest -m site``). They fail, never skip, when the site or Chromium is
missing.

The browser check serves ``_build/html`` from ``http.server`` on 127.0.0.1,
opens every page of the book in headless Chromium (Debian's ``chromium`` and
``chromium-driver``; Selenium Manager is never used, and name resolution of
every other host is disabled so the site must work offline) and fails on:

- an error output or traceback in a page (``.output.traceback``, an
  ``.output.stderr`` block that reports an error or a warning, or the text
  "Traceback (most recent call last)"); a cell tagged ``raises-exception``
  is exempt, because there the error is the point;
- math not typeset by MathJax (a ``.math`` element without ``mjx-container``,
  TeX delimiters left in the text) and MathJax error elements;
- an image that did not load (``complete && naturalWidth > 0`` for each one);
- a request to another host than 127.0.0.1, a resource answered with an HTTP
  error, or a severe message on the browser console.

A full-page screenshot of each page lands in ``_build/screenshots/``.
``test_checker_catches_broken_pages`` feeds the same checker hand-made broken
pages, so the check itself can fail.
"""
from __future__ import annotations

import base64
import functools
import http.server
import json
import os
import re
import shutil
import threading
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from phdlib.book import driver as book

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
# Chromium flags: no network besides the local server, no first-run state.
CHROME_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
]
PAGE_TIMEOUT_S = 20.0  # per page: MathJax typesetting and images
# Pages Sphinx generates around the book (index of terms, search); cheap, but
# they have no content of ours.
GENERATED = {"genindex.html", "search.html"}

pytestmark = pytest.mark.site


# ---------------------------------------------------------------- pages ---

def toc_pages() -> list[str]:
    """Site paths (``book/x.html``) of every page listed in ``_toc.yml``, in order."""
    # read _toc.yml directly (not book.chapters, which raises on a missing
    # source): collecting this module must never fail, or `pytest -m "not
    # site"` would fail with it
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [f.removesuffix(".md") + ".html" for f in book.toc_files(toc)]


def built_pages() -> list[str]:
    """Every content page in ``_build/html`` (not Sphinx's generated ones)."""
    if not SITE.is_dir():
        return []
    out = []
    for f in sorted(SITE.rglob("*.html")):
        rel = f.relative_to(SITE)
        if rel.parts[0] in ("_static", "_sources", "_images") or str(rel) in GENERATED:
            continue
        if str(rel) == "index.html":  # the redirect to the root chapter
            continue
        out.append(str(rel))
    return out


def pages() -> list[str]:
    seen = dict.fromkeys(toc_pages())
    seen.update(dict.fromkeys(built_pages()))
    return list(seen)


# --------------------------------------------------------------- server ---

class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@contextmanager
def serve(directory: Path):
    """Serve ``directory`` on 127.0.0.1 at an ephemeral port; yields the base URL."""
    handler = functools.partial(_Handler, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


# -------------------------------------------------------------- browser ---

def chromium(user_data_dir: Path):
    """Headless Debian Chromium through the system chromedriver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        pytest.fail(
            "headless Chromium is needed for the site check: apt-get install chromium "
            f"chromium-driver (.ci/run does); found chromium={browser}, chromedriver={driver}"
        )
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not download
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for flag in CHROME_FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={user_data_dir}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    drv = webdriver.Chrome(service=Service(executable_path=driver), options=opts)
    drv.set_script_timeout(PAGE_TIMEOUT_S + 10)
    drv.set_page_load_timeout(PAGE_TIMEOUT_S + 10)
    return drv


# Waits for MathJax's first typeset (when the page has math) and for the
# images, then reports what it finds. arguments[0]: timeout in ms.
_INSPECT_JS = r"""
const done = arguments[arguments.length - 1];
const timeoutMs = arguments[0];
const t0 = Date.now();
const EXEMPT = '.tag_raises-exception';
const text = e => (e.innerText || e.textContent || '').trim().slice(0, 300);
// Sphinx's MathJax configuration processes class "math" even inside the
// "tex2jax_ignore mathjax_ignore" section that wraps every notebook page, so
// every .math element must end up typeset.
const mathEls = () => [...document.querySelectorAll('.math')];
for (const img of document.images) { if (img.loading === 'lazy') img.loading = 'eager'; }
function rawTex() {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const skip = 'pre, code, script, style, textarea, mjx-container, .highlight';
  const tex = /\\\(|\\\[|\$\$|\\begin\{/;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (tex.test(n.nodeValue) && !(n.parentElement && n.parentElement.closest(skip)))
      out.push(n.nodeValue.trim().slice(0, 120));
  }
  return out;
}
function collect(mathjaxState) {
  const body = document.body.cloneNode(true);
  body.querySelectorAll(EXEMPT).forEach(e => e.remove());
  const tracebackText = (body.textContent || '').includes('Traceback (most recent call last)');
  const attr = (e, a) => e.getAttribute(a) ? new URL(e.getAttribute(a), document.baseURI).href : null;
  const resources = [];
  for (const e of document.querySelectorAll('script[src], img[src], iframe[src], source[src], video[src], audio[src], embed[src]'))
    resources.push(attr(e, 'src'));
  for (const e of document.querySelectorAll('link[href]')) resources.push(attr(e, 'href'));
  for (const e of document.querySelectorAll('object[data]')) resources.push(attr(e, 'data'));
  return {
    title: document.title,
    mathjaxState: mathjaxState,
    math: mathEls().length,
    typeset: document.querySelectorAll('mjx-container').length,
    untypeset: mathEls().filter(e => !e.querySelector('mjx-container')).map(text),
    mathjaxErrors: [...document.querySelectorAll('mjx-merror, [data-mjx-error]')]
      .map(e => e.getAttribute('data-mjx-error') || text(e)),
    rawTex: rawTex(),
    images: document.images.length,
    brokenImages: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))
      .map(i => i.getAttribute('src')),
    tracebacks: [...document.querySelectorAll('.output.traceback, .output.error')]
      .filter(e => !e.closest(EXEMPT)).map(text),
    stderr: [...document.querySelectorAll('.output.stderr')]
      .filter(e => !e.closest(EXEMPT)).map(text),
    tracebackText: tracebackText,
    resources: resources.filter(Boolean),
    wideCode: [...document.querySelectorAll('.cell_input pre')]
      .filter(e => !e.closest('details:not([open])'))  // a folded input is measured when shown
      .filter(e => e.scrollWidth > e.clientWidth + 1)
      .map(e => text(e).split('\n').reduce((a, b) => a.length >= b.length ? a : b, '')),
    injected: document.querySelectorAll('.tag_injected-parameters').length,
    // an output box (or a text output in it) whose content runs past its right edge; a
    // table in its own scrolling box (.phd-table-wrap) is allowed to scroll there
    wideOutput: [...document.querySelectorAll('div.cell_output, div.cell_output pre, div.output pre')]
      .filter(e => !e.closest('details:not([open])') && !e.closest('.phd-table-wrap'))
      .filter(e => e.scrollWidth > e.clientWidth + 1)
      .map(e => text(e).split('\n').reduce((a, b) => a.length >= b.length ? a : b, '')),
    pageWidth: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
    readerText: readerText(),
  };
}
// what a reader reads: the article without code inputs (outputs and prose stay)
function readerText() {
  const main = (document.querySelector('main') || document.body).cloneNode(true);
  main.querySelectorAll('.cell_input, script, style, .headerlink').forEach(e => e.remove());
  return main.textContent || '';
}
(function poll() {
  const mj = window.MathJax;
  const promise = mj && mj.startup && mj.startup.promise;
  const imagesDone = [...document.images].every(i => i.complete);
  const late = Date.now() - t0 > timeoutMs;
  if (late) return done(collect(mathEls().length ? (promise ? 'typesetting (timed out)' : 'MathJax not loaded') : 'no math'));
  if (!imagesDone || (mathEls().length && !promise)) return setTimeout(poll, 50);
  if (!mathEls().length) return done(collect('no math'));
  const timer = new Promise(r => setTimeout(() => r('typesetting (timed out)'), Math.max(0, timeoutMs - (Date.now() - t0))));
  Promise.race([promise.then(() => 'typeset'), timer])
    .then(s => done(collect(s)), e => done(collect('MathJax failed: ' + e)));
})();
"""

#: Text a reader must never see on a page (code inputs excluded): NaN, raw reprs, MyST
#: roles left unrendered, placeholders left unformatted, the project's own issue numbers.
NOT_FOR_READERS = {
    "NaN": re.compile(r"\b(?:NaN|nan|inf)\b|<NA>"),
    "raw repr": re.compile(r"<[\w.]+ object at 0x|<Split of|<Dataset "),
    "unrendered role": re.compile(r"\{(?:cite|doc|ref|glue|numref|eq)[:}]|\{k\}"),
    "issue number": re.compile(r"\bissues? #?\d+", re.I),
}
#: The widths every page is checked at (CSS pixels): a desktop and a phone.
WIDTHS = (1400, 420)

# stderr that reports a problem (a progress bar on stderr is not one)
_STDERR_PROBLEM = re.compile(r"\b\w*(Error|Warning|Exception)\b|Traceback")


def _is_local(url: str) -> bool:
    """True unless ``url`` goes over the network to a host other than this machine.

    chrome:// and similar URLs are the browser's own pages, never the network.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ws", "wss", "ftp", ""):
        return True
    if parts.scheme == "" and not url.startswith("//"):
        return True  # relative
    return parts.hostname in LOCAL_HOSTS


def check_page(driver, url: str, screenshot: Path | None = None,
               timeout_s: float = PAGE_TIMEOUT_S, narrow: bool = False) -> tuple[list[str], dict]:
    """Open ``url`` and return (problems found, what the page reported).

    narrow: a phone-width window, where code cells may scroll inside their own box (a
    line of code cannot wrap); outputs and the page itself still may not.
    """
    driver.get_log("browser")  # drop what earlier pages left
    driver.get_log("performance")
    driver.get(url)
    info = driver.execute_async_script(_INSPECT_JS, int(timeout_s * 1000))
    problems: list[str] = []
    if info["tracebacks"]:
        problems += [f"error output: {t!r}" for t in info["tracebacks"]]
    if info["tracebackText"] and not info["tracebacks"]:
        problems.append("the text 'Traceback (most recent call last)' is on the page")
    problems += [f"stderr output reports a problem: {t!r}" for t in info["stderr"]
                 if _STDERR_PROBLEM.search(t)]
    if info["untypeset"]:
        problems.append(f"{len(info['untypeset'])} of {info['math']} math elements not typeset by "
                        f"MathJax ({info['mathjaxState']}), first: {info['untypeset'][0]!r}")
    problems += [f"MathJax error: {e!r}" for e in info["mathjaxErrors"]]
    if info["rawTex"]:
        problems.append(f"TeX left untypeset in the text ({len(info['rawTex'])} fragments), first: "
                        + "; ".join(repr(t) for t in info["rawTex"][:3]))
    problems += [f"image did not load: {src}" for src in info["brokenImages"]]
    if not narrow:
        problems += [f"code scrolls sideways (longest line {len(t)} characters): {t!r}"
                     for t in info["wideCode"]]
    if info["injected"]:
        problems.append("papermill's injected-parameters cell is shown on the page")
    problems += [f"output runs past its box: {t[:120]!r}" for t in info["wideOutput"]]
    if info["pageWidth"][0] > info["pageWidth"][1] + 1:
        problems.append(f"the page scrolls sideways ({info['pageWidth'][0]} px of content in "
                        f"{info['pageWidth'][1]} px)")
    for what, pattern in NOT_FOR_READERS.items():
        for m in list(pattern.finditer(info["readerText"]))[:3]:
            ctx = info["readerText"][max(0, m.start() - 50):m.end() + 50].replace("\n", " ")
            problems.append(f"{what} on the page: {ctx!r}")
    problems += [f"page refers to another host: {u}" for u in info["resources"] if not _is_local(u)]
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        params = msg.get("params", {})
        if msg.get("method") == "Network.requestWillBeSent":
            req = params.get("request", {}).get("url", "")
            if not _is_local(req):
                problems.append(f"request to another host: {req}")
        elif msg.get("method") == "Network.responseReceived":
            resp = params.get("response", {})
            if resp.get("status", 200) >= 400 and not resp.get("url", "").endswith("/favicon.ico"):
                problems.append(f"HTTP {resp['status']} for {resp.get('url')}")
    for entry in driver.get_log("browser"):
        if entry.get("level") == "SEVERE" and "favicon.ico" not in entry.get("message", ""):
            problems.append(f"console error: {entry['message'][:300]}")
    if screenshot is not None:
        save_screenshot(driver, screenshot)
    # one problem reported by two channels is still one line
    return list(dict.fromkeys(problems)), info


def save_screenshot(driver, path: Path, max_height: int = 20000) -> None:
    """Full-page PNG of the current page (capped at ``max_height`` CSS pixels), written atomically.

    The viewport is stretched to the page's height for the shot, so sticky
    sidebars and headers are drawn where a reader sees them.
    """
    width = driver.execute_script("return window.innerWidth")
    height = driver.execute_script(
        "return Math.max(document.documentElement.scrollHeight, document.body.scrollHeight)")
    height = max(1, min(int(height), max_height))
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    try:
        shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    tmp.write_bytes(base64.b64decode(shot["data"]))
    os.replace(tmp, path)


# ------------------------------------------------------------- fixtures ---

@pytest.fixture(scope="module")
def site_url():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE}: run `make book` or `phd book build` first")
    shutil.rmtree(SHOTS, ignore_errors=True)  # no screenshot of a page that is gone
    with serve(SITE) as url:
        yield url


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    drv = chromium(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield drv
    finally:
        drv.quit()


# ---------------------------------------------------------------- tests ---

def test_every_toc_page_is_built():
    missing = [p for p in toc_pages() if not (SITE / p).is_file()]
    assert not missing, f"pages listed in _toc.yml but not built under {SITE}: {missing}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", pages())
def test_page_in_browser(page, width, site_url, driver):
    if not (SITE / page).is_file():
        pytest.fail(f"{page} is listed in _toc.yml but was not built")
    driver.set_window_size(width, 900)
    shot = SHOTS / (page.replace("/", "__").removesuffix(".html") + f"-{width}.png")
    problems, info = check_page(driver, site_url + page, shot, narrow=width < 800)
    assert not problems, f"{page}:\n  " + "\n  ".join(problems)
    # the checker saw what the HTML holds (guards against a check that looks at nothing)
    html = (SITE / page).read_text()
    assert info["math"] == len(re.findall(r'class="math[ "]', html)), (info["math"], page)
    assert info["images"] == len(re.findall(r"<img\b", html)), (info["images"], page)
    assert shot.is_file() and shot.stat().st_size > 10_000, f"no screenshot of {page} at {shot}"


@pytest.mark.parametrize("page", sorted(GENERATED))
def test_generated_page_in_browser(page, site_url, driver):
    driver.set_window_size(WIDTHS[0], 900)
    problems, _ = check_page(driver, site_url + page)
    assert not problems, f"{page}:\n  " + "\n  ".join(problems)


def test_redirect_lands_on_the_root_chapter(site_url, driver):
    driver.get(site_url)
    root = toc_pages()[0]
    assert driver.current_url.endswith(root), f"{site_url} redirected to {driver.current_url}, not {root}"


# ------------------------------------------------ the checker can fail ---

# as Sphinx configures MathJax 3 (sphinx.ext.mathjax)
_MATHJAX_CONFIG = """<script>window.MathJax = {"options": {"processHtmlClass":
  "tex2jax_process|mathjax_process|math|output_area"}}</script>"""
_GOOD = f"""<!doctype html><html><head><title>good</title>{_MATHJAX_CONFIG}
<script defer src="mathjax/tex-chtml.js"></script></head><body class="document">
<section class="tex2jax_ignore mathjax_ignore">
<p>Inline <span class="math">\\(u \\wedge i\\)</span> and display</p>
<div class="math">\\[ d_H(u, i) = \\operatorname{{popcount}}(u \\oplus i) \\]</div>
<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==">
<div class="output stderr"><pre>100%|##########| 10/10 [00:01&lt;00:00]</pre></div>
<div class="cell tag_raises-exception"><div class="output traceback"><pre>Traceback (most recent call last):
ValueError: shown on purpose</pre></div></div>
</section>
</body></html>"""
_BROKEN = f"""<!doctype html><html><head><title>broken</title>{_MATHJAX_CONFIG}
<script defer src="mathjax/tex-chtml.js"></script>
<link rel="stylesheet" href="https://cdn.example.org/theme.css"></head><body class="document">
<section class="tex2jax_ignore mathjax_ignore">
<p>Good math <span class="math">\\(a + b\\)</span>, bad math <span class="math">\\(\\frac{{a}}\\)</span>.</p>
<img src="missing.png">
<div class="output traceback"><pre>Traceback (most recent call last):
  File "cell", line 1
ZeroDivisionError: division by zero</pre></div>
<div class="output stderr"><pre>UserWarning: something is off</pre></div>
<script>console.error("boom from the page");</script>
<div class="cell tag_injected-parameters"><div class="cell_input"><pre># Parameters</pre></div></div>
<div class="cell_input" style="width: 300px"><pre style="overflow-x: auto">x = 1  # aaaaaaaaaa{"a" * 200}</pre></div>
<div class="cell_output" style="width: 300px"><div class="output"><pre style="white-space: pre; overflow-x: auto">- 64 bits: over the catalogue the best Hamming code is DCF; VH_PHD is -0.0270 NDCG@10 from it{"." * 100}</pre></div></div>
<div class="cell_output"><div class="output"><pre>&lt;Split of ml-1m seed 0: 5,000 users&gt;</pre></div></div>
<p>std NaN, see {{cite:p}}`hansen2021phd` and Recall@{{k}}; the targets are issue 14's.</p>
<div class="phd-table-wrap" style="width: 200px; overflow-x: auto"><table><tr><td>{"wide cell " * 40}</td></tr></table></div>
</section>
</body></html>"""
_NO_MATHJAX = """<!doctype html><html><head><title>no mathjax</title></head><body class="document">
<p>Math that nothing typesets: <span class="math">\\(a + b\\)</span>; raw TeX $$x^2$$ in the text.</p>
<pre>Traceback (most recent call last):
KeyError: 'x'</pre>
</body></html>"""


def test_checker_catches_broken_pages(tmp_path, driver):
    """The checker passes a good page and flags every kind of breakage on bad ones."""
    mathjax = ROOT / "_mathjax" / "mathjax"
    if not (mathjax / "tex-chtml.js").is_file():
        pytest.fail(f"MathJax is missing at {mathjax}: run `make mathjax`")
    (tmp_path / "mathjax").symlink_to(mathjax, target_is_directory=True)
    (tmp_path / "good.html").write_text(_GOOD)
    (tmp_path / "broken.html").write_text(_BROKEN)
    (tmp_path / "nomathjax.html").write_text(_NO_MATHJAX)
    with serve(tmp_path) as url:
        good, good_info = check_page(driver, url + "good.html", tmp_path / "good.png")
        broken, _ = check_page(driver, url + "broken.html")
        nomj, _ = check_page(driver, url + "nomathjax.html", timeout_s=3)

    assert good == [], good  # (a progress bar on stderr and a folded traceback are fine)
    assert good_info["math"] == 2 and good_info["typeset"] == 2, good_info
    assert good_info["images"] == 1 and good_info["stderr"], good_info
    assert (tmp_path / "good.png").stat().st_size > 1000

    def has(problems, pattern):
        return any(re.search(pattern, p) for p in problems)

    report = "\n".join(broken)
    assert has(broken, r"^MathJax error: .*Missing argument for .*frac"), report
    assert has(broken, r"^image did not load: missing\.png"), report
    assert has(broken, r"^HTTP 404 for .*/missing\.png"), report
    assert has(broken, r"^error output: .*ZeroDivisionError"), report
    assert has(broken, r"^stderr output reports a problem: .*UserWarning"), report
    assert has(broken, r"^page refers to another host: https://cdn\.example\.org/theme\.css"), report
    assert has(broken, r"^request to another host: https://cdn\.example\.org/theme\.css"), report
    assert has(broken, r"^console error: .*boom from the page"), report
    assert has(broken, r"^code scrolls sideways \(longest line 2\d\d characters\)"), report
    assert has(broken, r"^papermill's injected-parameters cell is shown"), report
    assert has(broken, r"^output runs past its box: '- 64 bits: over the catalogue"), report
    assert has(broken, r"^raw repr on the page: .*<Split of ml-1m"), report
    assert has(broken, r"^NaN on the page: .*std NaN"), report
    assert has(broken, r"^unrendered role on the page: .*\{cite:p\}"), report
    assert has(broken, r"^unrendered role on the page: .*Recall@\{k\}"), report
    assert has(broken, r"^issue number on the page: .*issue 14"), report
    # a table scrolling inside its own box is not an overflow
    assert not has(broken, r"output runs past its box: .*wide cell"), report

    report = "\n".join(nomj)
    assert has(nomj, r"^1 of 1 math elements not typeset by MathJax \(MathJax not loaded\)"), report
    assert has(nomj, r"^TeX left untypeset in the text \(2 fragments\), first: .*\$\$x\^2\$\$"), report
    assert has(nomj, r"Traceback \(most recent call last\)' is on the page"), report


# ------------------------------------------------- site configuration ---

class _Assets(HTMLParser):
    """URLs a page loads: script src, link href, img/iframe/source src."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "img", "iframe", "source", "video", "audio", "embed") and a.get("src"):
            self.urls.append(a["src"])
        elif tag == "link" and a.get("href") and a.get("rel") not in ("canonical",):
            self.urls.append(a["href"])


_CDN = re.compile(r"cdn\.jsdelivr|cdnjs|unpkg\.com|googleapis|mybinder|polyfill\.io", re.I)


def _all_html():
    files = [f for f in SITE.rglob("*.html") if "_static" not in f.relative_to(SITE).parts]
    assert files, f"no built site at {SITE}"
    return files


def test_no_remote_assets_or_cdn_in_any_page():
    """Every script, stylesheet and image of every page is served by the site itself."""
    bad = []
    for f in _all_html():
        text = f.read_text()
        parser = _Assets()
        parser.feed(text)
        for u in parser.urls:
            if u.startswith("//") or urlsplit(u).scheme in ("http", "https"):
                bad.append(f"{f.relative_to(SITE)}: loads {u}")
        for m in _CDN.finditer(text):
            bad.append(f"{f.relative_to(SITE)}: mentions {text[max(0, m.start() - 40):m.end() + 40]!r}")
    assert not bad, "\n".join(bad)


def test_mathjax_is_served_by_the_site():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]
    assert "_mathjax" in cfg["html_static_path"] and "_static" not in cfg["html_static_path"]
    js = SITE / "_static" / cfg["mathjax_path"]
    assert js.is_file(), f"{js} missing: MathJax is not part of the built site"
    assert (js.parent / "output" / "chtml" / "fonts" / "woff-v2").is_dir(), "MathJax fonts missing"
    with_math = 0
    for f in _all_html():
        text = f.read_text()
        if 'class="math' in text:
            with_math += 1
            assert "_static/" + cfg["mathjax_path"] in text, f"{f} has math but does not load local MathJax"
        # only the MathJax entry point, nothing else of the npm package, is injected
        assert len(re.findall(r"<script[^>]*_static/mathjax/", text)) <= 1, f"{f} loads several MathJax files"
    assert with_math >= 1, "no page has math: the chapters should"


def test_title_author_copyright():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    for key in ("title", "author", "copyright"):
        assert str(cfg.get(key, "")).strip(), f"_config.yml sets no {key}"
    page = (SITE / toc_pages()[0]).read_text()
    assert cfg["title"] in page.replace("&#8212;", "—").replace("&#39;", "'")
    assert f"By {cfg['author']}" in page
    assert "Copyright " + cfg["copyright"].split(".")[0].replace("'", "&#39;") in page


def _numbered_chapters() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    out = []
    for part in toc.get("parts", []):
        if part.get("numbered"):
            out += [c["file"] for c in part.get("chapters", [])]
    return out


def _title(page: Path) -> str:
    """The page's own heading (the ``<h1>`` with a permalink, not the header bar's)."""
    assert page.is_file(), f"{page} was not built"
    h1 = [h for h in re.findall(r"<h1>(.*?)</h1>", page.read_text(), re.S) if "headerlink" in h]
    assert h1, f"{page} has no title heading"
    return h1[0]


def test_chapters_numbered_across_parts():
    """Chapters count 1, 2, 3, ... through every numbered part; the references page is last, unnumbered."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    last = toc["parts"][-1]
    assert [c["file"] for c in last["chapters"]][-1] == "book/references", "References must be the last toc entry"
    assert not last.get("numbered"), "the References part must be unnumbered"
    numbered = _numbered_chapters()
    assert numbered, "no numbered part in _toc.yml"
    every = [c["file"] for p in toc["parts"] for c in p.get("chapters", [])]
    unnumbered = [f for f in every if f not in numbered and f != "book/references"]
    assert not unnumbered, f"chapters in a part without `numbered: true`: {unnumbered}"
    for n, f in enumerate(numbered, start=1):
        h1 = _title(SITE / (f + ".html"))
        assert f'<span class="section-number">{n}. </span>' in h1, f"{f} should be chapter {n}: {h1[:200]}"
    refs = _title(SITE / "book/references.html")
    assert "section-number" not in refs, refs


def test_the_landing_page_links_every_chapter_and_states_findings():
    """Every chapter of _toc.yml is linked from the landing page's own text (not only the
    sidebar), and the page states computed findings under "What this reproduction finds"."""
    root = toc_pages()[0]
    html = (SITE / root).read_text()
    main = html.split('<main', 1)[-1].split("</main>", 1)[0]
    here = Path(root).parent
    linked = {os.path.normpath(here / urlsplit(h).path)
              for h in re.findall(r'href="([^"#]+)', main) if not urlsplit(h).scheme}
    missing = [p for p in toc_pages()[1:] if os.path.normpath(p) not in linked]
    assert not missing, f"chapters not linked from the landing page: {missing}"
    section = main.split('id="what-this-reproduction-finds"', 1)
    assert len(section) == 2, "the landing page has no section 'What this reproduction finds'"
    body = section[1].split("</h2>", 1)[-1].split("<h2", 1)[0]  # the section's own text
    items = re.findall(r"<li\b", body)
    assert 5 <= len(items) <= 8, f"expected five to eight findings, found {len(items)}"


def test_bibliography_lists_cited_works():
    refs = (SITE / "book" / "references.html").read_text()
    # the paper, as the plain BibTeX style renders its title
    assert "Projected Hamming dissimilarity for bit-level importance coding" in refs
    index = (SITE / "book" / "index.html").read_text()
    anchors = re.findall(r'href="references\.html#([^"]+)"', index)
    assert anchors, "the landing page's citation does not link to the References page"
    for a in anchors:
        assert f'id="{a}"' in refs, f"citation anchor #{a} missing on the References page"
