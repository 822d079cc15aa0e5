"""Trained codes out of the results store: the codes file (write, read, check).

``phd export --run PATH --out FILE.npz`` writes one ``.npz`` (no pickled
objects; NumPy alone reads it) with:

==========================  ==========================================================
``user_ids``, ``item_ids``  the original ids, in code order (strings stay strings:
                            a ``<U`` array; integer ids an ``int64`` array)
``user_codes``              uint64 ``(n_users, ceil(bits / 64))``: bit ``j`` of a code
``item_codes``              is bit ``j % 64`` of word ``j // 64``; padding bits are 0
``bits``                    int64 scalar: the code width ``m``
``distance``                ``"phd"`` or ``"hamming"``: what the codes are ranked by
                            (PHD's first argument is the user)
``provenance``              JSON text: format version, method, dataset, dataset and
                            split fingerprints, run key, config, seed, width (``bits``,
                            from format version 2), columns, library versions; where
                            the run recorded them, the split's ``split_seed`` and
                            ``preprocessing`` (a user's file: ``path``, ``sep``)
``item_stats`` (optional)   float64 ``(n_items, 2)``: each item's number of training
                            ratings (column 0, ``popularity``) and mean training
                            rating (column 1, ``mean_rating``; NaN for an item without
                            a training rating), computed by
                            :func:`phdlib.serving.ties.item_stats` from the split the
                            run was trained on; the provenance's ``item_stats`` object
                            records ``columns``, ``split`` (``"train"``),
                            ``split_fingerprint``, ``ratings`` (how many) and ``how``.
                            The second key of ``phd recommend --tie-break
                            popularity|mean-rating`` (:mod:`phdlib.serving.ties`)
``sha256``                  sha256 (hex) over every other field, checked on load
==========================  ==========================================================

A file without ``item_stats`` (one written before it existed, or by an export
that could not rebuild the training split: then ``phd export`` warns) still
loads; where present, it is checked like every other field (dtype, shape, counts
whole and non-negative, a mean exactly where the count is positive) and agrees
with its provenance.

:func:`load_codes` reads it back and checks every field (:class:`CodesFileError`
names the file and the field). The provenance also records the split's seed and
preprocessing (and a user's file its ``path``, ``sep``), so
:func:`phdlib.data.reload` rebuilds the dataset the codes were trained on.
Recommending from the codes: :mod:`phdlib.serving.recommend`.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import __version__, data, results
from ..codes.distances import DISTANCE_NAMES
from ..codes.packed import MAX_BITS, n_words
from ..io import atomic_write, json_default
from .item_stats import check_item_stats, stats_of_split
from .ties import STAT_COLUMNS

FORMAT = "phd-codes"
#: 2 adds ``bits`` to the provenance (checked against the field); 1 still loads.
FORMAT_VERSION = 2
FIELDS = ("user_ids", "item_ids", "user_codes", "item_codes", "bits", "distance", "provenance")
#: Fields a file may lack (in the digest where present, after :data:`FIELDS`).
OPTIONAL_FIELDS = ("item_stats",)


class CodesFileError(ValueError):
    """A codes file that cannot be used: names the file and what is wrong."""


@dataclass
class Codes:
    """Exported codes: see the module docstring for the fields."""

    user_ids: np.ndarray
    item_ids: np.ndarray
    user_codes: np.ndarray
    item_codes: np.ndarray
    bits: int
    distance: str
    provenance: dict
    #: float64 (n_items, 2) popularity and mean training rating, or None (see the module doc)
    item_stats: np.ndarray | None = None
    #: the file these codes were read from (set by :func:`load_codes`), or None
    path: str | None = field(default=None, compare=False)

    def item_stat(self, column: str) -> np.ndarray:
        """Column ``column`` (``popularity`` or ``mean_rating``) of ``item_stats``: float64
        ``(n_items,)``; a ``ValueError`` naming the file and the field where it is absent."""
        if column not in STAT_COLUMNS:
            raise ValueError(f"item statistic {column!r} is not one of {', '.join(STAT_COLUMNS)}")
        if self.item_stats is None:
            where = f"{self.path}: " if self.path else "these codes: "
            raise ValueError(f"{where}no field 'item_stats' (the items' {column} from the "
                             f"training ratings); export the run again with this phd "
                             f"(phd export) to write it")
        return self.item_stats[:, STAT_COLUMNS.index(column)]

    def user_rows(self, ids, strict: bool = True) -> np.ndarray:
        """Rows (int64) of the given original user ids; ``KeyError`` naming the first
        unknown one, or (``strict=False``) -1 for each unknown one."""
        return _rows(self.user_ids, ids, "user", strict)

    def item_rows(self, ids, strict: bool = True) -> np.ndarray:
        """Rows (int64) of the given original item ids, as :meth:`user_rows`."""
        return _rows(self.item_ids, ids, "item", strict)


def _as_int(x) -> int | None:
    """An integer id given as an integer or as text (``"007"``, ``"-3"``, any width), or
    None when ``x`` is neither."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return int(x)
    t = str(x).strip()
    digits = t[1:] if t.startswith("-") else t
    if not (digits.isascii() and digits.isdecimal()) or len(digits.lstrip("0")) > 40:
        return None  # no integer dtype holds 40 digits; Python refuses past 4,300
    return int(t)


