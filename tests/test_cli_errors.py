"""The CLI's error boundary: every user mistake is one `phd: error:` line, exit code 2."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from phdlib.cli import main

DATA = os.environ.get("PHD_DATA_DIR", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
SYN = ["--dataset", "synthetic"]

# (argv, a fragment the message must contain)
CASES = [
    (["train", "--method", "popularity", "--bits", "-3"], "--bits"),
    (["train", "--method", "popularity", "--bits", "0"], "--bits"),
    (["train", "--method", "popularity", "--bits", "100000000"], "1..1024"),
    (["train", "--method", "popularity", "--bits", "abc"], "'abc'"),
    (["train", "--method", "popularity", "--seed", "-1"], "--seed"),
    (["train", "--method", "popularity", "--seed", str(2**64)], "--seed"),
    (["train", "--method", "popularity", "--split-seed", "-2"], "--split-seed"),
    (["train", "--method", "nosuch"], "invalid choice"),
    (["train", "--method", "vh", *SYN, "--set", "device=cuda"], "device 'cuda'"),
    (["train", "--method", "popularity", *SYN, "--set", "x=[1,"], "--set 'x=[1,'"),
    (["train", "--method", "popularity", *SYN, "--set", "novalue"], "KEY=VALUE"),
    (["train", "--method", "popularity", *SYN, "--set", "=3"], "no key"),
    (["train", "--method", "popularity", *SYN, "--set", "bogus_key=1"], "bogus_key"),
    (["train", "--method", "vh", *SYN, "--set", "tune=false", "--set", "lr=-1"], "'lr'"),
    (["train", "--method", "vh", *SYN, "--set", "lr=-1"], "tuning grid"),
    (["train", "--method", "dcf", *SYN, "--set", "tune=false", "--set", "alpha=0"],
     "config 'alpha' must be > 0 with init 'relaxed'"),
    (["train", "--method", "dcf-phd", *SYN, "--set", "tune=false", "--set", "beta=-1"],
     "config 'beta' must be > 0"),
    (["train", "--method", "dcf", *SYN, "--set", "alpha_grid=[0.1,0]"],
     "config 'alpha_grid' must be > 0"),
    (["train", "--method", "dcf", *SYN, "--set", "grid_tied=false", "--set", "beta_grid=[0]"],
     "config 'beta_grid' must be > 0"),
    (["train", "--method", "cccf", *SYN, "--set", "init=relaxed", "--set", "alpha_grid=[0]"],
     "config 'alpha_grid' must be > 0"),
    (["train", "--method", "popularity", "--dataset", "../escaped"], "'../escaped'"),
    (["train", "--method", "popularity", "--dataset", "nosuch"], "nosuch"),
    (["data", "stats", "--dataset", "ml-1m", "--seed", "-1"], "--seed"),
    (["data", "stats", "--dataset", "ml-1m", "--min-ratings", "-3"], "--min-ratings"),
    (["data", "stats", "--dataset", "nosuch"], "nosuch"),
    (["bench", "--threads", "0"], "--threads"),
    (["bench", "--repeats", "0"], "--repeats"),
    (["bench", "--min-seconds", "-1"], "--min-seconds"),
    (["bench", "--min-seconds", "nan"], "--min-seconds"),
    (["bench", "--train", "--threads", "999"], "threads"),
    (["scale", "--redo", "--dataset", "ml-100k"], "--redo: needs --out"),
    (["reproduce", "--seeds", "0"], "--seeds"),
    (["reproduce", "--jobs", "-5"], "--jobs"),
    (["reproduce", "--jobs", "0"], "--jobs 0: give a number"),
    (["reproduce", "--manifest", "/nonexistent-dir/m.json"], "/nonexistent-dir does not"),
    (["reproduce", "--manifest", "/tmp"], "--manifest /tmp: is a folder"),
    (["reproduce", "--dataset", "synthetic", "--part", "nosuch"], "nosuch"),
    (["nosuch"], "invalid choice"),
    (["book", "build", "--chapter", "nosuch", "--no-site"], "nosuch"),
    (["book", "build", "--param", "seed", "--no-site"], "NAME=VALUE"),
    (["book", "build", "--profile", "slow", "--chapter", "hamming", "--no-site"], "slow"),
    (["book", "build", "--cell-timeout", "0", "--no-site"], "--cell-timeout"),
    (["book", "build", "--cell-timeout", "-5", "--no-site"], "--cell-timeout"),
    (["book", "build", "--cell-timeout", "1e9", "--no-site"], "--cell-timeout"),
    (["data", "fetch", "--dataset", "nosuch"], "nosuch"),
    (["data", "fetch", "--dataset", "yelp"], "yelp"),
    (["scale", "--dataset", "nosuch"], "--dataset 'nosuch'"),
    (["scale", "--method", "nosuch"], "--method 'nosuch'"),
    (["scale", "--bits", "0"], "--bits"),
    (["scale", "--timeout", "-1"], "--timeout"),
    (["scale", "--dataset", "synthetic", "--method", "popularity", "--out", __file__],
     "not a readable scale sweep"),
    # checked before any work, not after hours of it
    (["scale", "--timeout", "0"], "--timeout"),
    (["scale", *SYN, "--method", "popularity", "--out", "/tmp"], "--out /tmp: is a folder"),
    (["scale", *SYN, "--method", "popularity", "--out", f"{__file__}/x.json"],
     "is a file, not a folder"),
    (["bench", "--out", "/tmp"], "--out /tmp: is a folder"),
    (["tune-sample", "--dataset", "ml-100k", "--ratings", "50000", "--out",
      f"{__file__}/t.json"], "is a file, not a folder"),
    (["reproduce", "--manifest", f"{__file__}/m.json"], "is a file, not a folder"),
    (["reproduce", *SYN, "--dask", "notaurl"], "tcp://HOST:PORT"),
    (["reproduce", *SYN, "--dask", "tcp://127.0.0.1:notaport"], "tcp://HOST:PORT"),
    (["reproduce", *SYN, "--dask", "tcp://127.0.0.1:99999"], "tcp://HOST:PORT"),
    (["reproduce", *SYN, "--dask", ""], "tcp://HOST:PORT"),
    (["book", "build", "--param", "nosuch=3", "--no-site"], "parameter 'nosuch'"),
    (["book", "build", "--param", "seeds=abc", "--no-site"], "expects an integer"),
    (["book", "build", "--param", "profile=bogus", "--no-site"], "expected one of full"),
    (["book", "build", "--dataset", "nosuch", "--no-site"], "unknown dataset"),
    (["data", "fetch", "--dataset", "ml-100k", "--url", "notaurl"], "--url 'notaurl'"),
    (["data", "fetch", "--dataset", "ml-100k", "--url", "file:///x.zip"], "http://"),
    (["data", "stats", "--dataset", "nosuch"], "synthetic-ml-10m"),  # every known name
    # addresses that cannot name a file to download, and options that would be ignored
    (["data", "fetch", "--dataset", "ml-100k", "--url", "https://example.org/a/.."],
     "--url 'https://example.org/a/..': its path does not end in a file name (ends in '..')"),
    (["data", "fetch", "--dataset", "ml-100k", "--url", "http://[::1/x.zip"],
     "--url 'http://[::1/x.zip': malformed (Invalid IPv6 URL)"),
    (["data", "fetch", "--dataset", "ml-100k", "--url", "http://h:99999/x.zip"],
     "malformed (Port out of range"),
    (["data", "fetch", "--dataset", "synthetic", "--url", "https://example.org/x.zip"],
     "--url: synthetic is generated on use, not downloaded"),
    # a huge value is shown cut, with its length
    (["book", "build", "--no-site", "--param", "profile=" + "a" * 100_000],
     "(100,002 characters)"),
    (["book", "build", "--no-site", "--param", "x" * 100_000], "(100,000 characters)"),
    (["train", "--method", "m" * 100_000], "characters) ..."),
    (["data", "fetch", "--dataset", "ml-100k", "--url", "doi:"], "no DOI after 'doi:'"),
    (["data", "fetch", "--dataset", "ml-100k", "--url", "http://h/a b.zip"],
     "holds a space or a control character"),
    (["data", "fetch", "--dataset", "ml-100k", "--url", "http://h/a.zip\n"],
     "holds a space or a control character"),
    (["book", "build", "--no-site", "--param", "seed=" + "9" * 5000],
     "the value is not a YAML scalar or list (Exceeds the limit"),
    (["train", "--method", "vh", *SYN, "--set", "lr=&a [*a]"], "refers to itself"),
    (["recommend", "--codes", "", "--user", "1"], "--codes '': empty"),
    # chapter parameters out of their range (each used to be accepted)
    (["book", "build", "--no-site", "--chapter", "table1", "--param", "seed=-5"],
     "parameter seed=-5: -5 is outside 0.."),
    (["book", "build", "--no-site", "--chapter", "table1", "--param", "widths=[32, 2000]"],
     "2000 is outside 1..1,024"),
    (["book", "build", "--no-site", "--chapter", "table1", "--param", "jobs=100000000000"],
     "outside 1..1,024"),
    (["book", "build", "--no-site", "--chapter", "table1", "--param", "seeds=0"],
     "parameter seeds=0: 0 is outside 1.."),
    # configuration values that used to allocate terabytes, run forever or fail on a type
    (["train", "--method", "vh-phd", *SYN, "--set", "batch_size=1099511627776"],
     "'batch_size' must be at most"),
    (["train", "--method", "vh-phd", *SYN, "--set", "eval_every=9223372036854775807"],
     "'eval_every' must be at most 1,000,000,000 iterations"),
    (["train", "--method", "vh-phd", *SYN, "--set", "noise_std=abc"],
     "'noise_std' must be a finite number >= 0"),
    (["recommend", "--codes", "/tmp", "--user", "1"], "--codes /tmp: is a folder"),
    (["recommend", "--codes", "/dev/zero", "--user", "1"], "is not a regular file"),
    (["recommend", "--codes", "/dev/zero", "--user", "1", "--columns", "user=u,item=i"],
     "--columns goes with --exclude-seen"),
    (["export", "--run", "/tmp", "--out", "/dev/null"], "--out /dev/null: is not a regular file"),
    (["export", "--run", "/tmp", "--out", ""], "--out '': empty"),
]


@pytest.mark.parametrize("argv,fragment", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_user_errors_are_one_line(capsys, monkeypatch, tmp_path, argv, fragment):
    """One line, exit 2, the fragment in it, and never longer than a screenful."""
    monkeypatch.setenv("PHD_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("PHD_DATA_DIR", DATA)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's errors exit
        code = exc.code
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("phd: warning:")]
    assert code == 2, (argv, code, err)
    assert len(lines) == 1 and lines[0].startswith("phd: error: "), err
    assert "Traceback" not in err and fragment in lines[0], (fragment, err)
    assert len(lines[0]) <= 1200, len(lines[0])


@pytest.mark.parametrize("body,line", [
    (b"1::2::5::978300760\n1::3::x::978300760\n", "line 2"),
    (b"1::2::5::978300760\n1::99999999999999999999::5::978300760\n", "line 2"),
    (b"1::2::5::978300760\n\xff::2::5::978300760\n", "UTF-8"),
])
def test_a_malformed_data_file_names_file_and_line(capsys, tmp_path, body, line):
    (tmp_path / "ml-1m").mkdir()
    (tmp_path / "ml-1m" / "ratings.dat").write_bytes(body)
    code = main(["data", "stats", "--dataset", "ml-1m", "--data-dir", str(tmp_path),
                 "--no-verify"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("phd: error: ") and "\n" not in err
    assert "ratings.dat" in err and line in err


def test_a_folder_where_the_data_file_should_be(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("PHD_DATA_DIR", raising=False)  # nowhere else to find it
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "ml-1m" / "ratings.dat").mkdir(parents=True)
    code = main(["data", "stats", "--dataset", "ml-1m", "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("phd: error: ") and "ratings.dat" in err


def test_debug_shows_the_traceback(capsys):
    with pytest.raises(ValueError, match="device"):
        main(["--debug", "train", "--method", "vh", "--dataset", "synthetic", "--set",
              "device=cuda"])


def test_a_closed_pipe_ends_quietly():
    cmd = (f"{sys.executable} -m phdlib.cli data stats --dataset synthetic --json | head -c 5")
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr, p.stderr


def test_a_read_only_install_gets_a_numba_cache():
    code = ("import os; real = os.access; "
            "os.access = lambda p, m: False if str(p).endswith('kernels') else real(p, m); "
            "os.environ.pop('NUMBA_CACHE_DIR', None); import phdlib; "
            "print(os.environ['NUMBA_CACHE_DIR'])")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0 and "numba" in out.stdout, out.stderr


def test_a_data_dir_that_is_not_a_folder_is_reported(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("PHD_DATA_DIR", raising=False)
    monkeypatch.setenv("PHD_CACHE_DIR", str(tmp_path / "cache"))
    code = main(["data", "stats", "--dataset", "ml-100k", "--data-dir", "/nonexistent"])
    err = capsys.readouterr().err
    assert code == 2 and "phd: warning: data_dir '/nonexistent' is not a folder" in err
    assert err.strip().splitlines()[-1].startswith("phd: error: ") and "Traceback" not in err


def test_fetching_a_synthetic_dataset_says_there_is_nothing_to_fetch(capsys):
    for name in ("synthetic", "synthetic-yelp"):
        assert main(["data", "fetch", "--dataset", name]) == 0
        assert "nothing to fetch" in capsys.readouterr().out


@pytest.mark.parametrize("extra,fragment", [
    (["--sep", ""], "--sep '': expected one character"),
    (["--sep", "ab"], "--sep 'ab'"),
    (["--columns", "user=u,item=u,rating=r"], "column 'u' is mapped to both user and item"),
    (["--data-dir", "/nonexistent"], "--data-dir goes with --dataset"),
    (["--folder"], "is a folder"),
])
def test_own_rating_file_options_are_checked(capsys, tmp_path, extra, fragment):
    csv = tmp_path / "r.csv"
    csv.write_text("u,i,r\n1,2,5\n1,3,4\n2,2,3\n")
    args = ["--columns", "user=u,item=i,rating=r", "--scale", "1,5"]
    if extra == ["--folder"]:
        csv, extra = tmp_path, []
    elif extra[0] == "--columns":
        args = ["--scale", "1,5"]
    code = main(["train", "--method", "popularity", "--ratings", str(csv), *args, *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("phd: error: ") and "\n" not in err, err
    assert fragment in err, err


def test_an_output_file_in_folders_still_to_be_made_is_accepted(tmp_path):
    from phdlib.cli.options import output_file_problem

    assert output_file_problem("--out", tmp_path / "new" / "deeper" / "s.json") is None
    assert output_file_problem("--out", "relative.json") is None
    # a writer that does not make folders needs the file's own folder
    assert "does not exist" in output_file_problem("--manifest", tmp_path / "new" / "m.json",
                                                   make_folders=False)


@pytest.mark.parametrize("address", ["tcp://10.0.0.5:8786", "tcp://[::1]:8786",
                                     "localhost:8786", "TLS://sched.example:8786",
                                     "inproc://10.0.0.5/123/1"])
def test_dask_addresses_dask_accepts_are_accepted(address):
    from phdlib.cli.options import dask_address

    assert dask_address(address) == address


def test_fetching_a_synthetic_dataset_with_json_prints_json(capsys):
    import json

    assert main(["data", "fetch", "--dataset", "synthetic", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["generated"] is True


def test_set_reads_exponents_as_numbers():
    from phdlib.cli.options import name_value

    assert name_value("--set", "lr=1e-3") == ("lr", 0.001)
    assert name_value("--set", "x=-2E+4") == ("x", -20000.0)
    assert name_value("--set", "x=abc") == ("x", "abc")


def test_a_url_query_never_names_the_downloaded_file():
    from phdlib.data.sources import url_file_name

    assert url_file_name("http://h:1/good.zip?x=/..") == "good.zip"
    assert url_file_name("http://h/a/b%20c.zip#/..") == "b c.zip"


def test_an_export_never_replaces_a_fifo(tmp_path, capsys):
    import os

    from phdlib import io

    fifo = tmp_path / "p.fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="is not a regular file"):
        with io.atomic_write(fifo) as f:
            f.write(b"x")
    code = main(["export", "--run", str(tmp_path), "--out", str(fifo)])
    assert code == 2 and "is not a regular file" in capsys.readouterr().err
    assert not fifo.is_file() and fifo.exists() and not list(tmp_path.glob(".*tmp"))
