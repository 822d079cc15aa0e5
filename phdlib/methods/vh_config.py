"""The config of variational hashing (VH, VH_PHD, VH+bias): its keys, defaults and checks.

One config dict holds every knob of a VH run (:func:`default_config`; its
keys and values make the run key, so they never change silently): the
distance and the per-user bias (which method), the training-time and
evaluation-time sampling (:data:`SAMPLINGS`), the rating target map
(:data:`TARGET_MAPS`, read by :func:`phdlib.methods.vh_model.rating_target`),
the optimiser and noise settings, the training budget (:data:`BUDGET`) and
the tuning grid (:data:`LR_GRID` x :data:`SAMPLING_GRID`, with the
single-point defaults :data:`SINGLE_POINT` that grid chooses).
:func:`check_config` names the first key whose value is not allowed.

The lowest of the VH modules, below the model (:mod:`.vh_model`), the
training step (:mod:`.vh_step`) and the training and the methods
(:mod:`.vh`); it needs no PyTorch, so listing, labelling and configuring
the methods imports none.
"""
from __future__ import annotations

import math

import numpy as np

from ..codes.distances import DISTANCE_NAMES
from ..evaluation.metrics import METRICS
from . import spec as S
from .base import TUNE_RATINGS

#: Bit sampling, in training (``train_sampling``) and for the codes (``eval_sampling``).
SAMPLINGS = ("stochastic", "deterministic")
#: How a rating becomes the target in ``[-m, m]`` (``target_map``): the released code's or min-max.
TARGET_MAPS = ("released", "minmax")

#: The training-budget rule applied to VH and VH_PHD alike, chosen on
#: validation data only (chapter "Variational hashing"): validate every 750
#: iterations, patience 5 evaluations, but early stopping may start only at
#: iteration 20,000 (the released code lets it start at once, which stops VH
#: on its initial plateau, at chance). Training runs whole evaluation
#: intervals, so ``max_iterations`` is reached at the next multiple of
#: ``eval_every`` (200,250 for the defaults); a ``max_iterations`` below
#: ``eval_every`` is warned about, since it would still train one interval.
BUDGET = {"eval_every": 750, "patience": 5, "min_iterations": 20_000, "max_iterations": 200_000}

#: Learning rate and training-time sampling of the single-point run
#: (``tune=False``: the quick profile, Figure 4's cells), per method: the
#: validation choice of the tuning grid at 64 bits on ML-1M, seed 0 (VH: 0.005
#: and deterministic training; VH_PHD and VH+bias: 0.005 and stochastic
#: training). The paper's learning rate for both models is 0.001.
SINGLE_POINT = {"vh": (0.005, "deterministic"), "vh-phd": (0.005, "stochastic"),
                "vh-bias": (0.005, "stochastic")}

#: The tuning grid: learning rates of the paper's grid {0.005, 0.001} (0.0005
#: only lengthens VH's plateau) and the released code's two samplings.
LR_GRID = [0.005, 0.001]
SAMPLING_GRID = ["stochastic", "deterministic"]

#: Implementation revision, part of every config (hence of the run key).
IMPL = 1


#: The sections and types of VH's config keys (:class:`phdlib.methods.spec.ConfigSpec`);
#: :func:`check_config` checks the ranges when training starts.
CONFIG_SPEC = S.ConfigSpec(
    hyper={
        "distance": S.choice(*DISTANCE_NAMES, doc="the code distance trained and ranked by"),
        "user_bias": S.flag("a learned per-user bias in training (VH+bias)"),
        "lr": S.real(doc="Adam's learning rate"),
        "train_sampling": S.choice(*SAMPLINGS, doc="bit sampling in training"),
        "eval_sampling": S.choice(*SAMPLINGS, doc="bit sampling of the stored codes"),
        "batch_size": S.integer(doc="ratings per step"),
        "init_range": S.real(doc="embeddings drawn uniformly in [-init_range, init_range]"),
        "user_mask_grad": S.flag("gradient through the user's mask (released code: True)"),
        "target_map": S.choice(*TARGET_MAPS, doc="rating -> target in [-m, m]"),
        "noise_std": S.real(0, doc="rating noise standard deviation, rating units"),
        "noise_decay": S.real(0, 1, doc="factor on noise_std after each iteration"),
        "kl_weight": S.real(0, doc="weight of the KL term (released: 0)"),
        "stop_metric": S.choice(*METRICS, doc="validation metric of early stopping"),
        "eval_every": S.integer(doc="iterations between validations"),
        "patience": S.integer(doc="validations without improvement that stop training"),
        "min_iterations": S.real(0, doc="no early stop before this iteration"),
        "max_iterations": S.integer(doc="iteration cap"),
        "device": S.text(doc="'auto', 'cpu' or a torch device"),
    },
    tuning={"tune": S.TUNE, "tune_bits": S.TUNE_BITS, "tune_ratings": S.TUNE_RATINGS,
            "lr_grid": S.reals(doc="learning rates of the grid"),
            "train_sampling_grid": S.texts(*SAMPLINGS, doc="training samplings of the grid")},
    evaluation={"ties": S.TIES, "discount": S.DISCOUNT},
)


#: The optimisers a config may name (key ``adam``, declared by :data:`LAZY_CONFIG_SPEC`
#: only): ``"dense"``, the paper's Adam, which decays every row every step (a config
#: without the key means it, so that the paper's methods keep their run keys), and
#: ``"lazy"``, Adam on the rows a batch touches only.
ADAMS = ("dense", "lazy")

