"""Loading datasets: a real source, planted codes or your own file to a preprocessed
:class:`Dataset`, and its per-user :class:`Split`, through the on-disk cache.

The steps are listed in :mod:`phdlib.data`; this module runs them, one loader per
kind of dataset (:func:`load_source`, :func:`load_synthetic`, :func:`load_file`).
It chooses nothing by name: :mod:`~phdlib.data.registry` maps each name to its
kind, and its ``load_dataset``/``load_split`` call these loaders. It sits above
the readers (:mod:`~phdlib.data.formats`, :mod:`~phdlib.data.own`), the files of
the real sources (:mod:`~phdlib.data.sources`), the preprocessing, split and
cache modules.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..io import file_sha256
from . import cache as _cache
from . import own
from . import preprocess as _pre
from . import split as _split
from . import synthetic as _synthetic
from .errors import DataError, DataNotFoundError, FingerprintMismatch
from .formats import RawRatings, content_fingerprint, read_ratings
from .sources import SOURCES, locate, not_found_message, source
from .sources import fetch as _fetch_raw
from .tables import Dataset, Ratings, Split


def _prep_params(name, min_ratings, filtering, double_half_stars) -> dict:
    if filtering not in _pre.FILTERINGS:
        raise ValueError(f"filtering={filtering!r}; expected one of {_pre.FILTERINGS}")
    if int(min_ratings) != min_ratings or min_ratings < 0:
        raise ValueError(f"min_ratings={min_ratings!r}; expected a non-negative integer")
    src = SOURCES.get(name)
    if double_half_stars is None:
        double_half_stars = bool(src and src.half_stars)
    return {"duplicates": "first", "min_ratings": int(min_ratings), "filtering": filtering,
            "double_half_stars": bool(double_half_stars)}


def prepare(raw: RawRatings, name: str, min_ratings: int = 10, filtering: str = "once",
               double_half_stars: bool | None = None, scale=None) -> Dataset:
    """The paper's preprocessing of one raw file (see :mod:`phdlib.data.preprocess`)."""
    prep = _prep_params(name, min_ratings, filtering, double_half_stars)
    src = SOURCES.get(name)
    lo, hi = scale if scale is not None else (src.scale if src else (float(raw.rating.min()), float(raw.rating.max())))
    keep = _pre.first_occurrences(raw.user, raw.item, raw.timestamp, len(raw.item_ids))
    u, i, r = raw.user[keep], raw.item[keep], raw.rating[keep]
    mask = _pre.filter_min_ratings(u, i, prep["min_ratings"], prep["filtering"])
    u, i, r = u[mask], i[mask], r[mask]
    if u.size == 0:
        raise DataError(f"{raw.path}: no ratings left after removing users and items with fewer "
                        f"than {min_ratings} ratings")
    new_u, ucodes = _pre.reindex(u)
    new_i, icodes = _pre.reindex(i)
    if prep["double_half_stars"]:
        r = r * 2.0
        lo, hi = lo * 2.0, hi * 2.0
    return Dataset(name=name, ratings=Ratings(new_u, new_i, r), n_users=int(ucodes.size),
                   n_items=int(icodes.size), rating_scale=(float(lo), float(hi)),
                   user_ids=raw.user_ids[ucodes], item_ids=raw.item_ids[icodes],
                   fingerprint=raw.fingerprint, synthetic=False, preprocessing=prep,
                   source=str(raw.path), raw_rows=len(raw))


# ------------------------------------------------------------------ cache I/O
def _dataset_path(name, key):
    return _cache.processed_dir() / name / f"{key}.npz"


def _save_dataset(ds: Dataset, key: str) -> None:
    meta = {"name": ds.name, "n_users": ds.n_users, "n_items": ds.n_items,
            "rating_scale": list(ds.rating_scale), "fingerprint": ds.fingerprint,
            "synthetic": ds.synthetic, "preprocessing": ds.preprocessing, "source": ds.source,
            "raw_rows": ds.raw_rows, "bits": (ds.truth or {}).get("bits")}
    arrays = dict(user=ds.ratings.user, item=ds.ratings.item, rating=ds.ratings.rating,
                  user_ids=_storable(ds.user_ids), item_ids=_storable(ds.item_ids),
                  meta=np.array(_cache.canonical(meta)))
    if ds.truth:
        arrays["user_codes"] = ds.truth["user_codes"]
        arrays["item_codes"] = ds.truth["item_codes"]
    _cache.save_npz(_dataset_path(ds.name, key), **arrays)


def _storable(ids: np.ndarray) -> np.ndarray:
    return ids.astype(str) if ids.dtype == object else ids


