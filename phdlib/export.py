"""Trained codes out of the results store, and recommendations from them.

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
                            split fingerprints, run key, config, seed, library version
``sha256``                  sha256 (hex) over every other field, checked on load
==========================  ==========================================================

:func:`load_codes` reads it back and checks every field (:class:`CodesFileError`
names the file and the field). :func:`recommend` ranks every item for some
users through :class:`phdlib.search.BinaryIndex`.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import __version__
from .codes import n_words

FORMAT = "phd-codes"
FORMAT_VERSION = 1
FIELDS = ("user_ids", "item_ids", "user_codes", "item_codes", "bits", "distance", "provenance")


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

    def user_rows(self, ids) -> np.ndarray:
        """Rows of the given original user ids; ``KeyError`` naming the first unknown one."""
        return _rows(self.user_ids, ids, "user")

    def item_rows(self, ids) -> np.ndarray:
        return _rows(self.item_ids, ids, "item")


def _is_integer(x) -> bool:
    t = str(x).strip()
    t = t[1:] if t.startswith("-") else t
    return t.isascii() and t.isdecimal() and len(t) <= 18


def _rows(known: np.ndarray, ids, what: str, strict: bool = True,
          keep_order: bool = False) -> np.ndarray:
    """Rows of ``ids`` (original ids, any of text or integers) in ``known``.

    strict: an unknown id is a ``KeyError`` naming it; else unknown ids are left
    out, or (``keep_order``) given row -1 so the answer aligns with ``ids``.
    """
    ids = list(ids)
    if known.dtype.kind in "iu":
        ok = np.array([_is_integer(x) for x in ids], dtype=bool)
        if strict and not ok.all():
            raise KeyError(f"{what} id {ids[int(np.flatnonzero(~ok)[0])]!r} is not in the codes "
                           f"(their {what} ids are integers)")
        vals = np.array([int(str(x).strip()) if o else 0 for x, o in zip(ids, ok)],
                        dtype=np.int64)
    else:
        ok = np.ones(len(ids), dtype=bool)
        vals = np.array([str(x) for x in ids], dtype=str)
    if len(known) and len(ids):
        order = np.argsort(known, kind="stable")
        pos = np.minimum(np.searchsorted(known, vals, sorter=order), len(known) - 1)
        found = ok & (known[order[pos]] == vals)
        rows = np.where(found, order[pos], -1)
    else:
        found = np.zeros(len(ids), dtype=bool)
        rows = np.full(len(ids), -1, dtype=np.int64)
    if strict and not found.all():
        bad = ids[int(np.flatnonzero(~found)[0])]
        raise KeyError(f"{what} id {bad!r} is not in the codes ({len(known)} {what}s)")
    return rows if (strict or keep_order) else rows[found]


def _digest(fields: dict) -> str:
    h = hashlib.sha256()
    for k in FIELDS:
        a = np.asarray(fields[k])
        h.update(k.encode() + b"\0" + str(a.dtype).encode() + b"\0" + str(a.shape).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _ids_of(run, data_dir=None) -> tuple[np.ndarray, np.ndarray]:
    """Original ids of a run's users and items: its own (a user's file) or its dataset's,
    loaded with the preprocessing the run recorded and checked by the split fingerprint."""
    if "user_ids" in run.arrays:
        return np.asarray(run.arrays["user_ids"]), np.asarray(run.arrays["item_ids"])
    from . import data

    info = run.extra.get("data", {})
    if not data.available(run.dataset, data_dir):
        raise FileNotFoundError(f"the run's dataset {run.dataset!r} is not on this machine; its "
                                f"ids come from it (phd data fetch --dataset {run.dataset}, or "
                                f"--data-dir)")
    prep = info.get("preprocessing") or {}
    opts = {k: prep[k] for k in ("min_ratings", "filtering", "double_half_stars")
            if k in prep and not data.is_synthetic(run.dataset)}
    if run.dataset == "synthetic" and prep.get("generator"):
        opts.update({k: v for k, v in prep["generator"].items()})
        opts.update({k: prep[k] for k in ("min_ratings", "filtering") if k in prep})
    seed = info.get("split_seed")
    split = data.load_split(run.dataset, seed=int(seed or 0), data_dir=data_dir, **opts)
    if split.fingerprint != run.fingerprint:
        raise ValueError(f"the dataset {run.dataset!r} here (split fingerprint "
                         f"{split.fingerprint}) is not the one the run was trained on "
                         f"({run.fingerprint}); its ids cannot be mapped")
    ds = split.dataset
    return np.asarray(ds.user_ids), np.asarray(ds.item_ids)


def codes_of_run(run, data_dir=None) -> Codes:
    """The :class:`Codes` of a stored code run (``results.load(path)``)."""
    ranks_by = run.extra.get("ranks_by")
    if ranks_by not in ("phd", "hamming") or "user_codes" not in run.arrays:
        raise ValueError(f"run {run.path}: method {run.method!r} ranks by {ranks_by!r}, not by "
                         f"binary codes; only code methods (ranking by 'phd' or 'hamming') "
                         f"can be exported")
    uid, iid = _ids_of(run, data_dir)
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
            "config": run.effective_config,
            "columns": run.extra.get("data", {}).get("preprocessing", {}).get("columns"),
            "trained_with": run.version, "phdlib": __version__}
    return Codes(uid, iid, np.ascontiguousarray(uc, dtype=np.uint64),
                 np.ascontiguousarray(ic, dtype=np.uint64), int(run.bits), ranks_by, prov)


def save_codes(codes: Codes, path) -> Path:
    """Write ``codes`` to ``path`` (``.npz``) atomically; returns the path."""
    from .io import atomic_write, json_default

    fields = {"user_ids": codes.user_ids, "item_ids": codes.item_ids,
              "user_codes": codes.user_codes, "item_codes": codes.item_codes,
              "bits": np.int64(codes.bits), "distance": np.array(codes.distance),
              "provenance": np.array(json.dumps(codes.provenance, sort_keys=True,
                                                default=json_default))}
    fields["sha256"] = np.array(_digest(fields))
    path = Path(path)
    with atomic_write(path) as f:
        np.savez(f, **fields)
    return path


def export_run(run_path, out, data_dir=None) -> Path:
    """``phd export``: the codes of the stored run at ``run_path`` written to ``out``."""
    from . import results

    return save_codes(codes_of_run(results.load(run_path), data_dir), out)


def load_codes(path) -> Codes:
    """Read and check a codes file; :class:`CodesFileError` names the file and the field."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"codes file not found: {path}")

    def bad(msg):
        return CodesFileError(f"{path}: {msg}")

    import zipfile

    if not zipfile.is_zipfile(path):
        raise bad("not a .npz file (expected the codes file written by phd export)")
    import zlib

    try:
        with np.load(path, allow_pickle=False) as z:
            f = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise bad(f"not a readable .npz codes file ({exc})") from None
    missing = [k for k in FIELDS + ("sha256",) if k not in f]
    if missing:
        raise bad(f"no field {', '.join(missing)} (expected a file written by phd export)")
    if str(f["sha256"]) != _digest(f):
        raise bad("its content does not match its sha256 field (changed or damaged)")
    bits, dist = int(f["bits"]), str(f["distance"])
    if dist not in ("phd", "hamming"):
        raise bad(f"distance {dist!r}; expected 'phd' or 'hamming'")
    w = n_words(bits) if bits >= 1 else -1
    for k, n in (("user_codes", len(f["user_ids"])), ("item_codes", len(f["item_ids"]))):
        a = f[k]
        if a.dtype != np.uint64 or a.ndim != 2 or a.shape != (n, w):
            raise bad(f"{k} is {a.dtype} {a.shape}; expected uint64 ({n}, {w}) for {bits} bits")
        if bits % 64 and (a[:, -1] >> np.uint64(bits % 64)).any():
            raise bad(f"{k} has bits set above bit {bits - 1} (padding must be 0)")
    for k in ("user_ids", "item_ids"):
        if f[k].dtype.kind not in "iuU" or f[k].ndim != 1:
            raise bad(f"{k} is {f[k].dtype} {f[k].shape}; expected 1-d strings or integers")
        if len(np.unique(f[k])) != len(f[k]):
            raise bad(f"{k} holds a repeated id")
    try:
        prov = json.loads(str(f["provenance"]))
    except json.JSONDecodeError as exc:
        raise bad(f"provenance is not JSON ({exc})") from None
    return Codes(f["user_ids"], f["item_ids"], f["user_codes"], f["item_codes"], bits, dist, prov)


