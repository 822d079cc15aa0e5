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

import time
from typing import Callable

import numpy as np

from ..kernels import mf as _k

__all__ = [
    "fit_sgd",
    "fit_als",
    "sgd_objective",
    "als_objective",
    "scores",
]


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
    user = np.asarray(train.user)
    item = np.asarray(train.item)
    rating = np.asarray(train.rating)
    if not (user.ndim == item.ndim == rating.ndim == 1 and len(user) == len(item) == len(rating)):
        raise ValueError(
            f"train.user, train.item, train.rating must be 1-d and equally long, got shapes "
            f"{user.shape}, {item.shape}, {rating.shape}"
        )
    if len(user) == 0:
        raise ValueError("train holds no ratings")
    if not np.issubdtype(user.dtype, np.integer) or not np.issubdtype(item.dtype, np.integer):
        raise TypeError(f"train.user and train.item must be integer ids, got {user.dtype}, {item.dtype}")
    for name, ids, n in (("user", user, n_users), ("item", item, n_items)):
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise ValueError(f"train.{name} holds id {bad}, outside 0..{n - 1} (n_{name}s={n})")
    rating = rating.astype(np.float64)
    if not np.all(np.isfinite(rating)):
        t = int(np.flatnonzero(~np.isfinite(rating))[0])
        raise ValueError(f"train.rating[{t}] = {rating[t]} is not finite")
    return user.astype(np.int32), item.astype(np.int32), rating


def _csr(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n_rows: int):
    """Group ratings by row: rows ascending, within a row columns ascending.

    Returns indptr int64 (n_rows + 1,), cols int32 (nnz,), vals float64 (nnz,).
    """
    order = np.lexsort((cols, rows))
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
        f1 = _k.als_half_step(u_ptr, u_cols, u_vals, Q, P, float(reg), bool(weighted))
        f2 = _k.als_half_step(i_ptr, i_cols, i_vals, P, Q, float(reg), bool(weighted))
        if f1 or f2:
            raise FloatingPointError(f"ALS: {f1 + f2} normal equations not positive definite (reg={reg})")
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


def scores(P: np.ndarray, Q: np.ndarray, user: np.ndarray, item: np.ndarray) -> np.ndarray:
    """Inner products ``<P[user[t]], Q[item[t]]>``: float64 (n,) for int (n,) pairs."""
    return _k.pair_scores(np.asarray(user, np.int32), np.asarray(item, np.int32), P, Q)


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


# ---------------------------------------------------------------------------
# evaluation helpers

def _evaluate_scores(part, P, Q, ties: str):
    """Per-user metrics of ``part`` (a Ratings) ranked by ``<P[u], Q[i]>``, larger first."""
    from .. import metrics

    v = scores(P, Q, part.user, part.item)
    return metrics.evaluate(part.user, part.rating, v, kind="score", ties=ties)


def pair_hamming(user_words: np.ndarray, item_words: np.ndarray, user, item) -> np.ndarray:
    """Hamming distance of each (user[t], item[t]) pair of packed codes.

    user_words: uint64 (n_users, w); item_words: uint64 (n_items, w);
    user, item: int (n,). Returns int32 (n,) bit counts.
    """
    x = user_words[np.asarray(user)] ^ item_words[np.asarray(item)]
    return np.bitwise_count(x).sum(axis=1, dtype=np.int32)


def _evaluate_codes(part, user_words, item_words, ties: str):
    from .. import metrics

    d = pair_hamming(user_words, item_words, part.user, part.item)
    return metrics.evaluate(part.user, part.rating, d, kind="dissimilarity", ties=ties)


def _summary(per_user) -> dict:
    from .. import metrics

    return metrics.summarize(per_user)


# ---------------------------------------------------------------------------
# the methods of the registry (see phdlib.methods)

