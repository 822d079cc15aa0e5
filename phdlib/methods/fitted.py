"""What a trained method returns: a :class:`Fitted` model, arrays in, scores out.

A :class:`Fitted` model holds the arrays the results store keeps
(:attr:`Fitted.arrays`), rebuilds from them (:meth:`Fitted.from_arrays`),
scores (user, item) pairs or a user-by-item table, and carries its training
trace (:attr:`Fitted.log`, one row per logged step, never a tuning grid) and
scalars about training (:attr:`Fitted.info`). Scores come in four kinds of
arrays, one subclass each: :class:`CodeModel` (packed codes ranked by Hamming
or PHD), :class:`VectorModel` (real vectors, inner product),
:class:`ItemScoreModel` (one score per item) and :class:`BlockCodeModel`
(blocks of ±1 codes with real weights, CCCF). :func:`evaluate_codes` evaluates
a pair of packed code tables through the one evaluation path.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np
import pandas as pd

from .. import codes as C
from ..data.tables import check_ids
from ..evaluation import evaluate
from ..kernels import dcf as KDCF
from ..kernels import mf as KMF

#: What a method ranks by: a code distance (smaller first) or a score (larger first):
#: :data:`phdlib.codes.RANKS`, the names of :data:`phdlib.codes.DISTANCES` and ``"score"``.
RANKS = C.RANKS


def value_kind(ranks_by: str) -> str:
    """``"dissimilarity"`` for Hamming and PHD, ``"score"`` for a real score."""
    if ranks_by not in RANKS:
        raise ValueError(f"ranks_by must be one of {RANKS}, got {ranks_by!r}")
    return "score" if ranks_by == "score" else "dissimilarity"


@dataclass
class Fitted:
    """A trained model (see the module docstring); subclasses say how it scores.

    bits: the code width (or latent size) it was trained at; arrays: what the
    store keeps, name -> ndarray; log: the training trace; info: scalars about
    training (iterations, seconds, ...), reported beside the metrics.
    """

    bits: int
    arrays: dict
    ranks_by: str = "score"
    log: pd.DataFrame = field(default_factory=pd.DataFrame)
    info: dict = field(default_factory=dict)

    #: array names :meth:`from_arrays` needs
    needs: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self):
        value_kind(self.ranks_by)
        missing = [k for k in self.needs if k not in self.arrays]
        if missing:
            raise ValueError(f"{type(self).__name__} needs arrays {list(self.needs)}; "
                             f"missing {missing} (have {sorted(self.arrays)})")

    @property
    def kind(self) -> str:
        """``"dissimilarity"`` (smaller first) or ``"score"`` (larger first)."""
        return value_kind(self.ranks_by)

    @classmethod
    def from_arrays(cls, bits: int, arrays: dict, ranks_by: str = "score") -> "Fitted":
        """Rebuild from stored arrays (log and info are not stored with the arrays)."""
        return cls(int(bits), dict(arrays), ranks_by)

    #: the arrays whose first axis counts the users and the items
    shape_keys: ClassVar[tuple[str, str]] = ("user_codes", "item_codes")
    #: keys of ``info`` that describe the model's shape, not its training
    shape_info: ClassVar[tuple[str, ...]] = ()

    @property
    def n_users(self) -> int:
        return int(self.arrays[self.shape_keys[0]].shape[0])

    @property
    def n_items(self) -> int:
        return int(self.arrays[self.shape_keys[1]].shape[0])

    def table(self, users, items) -> np.ndarray:
        """Values of every (user, item): float64 or int32 ``(len(users), len(items))``."""
        raise NotImplementedError

    def shared_values(self) -> np.ndarray | None:
        """The values as one row that every user shares (float64 ``(n_items,)``, as
        :meth:`table` gives each row), or None where they depend on the user."""
        return None

    def pairs(self, user, item, block: int = 512) -> np.ndarray:
        """Value of each pair ``(user[k], item[k])``: ``(N,)``, as :meth:`table` computes it.

        The default computes the table of all items a block of users at a
        time; subclasses with a cheaper pairwise form override it.
        """
        user = check_ids(user, self.n_users, "user")
        item = check_ids(item, self.n_items, "item")
        if user.shape != item.shape:
            raise ValueError(f"user and item must have one length, got {user.shape} and {item.shape}")
        out = None
        order = np.argsort(user, kind="stable")
        us = user[order]
        uniq = np.unique(us)
        all_items = np.arange(self.n_items)
        for b0 in range(0, len(uniq), block):
            ub = uniq[b0:b0 + block]
            tab = self.table(ub, all_items)
            if out is None:
                out = np.empty(user.shape[0], dtype=tab.dtype)
            lo, hi = np.searchsorted(us, ub[0]), np.searchsorted(us, ub[-1], side="right")
            idx = order[lo:hi]
            out[idx] = tab[np.searchsorted(ub, user[idx]), item[idx]]
        return out if out is not None else np.empty(0)


@dataclass
class CodeModel(Fitted):
    """Packed codes ranked by a code distance.

    arrays: ``user_codes`` uint64 ``(n_users, w)``, ``item_codes`` uint64
    ``(n_items, w)``, plain (never stored negated), bit ``j`` in bit ``j mod
    64`` of word ``j div 64``. ``ranks_by``: ``"hamming"`` or ``"phd"``
    (``PHD(u, i) = popcount(u AND NOT i)``, user first). Values: int32 bit counts.
    """

    ranks_by: str = "hamming"
    needs: ClassVar[tuple[str, ...]] = ("user_codes", "item_codes")

    def __post_init__(self):
        super().__post_init__()
        if self.ranks_by not in C.DISTANCE_NAMES:
            raise ValueError(f"codes rank by 'hamming' or 'phd', got {self.ranks_by!r}")

    @property
    def user_codes(self) -> C.PackedCodes:
        return C.PackedCodes(np.asarray(self.arrays["user_codes"], dtype=np.uint64), int(self.bits))

    @property
    def item_codes(self) -> C.PackedCodes:
        return C.PackedCodes(np.asarray(self.arrays["item_codes"], dtype=np.uint64), int(self.bits))

    def with_distance(self, ranks_by: str) -> "CodeModel":
        """The same codes ranked by another distance (the distance ablation)."""
        return CodeModel(self.bits, self.arrays, ranks_by, self.log, self.info)

    def table(self, users, items) -> np.ndarray:
        uc = self.user_codes[check_ids(users, self.n_users, "user")]
        ic = self.item_codes[check_ids(items, self.n_items, "item")]
        return C.distance(self.ranks_by).table(uc, ic)

    def pairs(self, user, item, block: int = 0) -> np.ndarray:
        return C.pair_distances(self.user_codes, self.item_codes, user, item, self.ranks_by)


@dataclass
class VectorModel(Fitted):
    """Real vectors ranked by inner product, larger first.

    arrays: ``user_vectors`` float32 ``(n_users, d)``, ``item_vectors``
    float32 ``(n_items, d)``. Values: float64 inner products.
    """

    needs: ClassVar[tuple[str, ...]] = ("user_vectors", "item_vectors")

    shape_keys: ClassVar[tuple[str, str]] = ("user_vectors", "item_vectors")

    def table(self, users, items) -> np.ndarray:
        P = np.asarray(self.arrays["user_vectors"], dtype=np.float64)
        Q = np.asarray(self.arrays["item_vectors"], dtype=np.float64)
        users = check_ids(users, self.n_users, "user")
        return P[users] @ Q[check_ids(items, self.n_items, "item")].T

    def pairs(self, user, item, block: int = 0) -> np.ndarray:
        user = check_ids(user, self.n_users, "user")
        item = check_ids(item, self.n_items, "item")
        # float64 factors, as :meth:`table` (float32 products would differ from it)
        return KMF.pair_scores(user.astype(np.int32), item.astype(np.int32),
                              np.asarray(self.arrays["user_vectors"], dtype=np.float64),
                              np.asarray(self.arrays["item_vectors"], dtype=np.float64))


@dataclass
class ItemScoreModel(Fitted):
    """One score per item, the same for every user (larger first).

    arrays: ``item_scores`` float64 ``(n_items,)``; the number of users is
    not stored (``info["n_users"]`` when known, else any user id is accepted).
    """

    needs: ClassVar[tuple[str, ...]] = ("item_scores",)

    shape_keys: ClassVar[tuple[str, str]] = ("", "item_scores")
    shape_info: ClassVar[tuple[str, ...]] = ("n_users",)

    @property
    def n_users(self) -> int:
        return int(self.info.get("n_users", np.iinfo(np.int32).max))

    def shared_values(self) -> np.ndarray:
        return np.asarray(self.arrays["item_scores"], dtype=np.float64)

    def table(self, users, items) -> np.ndarray:
        s = np.asarray(self.arrays["item_scores"], dtype=np.float64)
        users = check_ids(users, self.n_users, "user")
        items = check_ids(items, self.n_items, "item")
        return np.broadcast_to(s[items], (len(users), len(items))).copy()

    def pairs(self, user, item, block: int = 0) -> np.ndarray:
        check_ids(user, self.n_users, "user")
        item = check_ids(item, self.n_items, "item")
        return np.asarray(self.arrays["item_scores"], dtype=np.float64)[item]


@dataclass
class BlockCodeModel(Fitted):
    """Blocks of ±1 codes with a real weight per user (item) and block (CCCF).

    arrays: ``user_codes``, ``item_codes`` (packed uint64, all blocks side by
    side), ``block_starts`` int64 ``(K + 1,)``, ``user_weights`` float
    ``(n_users, K)``, ``item_weights`` float ``(n_items, K)`` (ones when
    absent: one block). Value: ``sum_b w_u,b w_i,b <u_b, i_b>``, float64.
    """

    needs: ClassVar[tuple[str, ...]] = ("user_codes", "item_codes")

    @cached_property
    def _parts(self):
        starts = np.asarray(self.arrays.get("block_starts", [0, self.bits]), dtype=np.int64)
        if starts.ndim != 1 or starts.size < 2 or starts[0] != 0 or (np.diff(starts) < 0).any():
            raise ValueError(f"block_starts must rise from 0 (one more entry than blocks), got "
                             f"{starts.tolist()}")
        m = int(starts[-1])
        B = C.unpack(C.PackedCodes(np.asarray(self.arrays["user_codes"], np.uint64), m)).astype(np.int8)
        D = C.unpack(C.PackedCodes(np.asarray(self.arrays["item_codes"], np.uint64), m)).astype(np.int8)
        K = starts.shape[0] - 1
        Wu = np.asarray(self.arrays.get("user_weights", np.ones((B.shape[0], K))), dtype=np.float64)
        Wi = np.asarray(self.arrays.get("item_weights", np.ones((D.shape[0], K))), dtype=np.float64)
        if Wu.shape != (B.shape[0], K) or Wi.shape != (D.shape[0], K):
            raise ValueError(f"{K} blocks but weights of shapes {Wu.shape} and {Wi.shape}")
        return (np.ascontiguousarray(B), np.ascontiguousarray(D), starts,
                np.ascontiguousarray(Wu), np.ascontiguousarray(Wi))

    def table(self, users, items) -> np.ndarray:
        _, _, starts, Wu, Wi = self._parts
        users = check_ids(users, self.n_users, "user").astype(np.int64)
        items = check_ids(items, self.n_items, "item").astype(np.int64)
        return KDCF.table_scores(users, items, self._words[0], self._words[1], starts, Wu, Wi)

    @cached_property
    def _words(self):
        """The packed user and item codes, uint64 C-contiguous."""
        return tuple(np.ascontiguousarray(np.asarray(self.arrays[k], dtype=np.uint64))
                     for k in ("user_codes", "item_codes"))

    def pairs(self, user, item, block: int = 0) -> np.ndarray:
        B, D, starts, Wu, Wi = self._parts
        user = check_ids(user, self.n_users, "user").astype(np.int64)
        item = check_ids(item, self.n_items, "item").astype(np.int64)
        return KDCF.pair_scores(user, item, B, D, starts, Wu, Wi)



def evaluate_codes(user_codes: C.PackedCodes, item_codes: C.PackedCodes, ratings,
                   distance: str, ties: str = "expected", discount: str = "paper",
                   ks=(5, 10), seed: int = 0) -> pd.DataFrame:
    """Per-user NDCG@k and RR of ``ratings`` (a :class:`phdlib.data.Ratings`).

    Each user's rated items are ranked by the code distance, smallest first:
    :func:`phdlib.evaluation.evaluate` of a :class:`CodeModel` of these codes
    (``item_codes`` plain or stored negated).
    """
    plain = item_codes.negate() if item_codes.negated else item_codes
    model = CodeModel(user_codes.m, {"user_codes": user_codes.words, "item_codes": plain.words},
                      distance)
    return evaluate(model, ratings, ties, discount, ks, seed)
