"""The method contract: what every method of the book is and returns.

A :class:`Method` is a recipe: a registry ``name``, a display ``label``,
what it ranks by (:attr:`Method.ranks_by`: ``"hamming"``, ``"phd"`` or a
real-valued ``"score"``), whether it learns binary codes, whether the paper
reports it, a full default config (:meth:`Method.defaults`; the same names
for the same things on every method: ``ties``, ``max_iterations``, ``impl``)
and :meth:`Method.fit`, which trains on ``split.train`` (choosing on
``split.valid`` only) and returns a :class:`Fitted` model.

A :class:`Fitted` model is arrays in, scores out: it holds the arrays the
results store keeps (:attr:`Fitted.arrays`), rebuilds from them
(:meth:`Fitted.from_arrays`), scores (user, item) pairs or a user-by-item
table, and carries its training trace (:attr:`Fitted.log`, one row per
logged step, never a tuning grid) and scalars about training
(:attr:`Fitted.info`). Everything after ``fit``—evaluation, tuning, the store,
reports—is shared code (:mod:`phdlib.evaluation`, :mod:`phdlib.experiments.training`).

Scores come in four kinds of arrays, one :class:`Fitted` subclass each:
:class:`CodeModel` (packed codes ranked by Hamming or PHD), :class:`VectorModel`
(real vectors, inner product), :class:`ItemScoreModel` (one score per item)
and :class:`BlockCodeModel` (blocks of ±1 codes with real weights, CCCF).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar, Iterable, Iterator

import numpy as np
import pandas as pd

from .. import codes as C
from ..kernels import dcf as KDCF
from ..kernels import mf as KMF
from ..data.tables import check_ids
from ..evaluation import evaluate
from . import tuning
from .spec import ConfigSpec

#: What a method ranks by: a code distance (smaller first) or a score (larger first):
#: :data:`phdlib.codes.RANKS`, the names of :data:`phdlib.codes.DISTANCES` and ``"score"``.
RANKS = C.RANKS

#: Default ``tune_ratings`` of every tunable method: a dataset with more ratings
#: than this has its grid chosen on a user sample of at most this many ratings
#: (:func:`phdlib.data.sample_users`), and the chosen point trained on all of
#: it (:func:`phdlib.experiments.training.run`). The paper's ML-1M (998,539 ratings) and
#: Yelp (602,517) are tuned on all their data, as the paper did; ML-10M and
#: Amazon are not (the chapter "Cost at scale" says why that is sound).
TUNE_RATINGS = 1_000_000


def value_kind(ranks_by: str) -> str:
    """``"dissimilarity"`` for Hamming and PHD, ``"score"`` for a real score."""
    if ranks_by not in RANKS:
        raise ValueError(f"ranks_by must be one of {RANKS}, got {ranks_by!r}")
    return "score" if ranks_by == "score" else "dissimilarity"


def rating_arrays(user, item, rating, n_users: int, n_items: int, prefix: str = ""):
    """Validated training triples: (user int32, item int32, rating float64), each ``(r,)``.

    Checks that the three are 1-d and equally long, not empty, that ids are
    integers within ``[0, n)``, and that every rating is finite; the error
    names the field (``prefix`` + ``user``/``item``/``rating``) and the value.
    """
    user, item = np.asarray(user), np.asarray(item)
    rating = np.asarray(rating)
    if not (user.ndim == item.ndim == rating.ndim == 1 and len(user) == len(item) == len(rating)):
        raise ValueError(f"{prefix}user, {prefix}item, {prefix}rating must be 1-d and equally "
                         f"long, got shapes {user.shape}, {item.shape}, {rating.shape}")
    if len(user) == 0:
        raise ValueError(f"no training ratings ({prefix}user is empty)")
    for name, ids, n in (("user", user, n_users), ("item", item, n_items)):
        if not np.issubdtype(ids.dtype, np.integer):
            raise TypeError(f"{prefix}{name} ids must be integers, got dtype {ids.dtype}")
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= n:
            raise ValueError(f"{prefix}{name} id {lo if lo < 0 else hi} outside 0..{n - 1} "
                             f"(n_{name}s={n})")
    rating = rating.astype(np.float64)
    if not np.all(np.isfinite(rating)):
        t = int(np.flatnonzero(~np.isfinite(rating))[0])
        raise ValueError(f"{prefix}rating[{t}] = {rating[t]} is not finite")
    return user.astype(np.int32), item.astype(np.int32), rating


# --------------------------------------------------------------------------- fitted models


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


# --------------------------------------------------------------------------- methods


class _Unset:
    """The default of a declaration every method must make itself (:attr:`Method.quick`)."""

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: The value of :attr:`Method.quick` on a method that has not declared it.
UNSET = _Unset()


class Method:
    """A trainable method (see the module docstring). Subclass and set the class attributes.

    Attributes: ``name`` (registry name), ``label`` (short display name, as in
    the paper's tables), ``description`` (one line), ``ranks_by``
    (:data:`RANKS`), ``learns_codes`` (binary codes: a hashing method),
    ``in_paper`` (reported in the paper's Table 1), ``model``
    (the :class:`Fitted` subclass its arrays rebuild into), ``parallel_grid``
    (its tuning points are independent, so a grid may train them in
    parallel as runs of their own; False when :meth:`fit_grid` shares work).

    Declarations read by the shared code, each made on the method itself:
    ``quick`` (config overrides of the quick profile, for checks and CI:
    ``{}`` says the method is cheap already; every method must set it, the
    default :data:`UNSET` makes :func:`phdlib.experiments.profile_overrides`
    fail), ``color`` (its line colour in the figures, a matplotlib colour
    name; None: matplotlib's next colour) and ``config_spec`` (a
    :class:`phdlib.methods.spec.ConfigSpec`: each key of :meth:`defaults`
    with its section, type and range; :func:`phdlib.methods.resolve_config`
    checks overrides against it). Where the grid is tuned is not the
    method's choice but :mod:`phdlib.methods.tuning`'s (:meth:`tune_point`).
    """

    name: str = ""
    label: str = ""
    description: str = ""
    ranks_by: str = "score"
    learns_codes: bool = False
    in_paper: bool = False
    model: type[Fitted] = Fitted
    parallel_grid: bool = True
    #: rough relative training cost of one run (the grid runner starts costly cells first)
    cost: int = 1
    #: config overrides of the quick profile (``{}``: already cheap); must be set
    quick: dict | _Unset = UNSET
    #: line colour in the figures (a matplotlib colour name); None: the next colour
    color: str | None = None
    #: each config key's section and type; None: undeclared (overrides are then unchecked)
    config_spec: ConfigSpec | None = None

    def __repr__(self) -> str:
        return f"<method {self.name!r}: {self.label}, ranks by {self.ranks_by}>"

    def defaults(self, dataset: str, bits: int) -> dict:
        """The full default config; must hold ``ties``, ``impl`` and, when tunable, ``tune``."""
        raise NotImplementedError

    def fit(self, split, bits: int, seed: int, config: dict, progress: bool = False) -> Fitted:
        """Train one configuration on ``split.train`` (choose on ``split.valid`` only)."""
        raise NotImplementedError

    def grid(self, config: dict, bits: int) -> list[dict]:
        """Tuning points of ``config`` (config overrides, one dict a point); ``[]``: not tuned.

        The default: no grid. A tunable method returns, when ``config["tune"]``
        is true, the points of its grids (each with ``tune=False``).
        """
        return []

    def tune_point(self, config: dict, bits: int) -> tuple[int, int]:
        """``(bits, seed)`` where the grid of a run at ``bits`` is tuned
        (:func:`phdlib.methods.tuning.tune_point`: seed 0, ``tune_bits`` when set)."""
        return tuning.tune_point(config, bits)

    def tunes(self, config: dict, bits: int) -> bool:
        """Whether a run at ``bits`` with ``config`` tunes over a grid (at :meth:`tune_point`)."""
        return bool(self.grid(config, self.tune_point(config, bits)[0]))

    def fit_grid(self, split, bits: int, seed: int, configs: Iterable[dict],
                 progress: bool = False) -> Iterator[Fitted]:
        """Fit several full configs in order; a method whose points share work overrides it."""
        for cfg in configs:
            yield self.fit(split, bits, seed, cfg, progress)

    def run_cost(self, config: dict, bits: int) -> float:
        """Rough relative cost of one run (the grid runner starts costly cells first)."""
        return self.cost * (2 if bits >= 64 else 1)

    def from_arrays(self, bits: int, arrays: dict) -> Fitted:
        """The fitted model of stored ``arrays`` (how this method's runs are re-scored)."""
        return self.model.from_arrays(bits, arrays, self.ranks_by)


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
