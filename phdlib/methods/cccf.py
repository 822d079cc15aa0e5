"""Compositional Coding for Collaborative Filtering (CCCF; Liu et al., SIGIR 2019).

A user's (item's) code is ``K`` blocks of DCF-style ±1 codes, block ``b`` of
``r_b`` bits, plus one real weight per block. The model predicts

    s_ui ~ sum_b w_u,b * w_i,b * <b_u,b, d_i,b>

and ranks a user's items by that score (larger first). The codes are trained
as in DCF (:func:`phdlib.methods.discrete.fit_blocks`: discrete coordinate
descent bit by bit, block after block, each block fitting the residual of the
others, with its own balance/decorrelation surrogate). The weights are fixed
before training, as in the reference MATLAB code (3140102441/CCCF,
``cal_weight.m``):

1. a real-valued MF gives user vectors ``P`` and item vectors ``Q``;
2. k-medoids picks ``K`` anchor users (items) (:func:`kmedoids`);
3. similarity to anchor ``a``: ``sim = 1 - (2/pi) arccos(cos(p_u, p_a))`` in
   [0, 1]; weight ``0.75 (1 - ((1 - sim)/width)^2)`` clipped at 0 (an
   Epanechnikov kernel, ``width = 0.7``);
4. each row's weights normalised to sum 1 over the blocks.

Ratings are scaled to ``[-S, S]`` with ``S = (sum_b r_b) / K^2`` (the
reference: ``r / K`` for ``K`` equal blocks of ``r`` bits, which is what the
score reaches with uniform weights ``1/K``).

The WWW'21 paper counts each real weight as 16 bits of the code budget (a
single block: no weight, it would be constant) and tries every layout of
block sizes {8, 16, 32, 64} that fits 32 or 64 bits (:func:`layouts`). We
store the weights as float16, so the evaluated model is the one the budget
counts.
"""
from __future__ import annotations

import itertools

import numpy as np

from . import dcf as _dcf
from . import spec as S
from .base import TUNE_RATINGS, Method
from .discrete import check_ridge, forget_starts
from .fitted import BlockCodeModel
from . import mf_methods as _mf

__all__ = ["layouts", "layout_cost", "kmedoids", "anchor_weights", "block_weights", "CCCF",
           "CCCFMethod", "BLOCK_SIZES", "WEIGHT_BITS"]

#: Block sizes the paper tries, and the bits a real weight counts for.
BLOCK_SIZES = (8, 16, 32, 64)
WEIGHT_BITS = 16


def layout_cost(sizes) -> int:
    """Bits of one user's (item's) code: the blocks, plus 16 per weight if more than one block."""
    sizes = list(sizes)
    return int(sum(sizes) + (WEIGHT_BITS * len(sizes) if len(sizes) > 1 else 0))


