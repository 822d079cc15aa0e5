"""The results store shared by every method, the experiments and the chapters.

One run (a method trained and evaluated once on one dataset split) is a
folder ``<results_dir>/<dataset>/<method>/<key>/`` holding:

- ``meta.json``: method, dataset, bits, seed, config, the summary metrics,
  data fingerprint, library version, wall time, creation time, and ``key``;
- ``per_user.parquet``: one row per test user (``user`` plus metric columns
  such as ``ndcg@5``, ``ndcg@10``, ``mrr``, ``n_test``);
- ``arrays.npz``: codes or vectors (e.g. ``user_codes``/``item_codes`` as
  packed ``uint64``, or ``user_vectors``/``item_vectors`` as ``float32``);
- ``log.parquet`` (optional): the training trace, one row per logged step;
- ``grid.parquet`` (tuned runs only): the tuning grid, one row per point
  (see :func:`phdlib.experiments.training.tune`); each point is also a run of its own.

``key`` is a hash of (method, dataset, bits, seed, config, data fingerprint),
so a run with the same inputs is found again instead of recomputed, and any
change of its inputs gives a new folder.

Safety. A run is written into a temporary folder ``.<key>.<random>.tmp``
beside its place and published with one atomic rename, never moving an old
copy aside first: a reader sees the complete run or none. When two processes
save the same key, the first rename wins and the other writer, finding a
complete run of the same inputs, discards its copy. ``meta.json`` records the
sha256 of every other file (``files``) and of its own content
(``integrity``); :func:`verify` checks both, :func:`load` refuses a run that
fails (:class:`CorruptRun`, naming the file), :func:`find` reports it and
returns None so the run is recomputed, and :func:`save` sets a corrupt copy
aside (``.<key>.corrupt-<random>``) before publishing the new one. Folders
whose names start with ``.`` (temporary folders of an interrupted save, set
aside copies) are never runs. A save holds an exclusive ``flock`` on its
temporary folder until the run is published (:func:`phdlib.io.holding`), and
first calls :func:`~phdlib.results.leftovers.clean` on its ``<dataset>/<method>``
folder, which removes the temporary folders of killed saves and old set-aside
copies, never a live save's, nor any other name (:mod:`phdlib.results.leftovers`).

The store never writes a run through a symbolic link that leads out of its
root, nor finds one through it (:mod:`phdlib.results.links`): :func:`save`
raises :class:`~phdlib.results.links.LinkOutsideStore`; :func:`find` reports it
and returns None, :func:`index` and :func:`count` leave such runs out, and so
does :func:`stored` when it is given the root. Links that stay inside the root
are followed. :func:`load` and :func:`verify` read the folder they are given,
as given (the caller chose it).

The store's root is ``results_dir()``: the ``PHD_RESULTS_DIR`` environment
variable, else ``<project root>/results`` when running from a checkout, else
the per-user data directory of ``platformdirs``.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__
from .. import io as _io
from ..io import canonical, digest, file_sha256
from ..io import json_default as _json_default
from .leftovers import clean
from .links import LinkOutsideStore, outside_error, reached_from_outside

#: The store's own names, and the two a save uses from beside it: :class:`LinkOutsideStore`
#: (what it raises) and :func:`clean` (what it calls first).
__all__ = ["FILES", "CorruptRun", "LinkOutsideStore", "Run", "check_name", "clean", "count",
           "find", "index", "load", "results_dir", "run_key", "run_path", "save", "stored",
           "verify"]

#: The files of a run besides ``meta.json``, each optional but ``per_user.parquet``.
FILES = ("per_user.parquet", "arrays.npz", "log.parquet", "grid.parquet")


class CorruptRun(ValueError):
    """A stored run whose files are missing, unreadable or not the ones recorded."""

    def __init__(self, path: Path, problem: str):
        super().__init__(f"stored run {path} cannot be used: {problem}")
        self.path, self.problem = Path(path), problem


def check_name(value, what: str) -> str:
    """``value`` as a store folder name; ``ValueError`` for anything that is not a plain name."""
    s = str(value)
    if (not s or s in (".", "..") or s.startswith(".") or "/" in s or "\\" in s
            or "\x00" in s or len(s) > 200):
        raise ValueError(f"{what} {value!r} cannot name a folder of the results store: expected "
                         f"a plain name (no '/', '\\', NUL or leading '.', at most 200 characters)")
    return s


def results_dir() -> Path:
    """Root of the results store (see module docstring)."""
    env = os.environ.get("PHD_RESULTS_DIR")
    if env:
        return Path(env).expanduser().resolve()
    here = Path(__file__).resolve().parent.parent
    if (here / "pyproject.toml").is_file() and (here / "phdlib").is_dir():
        return here / "results"
    import platformdirs

    return Path(platformdirs.user_data_dir("phdlib")) / "results"


def run_key(method: str, dataset: str, bits: int, seed: int, config: dict, fingerprint: str) -> str:
    """Content key of a run: 16 hex digits of sha256 over its inputs."""
    return digest({"method": method, "dataset": dataset, "bits": int(bits), "seed": int(seed),
                   "config": config, "fingerprint": fingerprint})


@dataclass
class Run:
    """One trained-and-evaluated method; see the module docstring for files."""

    method: str
    dataset: str
    bits: int
    seed: int
    config: dict
    metrics: dict
    per_user: pd.DataFrame
    fingerprint: str
    wall_seconds: float
    arrays: dict = field(default_factory=dict)
    log: pd.DataFrame | None = None
    grid: pd.DataFrame | None = None
    extra: dict = field(default_factory=dict)
    version: str = __version__
    created: str = ""
    path: Path | None = None

    @property
    def effective_config(self) -> dict:
        """The configuration the stored model was trained with: ``config`` with the
        tuning grid's choice (``extra["chosen"]``) applied, for a tuned run."""
        return {**self.config, **self.extra.get("chosen", {})}

    @property
    def key(self) -> str:
        return run_key(self.method, self.dataset, self.bits, self.seed, self.config, self.fingerprint)

    def meta(self) -> dict:
        return {
            "key": self.key,
            "method": self.method,
            "dataset": self.dataset,
            "bits": int(self.bits),
            "seed": int(self.seed),
            "config": self.config,
            "metrics": self.metrics,
            "fingerprint": self.fingerprint,
            "wall_seconds": float(self.wall_seconds),
            "version": self.version,
            "created": self.created or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "extra": self.extra,
        }


