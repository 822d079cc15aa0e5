"""The download path, for real: an HTTP server on 127.0.0.1 serves a zip the test builds."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import http.server
import json
import threading
import zipfile

import pytest

from phdlib import data
from phdlib.cli import main as phd_main

U_DATA = "".join(f"{u}\t{i}\t{1 + (u * i) % 5}\t{880000000 + u * 100 + i}\n" for u in range(1, 13) for i in range(1, 13))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture
def server(tmp_path, monkeypatch):
    """Serve ``tmp_path/www`` on 127.0.0.1; yields (base_url, www, requests list)."""
    www = tmp_path / "www"
    www.mkdir()
    with zipfile.ZipFile(www / "ml-100k.zip", "w") as zf:
        zf.writestr("ml-100k/README", "test archive")
        zf.writestr("ml-100k/u.data", U_DATA)
    seen = []

    class Handler(_Quiet):
        def do_GET(self):
            seen.append(self.path)
            super().do_GET()

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(www)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PHD_DATA_DIR", raising=False)
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", www, seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def _sha(path):
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_fetch_downloads_checks_hash_and_places_the_file(server, tmp_path):
    base, www, seen = server
    out = data.fetch("ml-100k", url=f"{base}/ml-100k.zip", known_hash=_sha(www / "ml-100k.zip"),
                     verify=False, progress=False)
    target = tmp_path / "cache" / "raw" / "ml-100k" / "u.data"
    assert out["path"] == target and target.read_text() == U_DATA and seen == ["/ml-100k.zip"]
    assert out["rows"] == 144 and out["verified"] is False
    assert not list((tmp_path / "cache").rglob(".fetch-*"))  # nothing half-written left
    # the loader now finds it in the per-user cache, with nothing else configured
    ds = data.load_dataset("ml-100k", verify=False, min_ratings=1)
    assert ds.source == str(target) and ds.n_ratings == 144
    assert ds.fingerprint == out["fingerprint"]


def test_hash_mismatch_is_an_error_and_places_nothing(server, tmp_path):
    base, www, _ = server
    with pytest.raises(data.DataNotFoundError, match="could not download"):
        data.fetch("ml-100k", url=f"{base}/ml-100k.zip", known_hash="sha256:" + "0" * 64, progress=False)
    assert not (tmp_path / "cache" / "raw" / "ml-100k" / "u.data").exists()


def test_content_fingerprint_mismatch_removes_the_download(server, tmp_path):
    base, www, _ = server
    # the archive is not the real ML-100K: its content fingerprint differs from the known one
    with pytest.raises(data.FingerprintMismatch):
        data.fetch("ml-100k", url=f"{base}/ml-100k.zip", progress=False)
    assert not (tmp_path / "cache" / "raw" / "ml-100k" / "u.data").exists()


def test_unreachable_server_names_the_url_and_the_three_ways(server):
    base, _, _ = server
    with pytest.raises(data.DataNotFoundError) as ei:
        data.fetch("ml-100k", url=f"{base}/missing.zip", progress=False)
    msg = str(ei.value)
    assert f"{base}/missing.zip" in msg and "PHD_DATA_DIR" in msg and "data_dir" in msg


def test_load_dataset_download_on_request(server, monkeypatch, tmp_path):
    base, www, seen = server
    src = dataclasses.replace(data.SOURCES["ml-100k"], url=f"{base}/ml-100k.zip",
                              archive_hash=_sha(www / "ml-100k.zip"))
    monkeypatch.setitem(data.SOURCES, "ml-100k", src)
    with pytest.raises(FileNotFoundError, match="download=True"):
        data.load_dataset("ml-100k", verify=False)  # no download unless asked
    assert seen == []
    ds = data.load_dataset("ml-100k", verify=False, download=True, min_ratings=1)
    assert ds.n_ratings == 144 and seen == ["/ml-100k.zip"]
    data.load_dataset("ml-100k", verify=False, download=True, min_ratings=1)
    assert seen == ["/ml-100k.zip"]  # found in the cache the second time


def test_cli_fetch_json(server, capsys):
    base, _, seen = server
    code = phd_main(["data", "fetch", "--dataset", "ml-100k", "--url", f"{base}/ml-100k.zip",
                     "--no-verify", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dataset"] == "ml-100k" and out["rows"] == 144 and out["verified"] is False
    code = phd_main(["data", "fetch", "--dataset", "ml-100k", "--url", f"{base}/ml-100k.zip"])
    assert code == 2 and "differs from the known fingerprint" in capsys.readouterr().err


def test_a_garbage_cached_archive_is_fetched_again_when_the_hash_is_known(server, tmp_path):
    base, www, seen = server
    downloads = tmp_path / "cache" / "raw" / "downloads"
    downloads.mkdir(parents=True)
    (downloads / "ml-100k.zip").write_bytes(b"garbage left by an interrupted download")
    out = data.fetch("ml-100k", url=f"{base}/ml-100k.zip", known_hash=_sha(www / "ml-100k.zip"),
                     verify=False, progress=False)
    assert out["path"].read_text() == U_DATA and seen == ["/ml-100k.zip"]


def test_a_download_that_is_not_a_zip_is_deleted_and_fetched_anew(server, tmp_path):
    base, www, seen = server
    good = (www / "ml-100k.zip").read_bytes()
    (www / "ml-100k.zip").write_bytes(b"<html>not a zip</html>")
    with pytest.raises(data.DataNotFoundError, match="not a usable zip archive.*deleted"):
        data.fetch("ml-100k", url=f"{base}/ml-100k.zip", verify=False, progress=False)
    assert not list((tmp_path / "cache" / "raw").rglob("ml-100k.zip"))
    (www / "ml-100k.zip").write_bytes(good)
    out = data.fetch("ml-100k", url=f"{base}/ml-100k.zip", verify=False, progress=False)
    assert out["path"].read_text() == U_DATA and seen == ["/ml-100k.zip"] * 2


def test_the_grouplens_archives_are_pinned():
    for name in ("ml-100k", "ml-1m", "ml-10m", "ml-20m", "ml-25m"):
        assert data.SOURCES[name].archive_hash.startswith("md5:")
