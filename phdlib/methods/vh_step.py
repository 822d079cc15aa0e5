"""One VH / VH_PHD training step, two ways: fused Numba kernels, or autograd.

Both take a batch (rows of the training split), the rating noise of the step,
and do the forward pass, the backward pass and the Adam update of the model
in place. :class:`FusedStep` (CPU) runs :mod:`phdlib.kernels.vh`: no graph,
no dense gradient, one pass over the parameters and the Adam moments per
step. It reproduces :class:`AutogradStep` (the model's ``forward``, PyTorch's
autograd and ``torch.optim.Adam(fused=True)``) bit for bit on the same seed:
it draws the same random numbers from the same generators in the same order.
:func:`make_step` picks the fused step wherever it applies (CPU, no KL term)
and the autograd step otherwise (CUDA, ``kl_weight > 0``).
"""
from __future__ import annotations

import numpy as np
import torch

from ..kernels import vh as K
from .vh_model import VHModel, kl_bernoulli_half, make_adam, rating_target

#: Adam's constants (PyTorch's defaults, as the released code's TF1 Adam).
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8


class _Batch:
    """The training split and how a step turns a batch into targets."""

    def __init__(self, users, items, ratings, bits, scale, target_map):
        self.users, self.items, self.ratings = users, items, ratings
        self.bits, self.scale, self.target_map = bits, scale, target_map

    def target(self, idx, eps, noise):
        """Noisy ratings of rows ``idx`` mapped to ``[-m, m]`` (float32 ``(B,)``)."""
        r = self.ratings[idx]
        if eps is not None:
            r = r + eps * noise
        return rating_target(r, self.bits, self.scale, self.target_map)


class AutogradStep:
    """The reference step: ``VHModel.forward``, autograd, fused ``torch.optim.Adam``.

    Runs on any device and with the KL term. ``__call__(idx, eps, noise,
    want_loss)``: idx int64 ``(B,)`` rows of the training split, eps float32
    ``(B,)`` standard normal draws (or None), noise the current noise standard
    deviation (rating units). Returns the batch loss (float) when
    ``want_loss``, else None.
    """

    name = "autograd"

    def __init__(self, model: VHModel, train, bits, scale, cfg, gen):
        dev = model.device
        self.model, self.gen, self.dev = model, gen, dev
        self.data = _Batch(*(torch.as_tensor(np.asarray(a, dtype=t), device=dev) for a, t in
                             ((train.user, np.int64), (train.item, np.int64),
                              (train.rating, np.float32))),
                           bits, scale, cfg["target_map"])
        self.stochastic = cfg["train_sampling"] == "stochastic"
        self.kl_weight = float(cfg["kl_weight"])
        self.opt = make_adam(model.parameters(), cfg["lr"])

    def __call__(self, idx, eps, noise, want_loss):
        idx = torch.as_tensor(idx, device=self.dev)
        eps = None if eps is None else torch.as_tensor(eps, device=self.dev)
        target = self.data.target(idx, eps, noise)
        score, pu, pi = self.model(self.data.users[idx], self.data.items[idx], self.stochastic,
                                   self.gen)
        loss = ((target - score) ** 2).mean()
        if self.kl_weight > 0:
            loss = loss + self.kl_weight * (kl_bernoulli_half(pu) + kl_bernoulli_half(pi)).mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return float(loss.detach()) if want_loss else None

    def sync(self) -> None:
        """Nothing to hand back: the generator is used directly."""


class _AdamState:
    """One parameter (float32 ``(n, d)`` view of a tensor) with its Adam moments."""

    def __init__(self, param: torch.Tensor, batch_size: int):
        p = param.detach()
        self.p = p.numpy().reshape(p.shape[0], -1)
        self.m, self.v = np.zeros_like(self.p), np.zeros_like(self.p)
        self.slot = np.full(self.p.shape[0], -1, dtype=np.int64)
        self.acc = np.empty((batch_size, self.p.shape[1]), dtype=np.float32)

    def update(self, rows, grad, consts, threads: int, flush: bool) -> None:
        if threads > 1:
            K.adam_rows_parallel(self.p, self.m, self.v, rows, grad, self.slot, self.acc, *consts,
                                 threads, flush)
        else:
            K.adam_rows(self.p, self.m, self.v, rows, grad, self.slot, self.acc, *consts)


