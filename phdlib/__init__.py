"""phdlib: the library behind *phd-book*.

A reimplementation of Hansen et al., "Projected Hamming Dissimilarity for
Bit-Level Importance Coding in Collaborative Filtering" (WWW '21).

Modules (one concept each): ``codes`` (packing, Hamming and PHD), ``data``,
``metrics``, ``stats``, ``methods`` (every method behind one contract),
``evaluation`` (one evaluation path), ``training`` (fit, tune, store),
``results`` (the store), ``io`` (atomic writes, canonical hashes),
``experiments`` and ``runner`` (grids of runs, joblib or Dask), ``report``
(Table 1, figures, comparisons with the paper), ``ablation``, ``search``,
``bench``, ``book`` (the book driver) and ``cli``. Numba kernels live
together in ``phdlib.kernels``.

Importing ``phdlib`` imports none of the submodules, so a broken or heavy
module never slows down or breaks an unrelated one.
"""
from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("phdlib")
except _metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0+src"

__all__ = ["__version__"]
