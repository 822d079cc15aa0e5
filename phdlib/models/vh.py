"""The variational hashing model of Section 4, for Hamming (VH) and PHD (VH_PHD).

Model (paper Section 4; released code ``code/model.py``)
-------------------------------------------------------
Every user ``u`` and item ``i`` has a real embedding ``E_u, E_i`` of ``m``
entries (float32), initialised uniformly in ``[-a, a]`` (``init_range``, 1 in
the released code). Bit ``j`` is set with probability ``p = sigmoid(E^(j))``
and sampled as ``b = ceil(p - mu)``, ``mu ~ U(0, 1)`` (stochastic) or
``mu = 0.5`` (deterministic), chosen separately for training
(``train_sampling``) and evaluation (``eval_sampling``). The gradient of the
sample with respect to ``p`` is the identity (straight-through estimator).

- VH: the score is ``<2 b_u - 1, 2 b_i - 1> = m - 2 d_H(u, i)``.
- VH_PHD: the item bits are first projected by the user bits,
  ``b_i' = b_u * b_i`` (gradient into both; ``user_mask_grad=False`` stops it
  on the user side, as the released code allows), and the score is
  ``<2 b_u - 1, 2 b_i' - 1> = m - 2 PHD(u, i)``.

The training target is the (noisy) rating mapped to ``[-m, m]``: the released
code's ``2 m r / r_max - m`` (``target_map="released"``) or the paper's wording
"minimum and maximum of the dissimilarity correspond to minimum and maximum of
the ratings", ``2 m (r - r_min) / (r_max - r_min) - m`` (``"minmax"``). The
loss is the squared error between target and score, averaged over the batch,
plus ``kl_weight`` times the KL divergence of every sampled code's Bernoulli
distribution to Bernoulli(0.5) (summed over bits, averaged over the batch;
weight 0 in the released code). Gaussian noise of standard deviation
``noise_std`` (rating units; 1 released) is added to each training rating,
and the standard deviation is multiplied by ``noise_decay`` (0.9999) after
every iteration. Adam, learning rate ``lr``, mini-batches of ``batch_size``
ratings drawn from a fresh random permutation of the training split each
epoch.

Training budget: see :mod:`phdlib.models.stopping`. Evaluation: see
:mod:`phdlib.models.evaluation` (packed codes and :mod:`phdlib.codes`).
"""
from __future__ import annotations

import copy
import math
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import codes as C
from .evaluation import DISTANCES, evaluate_codes
from .stopping import EarlyStopping

SAMPLINGS = ("stochastic", "deterministic")
TARGET_MAPS = ("released", "minmax")

#: The training-budget rule applied to VH and VH_PHD alike, chosen on
#: validation data only (chapter "Variational hashing"): validate every 750
#: iterations, patience 5 evaluations, but early stopping may start only at
#: iteration 20,000 (the released code lets it start at once, which stops VH
#: on its initial plateau, at chance).
BUDGET = {"eval_every": 750, "patience": 5, "min_iterations": 20_000, "max_iterations": 200_000}

#: Adam's learning rate and the training-time sampling per distance, chosen on
#: validation NDCG@10 at 64 bits (chapter "Variational hashing"): learning
#: rates from the paper's grid {0.005, 0.001, 0.0005}, sampling from the
#: released code's two options. VH leaves its initial plateau several times
#: sooner and ends higher with 0.005 and deterministic training; VH_PHD keeps
#: the paper's 0.001 and stochastic training.
LEARNING_RATE = {"hamming": 0.005, "phd": 0.001}
TRAIN_SAMPLING = {"hamming": "deterministic", "phd": "stochastic"}


def _torch():
    import torch

    return torch


def resolve_device(device: str = "auto") -> str:
    """``"auto"`` -> ``"cuda"`` when a CUDA device is present, else ``"cpu"``."""
    torch = _torch()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda") and not str(device).startswith("cuda:"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:n]', got {device!r}")
    return device