def _rows(known: np.ndarray, ids, what: str, strict: bool = True) -> np.ndarray:
    """Rows of ``ids`` (original ids, text or integers) in ``known``; -1 for an unknown id.

    Integer ids compare exactly at any width ``known``'s dtype holds (int64,
    uint64): ``"18446744073709551615"`` finds the uint64 id 2^64 - 1; an
    integer outside the dtype's range is unknown. strict: an unknown id is a
    ``KeyError`` naming it (and how many of ``ids`` are unknown).
    """
    ids = list(ids)
    if known.dtype.kind in "iu":
        lo, hi = np.iinfo(known.dtype).min, np.iinfo(known.dtype).max
        ints = [_as_int(x) for x in ids]
        ok = np.array([v is not None and lo <= v <= hi for v in ints], dtype=bool)
        vals = np.array([v if o else 0 for v, o in zip(ints, ok)], dtype=known.dtype)
    else:
        ok = np.ones(len(ids), dtype=bool)
        vals = np.array([str(x) for x in ids], dtype=str)
    if len(known) and len(ids):
        order = np.argsort(known, kind="stable")
        pos = np.minimum(np.searchsorted(known, vals, sorter=order), len(known) - 1)
        found = ok & (known[order[pos]] == vals)
        rows = np.where(found, order[pos], -1).astype(np.int64)
    else:
        found = np.zeros(len(ids), dtype=bool)
        rows = np.full(len(ids), -1, dtype=np.int64)
    if strict and not found.all():
        bad = np.flatnonzero(~found)
        kind = "integers" if known.dtype.kind in "iu" else "text"
        more = f"; {len(bad)} of the {len(ids)} ids given are unknown" if len(bad) > 1 else ""
        raise KeyError(f"{what} id {ids[int(bad[0])]!r} is not in the codes ({len(known)} "
                       f"{what}s, ids as {kind}){more}")
    return rows


