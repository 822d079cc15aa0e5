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
    init : {"uniform01"}
        ``"uniform01"``: every factor uniform in [0, 1] (MATLAB ``rand``).
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
    if init != "uniform01":
        raise ValueError(f"init must be 'uniform01', got {init!r}")
    rng = np.random.default_rng(seed)
    P = rng.random((n_users, dim))
    Q = rng.random((n_items, dim))
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

class _TunedMF:
    """MF fitted over a grid of (reg, passes), the point chosen on validation NDCG@10.

    Passes are nested: one fit per ``reg`` runs to the largest pass count and
    is validated at every pass count of the grid (the factors after ``n``
    passes are exactly those of a fit with ``epochs=n``). Test metrics are
    logged at every grid point for the chapter's sensitivity table and never
    used to choose. ``tune=False`` fits the single point (``reg``, ``passes``).
    """

    name = ""
    label = ""
    passes_key = "passes"

    def _fit(self, split, bits, seed, config, reg, epochs, callback):
        raise NotImplementedError

    def train(self, split, bits, seed, config, progress=False):
        from ..results import Run

        import pandas as pd
        from tqdm.auto import tqdm

        t_start = time.perf_counter()
        ties = config["ties"]
        if config["tune"]:
            regs = [float(r) for r in config["reg_grid"]]
            checkpoints = sorted({int(p) for p in config[f"{self.passes_key}_grid"]})
        else:
            regs = [float(config["reg"])]
            checkpoints = [int(config[self.passes_key])]
        if not regs or not checkpoints or min(checkpoints) < 1:
            raise ValueError(f"{self.name}: empty grid or pass count < 1 in config {config}")
        rows = []
        best = {"score": -np.inf}
        bar = tqdm(total=len(regs) * checkpoints[-1], desc=f"{self.name} {bits}b", unit="pass",
                   disable=not progress, leave=False)
        for reg in regs:
            clock = {"train": 0.0, "t": time.perf_counter()}

            def cb(ep, P, Q, reg=reg, clock=clock):
                now = time.perf_counter()
                clock["train"] += now - clock["t"]
                bar.update(1)
                if ep in checkpoints:
                    pv = _evaluate_scores(split.valid, P, Q, ties)
                    pt = _evaluate_scores(split.test, P, Q, ties)
                    sv, st = _summary(pv), _summary(pt)
                    rows.append({"reg": reg, self.passes_key: ep, "train_seconds": clock["train"],
                                 **{f"valid_{k}": sv[k] for k in ("ndcg@5", "ndcg@10", "mrr")},
                                 **{f"test_{k}": st[k] for k in ("ndcg@5", "ndcg@10", "mrr")}})
                    if sv["ndcg@10"] > best["score"]:
                        best.update(score=sv["ndcg@10"], reg=reg, epochs=ep, per_user=pt,
                                    P=P.astype(np.float32), Q=Q.astype(np.float32))
                clock["t"] = time.perf_counter()

            self._fit(split, bits, seed, config, reg, checkpoints[-1], cb)
        bar.close()
        log = pd.DataFrame(rows)
        log["chosen"] = (log["reg"] == best["reg"]) & (log[self.passes_key] == best["epochs"])
        summary = _summary(best["per_user"])
        summary.update({"reg": best["reg"], self.passes_key: best["epochs"],
                        "valid_ndcg@10": best["score"],
                        "train_seconds": float(log.loc[log["chosen"], "train_seconds"].iloc[0])})
        return Run(method=self.name, dataset=split.dataset.name, bits=int(bits), seed=int(seed),
                   config=dict(config), metrics=summary, per_user=best["per_user"],
                   fingerprint=split.fingerprint, wall_seconds=time.perf_counter() - t_start,
                   arrays={"user_vectors": best["P"], "item_vectors": best["Q"]}, log=log,
                   extra={"chosen_on": f"validation ndcg@10, ties={ties}", "label": self.label})


class SGDMF(_TunedMF):
    """MF as the paper ran it: :func:`fit_sgd` (the CCCF repository's ``MF.m``).

    Config: ``lr`` (0.001, the repository's), ``init`` ("uniform01"),
    ``tune`` (True: grid below, chosen on validation NDCG@10), ``reg_grid``
    (powers of ten 0.001..10), ``passes_grid`` (10, 20, 50, 100, 200),
    ``reg`` / ``passes`` (the single point used when ``tune`` is False),
    ``ties`` (the tie rule of the evaluation). Latent size = ``bits``.
    """

    name = "mf"
    label = "MF (SGD, as in the CCCF repository; the paper's MF)"
    passes_key = "passes"

    def defaults(self, dataset: str, bits: int) -> dict:
        return {"lr": 0.001, "init": "uniform01", "tune": True,
                "reg_grid": [0.001, 0.01, 0.1, 1.0, 10.0], "passes_grid": [10, 20, 50, 100, 200],
                "reg": 1.0, "passes": 100, "ties": "expected"}

    def _fit(self, split, bits, seed, config, reg, epochs, callback):
        ds = split.dataset
        return fit_sgd(split.train, ds.n_users, ds.n_items, int(bits), reg, epochs,
                       lr=float(config["lr"]), seed=seed, init=config["init"], callback=callback)


