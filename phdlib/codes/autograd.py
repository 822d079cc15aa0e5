"""Hamming and PHD scores as differentiable PyTorch ops: the building block of VH for any model.

A model that wants binary codes ranked by the Hamming distance or the projected
Hamming dissimilarity (PHD) of Section 4 of the paper only has to produce two
batches of real *logits*, float tensors ``(B, m)`` on any device: one row per
(user, item) pair, bit ``j`` set with probability ``p = sigmoid(logit_j)``.
This module turns them into bits and a score, with gradients, and the trained
logits into packed codes for :class:`phdlib.serving.search.BinaryIndex` and the
engines.

Bits (Eq. 9 of the paper, as 0/1 floats): ``b = ceil(p - mu)`` with
``mu ~ U(0, 1)`` (``stochastic=True``, drawn from a ``torch.Generator``) or
``mu = 0.5`` (deterministic: the code kept for search). The sample is not
differentiable; the straight-through estimator passes the gradient of ``b``
to ``p`` unchanged (:func:`sample_bits`).

Scores (float ``(B,)``, exact integers for hard bits):

- :func:`hamming_score`: ``<2 b_u - 1, 2 b_i - 1> = m - 2 d_H(u, i)``;
- :func:`phd_score`: the item bits are first projected by the user bits,
  ``b_i' = b_u * b_i`` (the AND of the paper's Eq. 4), and the score is
  ``<2 b_u - 1, 2 b_i' - 1> = m - 2 PHD(u, i)``, ``PHD = popcount(u AND NOT i)``.
  ``user_mask_grad=False`` stops the gradient of the projection into the user
  bits (the user still gets the gradient of its own factor ``2 b_u - 1``).

Both return ``(score, p_user, p_item)``: the probabilities are what a KL term
(VH's optional regulariser) needs. ``relaxed=True`` replaces the bits by their
probabilities: a smooth score, the expectation-free relaxation whose gradient
at the hard bits is the straight-through gradient (what the tests check with
finite differences). :func:`score` picks one of the two by a distance name or
:class:`~phdlib.codes.distances.Distance`; :class:`CodeScore` is the same as an
``nn.Module`` (stochastic in training mode, deterministic in eval mode).

:func:`pack` turns logits into packed codes, deterministic bits, the same
bits the score used with ``stochastic=False``. Item codes are returned *plain*
for PHD as for Hamming: the projection depends on the user and happens at
search time (:class:`~phdlib.serving.search.BinaryIndex` ``"phd"`` and
:meth:`Distance.store <phdlib.codes.distances.Distance.store>` store the items'
NOT once, so a PHD costs one AND and one popcount), as VH stores them.

Why composed ops and no ``torch.autograd.Function``: every step is an ordinary
differentiable PyTorch op (``sigmoid``, ``ceil`` under ``detach`` for the
straight-through estimator, products and a sum), so autograd derives the
backward pass, on every device, with double backward, ``torch.compile`` and
``gradcheck`` working as for any other op. A hand-written ``Function`` would
only buy a fused backward that saves a few ``(B, m)`` temporaries; it would
also be a second formula to keep equal to the first, and it would change the
float operations of VH, whose stored runs must stay bit for bit what they
are (:class:`phdlib.methods.vh_model.VHModel` calls these functions).

Example, a two-tower model (embedding tables as the towers) trained on random
ratings, then packed and searched::

    >>> import torch
    >>> from phdlib.codes.autograd import pack, phd_score
    >>> from phdlib.serving.search import BinaryIndex
    >>> g = torch.Generator().manual_seed(0)
    >>> n_users, n_items, m, n = 40, 60, 32, 2000
    >>> def tower(rows):  # a table of `rows` x m logits (any module that outputs (B, m) will do)
    ...     return torch.nn.Embedding.from_pretrained(torch.randn(rows, m, generator=g), freeze=False)
    >>> user_tower, item_tower = tower(n_users), tower(n_items)
    >>> u = torch.randint(0, n_users, (n,), generator=g)
    >>> i = torch.randint(0, n_items, (n,), generator=g)
    >>> rating = torch.randint(1, 6, (n,), generator=g).float()
    >>> target = 2.0 * m * (rating - 1) / 4 - m        # ratings 1..5 mapped onto [-m, m]
    >>> opt = torch.optim.Adam([*user_tower.parameters(), *item_tower.parameters()], lr=0.05)
    >>> losses = []
    >>> for step in range(30):
    ...     score, p_u, p_i = phd_score(user_tower(u), item_tower(i), stochastic=True, generator=g)
    ...     loss = ((score - target) ** 2).mean()
    ...     opt.zero_grad(); loss.backward(); opt.step()
    ...     losses.append(loss.item())
    >>> user_codes, item_codes = pack(user_tower.weight, item_tower.weight, "phd")
    >>> index = BinaryIndex(m, "phd")
    >>> index.add(item_codes)
    >>> dist, ids = index.search(user_codes[:3], k=5)   # the 5 items of least PHD per user
    >>> ids.shape, dist.dtype.name
    ((3, 5), 'int32')
"""
from __future__ import annotations

