"""One interface for every dataset, and the registry of their names.

A dataset is a :class:`DatasetKind`: an object with a ``name`` that

- ``load(**options) -> Dataset`` builds it (options: the preprocessing, a
  generator's options...),
- ``reload(provenance) -> Dataset`` rebuilds exactly the dataset a stored run or
  codes file was trained on from what its provenance records
  (``preprocessing``, ``dataset_fingerprint``; a fingerprint that differs is a
  :class:`~phdlib.data.errors.FingerprintMismatch` naming both),
- ``describe()`` says in one line what it is.

Three kinds ship with the library: :class:`RealSource` (a real dataset read from
its file, one per entry of :data:`phdlib.data.sources.SOURCES`),
:class:`Synthetic` (planted codes: the open ``synthetic`` with generator
options, and each fixed scale shape of :data:`SCALE_SHAPES`) and
:class:`OwnFile` (your own ratings file, :func:`phdlib.data.load_file`;
found again from the path its provenance records, never by name). Your own
kind: subclass :class:`DatasetKind`, give it a ``name``, implement ``load``,
and :func:`register` it; :func:`load_dataset`, :func:`load_split`, the
training and the export then take its name like any other::

    class Tiny(DatasetKind):
        name = "tiny"
        def load(self, min_ratings=10, **where):  # where: data_dir, cache if given
            return data.prepare(my_raw_ratings(), self.name, min_ratings)

    data.register(Tiny())
    split = data.load_split("tiny", seed=0)

``load`` must give the same :class:`~phdlib.data.tables.Dataset` for the same
options: its ``fingerprint`` (the content fingerprint of the raw ratings,
:func:`~phdlib.data.formats.content_fingerprint`) and ``preprocessing`` (a
JSON-ready dict) make its cache key and every split fingerprint, and so the key
of every run stored on it; :func:`phdlib.data.prepare` fills both from a
:class:`~phdlib.data.formats.RawRatings`. ``tests/test_toy_dataset.py`` is a
whole example. The registry passes ``data_dir`` and ``cache`` only where its
caller gave them.

This module is the only place that tells datasets apart by name.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

from ..paper import dataset_shape
from .errors import FingerprintMismatch
from .loading import cached_split, load_file, load_source, load_synthetic
from .sources import SOURCES, locate
from .tables import Dataset, Split

__all__ = ["DatasetKind", "RealSource", "Synthetic", "OwnFile", "OWN_FILE", "SYNTHETIC",
           "SCALE_SHAPES", "register", "get", "names", "is_synthetic", "scale_options",
           "available", "load_dataset", "load_split", "reload", "reload_split", "kind_of",
           "unregister", "provenance", "check_fingerprint"]


class DatasetKind(ABC):
    """A dataset, or a family of them under one name (see the module docstring).

    ``name``: the name :func:`load_dataset` takes. ``synthetic``: generated data
    (every page that shows its numbers says so). Subclasses implement
    :meth:`load`; :meth:`reload` and :meth:`available` have defaults.
    """

    name: str = ""
    synthetic: bool = False

    @abstractmethod
    def load(self, **options) -> Dataset:
        """The dataset, built (or read from the cache) with ``options``. The registry
        passes ``data_dir`` and ``cache`` only where its caller gave them."""

    def reload_options(self, preprocessing: dict) -> dict:
        """The :meth:`load` options that rebuild the dataset a run recorded with
        ``preprocessing`` (its ``Dataset.preprocessing``). Default: none."""
        return {}

    def reload(self, provenance: dict, **where) -> Dataset:
        """The dataset a run or codes file was trained on, from its ``provenance``
        (``preprocessing``, ``dataset_fingerprint``). ``where``: ``data_dir`` for a
        kind that reads files. :class:`FingerprintMismatch` names both fingerprints
        when the dataset built here is not the one recorded."""
        prov = provenance or {}
        ds = self.load(**where, **self.reload_options(prov.get("preprocessing") or {}))
        check_fingerprint(ds, prov)
        return ds

    def available(self, data_dir=None) -> bool:
        """Whether :meth:`load` needs no download (default: yes)."""
        return True

    def describe(self) -> str:
        """One line: what this dataset is."""
        return f"{self.name}: {type(self).__name__}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def check_fingerprint(ds: Dataset, provenance: dict) -> None:
    """:class:`FingerprintMismatch` naming both when ``ds``'s content fingerprint is not
    the ``dataset_fingerprint`` the provenance records (nothing to check if it records none)."""
    want = (provenance or {}).get("dataset_fingerprint")
    if want and ds.fingerprint != want:
        raise FingerprintMismatch(
            f"dataset {ds.name!r} built here has content fingerprint {ds.fingerprint}, but the "
            f"run was trained on content fingerprint {want}: not the same data")


class RealSource(DatasetKind):
    """A real dataset read from its raw file (``SOURCES[name]``):
    :func:`phdlib.data.loading.load_source`."""

    #: The preprocessing a run records that :meth:`load` takes back.
    KEYS = ("min_ratings", "filtering", "double_half_stars")

    def __init__(self, name: str):
        self.name = name
        self.source = SOURCES[name]

    def load(self, **options) -> Dataset:
        unexpected = sorted(set(options) - {"data_dir", "verify", "download", "cache", *self.KEYS})
        if unexpected:
            raise TypeError(f"load_dataset({self.name!r}): unexpected options {unexpected}")
        return load_source(self.name, **options)

    def reload_options(self, preprocessing: dict) -> dict:
        return {k: preprocessing[k] for k in self.KEYS if k in preprocessing}

    def available(self, data_dir=None) -> bool:
        return locate(self.name, data_dir) is not None

    def describe(self) -> str:
        lo, hi = self.source.scale
        return f"{self.name}: real ratings ({self.source.fmt}, {lo:g}..{hi:g}) read from its file"


#: The name of the open synthetic dataset (generator options on each load).
SYNTHETIC = "synthetic"
#: Options every dataset's load takes and synthetic data ignores (nothing is read).
_NO_FILE = ("data_dir", "verify", "download", "double_half_stars")


class Synthetic(DatasetKind):
    """Planted-code ratings (:mod:`phdlib.data.synthetic`). ``shape``: fixed generator
    options (a scale shape: no others are taken), or None for the open ``synthetic``."""

    synthetic = True

    def __init__(self, name: str, shape: dict | None = None):
        self.name = name
        self.shape = None if shape is None else dict(shape)

    def options(self) -> dict:
        """The fixed shape's generator options (density from its ratings)."""
        shape = dict(self.shape)
        ratings = shape.pop("ratings")
        shape["density"] = ratings / (shape["n_users"] * shape["n_items"])
        return shape

    def load(self, min_ratings: int = 10, filtering: str = "once", cache: bool = True,
             **options) -> Dataset:
        for k in _NO_FILE:
            options.pop(k, None)
        if self.shape is None:
            return load_synthetic(self.name, False, min_ratings, filtering, cache, **options)
        if options:
            raise TypeError(f"load_dataset({self.name!r}): a fixed shape takes no generator "
                            f"options (use {SYNTHETIC!r} with options); got {sorted(options)}")
        return load_synthetic(self.name, True, min_ratings, filtering, cache, **self.options())

    def reload_options(self, preprocessing: dict) -> dict:
        opts = {k: preprocessing[k] for k in ("min_ratings", "filtering") if k in preprocessing}
        if self.shape is None:
            opts.update(preprocessing.get("generator") or {})
        return opts

    def describe(self) -> str:
        if self.shape is None:
            return f"{self.name}: planted codes, generator options on each load (synthetic)"
        return (f"{self.name}: planted codes, {self.shape['n_users']:,} users x "
                f"{self.shape['n_items']:,} items, ~{self.shape['ratings']:,} ratings (synthetic)")