def layouts(bits: int, sizes=BLOCK_SIZES) -> list[list[int]]:
    """Every multiset of block sizes whose :func:`layout_cost` is at most ``bits``.

    Sorted by number of blocks, then sizes descending within a layout
    (e.g. 64 bits: [64], [32], [16], [8], [16, 16], [16, 8], [8, 8]).
    """
    out = []
    for k in range(1, bits // min(sizes) + 1):
        found = False
        for combo in itertools.combinations_with_replacement(sorted(sizes, reverse=True), k):
            if layout_cost(combo) <= bits:
                out.append(list(combo))
                found = True
        if not found and k > 1:
            break
    return out


def kmedoids(Z: np.ndarray, k: int, seed: int = 0, max_iter: int = 100) -> np.ndarray:
    """Indices (int64 (k,)) of ``k`` medoids of the rows of ``Z`` (squared Euclidean).

    k-medoids++ seeding, then alternate: assign rows to the nearest medoid,
    move each medoid to the cluster member with the least total squared
    distance to its cluster (for squared Euclidean: the member nearest the
    cluster mean), until the medoids stop changing. MATLAB's ``kmedoids``
    (the reference) uses the same distance and a similar scheme.
    """
    Z = np.asarray(Z, dtype=np.float64)
    n = Z.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"k must be in 1..{n} (the number of rows), got {k}")
    rng = np.random.default_rng(seed)
    sq = np.einsum("ij,ij->i", Z, Z)
    med = [int(rng.integers(n))]
    d = sq + sq[med[0]] - 2 * Z @ Z[med[0]]
    for _ in range(1, k):
        p = np.maximum(d, 0)
        nxt = int(rng.choice(n, p=p / p.sum())) if p.sum() > 0 else int(rng.integers(n))
        med.append(nxt)
        d = np.minimum(d, sq + sq[nxt] - 2 * Z @ Z[nxt])
    med = np.array(med, dtype=np.int64)
    for _ in range(max_iter):
        D = sq[:, None] + sq[med][None, :] - 2 * Z @ Z[med].T
        lab = np.argmin(D, axis=1)
        new = med.copy()
        for c in range(k):
            idx = np.flatnonzero(lab == c)
            if idx.size == 0:
                continue
            mean = Z[idx].mean(axis=0)
            new[c] = idx[np.argmin(np.sum((Z[idx] - mean) ** 2, axis=1))]
        if np.array_equal(new, med):
            break
        med = new
    return med


def anchor_weights(Z: np.ndarray, anchors: np.ndarray, width: float = 0.7) -> np.ndarray:
    """Kernel weights of every row to every anchor, normalised over anchors.

    Z float (n, d); anchors int (K,). Returns float64 (n, K) rows summing to
    1. A row whose kernel is 0 for every anchor (angle to each above
    ``width * 90`` degrees) or has a zero vector gets uniform weights ``1/K``
    (the reference leaves it all zero, predicting 0 for every pair).
    """
    Z = np.asarray(Z, dtype=np.float64)
    norms = np.linalg.norm(Z, axis=1)
    A = Z[anchors]
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = (Z @ A.T) / (norms[:, None] * norms[anchors][None, :])
    cos = np.clip(np.nan_to_num(cos, nan=0.0), -1.0, 1.0)
    sim = 1.0 - (2.0 / np.pi) * np.arccos(cos)
    w = np.clip(0.75 * (1.0 - ((1.0 - sim) / width) ** 2), 0.0, None)
    tot = w.sum(axis=1, keepdims=True)
    K = len(anchors)
    return np.where(tot > 0, w / np.where(tot > 0, tot, 1.0), 1.0 / K)