# one fit per (algorithm, split, dim, seed, reg, hyper-parameters), kept in the process so
# that MF, MFmean and MFmedian of one width share their SGD fits
_PATHS: dict = {}
_PATHS_MAX = 12


def fit_path(algorithm: str, split, dim: int, seed: int, reg: float, checkpoints, **options) -> dict:
    """Factors after each of several pass counts of one fit, memoised in the process.

    algorithm: ``"sgd"`` (:func:`fit_sgd`; options ``lr``, ``init``) or
    ``"als"`` (:func:`fit_als`; options ``weighted``, ``init_scale``).
    checkpoints: increasing pass (epoch) counts >= 1; the fit runs to the
    last. Returns ``{passes: (P, Q, train_seconds)}`` with float32 factors
    and the training wall time (seconds, evaluation excluded) to reach that
    count. The factors after ``n`` passes equal those of a fit with
    ``epochs=n``.
    """
    checkpoints = tuple(sorted({int(c) for c in checkpoints}))
    if not checkpoints or checkpoints[0] < 1:
        raise ValueError(f"checkpoints must be pass counts >= 1, got {checkpoints}")
    key = (algorithm, split.fingerprint, int(dim), int(seed), float(reg), checkpoints,
           tuple(sorted(options.items())))
    if key in _PATHS:
        return _PATHS[key]
    out = {}
    clock = {"train": 0.0, "t": time.perf_counter()}

    def cb(ep, P, Q):
        clock["train"] += time.perf_counter() - clock["t"]
        if ep in checkpoints:
            out[ep] = (P.astype(np.float32), Q.astype(np.float32), clock["train"])
        clock["t"] = time.perf_counter()

    ds = split.dataset
    if algorithm == "sgd":
        fit_sgd(split.train, ds.n_users, ds.n_items, int(dim), reg, checkpoints[-1], seed=seed,
                callback=cb, **options)
    elif algorithm == "als":
        fit_als(split.train, ds.n_users, ds.n_items, int(dim), reg, checkpoints[-1], seed=seed,
                callback=cb, **options)
    else:
        raise ValueError(f"algorithm must be 'sgd' or 'als', got {algorithm!r}")
    while len(_PATHS) >= _PATHS_MAX:
        _PATHS.pop(next(iter(_PATHS)))
    _PATHS[key] = out
    return out


def _grid(config: dict, passes_key: str):
    """[(reg, [pass counts])] of a config: its grids if ``tune``, else its single point."""
    if config["tune"]:
        regs = [float(r) for r in config["reg_grid"]]
        passes = sorted({int(p) for p in config[f"{passes_key}_grid"]})
    else:
        regs = [float(config["reg"])]
        passes = [int(config[passes_key])]
    if not regs or not passes or passes[0] < 1:
        raise ValueError(f"empty grid or pass count < 1 in config {config}")
    return [(r, passes) for r in regs]


def _make_run(method, split, bits, seed, config, per_user, log, arrays, chosen, t_start, extra):
    from ..results import Run

    summary = _summary(per_user)
    summary.update(chosen)
    return Run(method=method, dataset=split.dataset.name, bits=int(bits), seed=int(seed),
               config=dict(config), metrics=summary, per_user=per_user,
               fingerprint=split.fingerprint, wall_seconds=time.perf_counter() - t_start,
               arrays=arrays, log=log, extra=extra)


_METRICS = ("ndcg@5", "ndcg@10", "mrr")

#: Implementation revision, part of every MF config (hence of the results
#: store's run key): bump it when a change alters what these methods compute,
#: so that runs stored by an older revision are not reused.
IMPL = 2


