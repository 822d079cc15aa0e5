"""One VH / VH_PHD training step, two ways: fused Numba kernels, or autograd.

Both take a batch (rows of the training split), the rating noise of the step,
and do the forward pass, the backward pass and the Adam update of the model
in place. :class:`FusedStep` (CPU) runs :mod:`phdlib.kernels.vh` and
:mod:`phdlib.kernels.adam`: no graph, no dense gradient, and by default work
only on the rows a batch touches (the others are brought up to date when next
read, to the same numbers as a dense pass). It reproduces :class:`AutogradStep` (the model's ``forward``, PyTorch's
autograd and ``torch.optim.Adam(fused=True)``) bit for bit on the same seed:
it draws the same random numbers from the same generators in the same order.
:func:`make_step` picks the fused step wherever it applies (CPU, no KL term)
and the autograd step otherwise (CUDA, ``kl_weight > 0``).
"""
from __future__ import annotations

import numpy as np
import torch

from ..kernels import adam as A
from ..kernels import adam_replay as R
from ..kernels import vh as K
from .vh_config import ADAMS, SPARSE_GAP
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


#: How the fused step brings the rows of a table through a step (:mod:`phdlib.kernels.adam`):
#: ``"touched"`` steps the batch's rows and brings every other row up to date when it is
#: next read (the same numbers as ``"all"``, bit for bit); ``"all"`` runs the dense pass
#: over every row every step; ``"auto"`` picks per table
#: (:data:`phdlib.methods.vh_config.SPARSE_GAP`).
ROWS = ("auto", "touched", "all")


class _Constants:
    """Adam's constants as PyTorch's fused kernel rounds them, with per-step tables.

    ``bc2s[t]`` = float32 ``sqrt(1 - beta2^t)`` and ``nss[t]`` = float32
    ``-lr / (1 - beta1^t)`` for steps ``t >= 1`` (index 0 unused), computed
    with Python floats as PyTorch computes them; :meth:`upto` grows the tables.
    """

    def __init__(self, lr: float):
        f = np.float32
        self.lr = float(lr)
        self.c1, self.b2, self.c2, self.eps = f(1 - BETA1), f(BETA2), f(1 - BETA2), f(EPS)
        self.bc2s, self.nss = np.zeros(1, np.float32), np.zeros(1, np.float32)

    def upto(self, t: int) -> "_Constants":
        """Make the tables hold steps ``1..t`` (doubling their length when they grow)."""
        n = self.bc2s.shape[0]
        if t >= n:
            size = max(t + 1, 2 * n)
            bc2s, nss = np.zeros(size, np.float32), np.zeros(size, np.float32)
            bc2s[:n], nss[:n] = self.bc2s, self.nss
            for k in range(n, size):
                bc1, bc2 = 1 - BETA1 ** k, 1 - BETA2 ** k
                bc2s[k], nss[k] = bc2 ** 0.5, -(self.lr / bc1)
            self.bc2s, self.nss = bc2s, nss
        return self

    def dense(self, t: int) -> tuple:
        """The constants of step ``t`` as :func:`phdlib.kernels.adam.adam_rows` takes them."""
        return (self.c1, self.b2, self.c2, self.bc2s[t], self.eps, self.nss[t])

    def tables(self) -> tuple:
        """``(c1, b2, c2, bc2s, nss, eps)`` as the sparse kernels take them."""
        return (self.c1, self.b2, self.c2, self.bc2s, self.nss, self.eps)


