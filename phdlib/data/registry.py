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
kind: subclass :class:`DatasetKind` (defined, with the three kinds that ship,
in :mod:`phdlib.data.kinds`), give it a ``name``, implement ``load``, and
:func:`register` it (inside the library: a module of its own under
``phdlib/data/`` that imports :mod:`~phdlib.data.kinds`, and here its import
and one ``register`` line); :func:`load_dataset`, :func:`load_split`, the
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

from .errors import FingerprintMismatch
from .kinds import (OWN_FILE, SCALE_SHAPES, SYNTHETIC, DatasetKind, OwnFile, RealSource,
                    Synthetic, check_fingerprint)
from .loading import cached_split
from .sources import SOURCES
from .tables import Dataset, Split

__all__ = ["DatasetKind", "RealSource", "Synthetic", "OwnFile", "OWN_FILE", "SYNTHETIC",
           "SCALE_SHAPES", "register", "get", "names", "is_synthetic", "scale_options",
           "available", "load_dataset", "load_split", "reload", "reload_split", "kind_of",
           "unregister", "provenance", "check_fingerprint"]


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
            f"dataset {name or prov.get('dataset')!r} built here has split fingerprint {split.fingerprint}, but the "
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