import torch
from torch import nn

from .distances import PHD, distance as _distance
from .packed import PackedCodes, pack as _pack_bits

__all__ = ["CodeScore", "hamming_score", "hard_bits", "pack", "pack_logits", "phd_score",
           "sample_bits", "score", "score_bits"]


# --------------------------------------------------------------------------- bits


def hard_bits(p: torch.Tensor, stochastic: bool = False, generator=None) -> torch.Tensor:
    """Bits ``ceil(p - mu)`` in {0, 1}, same dtype, shape and device as ``p``, no gradient.

    p: probabilities, float ``(..., m)``. ``stochastic``: ``mu ~ U(0, 1)`` drawn
    with ``torch.rand(p.shape, generator=generator)`` on ``p``'s device (one
    draw per bit, in row-major order; ``generator`` None: PyTorch's default
    one), else ``mu = 0.5`` (bit set iff ``p > 0.5``).
    """
    mu = torch.rand(p.shape, generator=generator, device=p.device) if stochastic else 0.5
    return torch.ceil(p.detach() - mu)


def sample_bits(p: torch.Tensor, stochastic: bool, generator=None) -> torch.Tensor:
    """Bits ``ceil(p - mu)`` in {0, 1} (float, like ``p``), straight-through gradient to ``p``.

    The value is :func:`hard_bits`; the gradient of the result with respect
    to ``p`` is the identity (``p + (b - p).detach()``).
    """
    return p + (hard_bits(p, stochastic, generator) - p).detach()


# --------------------------------------------------------------------------- scores


def score_bits(b_user: torch.Tensor, b_item: torch.Tensor, distance,
               user_mask_grad: bool = True) -> torch.Tensor:
    """The score of bits (or probabilities) ``(B, m)``: float ``(B,)``.

    ``m - 2 d(u, i)`` for 0/1 bits, ``d`` the Hamming distance or PHD
    (``distance``: a name or :class:`~phdlib.codes.distances.Distance`). For
    PHD the item bits are projected first, ``b_item * b_user``, with the user
    factor detached when ``user_mask_grad`` is False (ignored for Hamming,
    which has no projection). Probabilities in place of bits give the relaxed
    score.
    """
    if _distance(distance) is PHD:
        b_item = b_item * (b_user if user_mask_grad else b_user.detach())
    return ((2.0 * b_user - 1.0) * (2.0 * b_item - 1.0)).sum(dim=1)


def _check_logits(user_logits, item_logits) -> None:
    for name, x in (("user_logits", user_logits), ("item_logits", item_logits)):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"{name} must be a float torch.Tensor (B, m), got "
                            f"{getattr(x, 'dtype', type(x).__name__)}")
    if user_logits.dim() != 2 or user_logits.shape != item_logits.shape:
        raise ValueError(f"user_logits and item_logits must be (B, m) tensors of one shape, "
                         f"got {tuple(user_logits.shape)} and {tuple(item_logits.shape)}")


def score(user_logits: torch.Tensor, item_logits: torch.Tensor, distance, *,
          stochastic: bool = False, generator=None, user_mask_grad: bool = True,
          relaxed: bool = False):
    """Score of each (user, item) pair by ``distance`` and the bit probabilities.

    user_logits, item_logits: float ``(B, m)``, one device. distance: a name
    (``"hamming"``, ``"phd"``) or :class:`~phdlib.codes.distances.Distance`.
    Returns ``(score, p_user, p_item)``: float ``(B,)`` (``m - 2 d(u, i)``
    for hard bits) and the probabilities ``sigmoid(logits)`` ``(B, m)``.

    Bits are drawn with :func:`sample_bits`, users first, then items
    (``stochastic``: from ``generator``); ``relaxed=True`` uses the
    probabilities instead (no sampling; ``stochastic`` must then be False).
    ``user_mask_grad``: see :func:`score_bits`.
    """
    dist = _distance(distance)
    _check_logits(user_logits, item_logits)
    p_user = torch.sigmoid(user_logits)
    p_item = torch.sigmoid(item_logits)
    if relaxed:
        if stochastic:
            raise ValueError("relaxed=True uses the probabilities, not sampled bits: "
                             "pass stochastic=False with it")
        b_user, b_item = p_user, p_item
    else:
        b_user = sample_bits(p_user, stochastic, generator)
        b_item = sample_bits(p_item, stochastic, generator)
    return score_bits(b_user, b_item, dist, user_mask_grad), p_user, p_item


