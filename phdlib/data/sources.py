"""Where each dataset lives: its files, format, scale, known fingerprint, download.

A dataset's raw file is looked for, in this order, under

1. the ``data_dir`` argument,
2. the ``PHD_DATA_DIR`` environment variable,
3. the per-user cache ``<cache_dir()>/raw`` (``PHD_CACHE_DIR``, else
   ``platformdirs.user_cache_dir("phdlib")``),

each laid out as the official archive unpacks (``ml-1m/ratings.dat``,
``ml-100k/u.data``, ...). If none has it, :func:`fetch` downloads it into the
cache (only on request: ``download=True`` or ``phd data fetch``) with pooch
(progress bar, hash check when a hash is known, atomic placement). Yelp's
terms forbid redistribution, so its loader explains where to put the file.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .errors import DataNotFoundError

GROUPLENS = "https://files.grouplens.org/datasets/movielens/"


@dataclass(frozen=True)
class Source:
    """How to find, read and fetch one dataset.

    ``files``: candidate paths relative to a data directory, first found wins.
    ``fmt``: a format of :mod:`phdlib.data.formats`. ``scale``/``step``: the
    raw rating scale (min, max) and its step. ``fingerprint``: the known
    content fingerprint, or None when this build knows none. ``url``: where
    to download it (None: the user must fetch it). ``member``: the file inside
    the downloaded zip (None: the download is the file). ``archive_hash``:
    ``"md5:..."`` or ``"sha256:..."`` of the download where the file is
    fixed (pooch checks it, fetches again a cached download that fails it,
    and deletes a new download that fails it). ``half_stars``: the raw
    ratings use half stars (ML-10M and the MovieLens CSV sets). ``raw_rows``: the
    ratings in the raw file before filtering, where its publisher states them.
    """

    name: str
    files: tuple[str, ...]
    fmt: str
    scale: tuple[float, float] = (1.0, 5.0)
    step: float = 1.0
    fingerprint: str | None = None
    url: str | None = None
    member: str | None = None
    archive_hash: str | None = None
    half_stars: bool = False
    raw_rows: int | None = None
    how_to_get: str = ""
    extra: dict = field(default_factory=dict)


#: The archives' MD5 sums as GroupLens publishes them (``<archive>.zip.md5`` beside
#: each archive). ``ml-latest-small`` changes with every release: not pinned.
ARCHIVE_MD5 = {
    "ml-100k": "md5:0e33842e24a9c977be4e0107933c0723",
    "ml-1m": "md5:c4d9eecfca2ab87c1945afe126590906",
    "ml-10m": "md5:ce571fd55effeba0271552578f2648bd",
    "ml-20m": "md5:cd245b17a1ae2cc31bb14903e1204af3",
    "ml-25m": "md5:6b51fb2759a8657d3bfcbfc42b592ada",
}

SOURCES: dict[str, Source] = {
    s.name: s
    for s in [
        Source("ml-100k", ("ml-100k/u.data",), "u.data",
               fingerprint="49d705b283cc0c7dd302c1340b50f334570e979d3b8d5a85c498c2ddc90e7577",
               url=GROUPLENS + "ml-100k.zip", member="ml-100k/u.data",
               archive_hash=ARCHIVE_MD5["ml-100k"]),
        Source("ml-1m", ("ml-1m/ratings.dat",), "dat",
               fingerprint="2dad134c8b493373beed8d2a42e18ec2a93606fd957bd76c0bfbdef5c514b985",
               url=GROUPLENS + "ml-1m.zip", member="ml-1m/ratings.dat",
               archive_hash=ARCHIVE_MD5["ml-1m"], raw_rows=1_000_209),
        Source("ml-10m", ("ml-10m/ratings.dat", "ml-10M100K/ratings.dat"), "dat",
               scale=(0.5, 5.0), step=0.5, half_stars=True,
               url=GROUPLENS + "ml-10m.zip", member="ml-10M100K/ratings.dat",
               archive_hash=ARCHIVE_MD5["ml-10m"]),
        Source("ml-20m", ("ml-20m/ratings.csv",), "movielens-csv", scale=(0.5, 5.0), step=0.5,
               half_stars=True, url=GROUPLENS + "ml-20m.zip", member="ml-20m/ratings.csv",
               archive_hash=ARCHIVE_MD5["ml-20m"]),
        Source("ml-25m", ("ml-25m/ratings.csv",), "movielens-csv", scale=(0.5, 5.0), step=0.5,
               half_stars=True, url=GROUPLENS + "ml-25m.zip", member="ml-25m/ratings.csv",
               archive_hash=ARCHIVE_MD5["ml-25m"]),
        Source("ml-latest-small", ("ml-latest-small/ratings.csv",), "movielens-csv",
               scale=(0.5, 5.0), step=0.5, half_stars=True,
               url=GROUPLENS + "ml-latest-small.zip", member="ml-latest-small/ratings.csv"),
        Source("yelp", ("yelp/review.json", "yelp/yelp_academic_dataset_review.json",
                        "yelp_academic_dataset_review.json"), "yelp-json",
               how_to_get=("Yelp's terms do not allow redistribution: download the Yelp dataset "
                           "yourself from https://www.yelp.com/dataset (the paper used the 2016 "
                           "challenge release), unpack it and put its review file at "
                           "<data dir>/yelp/review.json (or yelp/yelp_academic_dataset_review.json)")),
        Source("amazon", ("amazon/ratings_Books.csv",), "amazon-csv",
               url="http://snap.stanford.edu/data/amazon/productGraph/categoryFiles/ratings_Books.csv"),
    ]
}

PAPER_DATASETS = ("yelp", "ml-1m", "ml-10m", "amazon")

def source(name: str) -> Source:
    """The :class:`Source` of ``name``; a clear error for unknown names."""
    try:
        return SOURCES[name]
    except KeyError:
        raise KeyError(f"dataset {name!r} has no source file (known sources: "
                       f"{', '.join(sorted(SOURCES))}; generated and registered datasets "
                       f"are read or downloaded from nowhere)") from None


def cache_dir() -> Path:
    """Per-user cache root: ``PHD_CACHE_DIR``, else ``platformdirs.user_cache_dir('phdlib')``."""
    env = os.environ.get("PHD_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("phdlib"))


def search_dirs(data_dir=None) -> list[tuple[str, Path]]:
    """(label, directory) pairs in search order."""
    out = []
    if data_dir is not None:
        d = Path(data_dir).expanduser()
        if not d.is_dir():
            import warnings

            warnings.warn(f"data_dir {str(data_dir)!r} is not a folder; searching the next "
                          f"places (PHD_DATA_DIR, the per-user cache)", RuntimeWarning,
                          stacklevel=3)
        out.append(("data_dir argument", d))
    env = os.environ.get("PHD_DATA_DIR")
    if env:
        out.append(("PHD_DATA_DIR", Path(env).expanduser()))
    out.append(("per-user cache", cache_dir() / "raw"))
    return out


def locate(name: str, data_dir=None) -> Path | None:
    """Path of the raw file of ``name`` in the first directory that has it, else None."""
    src = source(name)
    for _, d in search_dirs(data_dir):
        for rel in src.files:
            p = d / rel
            if p.is_file():
                return p
    return None


def not_found_message(name: str, data_dir=None) -> str:
    src = source(name)
    looked = "; ".join(f"{lab}: {d}" for lab, d in search_dirs(data_dir))
    want = " or ".join(src.files)
    msg = (f"dataset {name!r} not found (looked for {want} under {looked}). Provide it in one of "
           f"three ways: (1) pass data_dir=DIR (--data-dir DIR) with DIR/{src.files[0]}; "
           f"(2) set PHD_DATA_DIR=DIR; (3) ")
    if src.url:
        msg += (f"download it into the per-user cache {cache_dir() / 'raw'} with "
                f"`phd data fetch --dataset {name}` or load_dataset({name!r}, download=True) "
                f"(from {src.url}).")
    else:
        msg += f"put it into the per-user cache {cache_dir() / 'raw'}. {src.how_to_get}."
    return msg


#: The address schemes a download may use (what pooch fetches).
URL_SCHEMES = ("http", "https", "ftp", "sftp", "doi")


def url_file_name(url: str) -> str:
    """The file name a download from ``url`` is saved under: the last part of its path
    (never of its query or fragment), percent-escapes decoded."""
    from urllib.parse import unquote, urlsplit

    return unquote(urlsplit(url).path).rstrip("/").rsplit("/", 1)[-1]


def check_url(url: str) -> None:
    """``ValueError`` unless ``url`` is an address pooch can download from."""
    from urllib.parse import urlsplit

    shown = repr(url) if len(url) <= 200 else f"{url[:120]!r}...({len(url):,} characters)"
    expected = "expected an http://, https://, ftp://, sftp:// or doi: address of a file"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parses the port: a bad one raises here, not in the download
    except ValueError as exc:
        raise ValueError(f"url {shown}: malformed ({exc}); {expected}") from None
    if not (parts.scheme in URL_SCHEMES and (parts.scheme == "doi" or parts.netloc)):
        raise ValueError(f"url {shown}: {expected}")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise ValueError(f"url {shown}: holds a space or a control character; {expected}")
    if parts.scheme == "doi" and not parts.path.strip("/"):
        raise ValueError(f"url {shown}: no DOI after 'doi:'; {expected} such as "
                         f"doi:10.5281/zenodo.1234/ml-1m.zip")
    name = url_file_name(url)
    if parts.scheme != "doi" and (name in ("", ".", "..") or "\\" in name or "\0" in name):
        raise ValueError(f"url {shown}: its path does not end in a file name (ends in "
                         f"{name or '/'!r}); {expected} such as https://host/ml-1m.zip")


def fetch(name: str, url: str | None = None, known_hash: str | None = None,
          progress: bool = True) -> Path:
    """Download ``name`` into ``<cache_dir()>/raw`` and return its raw file's path.

    ``url``/``known_hash`` override the registry (tests point them at a local
    server). pooch downloads to a temporary file, checks ``known_hash``
    (``"md5:<hex>"`` or ``"sha256:<hex>"``, when known) and moves it into
    place (a cached download that fails the hash is fetched again); the member of a
    zip is extracted to a temporary file and renamed, so an interrupted fetch
    leaves nothing half-written. The content fingerprint is checked by the
    loader afterwards.
    """
    import pooch

    src = source(name)
    if url is not None:
        check_url(url)
    if known_hash is None and url is None:  # the pinned hash belongs to the registry's URL
        known_hash = src.archive_hash
    url = url or src.url
    if not url:
        raise DataNotFoundError(f"dataset {name!r} cannot be downloaded by phdlib. {src.how_to_get}.")
    raw = cache_dir() / "raw"
    downloads = raw / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    target = raw / src.files[0]
    fname = url_file_name(url) or src.files[0].rsplit("/", 1)[-1]
    try:
        got = Path(pooch.retrieve(url, known_hash=known_hash, fname=fname, path=downloads,
                                  progressbar=progress))
    except Exception as exc:  # requests/pooch errors: name the URL
        here = locate(name)
        raise DataNotFoundError(
            f"could not download {name!r} from {url}: {exc}. "
            + (not_found_message(name) if here is None else
               f"(A copy is on disk at {here}; the loaders use it without a download.)")
        ) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    if src.member is None:
        if got != target:
            _atomic_copy(got, target)
        return target
    try:
        _extract(got, src.member, target)
    except (zipfile.BadZipFile, EOFError, OSError, DataNotFoundError) as exc:
        got.unlink(missing_ok=True)  # a bad download is never reused
        raise DataNotFoundError(f"{got} (from {url}) is not a usable zip archive ({exc}); it was "
                                f"deleted: run the fetch again to download it anew") from exc
    return target


def _extract(archive: Path, wanted: str, target: Path) -> None:
    """Extract member ``wanted`` (or one of the same file name) of ``archive`` to ``target``."""
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        member = wanted if wanted in names else next(
            (n for n in names if n.endswith("/" + wanted.rsplit("/", 1)[-1])), None)
        if member is None:
            raise DataNotFoundError(f"no member {wanted!r}")
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".fetch-")
        try:
            with os.fdopen(fd, "wb") as out, zf.open(member) as inp:
                shutil.copyfileobj(inp, out, 1 << 20)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _atomic_copy(src: Path, dst: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=dst.parent, prefix=".fetch-")
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