def _load_cached_dataset(name, key) -> Dataset | None:
    z = _cache.load_npz(_dataset_path(name, key))
    if z is None or "meta" not in z:
        return None
    meta = json.loads(str(z["meta"]))
    truth = None
    if "user_codes" in z:
        truth = {"user_codes": z["user_codes"], "item_codes": z["item_codes"], "bits": meta["bits"]}
    return Dataset(name=meta["name"], ratings=Ratings(z["user"], z["item"], z["rating"]),
                   n_users=meta["n_users"], n_items=meta["n_items"],
                   rating_scale=tuple(meta["rating_scale"]), user_ids=z["user_ids"],
                   item_ids=z["item_ids"], fingerprint=meta["fingerprint"],
                   synthetic=meta["synthetic"], preprocessing=meta["preprocessing"],
                   source=meta["source"], raw_rows=meta["raw_rows"], truth=truth)


# ------------------------------------------------------------------ loading
def _check_fingerprint(name, path, fp, verify):
    known = SOURCES[name].fingerprint
    if verify and known and fp != known:
        raise FingerprintMismatch(
            f"{path}: content fingerprint {fp} differs from the known fingerprint {known} of "
            f"{name} (sha256 of its 'user::item::rating' lines). This is not the dataset the "
            f"book was checked on; pass verify=False (--no-verify) to load it anyway.")


def load_source(name: str, data_dir=None, verify: bool = True, min_ratings: int = 10,
                filtering: str = "once", double_half_stars: bool | None = None,
                download: bool = False, cache: bool = True) -> Dataset:
    """Load, verify and preprocess the real dataset ``name`` (an entry of ``SOURCES``).

    ``data_dir``: searched first (then ``PHD_DATA_DIR``, the per-user cache).
    ``verify``: a content fingerprint differing from the known one raises
    :class:`FingerprintMismatch`. ``min_ratings``: users and items with fewer
    ratings are removed (items first); ``filtering``: ``"once"`` or
    ``"until_stable"``. ``double_half_stars``: ratings times 2 (None: yes
    for half-star datasets such as ML-10M, as the released code). ``download``:
    fetch a missing dataset into the per-user cache. ``cache``: read/write the
    processed cache. Reached by name through :func:`phdlib.data.load_dataset`.
    """
    src = source(name)
    prep = _prep_params(name, min_ratings, filtering, double_half_stars)
    path = locate(name, data_dir)
    if path is None:
        if not download:
            raise DataNotFoundError(not_found_message(name, data_dir))
        path = fetch(name, verify=verify)["path"]
    memo_path = None
    if cache:
        fsha = file_sha256(path)
        memo_path = _cache.processed_dir() / f"raw-{fsha[:32]}.json"
        memo = _cache.load_json(memo_path)
        if memo and memo.get("fingerprint"):
            _check_fingerprint(name, path, memo["fingerprint"], verify)
            ds = _load_cached_dataset(name, _cache.dataset_key(memo["fingerprint"], prep))
            if ds is not None:
                ds.source = str(path)
                return ds
    raw = read_ratings(path, src.fmt, src.scale, src.step)
    _check_fingerprint(name, path, raw.fingerprint, verify)
    ds = prepare(raw, name, prep["min_ratings"], prep["filtering"], prep["double_half_stars"])
    if cache:
        _cache.save_json(memo_path, {"fingerprint": raw.fingerprint, "rows": len(raw),
                                     "path": str(path), "dataset": name})
        _save_dataset(ds, _cache.dataset_key(ds.fingerprint, prep))
    return ds


def load_synthetic(name: str, fixed: bool = False, min_ratings: int = 10,
                   filtering: str = "once", cache: bool = True, **options) -> Dataset:
    """Planted-code ratings (:func:`phdlib.data.synthetic.generate`) named ``name``.

    ``options``: the generator's (``n_users``, ``n_items``, ``density``, ``bits``,
    ``noise``, ``data_seed``, ``rating_scale``...; the rest from its ``DEFAULTS``).
    ``fixed``: a fixed shape of the registry (its name joins the cache key, as it always
    did), else the open ``synthetic`` dataset whose key is its options alone.
    """
    unknown = set(options) - set(_synthetic.DEFAULTS)
    if unknown:
        raise TypeError(f"synthetic data: unknown options {sorted(unknown)}; "
                        f"expected {sorted(_synthetic.DEFAULTS)}")
    params = {**_synthetic.DEFAULTS, **options}
    params["rating_scale"] = [float(x) for x in params["rating_scale"]]
    prep = {**_prep_params(name, min_ratings, filtering, False), "generator": params}
    key = _cache.short_hash({"synthetic": prep, "version": _cache.CACHE_VERSION,
                            "generator_version": _synthetic.VERSION})
    if fixed:
        key = _cache.short_hash({"name": name, "key": key})
    if cache:
        ds = _load_cached_dataset(name, key)
        if ds is not None:
            return ds
    u, i, r, truth = _synthetic.generate(min_ratings=min_ratings, **params)
    fp = content_fingerprint(pa.array(u).cast(pa.string()), pa.array(i).cast(pa.string()),
                             pa.array(r.astype(np.int64) if np.all(r == np.rint(r)) else r).cast(pa.string()))
    raw = RawRatings(path="generated", fmt="synthetic", user=u, item=i,
                     user_ids=np.arange(params["n_users"], dtype=np.int64),
                     item_ids=np.arange(params["n_items"], dtype=np.int64),
                     rating=r.astype(np.float64), timestamp=None, fingerprint=fp)
    ds = prepare(raw, name, min_ratings, filtering, False, scale=tuple(params["rating_scale"]))
    ds.synthetic = True
    ds.preprocessing = prep
    ds.source = "generated by phdlib.data.synthetic (planted codes, not real data)"
    # codes of the users/items that survived filtering, in the new order
    ds.truth = {"user_codes": truth["user_codes"][ds.user_ids],
                "item_codes": truth["item_codes"][ds.item_ids], "bits": truth["bits"]}
    if cache:
        _save_dataset(ds, key)
    return ds