class OwnFile(DatasetKind):
    """Your own ratings file (CSV, TSV, Parquet): :func:`phdlib.data.load_file`.

    Named after its file (``file-<stem>``), so not in the registry of names: a
    run on it is found again by :meth:`reload` from the ``path`` (and ``sep``)
    its provenance records beside the ``preprocessing`` (columns, scale,
    min_ratings, filtering) and checked by its content fingerprint.
    """

    name = "file"

    def load(self, path=None, columns=None, scale=None, min_ratings: int = 10,
             filtering: str = "once", sep: str | None = None, name: str | None = None,
             cache: bool = True, data_dir=None) -> Dataset:
        if path is None or columns is None or scale is None:
            raise TypeError("a user's own file needs path, columns and scale "
                            "(load_file(path, columns, scale))")
        return load_file(path, columns, scale, min_ratings, filtering, sep, name)

    def reload(self, provenance: dict, **where) -> Dataset:
        prov = provenance or {}
        prep = prov.get("preprocessing") or {}
        name = prov.get("dataset")
        if not prov.get("path"):
            raise ValueError(f"dataset {name!r} was read from a file ({prep.get('columns')}) "
                             f"and its provenance records no 'path'; it cannot be loaded "
                             f"again by name")
        ds = load_file(prov["path"], prep["columns"], prep["scale"],
                       prep.get("min_ratings", 10), prep.get("filtering", "once"),
                       prov.get("sep"), name)
        check_fingerprint(ds, prov)
        return ds

    def describe(self) -> str:
        return "file-<stem>: your own ratings file (load_file), found again by its path"