class _TunedMF:
    """MF fitted over a grid of (reg, passes), the point chosen on validation NDCG@10.

    Passes are nested: one fit per ``reg`` runs to the largest pass count and
    is read at every pass count of the grid (:func:`fit_path`). Test metrics
    are logged at every grid point for the chapter's sensitivity table and
    never used to choose. ``tune=False`` fits the single point (``reg``,
    ``passes``). The log's ``train_seconds`` is the training time to reach
    that grid point (the cost of that grid point alone).
    """

    name = ""
    label = ""
    algorithm = ""
    passes_key = "passes"

    def _options(self, config) -> dict:
        raise NotImplementedError

    def train(self, split, bits, seed, config, progress=False):
        import pandas as pd
        from tqdm import tqdm  # plain text bar: tqdm.auto warns without ipywidgets in notebooks

        t_start = time.perf_counter()
        ties = config["ties"]
        rows, best = [], {"score": -np.inf}
        grid = _grid(config, self.passes_key)
        for reg, passes in tqdm(grid, desc=f"{self.name} {bits}b", unit="reg",
                                disable=not progress, leave=False):
            path = fit_path(self.algorithm, split, bits, seed, reg, passes, **self._options(config))
            for ep in passes:
                P, Q, secs = path[ep]
                pv = _evaluate_scores(split.valid, P, Q, ties)
                pt = _evaluate_scores(split.test, P, Q, ties)
                sv, st = _summary(pv), _summary(pt)
                rows.append({"reg": reg, self.passes_key: ep, "train_seconds": secs,
                             **{f"valid_{k}": sv[k] for k in _METRICS},
                             **{f"test_{k}": st[k] for k in _METRICS}})
                if sv["ndcg@10"] > best["score"]:
                    best.update(score=sv["ndcg@10"], reg=reg, passes=ep, per_user=pt, P=P, Q=Q,
                                secs=secs)
        log = pd.DataFrame(rows)
        log["chosen"] = (log["reg"] == best["reg"]) & (log[self.passes_key] == best["passes"])
        chosen = {"reg": best["reg"], self.passes_key: best["passes"],
                  "valid_ndcg@10": best["score"], "train_seconds": best["secs"]}
        return _make_run(self.name, split, bits, seed, config, best["per_user"], log,
                         {"user_vectors": best["P"], "item_vectors": best["Q"]}, chosen, t_start,
                         {"chosen_on": f"validation ndcg@10, ties={ties}", "label": self.label})


class SGDMF(_TunedMF):
    """MF as the paper ran it: :func:`fit_sgd` (the CCCF repository's ``MF.m``).

    Config: ``lr`` (0.001, the repository's), ``init`` ("uniform01"),
    ``tune`` (True: the grid below, chosen on validation NDCG@10),
    ``reg_grid`` (powers of ten 0.001..10), ``passes_grid`` (10, 20, 50, 100,
    200), ``reg`` / ``passes`` (the single point used when ``tune`` is
    False: the point the full grid chooses on ML-1M), ``ties`` (tie rule of
    the evaluation). Latent size = ``bits``.
    """

    name = "mf"
    label = "MF (SGD as in the CCCF repository; the paper's MF)"
    algorithm = "sgd"
    passes_key = "passes"

    def defaults(self, dataset: str, bits: int) -> dict:
        return {"lr": 0.001, "init": "uniform01", "tune": True,
                "reg_grid": [0.001, 0.01, 0.1, 1.0, 10.0], "passes_grid": [10, 20, 50, 100, 200],
                "reg": 1.0, "passes": 200, "ties": "expected", "impl": IMPL}

    def _options(self, config):
        return {"lr": float(config["lr"]), "init": config["init"]}


