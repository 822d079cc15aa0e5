"""The discrete block model behind DCF (Zhang et al., SIGIR 2016) and CCCF.

User codes ``B`` in {-1, 1}^(n_users x r) and item codes ``D`` in
{-1, 1}^(n_items x r) minimise, over the observed training ratings,

    sum_(u,i) (s_ui - <b_u, d_i>)^2  -  2 alpha tr(B^T X)  -  2 beta tr(D^T Y)

where ``s`` is the rating scaled to [-r, r] (``2 r (s - s_min)/(s_max - s_min) - r``)
and ``X`` (n_users x r), ``Y`` (n_items x r) are real, zero-mean per bit and
decorrelated (``X^T X = n_users I``, ``Y^T Y = n_items I``): the relaxed
balance and decorrelation constraints of the codes. A user ranks items by
Hamming distance ``(r - <b_u, d_i>) / 2`` (smaller first).

The algorithm, as in the reference MATLAB code
(hanwangzhang/Discrete-Collaborative-Filtering):

1. relaxed initialisation (:func:`relaxed_init`): the same problem with real
   ``U``, ``V``, ridge terms ``alpha n_u |u|^2`` / ``beta n_i |v|^2``,
   solved by alternating exact row updates and closed-form ``X``/``Y``;
   then ``B = sign(U)``, ``D = sign(V)``;
2. repeat up to ``max_iterations`` (50) times, stopping when no bit changes:
   discrete coordinate descent on every user's code (bit by bit, up to
   ``max_sweeps`` = 5 cyclic sweeps; :func:`phdlib.kernels.dcf.dcd_rows`),
   then every item's, then ``X``, ``Y`` in closed form
   (:func:`balanced_decorrelated`).

Every step cannot increase the objective (:func:`objective`).

The same machinery with several blocks of codes and a real weight per user
and item per block is CCCF (:mod:`phdlib.methods.cccf`); DCF is the case of
one block with unit weights, and :func:`fit_blocks` implements both.
``fit_blocks(..., score="phd")`` fits the score ``m - 2 PHD(u, i)`` instead of
the inner product (DCF_PHD, :mod:`phdlib.methods.dcf_phd`; its bit updates are
derived in :mod:`phdlib.methods.discrete_phd`). ``fit_blocks(...,
user_offset=True)`` adds a real offset ``o_u`` per user to every score of
that user in training (DCF+bias, :mod:`phdlib.methods.dcf_bias`): each outer
iteration first sets ``o_u`` to its exact minimiser, the user's mean residual
``mean_i (s_ui - score_ui)``, then runs the bit updates against ``s - o``; no
step can increase the objective, and the offset, a constant per user, cannot
change a user's ranking, so it is not kept with the codes.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..kernels import dcf as _k
from .discrete_phd import check_score, linear_terms
from .rating_graph import RatingGraph, scale_ratings
from .reuse import Reuse, digest
from .surrogates import balanced_decorrelated

__all__ = ["RatingGraph", "BlockModel", "Start", "scale_ratings", "balanced_decorrelated",
           "relaxed_init", "fit_blocks", "forget_starts", "objective", "pair_scores", "user_offsets"]


# ---------------------------------------------------------------------------
# the block model (DCF = one block with unit weights)

@dataclass
class BlockModel:
    """Codes of a (block) DCF model.

    B int8 (n_users, R), D int8 (n_items, R): ±1 codes, block ``b`` in
    columns ``starts[b]:starts[b+1]`` (int64 (K+1,)); Wu float64
    (n_users, K), Wi float64 (n_items, K): block weights (ones for DCF);
    X, Y: per block float64 (n, r_b) surrogates; log: one dict per outer
    iteration (objective, loss, flips, seconds).
    """

    B: np.ndarray
    D: np.ndarray
    starts: np.ndarray
    Wu: np.ndarray
    Wi: np.ndarray
    X: list = field(default_factory=list)
    Y: list = field(default_factory=list)
    log: list = field(default_factory=list)
    init_log: list = field(default_factory=list)
    #: float64 (n_users,): the per-user offsets of a ``user_offset`` fit (DCF+bias), else None
    offset: np.ndarray | None = None
    #: whether the relaxed start was reused from an earlier fit in this process
    #: (:func:`shared_start`; ``init_log`` is then that fit's, seconds included)
    init_reused: bool = False
    #: wall and CPU seconds of drawing the start (the earlier fit's when reused)
    init_seconds: tuple = (0.0, 0.0)


def _block_prediction(g, L, R, wu, wi, score="hamming"):
    """float64 (nnz,): one block's weighted scores of every rating (user layout).

    "hamming": ``w_u w_i <l_u, r_i>`` (L, R real or ±1); "phd": ``w_u w_i (m
    - 2 PHD(u, i))`` (L, R ±1 int8; :mod:`phdlib.methods.discrete_phd`).
    """
    out = np.empty(g.nnz)
    if check_score(score) == "hamming":
        _k.weighted_predictions(g.u_indptr, g.u_items, wu, wi, L, R, out)
    else:
        _k.linear_predictions(g.u_indptr, g.u_items, wu, wi, L, *linear_terms(score, "user", R), out)
    return out


def _predict_blocks(g, Bs, Ds, Wu, Wi, score="hamming"):
    return [_block_prediction(g, Bs[b], Ds[b], Wu[:, b].copy(), Wi[:, b].copy(), score)
            for b in range(len(Bs))]


def objective(g: RatingGraph, target, Bs, Ds, Xs, Ys, Wu, Wi, alpha, beta,
              score: str = "hamming", *,
              preds: list[np.ndarray] | None = None) -> tuple[float, float]:
    """(objective, squared loss) of the discrete block model.

    target float64 (nnz,) in the user layout of ``g``; Bs, Ds, Xs, Ys: lists
    over blocks of (n, r_b) arrays. objective = loss
    - 2 alpha sum_b tr(B_b^T X_b) - 2 beta sum_b tr(D_b^T Y_b); the loss of
    the score ``score`` ("hamming": inner products, "phd": ``m - 2 PHD``).
    preds: a list over blocks of float64 (nnz,), the blocks' predictions of
    exactly these codes if the caller has them (:func:`_predict_blocks`'s list,
    the same numbers), else they are computed; a stale list gives a wrong value.
    """
    if preds is None:
        preds = _predict_blocks(g, Bs, Ds, Wu, Wi, score)
    pred = np.sum(preds, axis=0)
    loss = float(_k.squared_error(g.u_indptr, g.u_items, target, pred))
    tr = sum(alpha * float(np.sum(B * X)) + beta * float(np.sum(D * Y))
             for B, D, X, Y in zip(Bs, Ds, Xs, Ys))
    return loss - 2.0 * tr, loss


def _refresh_block(g, Ls, Rs, Xs, Ys, b, wu, wi, preds, total, rng, score="hamming") -> None:
    """After block ``b``'s rows moved: its ``X``, ``Y`` in closed form, then its predictions.

    Ls, Rs: per-block user and item factors (real or ±1); preds: per-block
    predictions float64 (nnz,) of the score ``score``; total: their sum,
    updated in place.
    """
    Xs[b] = balanced_decorrelated(Ls[b], rng)
    Ys[b] = balanced_decorrelated(Rs[b], rng)
    new = _block_prediction(g, Ls[b], Rs[b], wu, wi, score)
    total += new - preds[b]
    preds[b] = new


def relaxed_init(g: RatingGraph, target, sizes, Wu, Wi, alpha, beta, rng, max_iterations=50, tol=1e-5,
                 x_factor=1.0, count_weighted=True, progress=None):
    """Relaxed initialisation (DCF's Eq. 17; CCCF_init.m for several blocks).

    Minimises over real U_b (n_users, r_b), V_b (n_items, r_b)::

        sum (target - sum_b w_u,b w_i,b <u_b, v_b>)^2
        + alpha sum_u k_u |u|^2 + beta sum_i k_i |v|^2
        - 2 alpha x_factor tr(U^T X) - 2 beta x_factor tr(V^T Y)

    (``k_u = n_u`` if ``count_weighted`` else 1) by exact row updates block
    after block, with ``X``, ``Y`` from :func:`balanced_decorrelated`. The
    reference DCF code solves each row with ``2 alpha X`` although its own
    objective gives ``alpha X``: ``x_factor=2`` reproduces it, ``1`` (our
    default) follows the objective. Starts from uniform [0, 1] factors (as
    the reference); stops after ``max_iterations`` rounds or when the largest
    Frobenius change of U, V, X, Y is below ``max(n_users, n_items) * tol``
    (the reference's rule). Returns (Us, Vs, Xs, Ys, log).
    """
    K = len(sizes)
    Us = [rng.random((g.n_users, r)) for r in sizes]
    Vs = [rng.random((g.n_items, r)) for r in sizes]
    Xs = [balanced_decorrelated(U, rng) for U in Us]
    Ys = [balanced_decorrelated(V, rng) for V in Vs]
    preds = _predict_blocks(g, Us, Vs, Wu, Wi)
    total = np.sum(preds, axis=0)
    thresh = max(g.n_users, g.n_items) * tol
    log = []
    for it in range(1, max_iterations + 1):
        t0 = time.perf_counter()
        change = 0.0
        for b in range(K):
            wu, wi = Wu[:, b].copy(), Wi[:, b].copy()
            resid = target - total + preds[b]
            U0, V0, X0, Y0 = Us[b].copy(), Vs[b].copy(), Xs[b], Ys[b]
            _k.ridge_rows(g.u_indptr, g.u_items, resid, wu, wi, Vs[b], float(alpha),
                          bool(count_weighted), x_factor * alpha * Xs[b], Us[b])
            _k.ridge_rows(g.i_indptr, g.i_users, resid[g.i_pos], wi, wu, Us[b], float(beta),
                          bool(count_weighted), x_factor * beta * Ys[b], Vs[b])
            _refresh_block(g, Us, Vs, Xs, Ys, b, wu, wi, preds, total, rng)
            change = max(change, np.linalg.norm(Us[b] - U0), np.linalg.norm(Vs[b] - V0),
                         np.linalg.norm(Xs[b] - X0), np.linalg.norm(Ys[b] - Y0))
        loss = float(_k.squared_error(g.u_indptr, g.u_items, target, total))
        log.append({"iteration": it, "loss": loss, "change": float(change),
                    "seconds": time.perf_counter() - t0})
        if progress is not None:
            progress(f"init {it}: change {change:.3g}")
        if change < thresh:
            break
    return Us, Vs, Xs, Ys, log


def _sign(A):
    S = np.where(A >= 0, 1, -1).astype(np.int8)  # sign with 0 -> +1, as the reference
    return np.ascontiguousarray(S)


def check_ridge(init: str, init_max_iterations: int, **values) -> None:
    """``ValueError`` naming the config key (``alpha=0.1``, ``alpha_grid=[...]``) with a value
    not above 0 (NaN included) where the relaxed start solves ridge problems with it: init
    ``"relaxed"`` with at least one iteration."""
    if init != "relaxed" or init_max_iterations < 1:
        return
    for key, v in values.items():
        if not all(x > 0 for x in np.atleast_1d(np.asarray(v, dtype=float))):
            raise ValueError(f"config {key!r} must be > 0 with init 'relaxed' (the ridge of "
                             f"its row updates); got {v!r}")


def fit_blocks(g: RatingGraph, target, sizes, Wu=None, Wi=None, **kwargs) -> BlockModel:
    """Train a block DCF model; see :func:`_fit_blocks` for the arguments.

    BLAS is held to one thread meanwhile: the kernels are parallel over rows
    and call BLAS per row, and nested BLAS threads oversubscribe the cores.
    """
    import scipy.linalg.cython_blas  # noqa: F401  (load the BLAS numba calls, so that
    import scipy.linalg.cython_lapack  # noqa: F401  threadpoolctl can see and limit it)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _fit_blocks(g, target, sizes, Wu, Wi, **kwargs)


@dataclass
class Start:
    """Where the discrete descent starts (:func:`_start_codes`).

    Bs, Ds: per block int8 ±1 codes (n_users, r_b), (n_items, r_b); Xs, Ys:
    per block float64 surrogates of the same shapes; init_log: one dict per
    relaxed-initialisation round; rng_state: the seeded generator's state
    after the start was drawn, so that a fit from a reused start goes on
    with the same random numbers as one that drew it; seconds, cpu_seconds:
    what drawing it cost (wall and CPU), so that a fit that reuses it can
    report the cost of the fit it equals.
    """

    Bs: list
    Ds: list
    Xs: list
    Ys: list
    init_log: list
    rng_state: dict
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def copy(self) -> "Start":
        """A deep copy (a fit changes its start's codes in place)."""
        return Start([B.copy() for B in self.Bs], [D.copy() for D in self.Ds],
                     [X.copy() for X in self.Xs], [Y.copy() for Y in self.Ys],
                     [dict(r) for r in self.init_log], copy.deepcopy(self.rng_state),
                     self.seconds, self.cpu_seconds)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for arrs in (self.Bs, self.Ds, self.Xs, self.Ys) for a in arrs)


def _start_codes(g, target, sizes, Wu, Wi, alpha, beta, rng, init, init_options, pbar) -> Start:
    """The ±1 codes to start the discrete descent from, drawn with ``rng`` (advanced)."""
    t0, c0 = time.perf_counter(), time.process_time()
    init_log = []
    if init == "relaxed":
        Us, Vs, Xs, Ys, init_log = relaxed_init(
            g, target, sizes, Wu, Wi, alpha, beta, rng, **init_options,
            progress=(pbar.set_postfix_str if pbar is not None else None))
    elif init == "random":
        Us = [rng.standard_normal((g.n_users, r)) for r in sizes]
        Vs = [rng.standard_normal((g.n_items, r)) for r in sizes]
        Xs = [balanced_decorrelated(U, rng) for U in Us]
        Ys = [balanced_decorrelated(V, rng) for V in Vs]
    else:
        raise ValueError(f"init must be 'relaxed' or 'random', got {init!r}")
    return Start([_sign(U) for U in Us], [_sign(V) for V in Vs], Xs, Ys, init_log,
                 copy.deepcopy(rng.bit_generator.state), time.perf_counter() - t0,
                 time.process_time() - c0)


#: The relaxed starts kept in this process (:func:`shared_start`), at most 1 GiB.
STARTS = Reuse("relaxed starts of DCF", 1 << 30)


def _start_key(g, target, sizes, Wu, Wi, alpha, beta, seed, init, init_options) -> str:
    """What a start depends on: the ratings (both layouts and the values), the weights,
    the sizes, the trade-offs, the seed and the initialisation's options (:func:`digest`)."""
    return digest(g.u_indptr, g.u_items, g.i_indptr, g.i_users, g.i_pos, target, Wu, Wi,
                  shape=(g.n_users, g.n_items),
                  sizes=list(sizes), alpha=float(alpha), beta=float(beta), seed=int(seed),
                  init=init, options=sorted(init_options.items()))


def shared_start(key: str, draw: Callable[[], Start]) -> tuple[Start, bool]:
    """``(start, reused)``: a copy of the start kept under ``key`` in this process
    (``reused`` True), else ``draw()``'s, which is kept (:data:`STARTS`).

    DCF, DCF+bias and DCF_PHD start from the same relaxed initialisation (the
    inner-product one; :func:`_fit_blocks`), which is most of a fit's time:
    run one after another in one process (as ``phd reproduce`` runs them:
    :meth:`phdlib.methods.base.Method.shared_work`), the later ones reuse it.
    The key hashes every input (:func:`_start_key`), so a reused start is the
    one the fit would draw, bit for bit. :func:`forget_starts` keeps nothing.
    """
    return STARTS.get(key, draw)


def _start(g, target, sizes, Wu, Wi, alpha, beta, seed, rng, init, init_options, pbar):
    """``(start, reused)`` of a fit: a relaxed start through :func:`shared_start` (``rng``
    then set to the state after it), else one drawn with ``rng``."""
    def draw():
        return _start_codes(g, target, sizes, Wu, Wi, alpha, beta, rng, init, init_options, pbar)

    if init != "relaxed" or not isinstance(seed, (int, np.integer)):  # no key names the seed
        return draw(), False
    start, reused = shared_start(_start_key(g, target, sizes, Wu, Wi, alpha, beta, seed, init,
                                            init_options), draw)
    rng.bit_generator.state = start.rng_state
    return start, reused


def forget_starts() -> None:
    """Keep no relaxed start in this process (:data:`STARTS`)."""
    STARTS.forget()


def _discrete_round(g, target, Bs, Ds, Xs, Ys, Wu, Wi, preds, total, alpha, beta, max_sweeps,
                    rng, score="hamming") -> int:
    """One outer iteration: every block's user codes, item codes, then X, Y. Returns bit flips.

    Updates Bs, Ds, Xs, Ys, preds (lists, per block) and total (float64 (nnz,)) in place.
    score: "hamming" (DCF's inner product) or "phd" (``m - 2 PHD``), the terms
    of :func:`phdlib.methods.discrete_phd.linear_terms`.
    """
    check_score(score)
    flips = 0
    for b in range(len(Bs)):
        wu, wi = Wu[:, b].copy(), Wi[:, b].copy()
        resid = target - total + preds[b]
        flips += int(_k.dcd_rows_linear(g.u_indptr, g.u_items, resid, wu, wi, Bs[b],
                                        *linear_terms(score, "user", Ds[b]), alpha * Xs[b],
                                        int(max_sweeps)).sum())
        flips += int(_k.dcd_rows_linear(g.i_indptr, g.i_users, np.ascontiguousarray(resid[g.i_pos]),
                                        wi, wu, Ds[b], *linear_terms(score, "item", Bs[b]),
                                        beta * Ys[b], int(max_sweeps)).sum())
        _refresh_block(g, Bs, Ds, Xs, Ys, b, wu, wi, preds, total, rng, score)
    return flips


def _weights(g, K, Wu, Wi):
    Wu = np.ones((g.n_users, K)) if Wu is None else np.ascontiguousarray(Wu, dtype=np.float64)
    Wi = np.ones((g.n_items, K)) if Wi is None else np.ascontiguousarray(Wi, dtype=np.float64)
    if Wu.shape != (g.n_users, K) or Wi.shape != (g.n_items, K):
        raise ValueError(f"weights must be ({g.n_users}, {K}) and ({g.n_items}, {K}), "
                         f"got {Wu.shape} and {Wi.shape}")
    return Wu, Wi


def user_offsets(g: RatingGraph, resid) -> np.ndarray:
    """float64 (n_users,): each user's mean of ``resid`` (float64 (nnz,), g's user layout), the
    offset ``o_u`` minimising ``sum_i (resid_ui - o_u)^2``; 0 for a user without ratings."""
    n = np.diff(g.u_indptr)
    sums = np.bincount(np.repeat(np.arange(g.n_users), n), weights=resid, minlength=g.n_users)
    return np.where(n > 0, sums / np.maximum(n, 1), 0.0)


def _fit_blocks(g: RatingGraph, target, sizes, Wu=None, Wi=None, alpha=0.001, beta=0.001, seed=0,
                max_iterations=50, max_sweeps=5, init="relaxed", init_max_iterations=50,
                init_tol=1e-5, init_x_factor=1.0, init_count_weighted=True, tol=None,
                callback: Callable | None = None, progress: bool = False,
                score: str = "hamming", user_offset: bool = False) -> BlockModel:
    """Train a block DCF model (DCF: ``sizes=[r]``, no weights).

    g: the training ratings; target float64 (nnz,): scaled ratings in g's
    user layout; sizes: bits per block; Wu (n_users, K), Wi (n_items, K)
    float64 block weights (default ones); alpha, beta: trade-offs of the
    balance terms; init: "relaxed" (:func:`relaxed_init`) or "random" (signs
    of standard normal draws, CCCF's default); max_iterations: cap of outer
    iterations; max_sweeps: cap of cyclic sweeps per code in one update;
    tol: if given, also stop when the objective decreases by less than
    ``max(n_users, n_items) * tol`` in an outer iteration (CCCF's rule).
    Stops when no bit changes in an outer iteration. ``callback(it, model)``
    runs after each outer iteration (e.g. to validate). score: the score the
    discrete rounds fit, "hamming" (DCF: ``<b_u, d_i>``) or "phd" (DCF_PHD:
    ``m - 2 PHD(u, i)``, :mod:`phdlib.methods.discrete_phd`); the relaxed
    initialisation is the inner-product one either way. user_offset: also
    fit a real offset per user (DCF+bias; :func:`user_offsets`, set before
    every outer iteration's bit updates; ``model.offset``), which the
    objective and the logged loss include.
    """
    sizes = [int(r) for r in sizes]
    check_score(score)
    if not sizes or min(sizes) < 1:
        raise ValueError(f"block sizes must be positive integers, got {sizes}")
    check_ridge(init, init_max_iterations, alpha=alpha, beta=beta)
    Wu, Wi = _weights(g, len(sizes), Wu, Wi)
    target = np.ascontiguousarray(target, dtype=np.float64)
    rng = np.random.default_rng(seed)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    pbar = None
    if progress:
        from tqdm import tqdm  # plain text bar: tqdm.auto warns without ipywidgets in notebooks
        pbar = tqdm(total=max_iterations, desc=f"DCF blocks {sizes}", leave=False)
    init_options = {"max_iterations": init_max_iterations, "tol": init_tol,
                    "x_factor": init_x_factor, "count_weighted": init_count_weighted}

    start, reused = _start(g, target, sizes, Wu, Wi, alpha, beta, seed, rng, init, init_options,
                           pbar)
    Bs, Ds, Xs, Ys, init_log = start.Bs, start.Ds, start.Xs, start.Ys, start.init_log
    preds = _predict_blocks(g, Bs, Ds, Wu, Wi, score)
    total = np.sum(preds, axis=0)
    model = BlockModel(np.hstack(Bs), np.hstack(Ds), starts, Wu, Wi, Xs, Ys, [], init_log,
                       init_reused=reused, init_seconds=(start.seconds, start.cpu_seconds))
    # DCF+bias: the codes fit ``target - o_u``, with o_u set exactly before each round
    rating_user = np.repeat(np.arange(g.n_users), np.diff(g.u_indptr)) if user_offset else None
    fit_to = target
    if user_offset:
        model.offset = user_offsets(g, target - total)
        fit_to = target - model.offset[rating_user]
    obj, loss = objective(g, fit_to, Bs, Ds, Xs, Ys, Wu, Wi, alpha, beta, score, preds=preds)
    model.log.append({"iteration": 0, "objective": obj, "loss": loss, "flips": 0, "seconds": 0.0})
    for it in range(1, max_iterations + 1):
        t0 = time.perf_counter()
        if user_offset:
            model.offset = user_offsets(g, target - total)
            fit_to = target - model.offset[rating_user]
        flips = _discrete_round(g, fit_to, Bs, Ds, Xs, Ys, Wu, Wi, preds, total, alpha, beta,
                                max_sweeps, rng, score)
        prev = model.log[-1]["objective"]
        obj, loss = objective(g, fit_to, Bs, Ds, Xs, Ys, Wu, Wi, alpha, beta, score, preds=preds)
        model.log.append({"iteration": it, "objective": obj, "loss": loss, "flips": flips,
                          "seconds": time.perf_counter() - t0})
        model.B, model.D = np.hstack(Bs), np.hstack(Ds)
        if pbar is not None:
            pbar.update(1)
            pbar.set_postfix(flips=flips, obj=f"{obj:.4g}")
        if callback is not None:
            callback(it, model)
        if flips == 0 or (tol is not None and prev - obj < max(g.n_users, g.n_items) * tol):
            break
    if pbar is not None:
        pbar.close()
    model.X, model.Y = Xs, Ys
    return model


def pair_scores(model: BlockModel, user, item) -> np.ndarray:
    """float64 (p,): ``sum_b w_u,b w_i,b <b_u,b, d_i,b>`` for each (user, item) pair."""
    return _k.pair_scores(np.ascontiguousarray(user, dtype=np.int64),
                          np.ascontiguousarray(item, dtype=np.int64),
                          model.B, model.D, model.starts, model.Wu, model.Wi)