def default_threads() -> int:
    """Torch CPU threads for training: ``PHD_TORCH_THREADS`` or 1.

    The model's tensors are small (a batch of 400 x 64); one thread avoids
    synchronisation overhead and leaves the other cores to other work.
    """
    env = os.environ.get("PHD_TORCH_THREADS")
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"PHD_TORCH_THREADS must be a positive integer, got {env!r}") from None
        if n < 1:
            raise ValueError(f"PHD_TORCH_THREADS must be a positive integer, got {env!r}")
        return n
    return 1


@contextmanager
def torch_threads(n: int):
    """Temporarily set ``torch.set_num_threads(n)``."""
    torch = _torch()
    old = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(old)


def default_config(distance: str, dataset: str = "ml-1m", bits: int = 64) -> dict:
    """The full default config of the model (every knob of :func:`fit`)."""
    if distance not in DISTANCES:
        raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}")
    cfg = {
        "distance": distance,
        "lr": LEARNING_RATE[distance],
        "batch_size": 400,
        "init_range": 1.0,
        "train_sampling": TRAIN_SAMPLING[distance],
        "eval_sampling": "deterministic",
        "user_mask_grad": True,
        "target_map": "released",
        "noise_std": 1.0,
        "noise_decay": 0.9999,
        "kl_weight": 0.0,
        "stop_metric": "ndcg@10",
        "eval_ties": "expected",
        "eval_discount": "paper",
        "device": "auto",
    }
    cfg.update(BUDGET)
    return cfg


def _check_config(cfg: dict) -> None:
    def choice(key, allowed):
        if cfg[key] not in allowed:
            raise ValueError(f"config {key!r} must be one of {allowed}, got {cfg[key]!r}")

    def positive(key, integer=False):
        v = cfg[key]
        ok = (isinstance(v, (int, np.integer)) and not isinstance(v, bool)) if integer else \
            isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        if not ok or v <= 0 or (not integer and not math.isfinite(v)):
            raise ValueError(f"config {key!r} must be a positive {'integer' if integer else 'number'}, "
                             f"got {v!r}")

    choice("distance", DISTANCES)
    choice("train_sampling", SAMPLINGS)
    choice("eval_sampling", SAMPLINGS)
    choice("target_map", TARGET_MAPS)
    choice("stop_metric", ("ndcg@5", "ndcg@10", "mrr"))
    for k in ("lr", "init_range"):
        positive(k)
    for k in ("batch_size", "eval_every", "patience", "max_iterations"):
        positive(k, integer=True)
    for k in ("noise_std", "kl_weight", "min_iterations"):
        if cfg[k] < 0:
            raise ValueError(f"config {k!r} must be >= 0, got {cfg[k]!r}")
    if not (0 < cfg["noise_decay"] <= 1):
        raise ValueError(f"config 'noise_decay' must be in (0, 1], got {cfg['noise_decay']!r}")
    if not isinstance(cfg["user_mask_grad"], bool):
        raise ValueError(f"config 'user_mask_grad' must be true or false, got {cfg['user_mask_grad']!r}")


# --------------------------------------------------------------------------- the model