class _AdamState:
    """One parameter (float32 ``(n, d)`` view of a tensor) with its Adam moments.

    mode: ``"all"`` (the dense pass every step), ``"touched"`` (the batch's
    rows; the others brought up to date when read: the same numbers) or
    ``"lazy"`` (the batch's rows only, ever). ``last[r]``: the step row ``r``
    is up to date with (``"touched"``); ``full`` and ``missed``: the row-steps
    it has replayed in full (a float: elements over the row width) and in all
    (:func:`phdlib.kernels.adam_replay.catch_up`). The moments are allocated
    on cache lines (:func:`phdlib.kernels.adam.zeros_aligned`).
    """

    def __init__(self, param: torch.Tensor, batch_size: int, mode: str):
        p = param.detach()
        self.p = p.numpy().reshape(p.shape[0], -1)
        self.m, self.v = A.zeros_aligned(self.p.shape), A.zeros_aligned(self.p.shape)
        self.slot = np.full(self.p.shape[0], -1, dtype=np.int64)
        self.acc = np.empty((batch_size, self.p.shape[1]), dtype=np.float32)
        self.last = np.zeros(self.p.shape[0], dtype=np.int64)
        self.mode = mode
        self.full, self.missed = 0.0, 0   # row-steps replayed: in full (a float), and all

    def _count(self, counts) -> None:
        self.full += float(counts[0])
        self.missed += int(counts[1])

    def read(self, rows, t: int, c: _Constants, threads: int, flush: bool) -> None:
        """Make rows ``rows`` what step ``t - 1`` left them, before step ``t`` reads them."""
        if self.mode != "touched":
            return
        if threads > 1:
            self._count(R.catch_up_parallel(self.p, self.m, self.v, self.last, np.unique(rows),
                                            t - 1, *c.tables(), threads, flush))
        else:
            self._count(R.catch_up(self.p, self.m, self.v, self.last, rows, t - 1, *c.tables()))

    def step(self, rows, grad, t: int, c: _Constants, threads: int, flush: bool) -> None:
        """Step ``t`` from the batch's rows ``rows`` and their gradients ``grad``."""
        if self.mode == "all":
            consts = c.dense(t)
            if threads > 1:
                A.adam_rows_parallel(self.p, self.m, self.v, rows, grad, self.slot, self.acc,
                                     *consts, threads, flush)
            else:
                A.adam_rows(self.p, self.m, self.v, rows, grad, self.slot, self.acc, *consts)
        else:
            A.adam_touched(self.p, self.m, self.v, rows, grad, self.slot, self.acc, self.last,
                           t, *c.tables())

    def sync(self, t: int, c: _Constants, threads: int, flush: bool) -> None:
        """Bring every row up to date with step ``t``."""
        if self.mode == "touched":
            self._count(R.catch_up_all(self.p, self.m, self.v, self.last, t, *c.tables(),
                                       threads, flush))


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
    rest is :func:`phdlib.kernels.vh.batch_backward` and Adam on each
    parameter (:mod:`phdlib.kernels.adam`):

    - ``rows="touched"``: the batch's rows are brought up to date before
      they are read, then stepped; every other row waits, and :meth:`sync`
      brings them all up to date. The same parameters as the dense pass, bit
      for bit, at the cost of the rows a batch touches and of the steps they
      missed until their parameters settle;
    - ``rows="all"``: the dense pass over every row, every step;
    - ``rows="auto"`` (the default): ``"touched"`` for a table of at least
      :data:`phdlib.methods.vh_config.SPARSE_GAP` rows per rating of a batch,
      ``"all"`` for a smaller one.

    ``adam="lazy"`` (config key ``adam``, absent: ``"dense"``) steps only the
    touched rows and never the others: lazy Adam, another optimiser.
    ``threads``: Numba threads of the dense pass and of :meth:`sync`;
    ``flush``: whether those threads flush subnormals to zero (the calling
    thread's mode is the caller's: :meth:`phdlib.methods.vh._Trainer.steps`
    sets it). Call :meth:`sync` before anyone reads the parameters or draws
    from the generator.
    """

    name = "fused"

    def __init__(self, model: VHModel, train, bits, scale, cfg, gen, threads: int = 1,
                 flush: bool = True, rows: str = "auto"):
        if not supports(model.device, cfg):
            raise ValueError("the fused step runs on CPU without the KL term")
        if rows not in ROWS:
            raise ValueError(f"rows must be one of {ROWS}, got {rows!r}")
        B = int(cfg["batch_size"])
        self.model, self.gen, self.threads, self.lr = model, gen, int(threads), float(cfg["lr"])
        self.flush = bool(flush)
        self.adam = adam_of(cfg)
        self.consts = _Constants(self.lr)
        self.data = _Batch(np.asarray(train.user, dtype=np.int64),
                           np.asarray(train.item, dtype=np.int64),
                           np.asarray(train.rating, dtype=np.float32), bits, scale,
                           cfg["target_map"])
        self.stochastic = cfg["train_sampling"] == "stochastic"
        self.stream = _Stream(gen) if self.stochastic else None
        self.phd, self.mask_grad = model.distance == "phd", bool(model.user_mask_grad)
        self.ue = model.user_emb.detach().numpy()
        self.ie = model.item_emb.detach().numpy()
        tables = [model.user_emb, model.item_emb]
        if model.user_bias is not None:
            tables.append(model.user_bias)
        self.params = [_AdamState(x, B, self._mode(rows, x.shape[0], B)) for x in tables]
        if model.user_bias is not None:
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

    def _mode(self, rows: str, n: int, batch: int) -> str:
        """The update of a table of ``n`` rows (see the class docstring)."""
        if self.adam == "lazy":
            return "lazy"
        if rows == "auto":
            return "touched" if n >= SPARSE_GAP * batch else "all"
        return rows

    def start_at(self, t: int) -> None:
        """Go on as if Adam had taken ``t`` steps already, with zero moments (a benchmark
        times the per-step constants of late training this way; training never calls it)."""
        self.t = int(t)
        self.consts.upto(self.t)
        for st in self.params:
            st.last[:] = self.t

    @property
    def modes(self) -> list[str]:
        """Each table's update: user embeddings, item embeddings (and the users' bias)."""
        return [st.mode for st in self.params]

    def sync(self) -> None:
        """Bring every row up to date and hand the random stream back to the model's generator."""
        for st in self.params:
            st.sync(self.t, self.consts, self.threads, self.flush)
        if self.stream is not None:
            self.stream.sync()

    def __call__(self, idx, eps, noise, want_loss):
        d, users, items, target = self.data, self.users, self.items, self.r
        t = self.t + 1
        c = self.consts.upto(t)
        K.gather_batch(idx, d.users, d.items, d.ratings, self.zero_bias if eps is None else eps,
                       np.float32(noise if eps is not None else 0.0), *self.tmap, users, items,
                       target)
        for st, rows in zip(self.params, (users, items, users)):  # as step t - 1 left them
            st.read(rows, t, c, self.threads, self.flush)
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
        for st, rows, grad in zip(self.params, (users, items, users), (self.gu, self.gi, self.gs)):
            st.step(rows, grad, t, c, self.threads, self.flush)
        self.t = t
        if want_loss:
            return float(((torch.from_numpy(target) - torch.from_numpy(self.score)) ** 2).mean())
        return None