def run_path(method: str, dataset: str, key: str, root: Path | None = None) -> Path:
    return (root or results_dir()) / check_name(dataset, "dataset") / check_name(method, "method") / key


def _meta_digest(meta: dict) -> str:
    return hashlib.sha256(canonical({k: v for k, v in meta.items() if k != "integrity"})
                          .encode()).hexdigest()


def verify(path: Path | str) -> str | None:
    """None when the run folder ``path`` is complete and unaltered, else what is wrong.

    Checks that ``meta.json`` parses and matches its own checksum, and that
    every file it records exists with the recorded sha256. The answer names
    the file, e.g. ``"per_user.parquet: sha256 differs from the recorded one"``.
    """
    path = Path(path)
    try:
        meta = json.loads((path / "meta.json").read_text())
    except FileNotFoundError:
        return "meta.json: missing"
    except (OSError, ValueError) as exc:
        return f"meta.json: unreadable ({type(exc).__name__}: {str(exc)[:200]})"
    if not isinstance(meta, dict) or "integrity" not in meta or "files" not in meta:
        return "meta.json: no checksums (written by an older phdlib or by hand)"
    if meta["integrity"] != _meta_digest(meta):
        return "meta.json: content differs from its recorded checksum (edited or corrupt)"
    files = meta["files"]
    if not isinstance(files, dict) or "per_user.parquet" not in files:
        return "meta.json: no checksum of per_user.parquet"
    for name, want in files.items():
        if name not in FILES:
            return f"meta.json: records an unknown file {name!r}"
        try:
            got = file_sha256(path / name)
        except FileNotFoundError:
            return f"{name}: missing"
        except OSError as exc:
            return f"{name}: unreadable ({exc})"
        if got != want:
            return f"{name}: sha256 differs from the recorded one (corrupt or replaced)"
    return None