#: The one :class:`OwnFile` kind.
OWN_FILE = OwnFile()

#: Synthetic stand-ins with the shape of the paper's larger datasets after
#: filtering (Section 5.1; sizes from :data:`phdlib.paper.DATA_STATS`): users,
#: items, ratings, rating scale. Planted codes favour PHD by construction: they
#: measure cost, never effectiveness. ML-10M's half stars are doubled, as the
#: real loader does (1..10).
SCALE_SHAPES: dict[str, dict] = {}
for _name, _paper_name, _extra in (
        ("synthetic-ml-10m", "ml-10m", dict(rating_scale=(1.0, 10.0), mean_rating=7.2,
                                            spread=2.0, noise=1.0)),
        ("synthetic-yelp", "yelp", dict(rating_scale=(1.0, 5.0))),
        ("synthetic-amazon", "amazon", dict(rating_scale=(1.0, 5.0)))):
    _u, _i, _r = dataset_shape(_paper_name)
    SCALE_SHAPES[_name] = dict(n_users=_u, n_items=_i, ratings=_r, **_extra)

_KINDS: dict[str, DatasetKind] = {}


def register(kind: DatasetKind, replace: bool = False) -> DatasetKind:
    """Make ``kind`` loadable by its name; returns it. ``ValueError`` for a name taken
    by another kind (unless ``replace``), an empty name, or a name of ``file-`` form
    (a user's own file); ``TypeError`` for an object that is no :class:`DatasetKind`."""
    if not isinstance(kind, DatasetKind):
        raise TypeError(f"register({kind!r}): expected a phdlib.data.DatasetKind")
    name = kind.name
    if not isinstance(name, str) or not name or name != name.strip():
        raise ValueError(f"register: dataset name {name!r}; expected non-empty text")
    if name == OWN_FILE.name or name.startswith(OWN_FILE.name + "-"):
        raise ValueError(f"register: dataset name {name!r} is kept for users' own files")
    if name in _KINDS and _KINDS[name] is not kind and not replace:
        raise ValueError(f"register: dataset name {name!r} is taken by {_KINDS[name]!r}; "
                         f"pass replace=True to replace it")
    _KINDS[name] = kind
    return kind


def unregister(name: str) -> None:
    """Forget the kind named ``name`` (a reader's own; ``KeyError`` if none)."""
    get(name)
    del _KINDS[name]


for _src in SOURCES:
    register(RealSource(_src))
register(Synthetic(SYNTHETIC))
for _name in sorted(SCALE_SHAPES):
    register(Synthetic(_name, SCALE_SHAPES[_name]))


def get(name: str) -> DatasetKind:
    """The kind registered as ``name``; ``KeyError`` naming the known names."""
    try:
        return _KINDS[name]
    except (KeyError, TypeError):
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(names())}") from None


def names() -> list[str]:
    """Every dataset name :func:`load_dataset` knows: the real sources (sorted), then
    ``synthetic``, the scale shapes and registered kinds in order of registration."""
    real = sorted(n for n, k in _KINDS.items() if isinstance(k, RealSource))
    return real + [n for n, k in _KINDS.items() if not isinstance(k, RealSource)]


def is_synthetic(name: str) -> bool:
    """Whether ``name`` is a registered kind of generated data (False for unknown names)."""
    kind = _KINDS.get(name)
    return bool(kind is not None and kind.synthetic)