class _Stream:
    """The MT19937 stream of a CPU ``torch.Generator``, continued in Numba.

    ``torch.rand`` (float32, CPU) takes one 32-bit MT19937 word per number;
    :func:`phdlib.kernels.vh.mt_uniform24` draws the same numbers about three
    times faster. The generator's state is read once (and checked against
    ``torch.rand`` on a copy); :meth:`sync` writes the advanced state back, so
    the generator goes on where the stream stopped. If the state's layout is
    not the one known here, ``rand`` falls back to ``torch.rand``.
    """

    #: CPU generator state: seed u64, left i32, seeded i32, next u64, 624 x u64 words, ...
    _LEFT, _KEY, _SIZE = 8, 24, 5056

    def __init__(self, gen: torch.Generator):
        self.gen, self.key, self.pos = gen, None, None
        state = gen.get_state().numpy()
        if state.size != self._SIZE:
            return
        left = int(state[self._LEFT:self._LEFT + 4].view(np.int32)[0])
        key = state[self._KEY:self._KEY + 624 * 8].view(np.uint64).astype(np.uint32)
        pos = np.array([625 - left], dtype=np.int64)
        probe = torch.Generator().set_state(gen.get_state())
        got, want = np.empty(1000, np.float32), torch.rand(1000, generator=probe).numpy()
        K.mt_uniform24(key.copy(), pos.copy(), got)
        if 1 <= left <= 624 and np.array_equal(got, want):
            self.key, self.pos = key, pos

    def rand(self, out: torch.Tensor) -> None:
        """Fill ``out`` (float32, CPU) as ``torch.rand(out.shape, generator=gen, out=out)``."""
        if self.key is None:
            torch.rand(out.shape, generator=self.gen, out=out)
        else:
            K.mt_uniform24(self.key, self.pos, out.numpy())

    def sync(self) -> None:
        """Write the stream's position back into the generator."""
        if self.key is None:
            return
        state = self.gen.get_state().numpy().copy()
        state[self._LEFT:self._LEFT + 4] = np.array([625 - self.pos[0]], np.int32).view(np.uint8)
        state[self._LEFT + 8:self._LEFT + 16] = np.array([self.pos[0] % 624],
                                                         np.uint64).view(np.uint8)
        state[self._KEY:self._KEY + 624 * 8] = self.key.astype(np.uint64).view(np.uint8)
        self.gen.set_state(torch.from_numpy(state))