class ALSMF(_TunedMF):
    """MF done well (our addition): :func:`fit_als`, reg and epochs chosen on validation.

    Config: ``tune``, ``reg_grid``, ``epochs_grid``, ``reg`` / ``epochs``
    (used when ``tune`` is False), ``weighted`` (ALS-WR regularisation),
    ``init_scale``, ``ties``. Latent size = ``bits``.
    """

    name = "mf-als"
    label = "MF (ALS; our addition)"
    passes_key = "epochs"

    def defaults(self, dataset: str, bits: int) -> dict:
        return {"tune": True, "reg_grid": [1.0, 3.0, 10.0, 30.0, 100.0],
                "epochs_grid": [5, 10, 20, 40], "reg": 10.0, "epochs": 20,
                "weighted": False, "init_scale": 0.1, "ties": "expected"}

    def _fit(self, split, bits, seed, config, reg, epochs, callback):
        ds = split.dataset
        return fit_als(split.train, ds.n_users, ds.n_items, int(bits), reg, epochs, seed=seed,
                       weighted=bool(config["weighted"]), init_scale=float(config["init_scale"]),
                       callback=callback)


class BinarizedMF:
    """MFmean / MFmedian: MF vectors binarised per dimension, ranked by Hamming.

    The vectors come from a stored (or freshly trained) run of the method
    ``source`` (through :func:`phdlib.methods.run`, so they are the very
    vectors that method reports). Config: ``source`` and ``scope`` (the
    variant used when ``tune`` is False), ``tune`` (True: choose
    (source, scope) among ``sources`` x ``scopes`` on validation NDCG@10),
    ``ties``. With ``tune`` False the source run is itself trained with
    ``tune=False`` (the quick profile).
    """

    def __init__(self, name: str, threshold: str):
        self.name = name
        self.threshold = threshold
        self.label = f"MF{threshold}"

    def defaults(self, dataset: str, bits: int) -> dict:
        return {"tune": True, "sources": ["mf"], "scopes": ["separate", "joint"],
                "source": "mf", "scope": "separate", "ties": "expected"}

    def train(self, split, bits, seed, config, progress=False):
        from .. import codes as C
        from .. import methods
        from ..results import Run

        import pandas as pd

        t_start = time.perf_counter()
        ties = config["ties"]
        if config["tune"]:
            variants = [(s, c) for s in config["sources"] for c in config["scopes"]]
        else:
            variants = [(config["source"], config["scope"])]
        if not variants:
            raise ValueError(f"{self.name}: no (source, scope) variant in config {config}")
        rows, best = [], {"score": -np.inf}
        source_runs = {}
        for source, scope in variants:
            if source not in source_runs:
                ov = {} if config["tune"] else {"tune": False}
                src = methods.run(source, split, bits, seed=seed, overrides=ov, progress=progress)
                if "user_vectors" not in src.arrays:
                    raise ValueError(f"{self.name}: source run {source!r} ({src.path}) stores no "
                                     f"user_vectors/item_vectors")
                source_runs[source] = src
            src = source_runs[source]
            t0 = time.perf_counter()
            bu, bi, tu, ti = binarize(src.arrays["user_vectors"], src.arrays["item_vectors"],
                                      self.threshold, scope)
            uw, iw = C.pack(bu, "bool").words, C.pack(bi, "bool").words
            secs = time.perf_counter() - t0
            pv = _evaluate_codes(split.valid, uw, iw, ties)
            pt = _evaluate_codes(split.test, uw, iw, ties)
            sv, st = _summary(pv), _summary(pt)
            rows.append({"source": source, "scope": scope, "source_key": src.key,
                         "binarize_seconds": secs,
                         "user_bit_balance": float(bu.mean()), "item_bit_balance": float(bi.mean()),
                         **{f"valid_{k}": sv[k] for k in ("ndcg@5", "ndcg@10", "mrr")},
                         **{f"test_{k}": st[k] for k in ("ndcg@5", "ndcg@10", "mrr")}})
            if sv["ndcg@10"] > best["score"]:
                best.update(score=sv["ndcg@10"], source=source, scope=scope, per_user=pt,
                            uw=uw, iw=iw, tu=tu, ti=ti, src_key=src.key)
        log = pd.DataFrame(rows)
        log["chosen"] = (log["source"] == best["source"]) & (log["scope"] == best["scope"])
        summary = _summary(best["per_user"])
        summary.update({"source": best["source"], "scope": best["scope"],
                        "valid_ndcg@10": best["score"]})
        return Run(method=self.name, dataset=split.dataset.name, bits=int(bits), seed=int(seed),
                   config=dict(config), metrics=summary, per_user=best["per_user"],
                   fingerprint=split.fingerprint, wall_seconds=time.perf_counter() - t_start,
                   arrays={"user_codes": best["uw"], "item_codes": best["iw"],
                           "user_thresholds": best["tu"], "item_thresholds": best["ti"]},
                   log=log, extra={"source_key": best["src_key"], "threshold": self.threshold,
                                   "chosen_on": f"validation ndcg@10, ties={ties}",
                                   "label": self.label})


MF = SGDMF()
MF_ALS = ALSMF()
MF_MEAN = BinarizedMF("mf-mean", "mean")
MF_MEDIAN = BinarizedMF("mf-median", "median")
