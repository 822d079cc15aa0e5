"""Real-valued matrix factorisation (MF) and its binarisations MFmean / MFmedian.

Two ways to fit ``r_ui ~ <p_u, q_i>`` on the observed training ratings:

- :func:`fit_sgd`: the MF the paper used, from the CCCF repository
  (``MF.m``): plain SGD over the observed ratings, users in order, factors
  initialised uniformly in [0, 1], no biases, no centring, ratings on their
  own scale.
- :func:`fit_als`: alternating least squares (ridge regression of each user
  on the item factors and back), our addition: "MF done well".

Both return float32 factor matrices ``P`` (n_users, dim) and ``Q``
(n_items, dim); a user's items are scored by the inner product
``P[u] @ Q[i]`` (larger is better).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..kernels import mf as _k
from ..kernels.order import lexsort_packed
from .base import rating_arrays

__all__ = ["fit_sgd", "fit_als", "sgd_objective", "als_objective", "binarize",
           "THRESHOLDS", "SCOPES"]


# ---------------------------------------------------------------------------
# input checks and layout

def _arrays(train, n_users: int, n_items: int):
    """Validated (user int32, item int32, rating float64) of a Ratings-like."""
    for field in ("user", "item", "rating"):
        if not hasattr(train, field):
            raise TypeError(
                f"train must be a phdlib.data.Ratings (fields user, item, rating); "
                f"{type(train).__name__} has no field {field!r}"
            )
    return rating_arrays(train.user, train.item, train.rating, n_users, n_items, "train.")


def _csr(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n_rows: int):
    """Group ratings by row: rows ascending, within a row columns ascending.

    Returns indptr int64 (n_rows + 1,), cols int32 (nnz,), vals float64 (nnz,).
    """
    order = lexsort_packed((cols, rows))   # np.lexsort's order, one packed stable sort
    counts = np.bincount(rows, minlength=n_rows)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, np.ascontiguousarray(cols[order]), np.ascontiguousarray(vals[order])


def _check_common(n_users, n_items, dim, reg, epochs):
    for name, v in (("n_users", n_users), ("n_items", n_items), ("dim", dim), ("epochs", epochs)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {v!r}")
    if n_users <= 0 or n_items <= 0 or dim <= 0:
        raise ValueError(f"n_users, n_items, dim must be positive, got {n_users}, {n_items}, {dim}")
    if epochs < 0:
        raise ValueError(f"epochs must be >= 0, got {epochs}")
    if not np.isfinite(reg) or reg < 0:
        raise ValueError(f"reg must be a finite number >= 0, got {reg}")


# ---------------------------------------------------------------------------
# SGD: the paper's MF

SGD_INITS = ("uniform01", "normal")

def fit_sgd(train, n_users: int, n_items: int, dim: int, reg: float, epochs: int,
            lr: float = 0.001, seed: int = 0, init: str = "uniform01",
            callback: Callable[[int, np.ndarray, np.ndarray], None] | None = None):
    """MF by plain SGD, as the CCCF repository's ``MF.m`` runs it.

    Each pass visits users in increasing id order and, for each user, the
    user's training ratings in increasing item id order (MATLAB's ``find`` on
    a sparse row). For a rating ``r`` with error ``e = r - <p_u, q_i>``:
    ``p_u += lr (2 e q_i - reg p_u)``, then, with the new ``p_u``,
    ``q_i += lr (2 e p_u - reg q_i)``: SGD on
    ``sum_(u,i) [(r_ui - <p_u, q_i>)^2 + (reg / 2)(|p_u|^2 + |q_i|^2)]``
    (see :func:`sgd_objective`). The repository's defaults are
    ``lr = 0.001``, ``reg = 0.01``, ``epochs = 10``. Arithmetic is float64 (as
    MATLAB's); the result is returned as float32.

    Parameters
    ----------
    train : phdlib.data.Ratings
        user, item int32 ``(r,)`` ids; rating float32 ``(r,)`` on the
        dataset's own scale (1..5 on MovieLens; not centred).
    n_users, n_items : int
        Number of rows of ``P`` and ``Q``.
    dim : int
        Latent dimension (the paper: the number of bits).
    reg : float
        Regularisation ``beta`` of ``MF.m`` (>= 0).
    epochs : int
        Passes over the training ratings.
    lr : float
        Step size ``alpha`` of ``MF.m``.
    seed : int
        Seed of the initialisation (``numpy.random.default_rng``).
    init : {"uniform01", "normal"}
        ``"uniform01"``: every factor uniform in [0, 1] (MATLAB ``rand``,
        the repository's); ``"normal"``: Gaussian with mean 0 and standard
        deviation 0.1 (zero-centred factors; not the repository's).
    callback : callable, optional
        Called as ``callback(epoch, P, Q)`` after each pass (epoch counts
        from 1) with the float64 working arrays (do not modify them); used to
        validate at several pass counts in one run.

    Returns
    -------
    P : float32 (n_users, dim)
    Q : float32 (n_items, dim)
    """
    _check_common(n_users, n_items, dim, reg, epochs)
    if not (np.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive number, got {lr}")
    user, item, rating = _arrays(train, n_users, n_items)
    if init not in SGD_INITS:
        raise ValueError(f"init must be one of {SGD_INITS}, got {init!r}")
    rng = np.random.default_rng(seed)
    if init == "uniform01":
        P = rng.random((n_users, dim))
        Q = rng.random((n_items, dim))
    else:
        P = rng.normal(0.0, 0.1, size=(n_users, dim))
        Q = rng.normal(0.0, 0.1, size=(n_items, dim))
    indptr, cols, vals = _csr(user, item, rating, n_users)
    for ep in range(1, epochs + 1):
        sse = _k.sgd_pass(indptr, cols, vals, P, Q, float(lr), float(reg))
        if not np.isfinite(sse):
            raise FloatingPointError(
                f"SGD diverged in pass {ep} (lr={lr}, reg={reg}, dim={dim}); use a smaller lr"
            )
        if callback is not None:
            callback(ep, P, Q)
    return P.astype(np.float32), Q.astype(np.float32)


def sgd_objective(train, P: np.ndarray, Q: np.ndarray, reg: float) -> float:
    """The objective :func:`fit_sgd` descends, float64.

    ``sum_(u,i) (r_ui - <p_u, q_i>)^2 + (reg / 2) sum_u n_u |p_u|^2
    + (reg / 2) sum_i n_i |q_i|^2``, with ``n_u`` (``n_i``) the number of
    training ratings of user ``u`` (item ``i``): every rating regularises the
    two vectors it touches.
    """
    user, item, rating = _arrays(train, P.shape[0], Q.shape[0])
    sse = _k.squared_error(user, item, rating, np.asarray(P, np.float64), np.asarray(Q, np.float64))
    nu = np.bincount(user, minlength=P.shape[0])
    ni = np.bincount(item, minlength=Q.shape[0])
    P64 = np.asarray(P, np.float64)
    Q64 = np.asarray(Q, np.float64)
    pen = float(nu @ (P64 * P64).sum(1) + ni @ (Q64 * Q64).sum(1))
    return float(sse + 0.5 * reg * pen)


# ---------------------------------------------------------------------------
# ALS: MF done well (our addition)

def fit_als(train, n_users: int, n_items: int, dim: int, reg: float, epochs: int,
            seed: int = 0, weighted: bool = False, init_scale: float = 0.1,
            callback: Callable[[int, np.ndarray, np.ndarray], None] | None = None):
    """MF by alternating least squares.

    Minimises ``sum_(u,i) (r_ui - <p_u, q_i>)^2 + sum_u lam_u |p_u|^2
    + sum_i lam_i |q_i|^2`` with ``lam = reg`` (plain ridge) or
    ``lam_u = reg * n_u``, ``lam_i = reg * n_i`` (``weighted``: ALS-WR,
    Zhou et al. 2008). ``Q`` starts Gaussian with standard deviation
    ``init_scale``; each epoch solves every user's normal equations
    ``(Q_u^T Q_u + lam_u I) p_u = Q_u^T r_u`` exactly, then every item's
    given the new ``P``. Rows without ratings get zero vectors. Each half
    step cannot increase the objective (see :func:`als_objective`).

    Parameters
    ----------
    train : phdlib.data.Ratings
        user, item int32 ``(r,)``; rating float32 ``(r,)``, used as given.
    n_users, n_items, dim : int
    reg : float
        Ridge weight (> 0).
    epochs : int
        Number of (user step, item step) pairs.
    seed : int
        Seed of ``Q``'s initialisation.
    weighted : bool
        Scale ``reg`` by each row's rating count.
    init_scale : float
        Standard deviation of the initial ``Q``.
    callback : callable, optional
        ``callback(epoch, P, Q)`` after each epoch with the float64 arrays.

    Returns
    -------
    P : float32 (n_users, dim)
    Q : float32 (n_items, dim)
    """
    _check_common(n_users, n_items, dim, reg, epochs)
    if reg <= 0:
        raise ValueError(f"ALS needs reg > 0 (the normal equations may be singular), got {reg}")
    user, item, rating = _arrays(train, n_users, n_items)
    rng = np.random.default_rng(seed)
    Q = rng.normal(0.0, init_scale, size=(n_items, dim))
    P = np.zeros((n_users, dim))
    u_ptr, u_cols, u_vals = _csr(user, item, rating, n_users)
    i_ptr, i_cols, i_vals = _csr(item, user, rating, n_items)
    for ep in range(1, epochs + 1):
        _k.als_half_step(u_ptr, u_cols, u_vals, Q, P, float(reg), bool(weighted))
        _k.als_half_step(i_ptr, i_cols, i_vals, P, Q, float(reg), bool(weighted))
        if callback is not None:
            callback(ep, P, Q)
    return P.astype(np.float32), Q.astype(np.float32)


def als_objective(train, P: np.ndarray, Q: np.ndarray, reg: float, weighted: bool = False) -> float:
    """The objective :func:`fit_als` minimises, float64 (see there)."""
    user, item, rating = _arrays(train, P.shape[0], Q.shape[0])
    P64 = np.asarray(P, np.float64)
    Q64 = np.asarray(Q, np.float64)
    sse = _k.squared_error(user, item, rating, P64, Q64)
    if weighted:
        wu = np.bincount(user, minlength=P.shape[0]).astype(np.float64)
        wi = np.bincount(item, minlength=Q.shape[0]).astype(np.float64)
    else:
        wu = np.ones(P.shape[0])
        wi = np.ones(Q.shape[0])
    return float(sse + reg * (wu @ (P64 * P64).sum(1) + wi @ (Q64 * Q64).sum(1)))


# ---------------------------------------------------------------------------
# MFmean / MFmedian: binarised MF vectors

THRESHOLDS = ("mean", "median")
SCOPES = ("separate", "joint")


def binarize(P: np.ndarray, Q: np.ndarray, threshold: str = "mean", scope: str = "separate"):
    """Per-dimension binarisation of MF vectors (MFmean / MFmedian).

    Bit ``k`` of a vector is 1 when its ``k``-th coordinate is strictly above
    the threshold ``t_k`` of dimension ``k``: the mean or the median of that
    coordinate, computed

    - ``scope="separate"``: over the users for user codes and over the items
      for item codes (two thresholds per dimension);
    - ``scope="joint"``: over users and items together (one threshold per
      dimension, one space for both).

    P: float (n_users, dim); Q: float (n_items, dim). Returns
    ``(user_bits, item_bits, t_user, t_item)``: bool (n_users, dim),
    bool (n_items, dim), float64 (dim,), float64 (dim,). With the median, each
    bit is 1 for at most half of the rows it was computed over (exactly half,
    rounded down, when the coordinates are distinct).
    """
    if threshold not in THRESHOLDS:
        raise ValueError(f"threshold must be one of {THRESHOLDS}, got {threshold!r}")
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    P = np.asarray(P, np.float64)
    Q = np.asarray(Q, np.float64)
    if P.ndim != 2 or Q.ndim != 2 or P.shape[1] != Q.shape[1]:
        raise ValueError(f"P and Q must be (n, dim) with one dim, got {P.shape} and {Q.shape}")
    stat = np.mean if threshold == "mean" else np.median
    if scope == "separate":
        tu, ti = stat(P, axis=0), stat(Q, axis=0)
    else:
        tu = ti = stat(np.vstack([P, Q]), axis=0)
    return P > tu, Q > ti, tu, ti