def _write_files(run: Run, tmp: Path) -> dict:
    run.per_user.to_parquet(tmp / "per_user.parquet", index=False)
    if run.arrays:
        np.savez(tmp / "arrays.npz", **run.arrays)  # packed codes and float32 barely compress
    if run.log is not None:
        run.log.to_parquet(tmp / "log.parquet", index=False)
    if run.grid is not None:
        run.grid.to_parquet(tmp / "grid.parquet", index=False)
    meta = run.meta()
    meta["files"] = {n: file_sha256(tmp / n) for n in FILES if (tmp / n).is_file()}
    meta["integrity"] = _meta_digest(meta)
    (tmp / "meta.json").write_text(json.dumps(meta, indent=2, default=_json_default))
    return meta


def _publish(tmp: Path, dst: Path) -> None:
    """Rename ``tmp`` to ``dst``; keep a valid run already there, set a corrupt one aside."""
    for _ in range(10):
        try:
            os.rename(tmp, dst)  # atomic; fails while another writer's copy is there
            return
        except OSError:
            if not dst.exists():
                continue  # set aside by another writer in the meantime: try again
            problem = verify(dst)
            if problem is None:  # the same key means the same inputs: that run is kept
                shutil.rmtree(tmp, ignore_errors=True)
                return
            aside = Path(tempfile.mkdtemp(prefix=f".{dst.name}.corrupt-", dir=dst.parent))
            try:
                os.rename(dst, aside / "run")
                warnings.warn(f"phdlib.results: replaced the stored run {dst} ({problem})",
                              RuntimeWarning, stacklevel=3)
            except OSError:
                pass  # another writer moved it first
    raise OSError(f"could not publish {dst}: other writers keep replacing it")