def block_weights(split, K: int, config: dict, seed: int = 0):
    """(Wu (n_users, K), Wi (n_items, K), info) from the MF named by ``config``.

    config keys: ``weights`` ("mf-sgd": :func:`phdlib.methods.mf.fit_sgd`
    with ``mf_lr``, ``mf_reg``, ``mf_epochs``; "mf-als":
    :func:`phdlib.methods.mf.fit_als` with ``mf_reg``, ``mf_epochs`` as
    epochs; "uniform": all ``1/K``), ``mf_dim`` (latent size), ``mf_center``
    (subtract the mean vector before the cosine), ``width`` (kernel width),
    ``weight_dtype`` ("float16": weights rounded to the 16 bits counted).
    With ``K = 1`` the weight is 1 (no weight is stored or counted).
    """
    ds = split.dataset
    info = {}
    if K == 1:
        return np.ones((ds.n_users, 1)), np.ones((ds.n_items, 1)), info
    src = config["weights"]
    if src == "uniform":
        Wu, Wi = np.full((ds.n_users, K), 1.0 / K), np.full((ds.n_items, K), 1.0 / K)
    elif src in ("mf-sgd", "mf-als"):
        alg = "sgd" if src == "mf-sgd" else "als"
        opts = {"lr": float(config["mf_lr"]), "init": "uniform01"} if alg == "sgd" else {}
        passes = int(config["mf_epochs"])
        path = _mf.fit_path(alg, split, int(config["mf_dim"]), seed, float(config["mf_reg"]),
                            [passes], **opts)
        P, Q = (np.asarray(a, dtype=np.float64) for a in path[passes][:2])
        if config["mf_center"]:
            P, Q = P - P.mean(axis=0), Q - Q.mean(axis=0)
        au, ai = kmedoids(P, K, seed=seed), kmedoids(Q, K, seed=seed + 1)
        Wu = anchor_weights(P, au, float(config["width"]))
        Wi = anchor_weights(Q, ai, float(config["width"]))
        info = {"anchor_users": au.tolist(), "anchor_items": ai.tolist()}
    else:
        raise ValueError(f"config 'weights' must be 'mf-sgd', 'mf-als' or 'uniform', got {src!r}")
    if config["weight_dtype"] == "float16":
        Wu, Wi = Wu.astype(np.float16).astype(np.float64), Wi.astype(np.float16).astype(np.float64)
    elif config["weight_dtype"] != "float64":
        raise ValueError(f"weight_dtype must be 'float16' or 'float64', got {config['weight_dtype']!r}")
    # how far from uniform the weights are: mean over rows of the largest weight
    info.update({"user_weight_max_mean": float(Wu.max(axis=1).mean()),
                 "item_weight_max_mean": float(Wi.max(axis=1).mean()),
                 "user_weight_std": float(Wu.std()), "item_weight_std": float(Wi.std())})
    return Wu, Wi, info


#: The sections and types of CCCF's config keys (the ranges are checked where it trains).
CONFIG_SPEC = S.ConfigSpec(
    hyper={"blocks": S.integers(1, doc="block sizes of the single point, bits"),
           "alpha": S.real(doc="balance trade-off of the user codes"),
           "beta": S.real(doc="balance trade-off of the item codes"),
           "weights": S.choice("mf-sgd", "mf-als", "uniform", doc="source of the block weights"),
           "mf_dim": S.integer(1, none=True, doc="MF dimension (None: the largest block)"),
           "mf_lr": S.real(doc="MF learning rate"),
           "mf_reg": S.real(doc="MF regularisation"),
           "mf_epochs": S.integer(doc="MF epochs"),
           "mf_center": S.flag("centre the MF factors before choosing anchors"),
           "width": S.real(doc="width of the anchor weights"),
           "weight_dtype": S.choice("float16", "float64", doc="precision of the weights"),
           "init": S.choice("relaxed", "random", doc="initialisation of the codes"),
           "init_max_iterations": S.integer(doc="cap of the relaxed initialisation's iterations"),
           "init_tol": S.real(doc="tolerance of the relaxed initialisation"),
           "init_x_factor": S.real(doc="factor of alpha X in the initialisation"),
           "init_count_weighted": S.flag("ridge alpha n_u in the initialisation"),
           "max_iterations": S.integer(doc="cap of outer iterations"),
           "max_sweeps": S.integer(doc="cap of cyclic bit sweeps per code"),
           "tol": S.real(none=True, doc="stop when the objective decreases by less (relative)")},
    tuning={"tune": S.TUNE, "tune_ratings": S.TUNE_RATINGS,
            "alpha_grid": S.reals(doc="alpha (= beta) values of the grid"),
            "layouts": S.Key("list", none=True, doc="block layouts of the grid (None: layouts(bits))")},
    evaluation={"ties": S.TIES},
)