#: ``rows="auto"`` updates a table sparsely when it has at least this many rows per
#: rating of a batch (a row is then touched every 20 steps or fewer times on average).
#: Measured on one thread at 64 bits, on ratings as skewed as the datasets' own (their
#: cached splits): with ML-10M's 9,708 items (24 rows per rating) sparse, a step took
#: 13% (VH) and 6% (VH_PHD) less time after 6,000 steps, and 5% less (VH) after
#: 40,000; with ML-1M's two tables sparse (15 and 9 rows per rating), 1.3 and 1.4
#: times as long. A popular row is touched every step and replays nothing, which the
#: uniform ratings of ``phd bench --train`` leave out: there the two are level at
#: ML-10M's items.
SPARSE_GAP = 20

#: The config of the lazy-Adam variants: VH's, and the key ``adam``.
LAZY_CONFIG_SPEC = S.ConfigSpec(
    hyper={**CONFIG_SPEC.hyper,
           "adam": S.choice(*ADAMS, doc="Adam on every row every step (dense) or on the "
                                        "batch's rows only (lazy)")},
    tuning=CONFIG_SPEC.tuning, evaluation=CONFIG_SPEC.evaluation,
)


def default_config(distance: str, dataset: str = "ml-1m", bits: int = 64,
                   user_bias: bool = False, adam: str = "dense") -> dict:
    """The full default config of the model (every knob of :func:`phdlib.methods.vh.fit`).

    adam: ``"lazy"`` adds the key ``adam`` (:data:`ADAMS`); ``"dense"`` leaves it out.
    """
    if adam not in ADAMS:
        raise ValueError(f"adam must be one of {ADAMS}, got {adam!r}")
    if distance not in DISTANCE_NAMES:
        raise ValueError(f"distance must be one of {DISTANCE_NAMES}, got {distance!r}")
    name = "vh-phd" if distance == "phd" else "vh-bias" if user_bias else "vh"
    lr, sampling = SINGLE_POINT[name]
    cfg = {
        "distance": distance, "user_bias": bool(user_bias),
        "lr": lr, "train_sampling": sampling,
        "tune": False, "tune_bits": 64, "tune_ratings": TUNE_RATINGS, "lr_grid": list(LR_GRID),
        "train_sampling_grid": list(SAMPLING_GRID),
        "batch_size": 400, "init_range": 1.0, "eval_sampling": "deterministic",
        "user_mask_grad": True, "target_map": "released", "noise_std": 1.0,
        "noise_decay": 0.9999, "kl_weight": 0.0, "stop_metric": "ndcg@10",
        "ties": "expected", "discount": "paper", "device": "auto", "impl": IMPL,
    }
    cfg.update(BUDGET)
    if adam != "dense":
        cfg["adam"] = adam
    return cfg


#: The largest mini-batch (ratings a step): beyond it a forged value only allocates.
MAX_BATCH = 2**26
#: The largest iteration count of any budget key (a billion steps is months of training).
MAX_ITERATIONS = 10**9


def check_config(cfg: dict) -> None:
    """Raise ``ValueError`` naming the first config key whose value is not allowed."""
    def choice(key, allowed):
        if cfg[key] not in allowed:
            raise ValueError(f"config {key!r} must be one of {allowed}, got {cfg[key]!r}")

    def positive(key, integer=False):
        v = cfg[key]
        ok = (isinstance(v, (int, np.integer)) and not isinstance(v, bool)) if integer else \
            isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        if not ok or v <= 0 or (not integer and not math.isfinite(v)):
            kind = "integer" if integer else "number"
            raise ValueError(f"config {key!r} must be a positive {kind}, got {v!r}")

    choice("distance", DISTANCE_NAMES)
    if "adam" in cfg:
        choice("adam", ADAMS)
    choice("train_sampling", SAMPLINGS)
    choice("eval_sampling", SAMPLINGS)
    choice("target_map", TARGET_MAPS)
    choice("stop_metric", METRICS)
    for k in ("lr", "init_range"):
        positive(k)
    for k in ("batch_size", "eval_every", "patience", "max_iterations"):
        positive(k, integer=True)
    if cfg["batch_size"] > MAX_BATCH:
        raise ValueError(f"config 'batch_size' must be at most {MAX_BATCH:,} (2^26 ratings a "
                         f"step), got {cfg['batch_size']!r}")
    for k in ("eval_every", "max_iterations", "min_iterations"):
        if isinstance(cfg[k], (int, np.integer)) and cfg[k] > MAX_ITERATIONS:
            raise ValueError(f"config {k!r} must be at most {MAX_ITERATIONS:,} iterations, got "
                             f"{cfg[k]!r}")
    for k in ("noise_std", "kl_weight", "min_iterations"):
        v = cfg[k]
        number = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        if not number or not math.isfinite(v) or v < 0:
            raise ValueError(f"config {k!r} must be a finite number >= 0, got {v!r}")
    if not isinstance(cfg["noise_decay"], (int, float)) or isinstance(cfg["noise_decay"], bool) \
            or not (0 < cfg["noise_decay"] <= 1):
        raise ValueError(f"config 'noise_decay' must be in (0, 1], got {cfg['noise_decay']!r}")
    for k in ("user_mask_grad", "user_bias"):
        if not isinstance(cfg[k], bool):
            raise ValueError(f"config {k!r} must be true or false, got {cfg[k]!r}")
