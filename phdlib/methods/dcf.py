"""Discrete Collaborative Filtering (DCF; Zhang et al., SIGIR 2016) as a method.

The algorithm is :func:`phdlib.methods.discrete.fit_blocks` with one block and
unit weights; a user ranks items by the Hamming distance of the codes.
:func:`fit_point` (shared with CCCF) fits one configuration of the block model.
"""
from __future__ import annotations

import time

from .. import codes as C
from . import spec as S
from .base import TUNE_RATINGS, Method
from .fitted import CodeModel
from .discrete import RatingGraph, check_ridge, fit_blocks, forget_starts, scale_ratings

#: The alpha (= beta) values searched on validation: the DCF paper tunes both
#: trade-off parameters over powers of ten; we search 1e-4 .. 1.
PAPER_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)

#: Implementation revision, part of every config (hence of the results store's
#: key): bump it when a change alters what the method computes.
IMPL = 3

#: alpha = beta of the single-point run (``tune=False``, the quick profile): the
#: point the validation grid chooses on ML-1M with split and model seed 0 (the
#: book's section "DCF and CCCF" reruns the grid); 0.1 elsewhere.
CHOSEN = {("ml-1m", 32): 0.1, ("ml-1m", 64): 1.0}


def block_log(model):
    """The training trace of a block model: the relaxed initialisation, then the discrete rounds."""
    import pandas as pd

    init = pd.DataFrame(model.init_log)
    if len(init):
        init.insert(0, "phase", "init")
    disc = pd.DataFrame(model.log)
    disc.insert(0, "phase", "discrete")
    return pd.concat([init, disc], ignore_index=True)


def fit_point(split, bits: int, seed: int, config: dict, sizes, Wu=None, Wi=None,
              scale: float | None = None, progress: bool = False, score: str = "hamming",
              user_offset: bool = False):
    """Fit one configuration of the block model on ``split.train``.

    Returns ``(model, info)``: the :class:`phdlib.methods.discrete.BlockModel`
    and scalars (outer iterations, initialisation iterations, converged,
    training wall and CPU seconds, whether the relaxed start was reused).
    A fit that reuses its start (``init_reused``) reports the seconds of the
    fit it equals: its own plus those of drawing the start, so a run's cost
    does not depend on which method of the family ran first; the time it
    really took is the cell's in the grid's manifest. ``scale``: the target range ``[-scale,
    scale]`` of the ratings (default ``bits``). ``score``: the score the
    discrete rounds fit, ``"hamming"`` (DCF, CCCF) or ``"phd"`` (DCF_PHD;
    :func:`phdlib.methods.discrete.fit_blocks`). ``user_offset``: also fit a real
    offset per user (DCF+bias, :mod:`phdlib.methods.dcf_bias`).
    """
    t0, c0 = time.perf_counter(), time.process_time()
    ds = split.dataset
    g = RatingGraph.from_ratings(split.train, ds.n_users, ds.n_items)
    lo, hi = ds.rating_scale
    target = scale_ratings(g.rating, lo, hi, float(bits if scale is None else scale))
    model = fit_blocks(g, target, sizes, Wu, Wi, alpha=float(config["alpha"]),
                       beta=float(config["beta"]), seed=seed,
                       max_iterations=int(config["max_iterations"]),
                       max_sweeps=int(config["max_sweeps"]), init=config["init"],
                       init_max_iterations=int(config["init_max_iterations"]),
                       init_tol=float(config["init_tol"]),
                       init_x_factor=float(config["init_x_factor"]),
                       init_count_weighted=bool(config["init_count_weighted"]),
                       tol=config.get("tol"), progress=progress, score=score,
                       user_offset=user_offset)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if model.init_reused:
        wall, cpu = wall + model.init_seconds[0], cpu + model.init_seconds[1]
    info = {"iterations": len(model.log) - 1, "init_iterations": len(model.init_log),
            "init_reused": bool(model.init_reused),
            "converged": bool(model.log[-1]["flips"] == 0),
            "train_seconds": wall, "train_cpu_seconds": cpu}
    return model, info


def packed(model) -> dict:
    """The block model's codes, packed (uint64, :func:`phdlib.codes.pack`)."""
    return {"user_codes": C.pack(model.B, encoding="pm1").words,
            "item_codes": C.pack(model.D, encoding="pm1").words}


#: The sections and types of DCF's config keys (the ranges are checked where it trains).
CONFIG_SPEC = S.ConfigSpec(
    hyper={"alpha": S.real(doc="trade-off of the balance term"),
           "beta": S.real(doc="trade-off of the decorrelation term"),
           "max_iterations": S.integer(doc="cap of outer iterations"),
           "max_sweeps": S.integer(doc="cap of cyclic bit sweeps per code"),
           "init": S.choice("relaxed", "random", doc="initialisation of the codes"),
           "init_max_iterations": S.integer(doc="cap of the relaxed initialisation's iterations"),
           "init_tol": S.real(doc="tolerance of the relaxed initialisation"),
           "init_x_factor": S.real(doc="factor of alpha X in the initialisation (1 or 2)"),
           "init_count_weighted": S.flag("ridge alpha n_u in the initialisation")},
    tuning={"tune": S.TUNE, "tune_ratings": S.TUNE_RATINGS,
            "alpha_grid": S.reals(doc="alpha values of the grid"),
            "beta_grid": S.reals(doc="beta values of the grid"),
            "grid_tied": S.flag("only the grid's diagonal alpha = beta")},
    evaluation={"ties": S.TIES},
)