class CCCFMethod(Method):
    """Registry method ``cccf`` (see :mod:`phdlib.methods`).

    Config:

    - ``blocks``: block sizes of the single-point run (``tune=False``);
      its :func:`layout_cost` must not exceed ``bits``. Default: one block
      of ``bits``, the layout the validation search chooses on ML-1M at 32
      and 64 bits (see the book's section "DCF and CCCF");
    - ``alpha``, ``beta``: balance trade-offs (the reference: 1e-3);
    - ``tune``: True runs every layout of :func:`layouts` (bits) x every
      ``alpha_grid`` value (``beta = alpha``) as its own stored run and keeps
      the best validation NDCG@10;
    - ``weights``, ``mf_dim`` (None: the largest block, as the reference's
      ``MF(Train, r)``), ``mf_lr``, ``mf_reg``, ``mf_epochs``, ``mf_center``,
      ``width``, ``weight_dtype``: see :func:`block_weights`;
    - ``init``: "random" (the reference's default) or "relaxed"
      (``CCCF_init.m``: ridge ``alpha |u|^2``, ``init_count_weighted=False``,
      linear term ``2 alpha X``, ``init_x_factor=2``);
    - ``max_iterations`` (10), ``max_sweeps`` (10), ``tol`` (1e-7): the reference's
      caps and its stopping rule on the objective's decrease;
    - ``ties``: tie rule of the evaluation.
    """

    name = "cccf"
    label = "CCCF"
    description = "compositional coding for collaborative filtering (Liu et al. 2019)"
    model, ranks_by = BlockCodeModel, "score"   # weighted blocks: a real-valued score
    learns_codes = in_paper = True
    cost = 5
    color = "tab:green"
    #: the quick profile: the single point (one block of ``bits``), no grid
    quick = {"tune": False}
    config_spec = CONFIG_SPEC

    def forget_shared_work(self) -> None:
        """A relaxed start (``init="relaxed"``) is kept like DCF's: drop it."""
        forget_starts()

    def defaults(self, dataset: str, bits: int) -> dict:
        return {"blocks": [int(bits)], "alpha": 1e-3, "beta": 1e-3,
                "tune": True, "tune_ratings": TUNE_RATINGS, "alpha_grid": [1e-3, 1e-2, 1e-1],
                "layouts": None,
                "weights": "mf-sgd", "mf_dim": None, "mf_lr": 0.001, "mf_reg": 0.01,
                "mf_epochs": 10, "mf_center": False, "width": 0.7, "weight_dtype": "float16",
                "init": "random", "init_max_iterations": 10, "init_tol": 1e-7,
                "init_x_factor": 2.0, "init_count_weighted": False, "max_iterations": 10,
                "max_sweeps": 10, "tol": 1e-7, "ties": "expected", "impl": _dcf.IMPL}

    def grid(self, config: dict, bits: int) -> list[dict]:
        if not config["tune"]:
            return []
        check_ridge(config["init"], config["init_max_iterations"],
                    alpha_grid=config["alpha_grid"])
        lays = config["layouts"] if config["layouts"] is not None else layouts(int(bits))
        return [{"blocks": list(map(int, lay)), "alpha": float(a), "beta": float(a), "tune": False}
                for lay in lays for a in config["alpha_grid"]]

    def fit(self, split, bits, seed, config, progress=False) -> BlockCodeModel:
        sizes = [int(s) for s in config["blocks"]]
        cost = layout_cost(sizes)
        if cost > bits:
            raise ValueError(f"blocks {sizes} cost {cost} bits (16 per weight when more than one "
                             f"block), over the budget of {bits}")
        K = len(sizes)
        cfg = dict(config)
        if cfg["mf_dim"] is None:
            cfg["mf_dim"] = max(sizes)
        Wu, Wi, winfo = block_weights(split, K, cfg, seed)
        model, info = _dcf.fit_point(split, bits, seed, config, sizes, Wu, Wi,
                                     scale=sum(sizes) / K**2, progress=progress)
        arrays = _dcf.packed(model)
        if K > 1:
            arrays.update(user_weights=model.Wu.astype(np.float32),
                          item_weights=model.Wi.astype(np.float32), block_starts=model.starts)
        info.update(cost_bits=cost, **{f"weights_{k}": v for k, v in winfo.items()})
        return BlockCodeModel(int(bits), arrays, "score", _dcf.block_log(model), info)


#: The registry entry ``cccf``.
CCCF = CCCFMethod()
