"""The dataset kinds: the interface every dataset meets, and the three that ship.

:class:`DatasetKind` is the interface (``load``, ``reload``, ``available``,
``describe``; see :mod:`phdlib.data.registry`, which holds their names).
:class:`RealSource` reads a real dataset from its file (one per entry of
:data:`phdlib.data.sources.SOURCES`), :class:`Synthetic` generates planted
codes (the open ``synthetic`` and each fixed scale shape of
:data:`SCALE_SHAPES`), :class:`OwnFile` reads your own ratings file. A new kind
lives in a module of its own that imports this one; the registry imports that
module and registers it, so no arrow points back up.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

from ..paper import dataset_shape
from .errors import FingerprintMismatch
from .loading import load_file, load_source, load_synthetic
from .sources import SOURCES, locate
from .tables import Dataset

__all__ = ["DatasetKind", "RealSource", "Synthetic", "OwnFile", "OWN_FILE", "SYNTHETIC",
           "SCALE_SHAPES", "check_fingerprint"]


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