def hamming_score(user_logits: torch.Tensor, item_logits: torch.Tensor, *,
                  stochastic: bool = False, generator=None, relaxed: bool = False):
    """``m - 2 d_H(u, i)`` of each pair (float ``(B,)``), ``p_user``, ``p_item`` ``(B, m)``.

    :func:`score` with ``distance="hamming"``.
    """
    return score(user_logits, item_logits, "hamming", stochastic=stochastic,
                 generator=generator, relaxed=relaxed)


def phd_score(user_logits: torch.Tensor, item_logits: torch.Tensor, *,
              stochastic: bool = False, generator=None, user_mask_grad: bool = True,
              relaxed: bool = False):
    """``m - 2 PHD(u, i)`` of each pair (float ``(B,)``), ``p_user``, ``p_item`` ``(B, m)``.

    :func:`score` with ``distance="phd"``: the item bits are projected by the
    user bits before the inner product; ``user_mask_grad=False`` stops the
    projection's gradient into the user logits.
    """
    return score(user_logits, item_logits, PHD, stochastic=stochastic, generator=generator,
                 user_mask_grad=user_mask_grad, relaxed=relaxed)


class CodeScore(nn.Module):
    """:func:`score` as a module: ``forward(user_logits, item_logits)`` -> ``(score, p_user, p_item)``.

    Bits are sampled (``stochastic``, from ``generator``) in training mode
    only; in eval mode (``module.eval()``) they are the deterministic codes
    :func:`pack` keeps. No parameters.
    """

    def __init__(self, distance="phd", stochastic: bool = True, user_mask_grad: bool = True,
                 generator=None):
        super().__init__()
        self.distance = _distance(distance)
        self.stochastic, self.user_mask_grad = bool(stochastic), bool(user_mask_grad)
        self.generator = generator

    def forward(self, user_logits: torch.Tensor, item_logits: torch.Tensor):
        return score(user_logits, item_logits, self.distance,
                     stochastic=self.stochastic and self.training, generator=self.generator,
                     user_mask_grad=self.user_mask_grad)

    def extra_repr(self) -> str:
        return (f"distance={self.distance.name!r}, stochastic={self.stochastic}, "
                f"user_mask_grad={self.user_mask_grad}")


# --------------------------------------------------------------------------- codes


@torch.no_grad()
def pack_logits(logits: torch.Tensor, stochastic: bool = False, generator=None) -> PackedCodes:
    """Packed codes of logits ``(n, m)``: the bits :func:`hard_bits` of ``sigmoid(logits)``.

    Any device (the bits are copied to the CPU); ``n`` codes of ``m`` bits,
    bit ``j`` of row ``r`` set iff bit ``j`` of the score's sample is 1.
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() \
            or logits.dim() != 2:
        raise ValueError(f"logits must be a float torch.Tensor (n, m), got "
                         f"{getattr(logits, 'shape', type(logits).__name__)}")
    bits = hard_bits(torch.sigmoid(logits), stochastic, generator)
    return _pack_bits(bits.to(torch.uint8).cpu().numpy(), encoding="01")


def pack(user_logits: torch.Tensor, item_logits: torch.Tensor,
         distance) -> tuple[PackedCodes, PackedCodes]:
    """Deterministic codes of users and items, ready for search by ``distance``.

    user_logits float ``(n_users, m)``, item_logits float ``(n_items, m)``
    (e.g. the ``weight`` of two ``nn.Embedding`` towers, or a tower's output
    for every item), any device. Returns ``(user_codes, item_codes)``, plain
    (not negated) :class:`~phdlib.codes.packed.PackedCodes` for both
    distances: add the items to ``BinaryIndex(m, distance)`` and search with
    the user codes (PHD negates the items there, once); the score of
    :func:`score` with ``stochastic=False`` on the same rows equals
    ``m - 2 * distance.table(user_codes, item_codes)``. ``distance`` is checked
    (a name or Distance) so that a typo fails here, not at search time.
    """
    _distance(distance)
    uc, ic = pack_logits(user_logits), pack_logits(item_logits)
    if uc.m != ic.m:
        raise ValueError(f"user and item codes must have one width m, got {uc.m} and {ic.m}")
    return uc, ic