class DCFMethod(Method):
    """Registry method ``dcf``.

    Config:

    - ``alpha``, ``beta``: trade-offs of the balance/decorrelation terms for
      the single-point run (``tune=False``; default :data:`CHOSEN`);
    - ``tune``: True tunes over ``alpha_grid`` x ``beta_grid``
      (:data:`PAPER_GRID`) on validation NDCG@10; with ``grid_tied``
      (default) only the diagonal alpha = beta (5 points, not 25: our
      compute budget);
    - ``max_iterations`` (50) and ``max_sweeps`` (5): the reference's caps of
      outer iterations and of cyclic bit sweeps per code;
    - ``init`` ("relaxed"), ``init_max_iterations`` (50), ``init_tol`` (1e-5),
      ``init_x_factor`` (1: the objective's ``alpha X``; 2 reproduces the
      reference's ``2 alpha X``), ``init_count_weighted`` (True: ridge
      ``alpha n_u``, as the reference);
    - ``ties``: tie rule of the evaluation ("expected").
    """

    name = "dcf"
    label = "DCF"
    description = "discrete collaborative filtering (Zhang et al. 2016)"
    ranks_by = "hamming"
    learns_codes = True
    in_paper = True
    model = CodeModel
    cost = 5
    color = "tab:orange"
    #: the quick profile: the single point (no grid), 10 outer iterations
    quick = {"tune": False, "max_iterations": 10}
    config_spec = CONFIG_SPEC

    def defaults(self, dataset: str, bits: int) -> dict:
        a = CHOSEN.get((dataset, int(bits)), 0.1)
        return {"alpha": a, "beta": a, "tune": True, "tune_ratings": TUNE_RATINGS,
                "alpha_grid": list(PAPER_GRID), "beta_grid": list(PAPER_GRID), "grid_tied": True,
                "max_iterations": 50, "max_sweeps": 5, "init": "relaxed", "init_max_iterations": 50,
                "init_tol": 1e-5, "init_x_factor": 1.0, "init_count_weighted": True,
                "ties": "expected", "impl": IMPL}

    def grid(self, config: dict, bits: int) -> list[dict]:
        if not config["tune"]:
            return []
        check_ridge(config["init"], config["init_max_iterations"], alpha_grid=config["alpha_grid"],
                    **({} if config["grid_tied"] else {"beta_grid": config["beta_grid"]}))
        if config["grid_tied"]:
            pairs = [(a, a) for a in config["alpha_grid"]]
        else:
            pairs = [(a, b) for a in config["alpha_grid"] for b in config["beta_grid"]]
        return [{"alpha": float(a), "beta": float(b), "tune": False} for a, b in pairs]

    def shared_work(self, config: dict, bits: int) -> tuple | None:
        """The relaxed starts of the fit (and of its grid): the same for DCF, DCF+bias and
        DCF_PHD (:func:`phdlib.methods.discrete.shared_start`). A tuned config's
        single-point alpha and beta are not part of it (the grid chooses them)."""
        if config["init"] != "relaxed":
            return None
        return self.config_work(
            "dcf relaxed start", config,
            ["init_max_iterations", "init_tol", "init_x_factor", "init_count_weighted"],
            grid=["tune_ratings", "alpha_grid", "beta_grid", "grid_tied"], point=["alpha", "beta"])

    def forget_shared_work(self) -> None:
        forget_starts()

    #: the score the discrete rounds fit (:func:`fit_point`'s ``score``)
    fits = "hamming"
    #: fit a real offset per user in training (:func:`fit_point`'s ``user_offset``)
    user_offset = False

    def fit(self, split, bits, seed, config, progress=False) -> CodeModel:
        model, info = fit_point(split, bits, seed, config, [int(bits)], progress=progress,
                                score=self.fits, user_offset=self.user_offset)
        return CodeModel(int(bits), packed(model), self.ranks_by, block_log(model), info)


class DCFVariant(DCFMethod):
    """A method made of DCF's learner with another score or a per-user offset (DCF_PHD,
    DCF+bias): DCF's config keys, grid and quick profile; its own ``impl`` and single-point
    ``alpha`` (= ``beta``), which subclasses set with :attr:`fits`, :attr:`user_offset` and
    :attr:`ranks_by`."""

    #: alpha = beta of the single-point run (``tune=False``; the full profile tunes the grid)
    alpha = 0.1
    #: the variant's implementation revision (its own; DCF's is :data:`IMPL`)
    impl = 1

    def defaults(self, dataset: str, bits: int) -> dict:
        return {**super().defaults(dataset, bits), "alpha": self.alpha, "beta": self.alpha,
                "impl": self.impl}


#: The registry entry ``dcf``.
DCF = DCFMethod()