class ALSMF(_TunedMF):
    """MF done well (our addition): :func:`fit_als`, reg and epochs chosen on validation.

    Config: ``tune``, ``reg_grid`` (0.025 to 0.4, doubling), ``epochs_grid``
    (5, 10, 20), ``reg`` / ``epochs`` (used when ``tune`` is False),
    ``weighted`` (True: ALS-WR, each row's ridge weight ``reg`` times its
    number of ratings, Zhou et al. 2008), ``init_scale`` (0.1), ``ties``.
    Latent size = ``bits``.
    """

    name = "mf-als"
    label = "MF (ALS; our addition)"
    algorithm = "als"
    passes_key = "epochs"

    def defaults(self, dataset: str, bits: int) -> dict:
        return {"tune": True, "reg_grid": [0.025, 0.05, 0.1, 0.2, 0.4], "epochs_grid": [5, 10, 20],
                "reg": 0.1, "epochs": 10, "weighted": True, "init_scale": 0.1,
                "ties": "expected", "impl": IMPL}

    def _options(self, config):
        return {"weighted": bool(config["weighted"]), "init_scale": float(config["init_scale"])}


class BinarizedMF:
    """MFmean / MFmedian: the paper's MF binarised per dimension, ranked by Hamming.

    A method in its own right, tuned like the others: its hyper-parameters are
    those of the MF it binarises (``reg``, ``passes`` of :func:`fit_sgd` with
    the repository's ``lr`` and ``init``) and the threshold's ``scope``
    (:func:`binarize`); every combination of ``reg_grid`` x ``passes_grid`` x
    ``scopes`` is binarised and the one with the best validation NDCG@10 *of
    the codes* is chosen (the MF that ranks best as real vectors is not the
    one that binarises best). ``tune=False`` uses the single point
    (``reg``, ``passes``, ``scope``). The SGD fits are shared with ``mf``
    (:func:`fit_path`).
    """

    algorithm = "sgd"

    def __init__(self, name: str, threshold: str):
        if threshold not in THRESHOLDS:
            raise ValueError(f"threshold must be one of {THRESHOLDS}, got {threshold!r}")
        self.name = name
        self.threshold = threshold
        self.label = f"MF{threshold}"

    def defaults(self, dataset: str, bits: int) -> dict:
        return {"lr": 0.001, "init": "uniform01", "tune": True,
                "reg_grid": [0.001, 0.01, 0.1, 1.0, 10.0], "passes_grid": [10, 20, 50, 100, 200],
                "scopes": ["separate", "joint"],
                "reg": 0.1, "passes": 200, "scope": "joint", "ties": "expected", "impl": IMPL}

    def train(self, split, bits, seed, config, progress=False):
        from .. import codes as C

        import pandas as pd
        from tqdm import tqdm  # plain text bar: tqdm.auto warns without ipywidgets in notebooks

        t_start = time.perf_counter()
        ties = config["ties"]
        scopes = list(config["scopes"]) if config["tune"] else [config["scope"]]
        for sc in scopes:
            if sc not in SCOPES:
                raise ValueError(f"{self.name}: scope {sc!r} is not one of {SCOPES}")
        opts = {"lr": float(config["lr"]), "init": config["init"]}
        rows, best = [], {"score": -np.inf}
        for reg, passes in tqdm(_grid(config, "passes"), desc=f"{self.name} {bits}b", unit="reg",
                                disable=not progress, leave=False):
            path = fit_path(self.algorithm, split, bits, seed, reg, passes, **opts)
            for ep in passes:
                P, Q, secs = path[ep]
                for sc in scopes:
                    bu, bi, tu, ti = binarize(P, Q, self.threshold, sc)
                    uw, iw = C.pack(bu, "bool").words, C.pack(bi, "bool").words
                    pv = _evaluate_codes(split.valid, uw, iw, ties)
                    pt = _evaluate_codes(split.test, uw, iw, ties)
                    sv, st = _summary(pv), _summary(pt)
                    rows.append({"reg": reg, "passes": ep, "scope": sc, "train_seconds": secs,
                                 "user_ones": float(bu.mean()), "item_ones": float(bi.mean()),
                                 **{f"valid_{k}": sv[k] for k in _METRICS},
                                 **{f"test_{k}": st[k] for k in _METRICS}})
                    if sv["ndcg@10"] > best["score"]:
                        best.update(score=sv["ndcg@10"], reg=reg, passes=ep, scope=sc, per_user=pt,
                                    uw=uw, iw=iw, tu=tu, ti=ti)
        log = pd.DataFrame(rows)
        log["chosen"] = ((log["reg"] == best["reg"]) & (log["passes"] == best["passes"])
                         & (log["scope"] == best["scope"]))
        chosen = {"reg": best["reg"], "passes": best["passes"], "scope": best["scope"],
                  "valid_ndcg@10": best["score"]}
        arrays = {"user_codes": best["uw"], "item_codes": best["iw"],
                  "user_thresholds": best["tu"], "item_thresholds": best["ti"]}
        return _make_run(self.name, split, bits, seed, config, best["per_user"], log, arrays,
                         chosen, t_start, {"threshold": self.threshold, "label": self.label,
                                           "chosen_on": f"validation ndcg@10 of the codes, ties={ties}"})