class VHModel:
    """User and item embeddings plus the forward pass (PyTorch, float32).

    Attributes
    ----------
    user_emb : torch.Tensor  float32 ``(n_users, bits)``, requires grad
    item_emb : torch.Tensor  float32 ``(n_items, bits)``, requires grad
    """

    def __init__(self, n_users: int, n_items: int, bits: int, distance: str,
                 init_range: float = 1.0, user_mask_grad: bool = True, device: str = "cpu",
                 generator=None):
        torch = _torch()
        if distance not in DISTANCES:
            raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}")
        self.bits, self.distance, self.user_mask_grad = int(bits), distance, bool(user_mask_grad)
        self.device = device
        a = float(init_range)
        ue = torch.empty(n_users, bits).uniform_(-a, a, generator=generator)
        ie = torch.empty(n_items, bits).uniform_(-a, a, generator=generator)
        self.user_emb = ue.to(device).requires_grad_(True)
        self.item_emb = ie.to(device).requires_grad_(True)

    def parameters(self):
        return [self.user_emb, self.item_emb]

    @staticmethod
    def sample(p, stochastic: bool, generator=None):
        """Bits ``ceil(p - mu)`` in {0, 1} (float), straight-through gradient to ``p``."""
        torch = _torch()
        if stochastic:
            mu = torch.rand(p.shape, generator=generator, device=p.device)
        else:
            mu = 0.5
        hard = torch.ceil(p - mu)
        return p + (hard - p).detach()

    def forward(self, users, items, stochastic: bool, generator=None):
        """Scores ``<z_u, z_i'>`` (float ``(B,)``) and the bit probabilities.

        users, items: int64 tensors ``(B,)``. Returns ``(score, p_user,
        p_item)``; ``score = m - 2 d(u, i)`` exactly (d: Hamming or PHD).
        """
        torch = _torch()
        pu = torch.sigmoid(self.user_emb.index_select(0, users))
        pi = torch.sigmoid(self.item_emb.index_select(0, items))
        bu = self.sample(pu, stochastic, generator)
        bi = self.sample(pi, stochastic, generator)
        if self.distance == "phd":
            bi = bi * (bu if self.user_mask_grad else bu.detach())
        score = ((2.0 * bu - 1.0) * (2.0 * bi - 1.0)).sum(dim=1)
        return score, pu, pi

    def codes(self, stochastic: bool = False, generator=None) -> tuple[C.PackedCodes, C.PackedCodes]:
        """Packed codes of every user and item (one sample each when stochastic)."""
        torch = _torch()
        with torch.no_grad():
            out = []
            for emb in (self.user_emb, self.item_emb):
                p = torch.sigmoid(emb)
                if stochastic:
                    mu = torch.rand(p.shape, generator=generator, device=p.device)
                else:
                    mu = 0.5
                bits = torch.ceil(p - mu).to(torch.uint8).cpu().numpy()
                out.append(C.pack(bits, encoding="01"))
        return out[0], out[1]

    def state(self) -> dict:
        return {"user_emb": self.user_emb.detach().clone(), "item_emb": self.item_emb.detach().clone()}

    def load_state(self, state: dict) -> None:
        torch = _torch()
        with torch.no_grad():
            self.user_emb.copy_(state["user_emb"])
            self.item_emb.copy_(state["item_emb"])


def make_adam(params, lr: float):
    """Adam (PyTorch defaults: betas 0.9/0.999, eps 1e-8, dense updates as TF1's Adam).

    The fused kernel is used where available: the same algorithm, about ten
    times faster on CPU for these ~600k parameters than the per-tensor loop.
    """
    torch = _torch()
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, TypeError, ValueError):  # no fused kernel for this device/build
        return torch.optim.Adam(params, lr=lr)


def kl_bernoulli_half(p):
    """KL(Bernoulli(p) || Bernoulli(0.5)) summed over bits: float ``(B,)``."""
    torch = _torch()
    eps = 1e-10
    return (p * torch.log(torch.clamp(p / 0.5, min=eps))
            + (1 - p) * torch.log(torch.clamp((1 - p) / 0.5, min=eps))).sum(dim=1)


def rating_target(r, bits: int, scale: tuple[float, float], target_map: str):
    """Rating -> target in ``[-m, m]``: released ``2m r/r_max - m`` or minmax."""
    lo, hi = float(scale[0]), float(scale[1])
    if target_map == "released":
        return 2.0 * bits * (r / hi) - bits
    if target_map == "minmax":
        return 2.0 * bits * (r - lo) / (hi - lo) - bits
    raise ValueError(f"target_map must be one of {TARGET_MAPS}, got {target_map!r}")


# --------------------------------------------------------------------------- training


@dataclass
class FitResult:
    """What :func:`fit` returns.

    model: the trained :class:`VHModel` holding the best state; log: one row per
    evaluation (iteration, seconds, train_seconds, train_loss, noise_std,
    valid ndcg@5 / ndcg@10 / mrr, user/item bit statistics); best_iteration,
    iterations (run), stop_reason; ms_per_iteration: mean training time per
    iteration (no evaluation), milliseconds.
    """

    model: VHModel
    log: pd.DataFrame
    best_iteration: int
    iterations: int
    stop_reason: str
    train_seconds: float
    seconds_to_best: float
    ms_per_iteration: float


