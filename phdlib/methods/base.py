"""The method contract: what every method of the book is and returns.

A :class:`Method` is a recipe: a registry ``name``, a display ``label``,
what it ranks by (:attr:`Method.ranks_by`: ``"hamming"``, ``"phd"`` or a
real-valued ``"score"``), whether it learns binary codes, whether the paper
reports it, a full default config (:meth:`Method.defaults`; the same names
for the same things on every method: ``ties``, ``max_iterations``, ``impl``)
and :meth:`Method.fit`, which trains on ``split.train`` (choosing on
``split.valid`` only) and returns a :class:`Fitted` model.

What a method returns, a :class:`~phdlib.methods.fitted.Fitted` model (arrays
in, scores out, in four kinds), is :mod:`phdlib.methods.fitted`. Everything after
``fit`` (evaluation, tuning, the store, reports) is shared code
(:mod:`phdlib.evaluation`, :mod:`phdlib.experiments.training`).
"""
from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np

from . import tuning
from .fitted import Fitted
from .spec import ConfigSpec

#: Default ``tune_ratings`` of every tunable method: a dataset with more ratings
#: than this has its grid chosen on a user sample of at most this many ratings
#: (:func:`phdlib.data.sample_users`), and the chosen point trained on all of
#: it (:func:`phdlib.experiments.training.run`). The paper's ML-1M (998,539 ratings) and
#: Yelp (602,517) are tuned on all their data, as the paper did; ML-10M and
#: Amazon are not (the chapter "Cost at scale" says why that is sound).
TUNE_RATINGS = 1_000_000


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
    (:data:`phdlib.methods.fitted.RANKS`), ``learns_codes`` (binary codes: a hashing method),
    ``in_paper`` (reported in the paper's Table 1), ``variant_of`` (the
    method it changes in one respect for one question of the book, such as
    its optimiser; None: a method of Table 1's catalogue), ``model``
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
    #: the method this one changes in one respect (not in Table 1's catalogue); None: none
    variant_of: str | None = None
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

    def shared_work(self, config: dict, bits: int) -> tuple | None:
        """A name (hashable) for work a fit of ``config`` shares with other methods' fits
        run after it in the same process, or None (the default: nothing shared).

        Cells of one dataset, width, seed and split whose methods name the same
        work run one after another in one worker
        (:func:`phdlib.experiments.runner.run_grid`), so the later ones reuse it
        (e.g. DCF's relaxed start, MF's SGD fits). It decides only where and
        when cells run, never what they compute.
        """
        return None

    def forget_shared_work(self) -> None:
        """Drop what this process keeps of :meth:`shared_work` (the default: nothing kept)."""

    @staticmethod
    def config_work(tag: str, config: dict, keys: list, grid: list, point: list) -> tuple:
        """A :meth:`shared_work` name made of ``tag`` and the config's values of ``keys``,
        ``tune``, then ``grid`` when it tunes (the grid decides the points) or ``point``."""
        chosen = list(keys) + ["tune"] + list(grid if config["tune"] else point)
        return (tag, *((k, repr(config.get(k))) for k in chosen))

    def run_cost(self, config: dict, bits: int) -> float:
        """Rough relative cost of one run (the grid runner starts costly cells first)."""
        return self.cost * (2 if bits >= 64 else 1)

    def from_arrays(self, bits: int, arrays: dict) -> Fitted:
        """The fitted model of stored ``arrays`` (how this method's runs are re-scored)."""
        return self.model.from_arrays(bits, arrays, self.ranks_by)