def load_file(path, columns, scale, min_ratings: int = 10, filtering: str = "once",
              sep: str | None = None, name: str | None = None) -> Dataset:
    """Your own ratings file (CSV, TSV or Parquet) as a :class:`Dataset`.

    ``columns``: role -> column name (``user``, ``item``, ``rating``, optional
    ``time``) or the text ``"user=a,item=b,rating=c"``; ``scale``: (low, high)
    or ``"1,5"``. Preprocessed as the named datasets are
    (:mod:`phdlib.data.own`); named ``file-<stem>`` unless ``name`` is given.
    Not cached: the file is read each time.
    """
    cols = own.parse_columns(columns) if isinstance(columns, str) else dict(columns)
    if not set(own.REQUIRED) <= set(cols) or not set(cols) <= set(own.ROLES):
        raise ValueError(f"columns {cols}: expected the roles user, item, rating (and time)")
    lo, hi = own.parse_scale(scale) if isinstance(scale, str) else (float(scale[0]), float(scale[1]))
    if not lo < hi:
        raise ValueError(f"scale {scale!r}: expected LOW < HIGH")
    raw = own.read_file(path, cols, (lo, hi), sep)
    nm = name or own.dataset_name(path)
    ds = prepare(raw, nm, min_ratings, filtering, False, scale=(lo, hi))
    ds.preprocessing = {**ds.preprocessing, "origin": "file", "columns": cols, "scale": [lo, hi]}
    ds.origin = {"path": str(Path(path).resolve()), "sep": sep}
    return ds


def fetch(name: str, url: str | None = None, known_hash: str | None = None, verify: bool = True,
          progress: bool = True) -> dict:
    """Download ``name`` into the per-user cache and check its content fingerprint.

    Returns ``{"path", "fingerprint", "known_fingerprint", "verified", "rows"}``.
    With ``verify`` a fingerprint that differs from the known one removes the
    downloaded file and raises :class:`FingerprintMismatch`. ``url``/
    ``known_hash`` (``"sha256:<hex>"``) override the registry.
    """
    src = source(name)
    path = _fetch_raw(name, url=url, known_hash=known_hash, progress=progress)
    raw = read_ratings(path, src.fmt, src.scale, src.step)
    try:
        _check_fingerprint(name, path, raw.fingerprint, verify)
    except FingerprintMismatch:
        path.unlink(missing_ok=True)
        raise
    return {"path": path, "fingerprint": raw.fingerprint, "known_fingerprint": src.fingerprint,
            "verified": bool(verify and src.fingerprint), "rows": len(raw)}


def _dataset_key_of(ds: Dataset) -> str:
    return _cache.dataset_key(ds.fingerprint, ds.preprocessing)


def split_fingerprint(dataset: Dataset, seed: int) -> str:
    """16 hex digits over (content fingerprint, preprocessing, split rule, seed)."""
    return _cache.short_hash({"dataset": _dataset_key_of(dataset), "seed": int(seed),
                              "rule": _split.RULE})


def split_dataset(dataset: Dataset, seed: int = 0) -> Split:
    """The paper's per-user split (:mod:`phdlib.data.split`) with ``default_rng(seed)``."""
    part = _split.assign(dataset.ratings.user, dataset.n_users, seed)
    return _make_split(dataset, part, seed)


def _make_split(dataset, part, seed) -> Split:
    R = dataset.ratings
    return Split(dataset=dataset, train=R.take(part == _split.TRAIN), valid=R.take(part == _split.VALID),
                 test=R.take(part == _split.TEST), seed=int(seed),
                 fingerprint=split_fingerprint(dataset, seed))


def cached_split(ds: Dataset, seed: int = 0, cache: bool = True) -> Split:
    """:func:`split_dataset` of ``ds`` through the on-disk cache (keyed by the dataset's
    name, its :func:`~phdlib.data.cache.dataset_key` and the split fingerprint)."""
    fp = split_fingerprint(ds, seed)
    path = _cache.processed_dir() / ds.name / f"{_dataset_key_of(ds)}-split-{fp}.npz"
    if cache:
        z = _cache.load_npz(path)
        if z is not None and z.get("part") is not None and z["part"].shape == (ds.n_ratings,):
            return _make_split(ds, z["part"], seed)
    part = _split.assign(ds.ratings.user, ds.n_users, seed)
    if cache:
        _cache.save_npz(path, part=part)
    return _make_split(ds, part, seed)