def _code_stats(uc: C.PackedCodes, ic: C.PackedCodes) -> dict:
    """Fraction of set bits, and of 'constant' bits (>= 99% of users share one value)."""
    ub = C.unpack(uc, "01").astype(np.float64)
    ib = C.unpack(ic, "01").astype(np.float64)
    uf, if_ = ub.mean(axis=0), ib.mean(axis=0)
    const = float(np.mean((uf >= 0.99) | (uf <= 0.01)))
    return {"user_ones": float(ub.mean()), "item_ones": float(ib.mean()), "user_const_bits": const,
            "item_const_bits": float(np.mean((if_ >= 0.99) | (if_ <= 0.01)))}


def _earliest_stop(stopper: EarlyStopping, it: int, every: int) -> int:
    """Iteration of the earliest possible stop from here (for the progress bar)."""
    nxt = it + (stopper.patience - stopper.bad) * every
    start = -(-stopper.min_iterations // every) * every
    return int(min(max(nxt, start), stopper.max_iterations + every - 1))


def fit(train, valid, n_users: int, n_items: int, bits: int, rating_scale, config: dict,
        seed: int = 0, progress: bool = False, callback=None, threads: int | None = None) -> FitResult:
    """Train one model on ``train`` (a ``Ratings``), select on ``valid``.

    config: as :func:`default_config` (checked here). Randomness: the
    embeddings' initialisation and the sampling come from a ``torch.Generator``
    seeded with ``seed``; the batch order and the rating noise from
    ``numpy.random.default_rng(seed)``. On CPU the same seed gives the same
    numbers. ``callback(row)`` is called with each log row. ``threads``: torch
    CPU threads while training (default :func:`default_threads`).
    """
    with torch_threads(threads or default_threads()):
        return _fit(train, valid, n_users, n_items, bits, rating_scale, config, seed, progress,
                    callback)


def _fit(train, valid, n_users, n_items, bits, rating_scale, config, seed, progress, callback):
    torch = _torch()
    cfg = dict(config)
    _check_config(cfg)
    device = resolve_device(cfg["device"])
    threads = torch.get_num_threads()
    torch.manual_seed(seed)
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    gen_dev = gen if device == "cpu" else torch.Generator(device=device).manual_seed(int(seed))
    rng = np.random.default_rng(seed)

    model = VHModel(n_users, n_items, bits, cfg["distance"], cfg["init_range"],
                    cfg["user_mask_grad"], device=device, generator=gen)
    opt = make_adam(model.parameters(), cfg["lr"])
    stochastic_train = cfg["train_sampling"] == "stochastic"
    stochastic_eval = cfg["eval_sampling"] == "stochastic"
    eval_gen = torch.Generator(device=device).manual_seed(int(seed) + 1) if stochastic_eval else None

    tu = torch.as_tensor(np.asarray(train.user, dtype=np.int64), device=device)
    ti = torch.as_tensor(np.asarray(train.item, dtype=np.int64), device=device)
    tr = torch.as_tensor(np.asarray(train.rating, dtype=np.float32), device=device)
    n = int(tu.shape[0])
    if n == 0:
        raise ValueError("the training split is empty")
    B = int(cfg["batch_size"])
    stopper = EarlyStopping(cfg["patience"], cfg["min_iterations"], cfg["max_iterations"])
    every = int(cfg["eval_every"])

    def batches():
        buf = np.empty(0, dtype=np.int64)
        while True:
            while buf.shape[0] < B:
                buf = np.concatenate([buf, rng.permutation(n)])
            idx, buf = buf[:B], buf[B:]
            yield torch.as_tensor(idx, device=device)

    batch_iter = batches()
    noise = float(cfg["noise_std"])
    rows, best_state, loss_acc, loss_n = [], model.state(), 0.0, 0
    train_time, t_start = 0.0, time.perf_counter()
    seconds_to_best = 0.0
    bar = None
    if progress:
        from tqdm import tqdm  # plain text bar: tqdm.auto warns without ipywidgets in notebooks

        # the total is the earliest possible stop, extended as training goes on
        bar = tqdm(total=_earliest_stop(stopper, 0, every), desc=f"{'VH_PHD' if cfg['distance'] == 'phd' else 'VH'}"
                   f"-{bits}", unit="it", mininterval=1.0, leave=False)
    it = 0
    while not stopper.stop:
        t0 = time.perf_counter()
        for _ in range(every):
            idx = next(batch_iter)
            r = tr[idx]
            if noise > 0:
                eps = torch.as_tensor(rng.standard_normal(B).astype(np.float32), device=device)
                r = r + eps * noise
            target = rating_target(r, bits, rating_scale, cfg["target_map"])
            score, pu, pi = model.forward(tu[idx], ti[idx], stochastic_train, gen_dev)
            loss = ((target - score) ** 2).mean()
            if cfg["kl_weight"] > 0:
                loss = loss + cfg["kl_weight"] * (kl_bernoulli_half(pu) + kl_bernoulli_half(pi)).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            noise *= cfg["noise_decay"]
            loss_acc += float(loss.detach()) if (it % 50 == 0) else 0.0
            loss_n += 1 if (it % 50 == 0) else 0
            it += 1
        train_time += time.perf_counter() - t0
        if bar is not None:
            bar.update(every)
        uc, ic = model.codes(stochastic_eval, eval_gen)
        per_user = evaluate_codes(uc, ic, valid, cfg["distance"], ties=cfg["eval_ties"],
                                  discount=cfg["eval_discount"])
        # Numba's parallel kernels (OpenMP layer) can reset the thread count
        # shared with PyTorch; an oversubscribed torch is many times slower.
        torch.set_num_threads(threads)
        s = {k: float(per_user[k].mean()) for k in ("ndcg@5", "ndcg@10", "mrr")}
        row = {"iteration": it, "seconds": time.perf_counter() - t_start, "train_seconds": train_time,
               "train_loss": loss_acc / max(loss_n, 1), "noise_std": noise,
               "valid_ndcg@5": s["ndcg@5"], "valid_ndcg@10": s["ndcg@10"], "valid_mrr": s["mrr"]}
        row.update(_code_stats(uc, ic))
        loss_acc, loss_n = 0.0, 0
        if stopper.update(it, s[cfg["stop_metric"]]):
            best_state = model.state()
            seconds_to_best = row["seconds"]
        row["best"] = stopper.best
        rows.append(row)
        if callback is not None:
            callback(row)
        if bar is not None:
            bar.total = it if stopper.stop else _earliest_stop(stopper, it, every)
            bar.set_postfix({"valid_ndcg@10": f"{s['ndcg@10']:.4f}", "best": f"{stopper.best:.4f}"})
    if bar is not None:
        bar.close()
    model.load_state(best_state)
    return FitResult(model=model, log=pd.DataFrame(rows), best_iteration=stopper.best_iteration,
                     iterations=it, stop_reason=stopper.reason, train_seconds=train_time,
                     seconds_to_best=seconds_to_best, ms_per_iteration=1000.0 * train_time / max(it, 1))


# --------------------------------------------------------------------------- the methods


class VHMethod:
    """A registered method (see :mod:`phdlib.methods`): VH or VH_PHD."""

    def __init__(self, name: str, distance: str):
        self.name, self.distance = name, distance

    def __repr__(self) -> str:
        return f"VHMethod({self.name!r}, distance={self.distance!r})"

    def defaults(self, dataset: str, bits: int) -> dict:
        return default_config(self.distance, dataset, bits)

    def train(self, split, bits: int, seed: int, config: dict, progress: bool = False):
        """Train on ``split.train``, stop on ``split.valid``, report ``split.test``.

        Returns a :class:`phdlib.results.Run` (not saved): test metrics at the
        best validation point (``ties``/``discount`` from the config; the
        released discount added as ``released:ndcg@k``), per-user test metrics,
        packed ``user_codes``/``item_codes`` (uint64, plain, not negated), and
        the training log.
        """
        from .. import metrics, results

        cfg = dict(config)
        if cfg.get("distance") != self.distance:
            raise ValueError(f"method {self.name!r} trains distance {self.distance!r}; "
                             f"config has distance={cfg.get('distance')!r}")
        bits = int(bits)
        if bits < 1:
            raise ValueError(f"bits must be a positive integer, got {bits}")
        t0 = time.perf_counter()
        threads = default_threads()
        with torch_threads(threads):
            res = fit(split.train, split.valid, split.dataset.n_users, split.dataset.n_items, bits,
                      split.dataset.rating_scale, cfg, seed=seed, progress=progress,
                      threads=threads)
            eval_gen = None
            if cfg["eval_sampling"] == "stochastic":
                eval_gen = _torch().Generator(device=res.model.device).manual_seed(int(seed) + 2)
            uc, ic = res.model.codes(cfg["eval_sampling"] == "stochastic", eval_gen)
        per_user = evaluate_codes(uc, ic, split.test, self.distance, ties=cfg["eval_ties"],
                                  discount=cfg["eval_discount"])
        m = metrics.summarize(per_user)
        other = "released" if cfg["eval_discount"] == "paper" else "paper"
        alt = metrics.summarize(evaluate_codes(uc, ic, split.test, self.distance,
                                               ties=cfg["eval_ties"], discount=other))
        m.update({f"{other}:ndcg@5": alt["ndcg@5"], f"{other}:ndcg@10": alt["ndcg@10"]})
        best = res.log.loc[res.log["iteration"] == res.best_iteration].iloc[0]
        m.update({"valid_ndcg@5": float(best["valid_ndcg@5"]), "valid_ndcg@10": float(best["valid_ndcg@10"]),
                  "valid_mrr": float(best["valid_mrr"]), "best_iteration": int(res.best_iteration),
                  "iterations": int(res.iterations), "seconds_to_best": float(res.seconds_to_best),
                  "ms_per_iteration": float(res.ms_per_iteration)})
        return results.Run(
            method=self.name, dataset=split.dataset.name, bits=bits, seed=int(seed), config=cfg,
            metrics=m, per_user=per_user, fingerprint=split.fingerprint,
            wall_seconds=time.perf_counter() - t0,
            arrays={"user_codes": uc.words, "item_codes": ic.words}, log=res.log,
            extra={"stop_reason": res.stop_reason, "ties": cfg["eval_ties"],
                   "discount": cfg["eval_discount"], "device": resolve_device(cfg["device"]),
                   "torch_threads": default_threads()},
        )


VH = VHMethod("vh", "hamming")
VH_PHD = VHMethod("vh-phd", "phd")


# --------------------------------------------------------------------------- benchmark


def benchmark_iteration(bits: int = 64, batch_size: int = 400, n_users: int = 6040,
                        n_items: int = 3260, iterations: int = 2000, warmup: int = 200,
                        distance: str = "phd", threads: int | None = None, seed: int = 0,
                        repeats: int = 3) -> dict:
    """Milliseconds per training iteration (forward, backward, Adam step).

    Synthetic ratings of ML-1M's shape; returns the best and median of
    ``repeats`` timings of ``iterations`` iterations, after ``warmup``.
    """
    torch = _torch()
    threads = threads or default_threads()
    rng = np.random.default_rng(seed)
    with torch_threads(threads):
        gen = torch.Generator().manual_seed(seed)
        model = VHModel(n_users, n_items, bits, distance, generator=gen)
        opt = make_adam(model.parameters(), 0.001)
        u = torch.as_tensor(rng.integers(0, n_users, size=(iterations + warmup, batch_size)))
        i = torch.as_tensor(rng.integers(0, n_items, size=(iterations + warmup, batch_size)))
        r = torch.as_tensor(rng.integers(1, 6, size=(iterations + warmup, batch_size)).astype(np.float32))
        times = []

        def step(k):
            target = rating_target(r[k] + torch.randn(batch_size, generator=gen), bits, (1, 5), "released")
            score, _, _ = model.forward(u[k], i[k], True, gen)
            loss = ((target - score) ** 2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        for k in range(warmup):
            step(k)
        for _ in range(repeats):
            t0 = time.perf_counter()
            for k in range(warmup, warmup + iterations):
                step(k)
            times.append(1000.0 * (time.perf_counter() - t0) / iterations)
    return {"bits": bits, "batch_size": batch_size, "distance": distance, "threads": threads,
            "ms_best": min(times), "ms_median": float(np.median(times)), "iterations": iterations,
            "load_average_1min": os.getloadavg()[0], "cpu_count": os.cpu_count()}
