"""Training the variational hashing model (Section 4): the methods VH, VH_PHD, VH+bias.

The VH modules, each importing only those above it in this list:
:mod:`.vh_config` (the config: keys, defaults, checks; no PyTorch),
:mod:`.vh_model` (the model :class:`phdlib.methods.vh_model.VHModel`, its
forward pass and the PyTorch helpers), :mod:`.vh_step` (one optimisation
step, fused Numba or autograd) and this module (one training run:
:class:`_Trainer`, :func:`fit`; and the methods). Training (released
code ``code/model.py``): the target is the (noisy) rating mapped to
``[-m, m]`` (``target_map``); the loss is the squared error between target
and score, averaged over the batch, plus ``kl_weight`` times the KL
divergence of every sampled code's Bernoulli distribution to Bernoulli(0.5)
(weight 0 released). Gaussian noise of standard deviation ``noise_std``
(rating units; 1 released) is added to each training rating, and the
standard deviation is multiplied by ``noise_decay`` (0.9999) after every
iteration. Adam, learning rate ``lr``, mini-batches of ``batch_size``
ratings drawn from a fresh random permutation of the training split each
epoch. The training loop (validation every interval, early stopping, the
best state, the log) and its budget are :mod:`phdlib.methods.loop`; VH
plugs in through :class:`_VHLearner`.

Tuning: with ``tune`` (the full profile), ``lr`` and ``train_sampling`` are
chosen on validation NDCG@10 over ``lr_grid`` x ``train_sampling_grid``
through the shared tuning path (:mod:`phdlib.experiments.training`), at ``tune_bits``
(64) and reused at the other widths (the transfer is recorded in the run);
the single-point
defaults (:data:`phdlib.methods.vh_config.SINGLE_POINT`) are the points that grid chooses on ML-1M
with seed 0 (chapter "Variational hashing").
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..kernels.fpenv import SUPPORTED as _FLUSH_SUPPORTED
from ..kernels.fpenv import flush_denormals
from ..evaluation.metrics import METRICS
from .base import Method
from .fitted import CodeModel, evaluate_codes
from .loop import Budget, LoopResult
from .loop import train as train_loop
from .vh_config import CONFIG_SPEC, LAZY_CONFIG_SPEC, SINGLE_POINT, check_config, default_config
# the config lives below the model (:mod:`.vh_config`); its other names still work here
from .vh_config import BUDGET, IMPL, LR_GRID, SAMPLING_GRID, SAMPLINGS, TARGET_MAPS  # noqa: F401

if TYPE_CHECKING:
    from .vh_model import VHModel

# PyTorch, the model (.vh_model) and the step (.vh_step) are imported where
# training starts, so that listing, labelling and configuring methods needs no
# torch (they import nothing from this module).

#: Whether training flushes subnormal numbers to zero (where the CPU has the
#: mode): the parameters are the same bit for bit, the dense Adam pass is not
#: slowed by the moments of long-untouched rows (:mod:`phdlib.kernels.fpenv`).
FLUSH_DENORMALS = True

# --------------------------------------------------------------------------- training


@dataclass(kw_only=True)
class FitResult(LoopResult):
    """What :func:`fit` returns: the loop's :class:`phdlib.methods.loop.LoopResult`
    (log, best_iteration, iterations, stop_reason, train_seconds, seconds_to_best,
    best, ms_per_iteration) and VH's own.

    The log has one row per evaluation (iteration, seconds, train_seconds,
    train_loss, noise_std, valid ndcg@5 / ndcg@10 / mrr, user/item bit
    statistics, best). model: the trained :class:`VHModel` holding the best
    state; train_step: ``"fused"`` or ``"autograd"``
    (:mod:`phdlib.methods.vh_step`); flush: whether training flushed
    subnormals to zero (:mod:`phdlib.kernels.fpenv`).
    """

    model: VHModel
    train_step: str = "autograd"
    flush: bool = False

    @classmethod
    def of(cls, loop: LoopResult, **own) -> "FitResult":
        """The loop's result ``loop`` with VH's fields ``own`` (model, train_step, flush)."""
        return cls(**{f.name: getattr(loop, f.name) for f in fields(LoopResult)}, **own)


class _Trainer:
    """One training run's state: model, training step (:mod:`.vh_step`), generators.

    flush: the training steps run with subnormal numbers flushed to zero
    (:mod:`phdlib.kernels.fpenv`), as TensorFlow's CPU kernels do: the same
    parameters in practice (tested bit for bit), several times faster once
    rows go untouched for long. None: :data:`FLUSH_DENORMALS`. rows: how the
    fused step updates the embedding tables (:data:`phdlib.methods.vh_step.ROWS`).
    """

    def __init__(self, train, n_users, n_items, bits, rating_scale, cfg, seed, step="auto",
                 threads=1, flush=None, rows="auto"):
        import torch

        from .vh_model import VHModel, resolve_device
        from .vh_step import make_step

        device = resolve_device(cfg["device"])
        if len(train.user) == 0:
            raise ValueError("the training split is empty")
        torch.manual_seed(seed)
        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        self.gen = gen if device == "cpu" else torch.Generator(device=device).manual_seed(int(seed))
        self.rng = np.random.default_rng(seed)
        self.model = VHModel(n_users, n_items, bits, cfg["distance"], cfg["init_range"],
                             cfg["user_mask_grad"], device=device, generator=gen,
                             user_bias=cfg["user_bias"])
        self.flush = bool(FLUSH_DENORMALS if flush is None else flush)
        self.step = make_step(step, self.model, train, bits, rating_scale, cfg, self.gen, threads,
                              self.flush, rows)
        self.eval_gen = (torch.Generator(device=device).manual_seed(int(seed) + 1)
                         if cfg["eval_sampling"] == "stochastic" else None)
        self.n = len(train.user)
        self.cfg, self.bits, self.device, self.torch = cfg, bits, device, torch
        self.noise = float(cfg["noise_std"])
        self._buf = np.empty(0, dtype=np.int64)
        self.loss_acc, self.loss_n, self.it = 0.0, 0, 0

    def _batch(self):
        B = int(self.cfg["batch_size"])
        while self._buf.shape[0] < B:
            self._buf = np.concatenate([self._buf, self.rng.permutation(self.n)])
        idx, self._buf = self._buf[:B], self._buf[B:]
        return idx

    def steps(self, count: int) -> None:
        """``count`` optimisation steps; the loss is sampled every 50th step."""
        with flush_denormals(self.flush):
            self._steps(count)

    def _steps(self, count: int) -> None:
        B, decay = int(self.cfg["batch_size"]), self.cfg["noise_decay"]
        for _ in range(count):
            idx = self._batch()
            eps = self.rng.standard_normal(B).astype(np.float32) if self.noise > 0 else None
            loss = self.step(idx, eps, self.noise, self.it % 50 == 0)
            self.noise *= decay
            if loss is not None:
                self.loss_acc += loss
                self.loss_n += 1
            self.it += 1
        self.step.sync()

    def validate(self, valid) -> tuple[dict, object, object]:
        """Validation metrics of the current codes, and the codes."""
        uc, ic = self.model.codes(self.eval_gen is not None, self.eval_gen)
        per_user = evaluate_codes(uc, ic, valid, self.cfg["distance"], ties=self.cfg["ties"],
                                  discount=self.cfg["discount"])
        return {k: float(per_user[k].mean()) for k in METRICS}, uc, ic


def fit(train, valid, n_users: int, n_items: int, bits: int, rating_scale, config: dict,
        seed: int = 0, progress: bool | str = False, callback=None,
        threads: int | None = None, step: str = "auto") -> FitResult:
    """Train one model on ``train`` (a ``Ratings``), select on ``valid``.

    config: as :func:`default_config` (checked here). Randomness: the
    embeddings' initialisation and the sampling come from a ``torch.Generator``
    seeded with ``seed``; the batch order and the rating noise from
    ``numpy.random.default_rng(seed)``. On CPU the same seed gives the same
    numbers. ``callback(row)`` is called with each log row. ``threads``: torch
    CPU threads while training (default :func:`default_threads`; the fused
    step's Adam pass uses as many Numba threads). ``progress``: a progress bar
    (a string: its label). ``step``: the training step of
    :func:`phdlib.methods.vh_step.make_step` (``"auto"``: the fused Numba step
    on CPU without the KL term, which equals the autograd step bit for bit).
    """
    from .vh_model import default_threads, torch_threads

    threads = threads or default_threads()
    with torch_threads(threads):
        cfg = dict(config)
        check_config(cfg)
        return _fit(_Trainer(train, n_users, n_items, bits, rating_scale, cfg, seed, step,
                             threads), valid, progress, callback)


class _VHLearner:
    """VH's side of the training loop (:class:`phdlib.methods.loop.Learner`): a
    :class:`_Trainer` and the validation split.

    Training statistics: ``train_loss`` (the mean of the losses sampled every
    50th step in the interval, rating units squared) and ``noise_std`` (the
    rating noise's standard deviation after the interval); evaluation
    statistics: :func:`phdlib.methods.vh_model.code_stats` of the validation codes.
    """

    def __init__(self, tr: _Trainer, valid):
        self.tr, self.valid = tr, valid
        self.threads = tr.torch.get_num_threads()

    @property
    def iteration(self) -> int:
        return self.tr.it

    def advance(self, count: int) -> dict:
        tr = self.tr
        tr.steps(count)
        out = {"train_loss": tr.loss_acc / max(tr.loss_n, 1), "noise_std": tr.noise}
        tr.loss_acc, tr.loss_n = 0.0, 0
        return out

    def validate(self) -> tuple[dict, dict]:
        from .vh_model import code_stats

        s, uc, ic = self.tr.validate(self.valid)
        # Numba's parallel kernels (OpenMP layer) can reset the thread count
        # shared with PyTorch; an oversubscribed torch is many times slower.
        self.tr.torch.set_num_threads(self.threads)
        return s, code_stats(uc, ic)

    def state(self):
        return self.tr.model.state()

    def load_state(self, state) -> None:
        self.tr.model.load_state(state)


def _fit(tr: _Trainer, valid, progress, callback) -> FitResult:
    """Train ``tr`` through :func:`phdlib.methods.loop.train` (budget from its config)."""
    cfg = tr.cfg
    label = None
    if progress:
        label = f"{progress if isinstance(progress, str) else cfg['distance']}-{tr.bits}"
    # stacklevel 3: a budget warning points at the caller of fit
    res = train_loop(_VHLearner(tr, valid), Budget.from_config(cfg), label, callback,
                     stacklevel=3)
    return FitResult.of(res, model=tr.model, train_step=tr.step.name,
                        flush=tr.flush and _FLUSH_SUPPORTED)


# --------------------------------------------------------------------------- the methods


class VHMethod(Method):
    """VH (Hamming), VH_PHD (PHD) or VH with a per-user training bias, as one method each;
    ``adam="lazy"``: the same trained with lazy Adam (a variant of the dense-Adam method)."""

    learns_codes = True
    model = CodeModel
    config_spec = CONFIG_SPEC
    #: the quick profile: the single point (no grid), 4,500 iterations (6 validations)
    quick = {"tune": False, "max_iterations": 4500, "min_iterations": 4500, "eval_every": 750}

    def __init__(self, name: str, distance: str, label: str, in_paper: bool,
                 user_bias: bool = False, description: str = "", cost: int = 6,
                 color: str | None = None, adam: str = "dense", variant_of: str | None = None):
        self.name, self.distance, self.label = name, distance, label
        self.ranks_by, self.in_paper, self.user_bias = distance, in_paper, user_bias
        self.description, self.cost, self.color = description, cost, color
        self.adam, self.variant_of = adam, variant_of
        if adam != "dense":
            self.config_spec = LAZY_CONFIG_SPEC

    def defaults(self, dataset: str, bits: int) -> dict:
        cfg = default_config(self.distance, dataset, bits, self.user_bias, self.adam)
        cfg["tune"] = True
        if self.user_bias:  # VH's learning rate (the choice of VH's grid); the sampling is tuned
            cfg["lr_grid"] = [SINGLE_POINT["vh"][0]]
        return cfg

    def run_cost(self, config: dict, bits: int) -> float:
        """A smaller learning rate waits longer on VH's plateau: it costs more."""
        return super().run_cost(config, bits) * (2 if config["lr"] < 0.005 else 1)

    def grid(self, config: dict, bits: int) -> list[dict]:
        if not config["tune"]:
            return []
        return [{"lr": float(lr), "train_sampling": s, "tune": False}
                for lr in config["lr_grid"] for s in config["train_sampling_grid"]]

    def fit(self, split, bits: int, seed: int, config: dict, progress: bool = False) -> CodeModel:
        """Train on ``split.train``, keep the best state on ``split.valid``; packed codes out.

        The codes are drawn at the best state: deterministically, or (with
        ``eval_sampling="stochastic"``) one sample per user and item from a
        generator seeded ``seed + 2``. The log is the training trace of
        :func:`fit`; info holds iterations, the best iteration, timings and
        the stop reason.
        """
        cfg = dict(config)
        if cfg.get("distance") != self.distance or cfg.get("user_bias") != self.user_bias \
                or cfg.get("adam", "dense") != self.adam:
            raise ValueError(f"method {self.name!r} trains distance {self.distance!r} with "
                             f"user_bias={self.user_bias}, adam={self.adam!r}; config has "
                             f"distance={cfg.get('distance')!r}, user_bias="
                             f"{cfg.get('user_bias')!r}, adam={cfg.get('adam', 'dense')!r}")
        bits = int(bits)
        if bits < 1:
            raise ValueError(f"bits must be a positive integer, got {bits}")
        import torch

        from .vh_model import default_threads, resolve_device, torch_threads

        ds = split.dataset
        with torch_threads(default_threads()):
            res = fit(split.train, split.valid, ds.n_users, ds.n_items, bits, ds.rating_scale, cfg,
                      seed=seed, progress=self.label if progress else False)
            stochastic = cfg["eval_sampling"] == "stochastic"
            gen = torch.Generator(device=res.model.device).manual_seed(int(seed) + 2) if stochastic else None
            uc, ic = res.model.codes(stochastic, gen)
        info = {"best_iteration": int(res.best_iteration), "iterations": int(res.iterations),
                "seconds_to_best": float(res.seconds_to_best), "train_seconds": float(res.train_seconds),
                "ms_per_iteration": float(res.ms_per_iteration), "stop_reason": res.stop_reason,
                "train_step": res.train_step,
                "flush_denormals": bool(res.flush),
                "device": resolve_device(cfg["device"]), "torch_threads": default_threads()}
        return CodeModel(bits, {"user_codes": uc.words, "item_codes": ic.words}, self.distance,
                         res.log, info)


VH = VHMethod("vh", "hamming", "VH", True, description="variational hashing, Hamming distance",
              color="tab:blue")
VH_PHD = VHMethod("vh-phd", "phd", "VH_PHD", True, cost=3,
                  description="variational hashing, projected Hamming dissimilarity",
                  color="tab:red")
#: VH+bias tunes the training sampling at VH's learning rate: on VH's grid 0.005
#: beat 0.001 under both samplings, and the 0.001 runs cost the most.
VH_BIAS = VHMethod("vh-bias", "hamming", "VH+bias (ours)", False, user_bias=True,
                   description="VH with a learned per-user bias in training (ranking by Hamming)")
#: VH and VH_PHD trained with lazy Adam (:mod:`phdlib.kernels.adam`): only the rows a batch
#: touches move; variants for the chapter "Cost at scale", not in Table 1's catalogue.
VH_LAZY = VHMethod("vh-lazy", "hamming", "VH, lazy Adam (ours)", False, adam="lazy",
                   variant_of="vh", color="tab:purple",
                   description="VH trained with lazy Adam (the batch's rows only)")
VH_PHD_LAZY = VHMethod("vh-phd-lazy", "phd", "VH_PHD, lazy Adam (ours)", False, cost=3,
                       adam="lazy", variant_of="vh-phd", color="tab:pink",
                       description="VH_PHD trained with lazy Adam (the batch's rows only)")