def recommend(codes: Codes, users, k: int = 10, exclude: dict | None = None) -> list[dict]:
    """Top-``k`` items per user, nearest first, through :class:`~phdlib.search.BinaryIndex`.

    users: original user ids. exclude: user id -> item ids not to recommend
    (e.g. those already rated). Returns one ``{"user", "items", "distances"}``
    per user (original item ids; ties in id order, as ``BinaryIndex``).
    """
    from .search import BinaryIndex

    users = list(users)
    rows = codes.user_rows(users)
    index = BinaryIndex(codes.bits, metric=codes.distance)
    index.add(codes.item_codes)
    # excluded items by user row (keys matched as user ids are, e.g. "1" and 1 alike)
    skip_of: dict[int, set] = {}
    if exclude:
        keys = list(exclude)
        for key, row in zip(keys, _rows(codes.user_ids, keys, "user", strict=False,
                                        keep_order=True)):
            if row >= 0 and exclude[key]:
                skip_of.setdefault(int(row), set()).update(
                    _rows(codes.item_ids, exclude[key], "item", strict=False).tolist())
    n_items = len(codes.item_ids)
    extra = max((len(skip_of.get(int(r), ())) for r in rows), default=0)
    kk = min(n_items, k + extra)
    dist, ids = index.search(codes.user_codes[rows], kk)
    out = []
    for a, u in enumerate(users):
        skip = skip_of.get(int(rows[a]), set())
        keep = [j for j in range(kk) if ids[a, j] >= 0 and ids[a, j] not in skip][:k]
        out.append({"user": _py(u), "items": [_py(codes.item_ids[ids[a, j]]) for j in keep],
                    "distances": [int(dist[a, j]) for j in keep]})
    return out


def _py(v):
    return v.item() if isinstance(v, np.generic) else v