def adam_of(cfg: dict) -> str:
    """The optimiser's semantics of a config: its ``adam`` key, ``"dense"`` when absent."""
    adam = cfg.get("adam", "dense")
    if adam not in ADAMS:
        raise ValueError(f"config 'adam' must be one of {ADAMS}, got {adam!r}")
    return adam


def supports(device: str, cfg: dict) -> bool:
    """Whether :class:`FusedStep` applies: CPU training without the KL term."""
    return device == "cpu" and float(cfg["kl_weight"]) == 0.0


def make_step(kind: str, model, train, bits, scale, cfg, gen, threads: int = 1,
              flush: bool = True, rows: str = "auto"):
    """The training step ``kind``: ``"fused"``, ``"autograd"`` or ``"auto"`` (fused where it applies).

    flush: the fused step's worker threads flush subnormals to zero; rows: how
    the fused step updates a table (:data:`ROWS`). Lazy Adam (``cfg["adam"]``)
    has the fused step only.
    """
    if kind not in ("auto", "fused", "autograd"):
        raise ValueError(f"step must be 'auto', 'fused' or 'autograd', got {kind!r}")
    if kind == "fused" or (kind == "auto" and supports(model.device, cfg)):
        return FusedStep(model, train, bits, scale, cfg, gen, threads, flush, rows)
    if adam_of(cfg) == "lazy":
        raise ValueError("lazy Adam runs in the fused step only (CPU, no KL term)")
    return AutogradStep(model, train, bits, scale, cfg, gen)