MF = SGDMF()
MF_ALS = ALSMF()
MF_MEAN = BinarizedMF("mf-mean", "mean")
MF_MEDIAN = BinarizedMF("mf-median", "median")


def binarization_variants(split, vectors: dict, thresholds=THRESHOLDS, scopes=SCOPES,
                          ties: str = "expected"):
    """Validation and test metrics of every binarisation of every set of vectors.

    vectors: ``{label: (P, Q)}`` float arrays (n_users, dim), (n_items, dim).
    Returns a DataFrame, one row per (label, threshold, scope): columns
    ``vectors``, ``threshold``, ``scope``, ``valid_ndcg@10``, ``test_ndcg@5``,
    ``test_ndcg@10``, ``test_mrr``, and the fraction of 1 bits of user and
    item codes (``user_ones``, ``item_ones``). For reading, not choosing:
    the methods choose on validation only.
    """
    from .. import codes as C

    import pandas as pd

    rows = []
    for label, (P, Q) in vectors.items():
        for th in thresholds:
            for sc in scopes:
                bu, bi, _, _ = binarize(P, Q, th, sc)
                uw, iw = C.pack(bu, "bool").words, C.pack(bi, "bool").words
                sv = _summary(_evaluate_codes(split.valid, uw, iw, ties))
                st = _summary(_evaluate_codes(split.test, uw, iw, ties))
                rows.append({"vectors": label, "threshold": th, "scope": sc,
                             "valid_ndcg@10": sv["ndcg@10"], "test_ndcg@5": st["ndcg@5"],
                             "test_ndcg@10": st["ndcg@10"], "test_mrr": st["mrr"],
                             "user_ones": float(bu.mean()), "item_ones": float(bi.mean())})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# tables for the chapter

def grid_table(log, value: str = "valid_ndcg@10", passes_key: str = "passes"):
    """A tuning log pivoted to reg (rows) x pass counts (columns) of ``value``."""
    return log.pivot_table(index="reg", columns=passes_key, values=value, aggfunc="first")


def comparison(runs: dict, dataset: str, paper_names: dict | None = None):
    """Our metrics beside the paper's Table 1: one row per (method, bits).

    runs: ``{(method, bits): Run}``; paper_names: ``{method: name in
    phdlib.paper.TABLE1}`` for methods reported under another name (default:
    the same name). Columns ``method``, ``bits``, and for each of NDCG@5,
    NDCG@10, MRR: ours, the paper's (NaN where the paper has none) and
    ours minus the paper's.
    """
    import pandas as pd

    from .. import paper

    paper_names = paper_names or {}
    rows = []
    for (method, bits), run in runs.items():
        ref = paper.table1(dataset, bits).get(paper_names.get(method, method), {})
        row = {"method": method, "bits": bits}
        for k in _METRICS:
            ours = float(run.metrics[k])
            theirs = ref.get(k, np.nan)
            row[f"{k} ours"] = ours
            row[f"{k} paper"] = theirs
            row[f"{k} diff"] = ours - theirs
        rows.append(row)
    return pd.DataFrame(rows)