class FusedStep:
    """The same step as :class:`AutogradStep` in Numba kernels (CPU, no KL term).

    The bit probabilities of the batch rows come from PyTorch (its vectorised
    sigmoid) and the sampling thresholds from the model's generator's stream
    (:class:`_Stream`), so that every number equals the autograd step's; the
    rest is :func:`phdlib.kernels.vh.batch_backward` and one dense Adam pass
    per parameter. ``threads``: Numba threads of the Adam pass; ``flush``:
    whether those threads flush subnormals to zero (the calling thread's
    mode is the caller's: :meth:`phdlib.methods.vh._Trainer.steps` sets it).
    Call :meth:`sync` before anyone else draws from the generator.
    """

    name = "fused"

    def __init__(self, model: VHModel, train, bits, scale, cfg, gen, threads: int = 1,
                 flush: bool = True):
        if not supports(model.device, cfg):
            raise ValueError("the fused step runs on CPU without the KL term")
        B = int(cfg["batch_size"])
        self.model, self.gen, self.threads, self.lr = model, gen, int(threads), float(cfg["lr"])
        self.flush = bool(flush)
        self.data = _Batch(np.asarray(train.user, dtype=np.int64),
                           np.asarray(train.item, dtype=np.int64),
                           np.asarray(train.rating, dtype=np.float32), bits, scale,
                           cfg["target_map"])
        self.stochastic = cfg["train_sampling"] == "stochastic"
        self.stream = _Stream(gen) if self.stochastic else None
        self.phd, self.mask_grad = model.distance == "phd", bool(model.user_mask_grad)
        self.ue = model.user_emb.detach().numpy()
        self.ie = model.item_emb.detach().numpy()
        self.params = [_AdamState(model.user_emb, B), _AdamState(model.item_emb, B)]
        if model.user_bias is not None:
            self.params.append(_AdamState(model.user_bias, B))
            self.bias = model.user_bias.detach().numpy()
        else:
            self.bias = None
        m = int(bits)
        self.mu = torch.full((2, B, m), 0.5)  # thresholds of the users' bits, then the items'
        self.pu, self.pi = torch.empty(B, m), torch.empty(B, m)
        lo, hi = (float(x) for x in scale)
        f = np.float32
        self.tmap = (0 if cfg["target_map"] == "released" else 1, f(bits), f(lo), f(hi),
                     f(hi - lo))
        self.gu, self.gi = np.empty((B, m), np.float32), np.empty((B, m), np.float32)
        self.gs, self.score = np.empty((B, 1), np.float32), np.empty(B, np.float32)
        self.zero_bias = np.zeros(B, np.float32)
        self.users, self.items = np.empty(B, np.int64), np.empty(B, np.int64)
        self.r = np.empty(B, np.float32)
        self.t = 0

    def sync(self) -> None:
        """Hand the random stream back to the model's generator."""
        if self.stream is not None:
            self.stream.sync()

    def _consts(self):
        """Adam's per-step constants as PyTorch's fused kernel rounds them."""
        self.t += 1
        bc1, bc2 = 1 - BETA1 ** self.t, 1 - BETA2 ** self.t
        f = np.float32
        return (f(1 - BETA1), f(BETA2), f(1 - BETA2), f(bc2 ** 0.5), f(EPS),
                f(-(self.lr / bc1)))

    def __call__(self, idx, eps, noise, want_loss):
        d, users, items, target = self.data, self.users, self.items, self.r
        K.gather_batch(idx, d.users, d.items, d.ratings, self.zero_bias if eps is None else eps,
                       np.float32(noise if eps is not None else 0.0), *self.tmap, users, items,
                       target)
        pu, pi = self.pu.numpy(), self.pi.numpy()
        K.gather_rows(self.ue, users, pu)
        K.gather_rows(self.ie, items, pi)
        torch.sigmoid(self.pu, out=self.pu)  # PyTorch's sigmoid: the autograd step's numbers
        torch.sigmoid(self.pi, out=self.pi)
        if self.stochastic:
            self.stream.rand(self.mu)  # one stream: the users' thresholds, then the items'
        mu = self.mu.numpy()
        bias = self.bias[users] if self.bias is not None else self.zero_bias
        K.batch_backward(pu, pi, mu[0], mu[1], target, bias, self.phd, self.mask_grad, self.gu,
                         self.gi, self.gs[:, 0], self.score)
        c = self._consts()
        self.params[0].update(users, self.gu, c, self.threads, self.flush)
        self.params[1].update(items, self.gi, c, self.threads, self.flush)
        if self.bias is not None:
            self.params[2].update(users, self.gs, c, self.threads, self.flush)
        if want_loss:
            return float(((torch.from_numpy(target) - torch.from_numpy(self.score)) ** 2).mean())
        return None


def supports(device: str, cfg: dict) -> bool:
    """Whether :class:`FusedStep` applies: CPU training without the KL term."""
    return device == "cpu" and float(cfg["kl_weight"]) == 0.0


def make_step(kind: str, model, train, bits, scale, cfg, gen, threads: int = 1,
              flush: bool = True):
    """The training step ``kind``: ``"fused"``, ``"autograd"`` or ``"auto"`` (fused where it applies).

    flush: the fused step's worker threads flush subnormals to zero.
    """
    if kind not in ("auto", "fused", "autograd"):
        raise ValueError(f"step must be 'auto', 'fused' or 'autograd', got {kind!r}")
    if kind == "fused" or (kind == "auto" and supports(model.device, cfg)):
        return FusedStep(model, train, bits, scale, cfg, gen, threads, flush)
    return AutogradStep(model, train, bits, scale, cfg, gen)