def save(run: Run, root: Path | None = None) -> Path:
    """Write ``run`` atomically and return its folder (see the module docstring).

    Raises ``OSError`` when the store cannot be written (read-only, full), and
    :class:`LinkOutsideStore` (an ``OSError``) when a folder on the way is a
    symbolic link out of the store's root; ``ValueError`` when the dataset or
    method is not a plain name.
    """
    root = Path(root) if root is not None else results_dir()
    dst = run_path(run.method, run.dataset, run.key, root)
    out = _io.link_out(dst, root)
    if out is not None:
        raise outside_error(dst, *out, os.path.realpath(root))
    dst.parent.mkdir(parents=True, exist_ok=True)
    clean(dst.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{run.key}.", suffix=".tmp", dir=dst.parent))
    try:
        with _io.holding(tmp):  # locked until published: a cleaner leaves it alone
            os.chmod(tmp, 0o755)  # mkdtemp's 0700 would make the published run private
            _write_files(run, tmp)
            _publish(tmp, dst)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    run.path = dst
    return dst


def load(path: Path | str, arrays: bool = True) -> Run:
    """Read a run folder written by :func:`save`, verified first (:class:`CorruptRun` if not)."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is not a run folder")
    problem = verify(path)
    if problem is not None:
        raise CorruptRun(path, problem)
    try:
        return _read(path, arrays)
    except CorruptRun:
        raise
    except Exception as exc:  # noqa: BLE001 - a verified run that still cannot be read
        raise CorruptRun(path, f"unreadable ({type(exc).__name__}: "
                               f"{' '.join(str(exc).split())[:300]})") from exc


def _read(path: Path, arrays: bool) -> Run:
    meta = json.loads((path / "meta.json").read_text())
    arr = {}
    if arrays and (path / "arrays.npz").is_file():
        with np.load(path / "arrays.npz", allow_pickle=False) as z:
            arr = {k: z[k] for k in z.files}
    log = pd.read_parquet(path / "log.parquet") if (path / "log.parquet").is_file() else None
    grid = pd.read_parquet(path / "grid.parquet") if (path / "grid.parquet").is_file() else None
    return Run(
        method=meta["method"], dataset=meta["dataset"], bits=meta["bits"], seed=meta["seed"],
        config=meta["config"], metrics=meta["metrics"],
        per_user=pd.read_parquet(path / "per_user.parquet"), fingerprint=meta["fingerprint"],
        wall_seconds=meta["wall_seconds"], arrays=arr, log=log, grid=grid, extra=meta.get("extra", {}),
        version=meta["version"], created=meta["created"], path=path,
    )


def stored(path: Path | str, root: Path | None = None) -> bool:
    """Whether ``path`` holds a complete, verified run (a failing one is reported).

    root: the store ``path`` is in; then a run reached through a symbolic link
    out of it is not stored (reported)."""
    path = Path(path)
    if root is not None and reached_from_outside(path, root):
        return False
    if not path.is_dir():
        return False
    problem = verify(path)
    if problem is not None:
        warnings.warn(f"phdlib.results: stored run {path} is not used ({problem}); "
                      f"it will be recomputed", RuntimeWarning, stacklevel=2)
        return False
    return True


def find(method: str, dataset: str, bits: int, seed: int, config: dict, fingerprint: str,
         root: Path | None = None, arrays: bool = True) -> Run | None:
    """The stored run with exactly these inputs, or None (also when it fails :func:`verify`,
    or is reached through a symbolic link out of the store, which is then reported)."""
    root = Path(root) if root is not None else results_dir()
    p = run_path(method, dataset, run_key(method, dataset, bits, seed, config, fingerprint), root)
    if reached_from_outside(p, root, "; it will be recomputed"):
        return None
    if not p.is_dir():
        return None
    try:
        return load(p, arrays=arrays)  # verifies first
    except (CorruptRun, OSError, ValueError) as exc:
        warnings.warn(f"phdlib.results: {exc}; it will be recomputed", RuntimeWarning, stacklevel=2)
        return None


def count(root: Path | None = None) -> int:
    """How many run folders the store holds (a ``meta.json`` each, not verified: a
    cheap count for progress reports; :func:`index` lists the verified runs). A
    store that does not exist holds 0; one that cannot be listed (three tries,
    as a folder removed while it is listed fails one) raises ``OSError``. Runs
    reached through a symbolic link out of the store are not counted."""
    root = Path(root) if root is not None else results_dir()
    for attempt in range(3):
        try:  # (not temporary folders: their names start with a dot)
            if not root.is_dir():
                return 0
            base, memo = Path(os.path.realpath(root)), {}
            return sum(1 for m in root.glob("*/*/[!.]*/meta.json")
                       if _io.link_out(m.parent, root, base, memo) is None)
        except OSError:
            if attempt == 2:
                raise
    return 0  # (not reached)


def index(root: Path | None = None) -> pd.DataFrame:
    """One row per verified stored run: method, dataset, bits, seed, key, metrics, wall time, path.

    Folders starting with ``.`` are skipped; a run that fails :func:`verify`, or
    is reached through a symbolic link out of the store, is reported (a warning
    naming the file or the link) and not listed.
    """
    root = Path(root) if root is not None else results_dir()
    base, memo = Path(os.path.realpath(root)), {}
    rows = []
    for meta_file in sorted(root.glob("*/*/*/meta.json")):
        if any(part.startswith(".") for part in meta_file.relative_to(root).parts[:3]):
            continue
        if reached_from_outside(meta_file.parent, root, "; it is not listed", base, memo):
            continue
        if not stored(meta_file.parent):
            continue
        m = json.loads(meta_file.read_text())
        row = {k: m[k] for k in ("method", "dataset", "bits", "seed", "key", "wall_seconds", "version")}
        row.update({f"metric:{k}": v for k, v in m.get("metrics", {}).items()})
        row["path"] = str(meta_file.parent)
        rows.append(row)
    return pd.DataFrame(rows)