def _digest(fields: dict) -> str:
    h = hashlib.sha256()
    for k in FIELDS + tuple(x for x in OPTIONAL_FIELDS if x in fields):
        a = np.asarray(fields[k])
        h.update(k.encode() + b"\0" + str(a.dtype).encode() + b"\0" + str(a.shape).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _ids_of(run, data_dir=None) -> tuple[np.ndarray, np.ndarray, object]:
    """Original ids of a run's users and items: its own (a user's file) or its dataset's,
    rebuilt by its kind from the provenance the run recorded (:func:`phdlib.data.reload_split`)
    and checked by the dataset and split fingerprints; and that split (None for a run that
    keeps its own ids: its split is not rebuilt here)."""
    if "user_ids" in run.arrays:
        return np.asarray(run.arrays["user_ids"]), np.asarray(run.arrays["item_ids"]), None
    split = split_of_run(run, data_dir)
    ds = split.dataset
    return np.asarray(ds.user_ids), np.asarray(ds.item_ids), split


def split_of_run(run, data_dir=None):
    """The split a run was trained on (:func:`phdlib.data.reload_split`), checked by its
    fingerprints; ``FileNotFoundError`` / ``ValueError`` saying why it cannot be had."""
    prov = _data_provenance(run)
    if not data.kind_of(run.dataset, prov).available(data_dir):
        raise FileNotFoundError(f"the run's dataset {run.dataset!r} is not on this machine; its "
                                f"ids come from it (phd data fetch --dataset {run.dataset}, or "
                                f"--data-dir)")
    try:
        return data.reload_split(run.dataset, prov, data_dir)
    except data.FingerprintMismatch as exc:
        raise ValueError(f"{exc}; the run's ids cannot be mapped") from None


def _stats_of_run(run, n_items: int, data_dir=None, split=None):
    """(item_stats, provenance) of the run's training split (``split`` where already
    rebuilt), or (None, why not) where the split cannot be rebuilt here (a user's file
    moved or changed, a dataset not present)."""
    try:
        split = split if split is not None else split_of_run(run, data_dir)
    except (FileNotFoundError, ValueError, KeyError, TypeError, OSError) as exc:
        return None, " ".join(str(exc).split())
    if split.fingerprint != run.fingerprint:
        return None, (f"the split rebuilt has fingerprint {split.fingerprint}, the run "
                      f"{run.fingerprint}")
    return stats_of_split(split, n_items)


def _data_provenance(run) -> dict:
    """What the run recorded about its data (``extra["data"]``) with its dataset name
    and split fingerprint: :func:`phdlib.data.reload_split`'s provenance."""
    return {**run.extra.get("data", {}), "dataset": run.dataset,
            "split_fingerprint": run.fingerprint}


def codes_of_run(run, data_dir=None, stats: bool = True, split=None) -> Codes:
    """The :class:`Codes` of a stored code run (``results.load(path)``).

    stats: also compute ``item_stats`` from the run's training split; where that
    split cannot be rebuilt the codes have none and a ``UserWarning`` says why.
    split: the run's split where the caller holds it (checked by fingerprint), so it
    is not rebuilt from the data the run's provenance names.
    """
    given = split
    ranks_by = run.extra.get("ranks_by")
    if ranks_by not in DISTANCE_NAMES or "user_codes" not in run.arrays:
        raise ValueError(f"run {run.path}: method {run.method!r} ranks by {ranks_by!r}, not by "
                         f"binary codes; only code methods (ranking by 'phd' or 'hamming') "
                         f"can be exported")
    uid, iid, split = _ids_of(run, data_dir)
    uc, ic = np.asarray(run.arrays["user_codes"]), np.asarray(run.arrays["item_codes"])
    if uc.shape[0] != len(uid) or ic.shape[0] != len(iid):
        raise ValueError(f"run {run.path}: {uc.shape[0]} user codes for {len(uid)} user ids or "
                         f"{ic.shape[0]} item codes for {len(iid)} item ids")
    if uid.dtype == object:
        uid = uid.astype(str)
    if iid.dtype == object:
        iid = iid.astype(str)
    prov = {"format": FORMAT, "format_version": FORMAT_VERSION, "method": run.method,
            "dataset": run.dataset,
            "dataset_fingerprint": run.extra.get("data", {}).get("dataset_fingerprint"),
            "split_fingerprint": run.fingerprint, "run_key": run.key, "seed": int(run.seed),
            "bits": int(run.bits),
            "config": run.effective_config,
            "columns": run.extra.get("data", {}).get("preprocessing", {}).get("columns"),
            "trained_with": run.version, "phdlib": __version__}
    info = run.extra.get("data", {})
    prov.update({k: info[k] for k in ("split_seed", "preprocessing", "path", "sep")
                 if info.get(k) is not None})
    st = None
    if stats:
        st, why = _stats_of_run(run, len(iid), data_dir, given if given is not None else split)
        if st is None:
            import warnings

            warnings.warn(f"run {run.path}: no item_stats written (the tie rules popularity "
                          f"and mean-rating will be refused): {why}", stacklevel=2)
        else:
            prov["item_stats"] = why
    return Codes(uid, iid, np.ascontiguousarray(uc, dtype=np.uint64),
                 np.ascontiguousarray(ic, dtype=np.uint64), int(run.bits), ranks_by, prov, st)


def save_codes(codes: Codes, path) -> Path:
    """Write ``codes`` to ``path`` (``.npz``) atomically; returns the path. The provenance
    written records this format (name, version) and the width ``bits``."""
    prov = {**codes.provenance, "format": FORMAT, "format_version": FORMAT_VERSION,
            "bits": int(codes.bits), "phdlib": codes.provenance.get("phdlib", __version__)}
    fields = {"user_ids": codes.user_ids, "item_ids": codes.item_ids,
              "user_codes": codes.user_codes, "item_codes": codes.item_codes,
              "bits": np.int64(codes.bits), "distance": np.array(codes.distance),
              "provenance": np.array(json.dumps(prov, sort_keys=True,
                                                default=json_default))}
    if codes.item_stats is not None:
        fields["item_stats"] = np.ascontiguousarray(codes.item_stats, dtype=np.float64)
    fields["sha256"] = np.array(_digest(fields))
    path = Path(path)
    with atomic_write(path) as f:
        np.savez(f, **fields)
    return path


def export_run(run_path, out, data_dir=None) -> Path:
    """``phd export``: the codes of the stored run at ``run_path`` written to ``out``."""
    return save_codes(codes_of_run(results.load(run_path), data_dir), out)


#: The JSON types each provenance field may take (checked where present; ``format`` and
#: ``format_version`` must be present, and from version 2 ``bits``).
PROVENANCE = {"bits": (int,), "format": (str,), "format_version": (int,), "method": (str,), "dataset": (str,),
              "dataset_fingerprint": (str, type(None)), "split_fingerprint": (str,),
              "run_key": (str,), "seed": (int,), "config": (dict,),
              "columns": (dict, type(None)), "trained_with": (str,), "phdlib": (str,),
              "split_seed": (int, type(None)), "preprocessing": (dict, type(None)),
              "path": (str,), "sep": (str, type(None)), "item_stats": (dict,)}
def _npy_headers(path: Path, bad) -> None:
    """Check every ``.npy`` member's header before anything is loaded: a plain (not
    object) dtype, and a shape whose size is the member's size. A forged header
    claiming 2^37 rows is refused here, before NumPy allocates for it."""
    import zipfile

    from numpy.lib import format as npformat

    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
                raise bad(f"{name}: the archive entry claims {info.file_size:,} bytes but holds "
                          f"{info.compress_size:,}")
            if info.file_size > 1100 * max(info.compress_size, 1):  # beyond DEFLATE's ratio
                raise bad(f"{name}: the archive entry claims {info.file_size:,} bytes from "
                          f"{info.compress_size:,} compressed (expected at most ~1,032:1)")
            with zf.open(info) as fh:
                try:
                    version = npformat.read_magic(fh)
                    read = (npformat.read_array_header_1_0 if version == (1, 0)
                            else npformat.read_array_header_2_0)
                    shape, _, dtype = read(fh)
                except (ValueError, EOFError, SyntaxError) as exc:
                    raise bad(f"{name}: not a NumPy array ({' '.join(str(exc).split())})") \
                        from None
                header = fh.tell()
            if dtype.hasobject:
                raise bad(f"{name}: holds Python objects ({dtype}); expected numbers or text")
            want = int(np.prod(shape, dtype=object)) * dtype.itemsize
            if want != info.file_size - header:
                raise bad(f"{name}: its header claims shape {shape} of {dtype} ({want:,} bytes) "
                          f"but the entry holds {info.file_size - header:,} bytes")


def _scalar(f: dict, key: str, kind: str, bad):
    """The 0-d field ``key`` as a Python value of dtype kind ``kind`` (``"i"``: integer,
    ``"U"``: text), or :class:`CodesFileError` naming the field, its type and value."""
    a = f[key]
    ok = a.ndim == 0 and (a.dtype.kind in "iu" if kind == "i" else a.dtype.kind == "U")
    if not ok:
        shown = repr(a.item()) if a.ndim == 0 else f"an array of shape {a.shape}"
        raise bad(f"field {key!r} is {a.dtype} {shown}; expected "
                  + ("one integer" if kind == "i" else "one text value"))
    return int(a) if kind == "i" else str(a)


def _check_provenance(prov, bits: int, bad) -> dict:
    """Every provenance field present with its JSON type; its width equals ``bits``."""
    if not isinstance(prov, dict):
        raise bad(f"provenance is a JSON {type(prov).__name__}; expected an object")
    for key in ("format", "format_version"):
        if key not in prov:
            raise bad(f"provenance has no field {key!r} (expected a file written by phd export)")
    for key, types in PROVENANCE.items():
        if key not in prov:
            continue
        v = prov[key]
        if not isinstance(v, types) or isinstance(v, bool):
            want = " or ".join("null" if t is type(None) else
                               {str: "text", int: "an integer", dict: "an object"}[t]
                               for t in types)
            raise bad(f"provenance field {key!r} is {json.dumps(v)[:80]}; expected {want}")
    if prov["format"] != FORMAT or not 1 <= prov["format_version"] <= FORMAT_VERSION:
        raise bad(f"provenance says format {prov['format']!r} version {prov['format_version']}; "
                  f"expected {FORMAT!r} version 1..{FORMAT_VERSION}")
    cols = prov.get("columns") or {}
    roles = ("user", "item", "rating", "time")
    if not all(k in roles and isinstance(v, str) and v for k, v in cols.items()) \
            or len(set(cols.values())) != len(cols) or (cols and not {"user", "item"} <= set(cols)):
        raise bad(f"provenance field 'columns' is {json.dumps(cols)[:80]}; expected a column "
                  f"name (text) for each of user, item (and rating, time), no two the same")
    if "seed" in prov and not 0 <= prov["seed"] < 2**63:
        raise bad(f"provenance field 'seed' is {prov['seed']}; expected 0..2^63 - 1")
    if prov["format_version"] >= 2 and prov.get("bits") != bits:
        raise bad(f"field 'bits' is {bits} but the provenance records "
                  f"{json.dumps(prov.get('bits'))} (the width the run was trained with)")
    return prov


def load_codes(path) -> Codes:
    """Read and check a codes file; :class:`CodesFileError` names the file and the field.

    Every field is checked for type and range before use (``.npy`` headers
    against the sizes of their entries first, so nothing large is allocated
    for a forged file); any other failure while reading is a
    :class:`CodesFileError` too, never an internal error.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"codes file not found: {path}")

    def bad(msg):
        return CodesFileError(f"{path}: {msg}")

    try:
        return _load_codes(path, bad)
    except (CodesFileError, FileNotFoundError):
        raise
    except Exception as exc:  # noqa: BLE001 - the boundary: a user's file never gives an internal error
        raise bad(f"not a readable codes file ({type(exc).__name__}: "
                  f"{' '.join(str(exc).split())[:300]})") from exc


def _load_codes(path: Path, bad) -> Codes:
    import zipfile
    import zlib

    if not zipfile.is_zipfile(path):
        raise bad("not a .npz file (expected the codes file written by phd export)")
    try:
        _npy_headers(path, bad)
        with np.load(path, allow_pickle=False) as z:
            f = {k: z[k] for k in z.files}
    except CodesFileError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise bad(f"not a readable .npz codes file ({exc})") from None
    missing = [k for k in FIELDS + ("sha256",) if k not in f]
    if missing:
        raise bad(f"no field {', '.join(missing)} (expected a file written by phd export)")
    extra = sorted(set(f) - set(FIELDS) - set(OPTIONAL_FIELDS) - {"sha256"})
    if extra:
        raise bad(f"unknown field {', '.join(extra)} (expected only {', '.join(FIELDS)}, "
                  f"sha256 and optionally {', '.join(OPTIONAL_FIELDS)})")
    if _scalar(f, "sha256", "U", bad) != _digest(f):
        raise bad("its content does not match its sha256 field (changed or damaged)")
    bits, dist = _scalar(f, "bits", "i", bad), _scalar(f, "distance", "U", bad)
    if not 1 <= bits <= MAX_BITS:
        raise bad(f"field 'bits' is {bits}; expected a code width in 1..{MAX_BITS}")
    if dist not in DISTANCE_NAMES:
        raise bad(f"field 'distance' is {dist!r}; expected 'phd' or 'hamming'")
    for k in ("user_ids", "item_ids"):
        if f[k].dtype.kind not in "iuU" or f[k].ndim != 1:
            raise bad(f"field {k!r} is {f[k].dtype} {f[k].shape}; expected 1-d text or integers")
        if len(f[k]) == 0:
            raise bad(f"field {k!r} is empty; expected at least one id")
        if f[k].dtype.kind == "U" and f[k].size and (
                f[k].view(np.uint32).max() > 0x10FFFF
                or ((f[k].view(np.uint32) >= 0xD800) & (f[k].view(np.uint32) <= 0xDFFF)).any()):
            raise bad(f"field {k!r} holds characters that are not Unicode text")
        if len(np.unique(f[k])) != len(f[k]):
            raise bad(f"field {k!r} holds a repeated id")
    w = n_words(bits)
    for k, n in (("user_codes", len(f["user_ids"])), ("item_codes", len(f["item_ids"]))):
        a = f[k]
        if a.dtype != np.uint64 or a.ndim != 2 or a.shape != (n, w):
            raise bad(f"field {k!r} is {a.dtype} {a.shape}; expected uint64 ({n}, {w}) for "
                      f"{bits} bits")
        if bits % 64 and (a[:, -1] >> np.uint64(bits % 64)).any():
            raise bad(f"field {k!r} has bits set above bit {bits - 1} (padding must be 0)")
    try:
        prov = json.loads(_scalar(f, "provenance", "U", bad))
    except json.JSONDecodeError as exc:
        raise bad(f"field 'provenance' is not JSON ({exc})") from None
    prov = _check_provenance(prov, bits, bad)
    stats = check_item_stats(f.get("item_stats"), prov, len(f["item_ids"]), bad)
    return Codes(f["user_ids"], f["item_ids"], f["user_codes"], f["item_codes"], bits, dist, prov,
                 stats, str(path))
