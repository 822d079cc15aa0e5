"""phdlib: the library behind *phd-book*.

A reimplementation of Hansen et al., "Projected Hamming Dissimilarity for
Bit-Level Importance Coding in Collaborative Filtering" (WWW '21).

Packages by concept, each importing only from those before it in this list
(``tests/test_architecture.py`` holds the order): the foundation (``names``,
``io``, ``paper``, ``kernels``: the Numba kernels), ``codes`` (packed codes,
Hamming, PHD, the ``Distance`` concept), ``data`` (every dataset behind one
registry), ``evaluation`` (metrics exact under ties, the one evaluation path,
statistics), ``methods`` (every method behind one contract, the shared
training loop), ``results`` (the store), ``serving`` (search, engines, codes
files, recommending), ``bench``, ``experiments`` (training one run, grids of
runs on joblib or Dask), ``studies``, ``report`` (Table 1, figures,
comparisons with the paper), ``book`` (the book driver) and ``cli``.

Importing ``phdlib`` imports none of the submodules, so a broken or heavy
module never slows down or breaks an unrelated one.
"""
import os as _os
from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("phdlib")
except _metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.2.0+src"

__all__ = ["__version__"]


def _numba_cache_dir() -> None:
    """Point Numba's kernel cache at a writable folder when the package's is not.

    Numba caches compiled kernels (``cache=True``) beside the sources, else in
    a per-user folder; a read-only install without a usable home folder has
    neither, and every kernel would fail to compile. Then the cache goes to
    ``PHD_CACHE_DIR/numba``, the platformdirs user cache, or the system's
    temporary folder, the first that is writable. ``NUMBA_CACHE_DIR`` set by
    the user always wins.
    """
    if _os.environ.get("NUMBA_CACHE_DIR"):
        return
    here = _os.path.dirname(_os.path.abspath(__file__))
    if _os.access(_os.path.join(here, "kernels"), _os.W_OK):
        return
    import tempfile

    candidates = []
    if _os.environ.get("PHD_CACHE_DIR"):
        candidates.append(_os.path.join(_os.environ["PHD_CACHE_DIR"], "numba"))
    try:
        import platformdirs

        candidates.append(_os.path.join(platformdirs.user_cache_dir("phdlib"), "numba"))
    except Exception:  # noqa: BLE001 - no usable home folder
        pass
    candidates.append(_os.path.join(tempfile.gettempdir(), f"phdlib-numba-{_os.getuid()}"
                                    if hasattr(_os, "getuid") else "phdlib-numba"))
    for c in candidates:
        try:
            _os.makedirs(c, exist_ok=True)
            if _os.access(c, _os.W_OK):
                _os.environ["NUMBA_CACHE_DIR"] = c
                return
        except OSError:
            continue


_numba_cache_dir()
