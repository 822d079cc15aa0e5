"""The variational hashing model of Section 4 as a ``torch.nn.Module``.

Every user ``u`` and item ``i`` has a real embedding ``E_u, E_i`` of ``m``
entries (float32), initialised uniformly in ``[-a, a]`` (``init_range``, 1 in
the released code). Bit ``j`` is set with probability ``p = sigmoid(E^(j))``
and sampled as ``b = ceil(p - mu)``, ``mu ~ U(0, 1)`` (stochastic) or
``mu = 0.5`` (deterministic). The gradient of the sample with respect to
``p`` is the identity (straight-through estimator). The bits, the scores below
and the packed codes are those of :mod:`phdlib.codes.autograd`, the building
block any PyTorch model can use; VH is its embedding-table instance.

- VH: the score is ``<2 b_u - 1, 2 b_i - 1> = m - 2 d_H(u, i)``.
- VH_PHD: the item bits are first projected by the user bits,
  ``b_i' = b_u * b_i`` (gradient into both; ``user_mask_grad=False`` stops it
  on the user side, as the released code allows), and the score is
  ``<2 b_u - 1, 2 b_i' - 1> = m - 2 PHD(u, i)``.
- VH with a user bias (our ablation): VH's score plus a learned real
  ``bias_u`` per user, in training only; a user's ranking is unchanged by it.

:func:`rating_target` maps ratings to ``[-m, m]``; :func:`kl_bernoulli_half`
is the optional KL term; :func:`make_adam` the optimiser (dense Adam, as TF1's).
"""
from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

from .. import codes as C
from ..codes import autograd as A
from ..codes.distances import DISTANCE_NAMES
from .vh_config import TARGET_MAPS

#: Straight-through bits (kept here, where VH first had them): :func:`phdlib.codes.autograd.sample_bits`.
sample_bits = A.sample_bits


def resolve_device(device: str = "auto") -> str:
    """``"auto"`` -> ``"cuda"`` when a CUDA device is present, else ``"cpu"``."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda") and not str(device).startswith("cuda:"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda[:n]', got {device!r}")
    if device != "cpu":
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r}: no CUDA device is available here "
                             f"(use 'cpu' or 'auto')")
        idx = int(device.split(":", 1)[1]) if ":" in device else 0
        if not 0 <= idx < torch.cuda.device_count():
            raise ValueError(f"device {device!r}: this machine has {torch.cuda.device_count()} "
                             f"CUDA device(s)")
    return device


def default_threads() -> int:
    """Torch CPU threads for training: ``PHD_TORCH_THREADS`` or 1.

    The model's tensors are small (a batch of 400 x 64); one thread avoids
    synchronisation overhead and leaves the other cores to other work.
    """
    env = os.environ.get("PHD_TORCH_THREADS")
    if not env:
        return 1
    try:
        n = int(env)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"PHD_TORCH_THREADS must be a positive integer, got {env!r}")
    return n


@contextmanager
def torch_threads(n: int):
    """Temporarily set ``torch.set_num_threads(n)``."""
    old = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(old)


class VHModel(nn.Module):
    """User and item embeddings and the forward pass (float32).

    Parameters: ``user_emb`` float32 ``(n_users, bits)``, ``item_emb``
    float32 ``(n_items, bits)``, and with ``user_bias`` a float32
    ``(n_users,)`` bias (zeros at start). The embeddings are drawn from
    ``generator`` in that order (users, then items).
    """

    def __init__(self, n_users: int, n_items: int, bits: int, distance: str,
                 init_range: float = 1.0, user_mask_grad: bool = True, device: str = "cpu",
                 generator=None, user_bias: bool = False):
        super().__init__()
        if distance not in DISTANCE_NAMES:
            raise ValueError(f"distance must be one of {DISTANCE_NAMES}, got {distance!r}")
        self.bits, self.distance, self.user_mask_grad = int(bits), distance, bool(user_mask_grad)
        self.device = device
        a = float(init_range)
        ue = torch.empty(n_users, bits).uniform_(-a, a, generator=generator)
        ie = torch.empty(n_items, bits).uniform_(-a, a, generator=generator)
        self.user_emb = nn.Parameter(ue.to(device))
        self.item_emb = nn.Parameter(ie.to(device))
        self.user_bias = nn.Parameter(torch.zeros(n_users, device=device)) if user_bias else None

    def forward(self, users, items, stochastic: bool, generator=None):
        """Scores (float ``(B,)``) and the bit probabilities ``(p_user, p_item)``.

        users, items: int64 tensors ``(B,)``. Without a bias the score is
        ``m - 2 d(u, i)`` exactly (d: Hamming or PHD).
        """
        score, pu, pi = A.score(self.user_emb.index_select(0, users),
                                self.item_emb.index_select(0, items), self.distance,
                                stochastic=stochastic, generator=generator,
                                user_mask_grad=self.user_mask_grad)
        if self.user_bias is not None:
            score = score + self.user_bias.index_select(0, users)
        return score, pu, pi

    @torch.no_grad()
    def codes(self, stochastic: bool = False, generator=None) -> tuple[C.PackedCodes, C.PackedCodes]:
        """Packed codes of every user and item (one sample each when stochastic).

        Plain codes (PHD's items are negated where they are searched); the
        users' bits are drawn before the items'.
        """
        users = A.pack_logits(self.user_emb, stochastic, generator)
        items = A.pack_logits(self.item_emb, stochastic, generator)
        return users, items

    def state(self) -> dict:
        """A detached copy of every parameter (the best state kept in training)."""
        return {k: v.detach().clone() for k, v in self.state_dict().items()}

    def load_state(self, state: dict) -> None:
        self.load_state_dict(state)


def make_adam(params, lr: float):
    """Adam (PyTorch defaults: betas 0.9/0.999, eps 1e-8, dense updates as TF1's Adam).

    The fused kernel is used where available: the same algorithm, about ten
    times faster on CPU for these ~600k parameters than the per-tensor loop.
    """
    params = list(params)
    try:
        return torch.optim.Adam(params, lr=lr, fused=True)
    except (RuntimeError, TypeError, ValueError):  # no fused kernel for this device/build
        return torch.optim.Adam(params, lr=lr)


def kl_bernoulli_half(p):
    """KL(Bernoulli(p) || Bernoulli(0.5)) summed over bits: float ``(B,)``."""
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


def code_stats(uc: C.PackedCodes, ic: C.PackedCodes) -> dict:
    """Fraction of set bits, and of 'constant' bits (>= 99% of users share one value)."""
    ub = C.unpack(uc, "01").astype(np.float64)
    ib = C.unpack(ic, "01").astype(np.float64)
    uf, if_ = ub.mean(axis=0), ib.mean(axis=0)
    return {"user_ones": float(ub.mean()), "item_ones": float(ib.mean()),
            "user_const_bits": float(np.mean((uf >= 0.99) | (uf <= 0.01))),
            "item_const_bits": float(np.mean((if_ >= 0.99) | (if_ <= 0.01)))}
