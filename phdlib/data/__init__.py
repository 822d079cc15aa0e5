"""Datasets: loaders, the paper's preprocessing and split, the cache, synthetic data.

Public API (the contract of CONTRIBUTING.md)::

    load_dataset(name, data_dir=None, verify=True, min_ratings=10, ...) -> Dataset
    split_dataset(dataset, seed=0) -> Split
    load_split(name, seed=0, data_dir=None, **preprocessing) -> Split   # cached

Names: ``"ml-1m"``, ``"ml-100k"``, ``"ml-10m"``, ``"yelp"``, ``"amazon"``
(the MovieLens CSV sets ``"ml-20m"``, ``"ml-25m"``, ``"ml-latest-small"``
too), and ``"synthetic"`` (planted codes, :mod:`phdlib.data.synthetic`).

Steps for a real dataset (Section 5.1 of the paper, details in
protocol.md):

1. find the raw file (``data_dir``, ``PHD_DATA_DIR``, the per-user cache,
   then a download when ``download=True``; :mod:`phdlib.data.sources`);
2. parse it with pyarrow, every malformed line an error naming file, line
   number and line (:mod:`phdlib.data.formats`);
3. check its content fingerprint against the known one (``verify``);
4. keep the first rating of a repeated (user, item), drop items then users
   with fewer than ``min_ratings`` ratings, re-index
   (:mod:`phdlib.data.preprocess`); ML-10M's half stars doubled to 1..10;
5. split per user (:mod:`phdlib.data.split`).

Processed datasets and splits are cached (:mod:`phdlib.data.cache`).

Every name is a :class:`DatasetKind` in one registry (:mod:`phdlib.data.registry`):
``load``, ``reload(provenance)`` (the dataset a stored run was trained on),
``describe()``. Add your own with :func:`register` (CONTRIBUTING.md).
"""
from __future__ import annotations

from .errors import DataError, DataFormatError, DataNotFoundError, FingerprintMismatch
from .formats import FORMATS, RawRatings, content_fingerprint, read_ratings
from .loading import fetch, load_file, prepare, split_dataset, split_fingerprint
from .registry import (OWN_FILE, SCALE_SHAPES, SYNTHETIC, DatasetKind, available, get, kind_of,
                       is_synthetic, load_dataset, load_split, names, provenance, register,
                       reload, reload_split, scale_options, unregister)
from .sample import needs_sample, sample_users
from .sources import PAPER_DATASETS, SOURCES, cache_dir, locate, source
from .split import split_sizes
from .summary import (histogram, paper_comparison, per_item, per_user, preprocessing_trace,
                      split_table, stats)
from .tables import Dataset, Ratings, Split, check_ids

__all__ = [
    "Ratings", "Dataset", "Split", "check_ids", "load_dataset", "split_dataset", "load_split",
    "DataError", "DataFormatError", "DataNotFoundError", "FingerprintMismatch",
    "FORMATS", "RawRatings", "read_ratings", "content_fingerprint", "SOURCES",
    "PAPER_DATASETS", "cache_dir", "fetch", "locate", "split_sizes", "names",
    "prepare", "available", "load_file", "sample_users", "needs_sample", "reload_split",
    "stats", "histogram", "per_user", "per_item", "DatasetKind", "register", "unregister",
    "get", "kind_of", "reload", "provenance", "is_synthetic", "SYNTHETIC", "SCALE_SHAPES", "OWN_FILE",
    "scale_options", "source",
    "paper_comparison", "preprocessing_trace", "split_table",
]