def scale_options(name: str) -> dict:
    """The generator options of the fixed synthetic shape ``name``."""
    kind = get(name)
    if not isinstance(kind, Synthetic) or kind.shape is None:
        raise KeyError(f"dataset {name!r} is not a fixed synthetic shape; those are "
                       f"{', '.join(SCALE_SHAPES)}")
    return kind.options()


def available(name: str, data_dir=None) -> bool:
    """True when ``name`` can be loaded without a download (generated data: always)."""
    return get(name).available(data_dir)


def _given(data_dir, cache) -> dict:
    return {**({} if data_dir is None else {"data_dir": data_dir}),
            **({} if cache else {"cache": False})}


def load_dataset(name: str, data_dir=None, cache: bool = True, **options) -> Dataset:
    """Dataset ``name``, built by its kind (:func:`get`) with ``options``.

    A real source takes ``verify``, ``min_ratings``, ``filtering``,
    ``double_half_stars``, ``download`` (:func:`phdlib.data.loading.load_source`);
    ``synthetic`` the generator's options (``n_users``, ``n_items``, ``density``,
    ``bits``, ``noise``, ``data_seed``, ``rating_scale``:
    :func:`phdlib.data.synthetic.generate`) and ``min_ratings``, ``filtering``; a
    fixed scale shape only ``min_ratings``, ``filtering``. ``data_dir``: searched
    first for a raw file. ``cache``: read/write the processed cache.
    """
    return get(name).load(**_given(data_dir, cache), **options)


def load_split(name: str, seed: int = 0, data_dir=None, cache: bool = True,
               **preprocessing) -> Split:
    """:func:`load_dataset` then :func:`phdlib.data.split_dataset`, both cached on disk.

    ``preprocessing``: any option of :func:`load_dataset`.
    """
    return cached_split(load_dataset(name, data_dir=data_dir, cache=cache, **preprocessing),
                        seed, cache)


def kind_of(name: str | None, provenance: dict | None = None) -> DatasetKind:
    """The kind that rebuilds a run's dataset: :data:`OWN_FILE` where its
    preprocessing says it was read from a file, else the kind named ``name``."""
    prep = (provenance or {}).get("preprocessing") or {}
    if prep.get("origin") == "file":
        return OWN_FILE
    return get(name)


def reload(provenance: dict, data_dir=None, name: str | None = None) -> Dataset:
    """The dataset a run or codes file was trained on, from its ``provenance``
    (``dataset`` unless ``name`` is given, ``preprocessing``, ``dataset_fingerprint``;
    a file's ``path``, ``sep``): its kind's :meth:`DatasetKind.reload`."""
    prov = provenance or {}
    kind = kind_of(name or prov.get("dataset"), prov)
    return kind.reload({**prov, "dataset": name or prov.get("dataset")},
                       **_given(data_dir, True))


def reload_split(name: str, provenance: dict, data_dir=None) -> Split:
    """The split a run was trained on, found again from what it recorded (``run.extra
    ["data"]`` or a codes file's provenance: ``split_seed``, ``preprocessing``,
    ``dataset_fingerprint``). Where the provenance records a ``split_fingerprint``
    that the split built here does not have, :class:`FingerprintMismatch` names both."""
    prov = provenance or {}
    split = cached_split(reload(prov, data_dir, name), int(prov.get("split_seed") or 0))
    want = prov.get("split_fingerprint")
    if want and split.fingerprint != want:
        raise FingerprintMismatch(
            f"dataset {name!r} built here has split fingerprint {split.fingerprint}, but the "
            f"run was trained on split fingerprint {want}: not the same split")
    return split


def provenance(split: Split) -> dict:
    """What :func:`reload_split` needs to find ``split`` again: ``dataset``,
    ``split_seed``, ``dataset_fingerprint``, ``split_fingerprint``, ``preprocessing``
    and, for a user's file, ``path`` and ``sep``."""
    ds = split.dataset
    return {"dataset": ds.name, "split_seed": int(split.seed),
            "dataset_fingerprint": ds.fingerprint, "split_fingerprint": split.fingerprint,
            "preprocessing": dict(ds.preprocessing), **dict(getattr(ds, "origin", {}) or {})}

