"""What a method's config holds: each key's section, type and range (:class:`ConfigSpec`).

A method's config (:meth:`phdlib.methods.Method.defaults`) is one flat dict,
because that dict is what the results store hashes into the run key
(:func:`phdlib.results.run_key`) and the stored runs must be found again. Its
keys are of four kinds, and a method declares which is which in a
:class:`ConfigSpec`:

- ``hyper``: hyperparameters of one training run (``lr``, ``reg``, ``alpha``,
  the training budget ``max_iterations`` ...);
- ``tuning``: the tuning grid's switches and values (``tune``, ``tune_bits``,
  ``tune_ratings``, ``lr_grid`` ...); :mod:`phdlib.methods.tuning` reads them;
- ``evaluation``: how the run is evaluated (``ties``, ``discount``);
- ``impl``: the implementation revision (an int; bump it when a change alters
  what the method computes).

Each key is a :class:`Key`: the Python types its value may have (numpy
scalars of the same kind are accepted, ``bool`` is never a number), whether
``None`` is allowed, the allowed values (``choices``), a closed range
(``low``, ``high``) and, for a list, the type of its items.
:meth:`ConfigSpec.check` checks a value against its key and names the key,
the value and what was expected; :func:`phdlib.methods.resolve_config` calls
it on every override. The checks are on types and obvious ranges only: the
method's own checks (e.g. :func:`phdlib.methods.vh_config.check_config`) still
run when it trains.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

__all__ = ["Key", "ConfigSpec", "ConfigTypeError", "SECTIONS", "real", "integer", "flag",
           "choice", "text", "reals", "integers", "texts", "TUNE", "TUNE_BITS", "TUNE_RATINGS",
           "TIES", "DISCOUNT", "IMPL"]

#: The sections of a config, in the order :meth:`ConfigSpec.sections` lists them.
SECTIONS = ("hyper", "tuning", "evaluation", "impl")

#: Type names used in error messages.
_KIND_NAMES = {"real": "a real number", "int": "an integer", "bool": "true or false",
               "str": "a string", "list": "a list"}


class ConfigTypeError(TypeError, ValueError):
    """A config value of the wrong type or out of range (a ``TypeError`` and a
    ``ValueError``, so that callers catching either see it)."""


def _is(kind: str, v) -> bool:
    """Whether ``v`` is of ``kind`` (``real``, ``int``, ``bool``, ``str``, ``list``)."""
    if kind == "bool":
        return isinstance(v, (bool, np.bool_))
    if isinstance(v, (bool, np.bool_)):
        return False
    if kind == "int":
        return isinstance(v, (int, np.integer))
    if kind == "real":
        return isinstance(v, (int, float, np.integer, np.floating))
    if kind == "str":
        return isinstance(v, str)
    if kind == "list":
        return isinstance(v, (list, tuple))
    raise ValueError(f"unknown kind {kind!r}; expected one of {sorted(_KIND_NAMES)}")


@dataclass(frozen=True)
class Key:
    """One config key's type: ``kind`` (``"real"``, ``"int"``, ``"bool"``, ``"str"`` or
    ``"list"``), ``none`` (None allowed), ``choices`` (the allowed values; empty:
    any), ``low``/``high`` (closed range of a number, or of each item of a list),
    ``item`` (the kind of a list's items), ``doc`` (one line, with units),
    ``says``: the error's wording where a lower layer already words the same
    rule (the error then reads ``"<says>, got <value>"``; empty: ``"config
    '<key>' must be <expected>"``)."""

    kind: str
    none: bool = False
    choices: tuple = ()
    low: float | None = None
    high: float | None = None
    item: str | None = None
    doc: str = ""
    says: str = ""

    def __post_init__(self):
        if self.kind not in _KIND_NAMES or (self.item is not None and self.item not in _KIND_NAMES):
            raise ValueError(f"Key kind must be one of {sorted(_KIND_NAMES)}, got {self.kind!r} "
                             f"(item {self.item!r})")

    def expected(self) -> str:
        """What the key accepts, in words (for error messages): ``"a finite number >= 0"``,
        ``"an integer in [1, 64]"``, ``"one of 'a', 'b'"``, ``"... or None"``."""
        if self.choices:
            out = "one of " + ", ".join(repr(c) for c in self.choices)
        elif self.kind == "list" and self.item:
            out = f"a list of {_KIND_NAMES[self.item].split(' ', 1)[1]}s"
        elif self.kind == "real":
            out = "a finite number"
        else:
            out = _KIND_NAMES[self.kind]
        if self.low is not None and self.high is not None:
            out += f" in [{self.low:g}, {self.high:g}]"
        elif self.low is not None:
            out += f" >= {self.low:g}"
        elif self.high is not None:
            out += f" <= {self.high:g}"
        return out + (" or None" if self.none else "")

    def accepts(self, v) -> bool:
        """Whether ``v`` is an allowed value of this key."""
        if v is None:
            return self.none
        if self.choices:
            return _is(self.kind, v) and v in self.choices
        if not _is(self.kind, v):
            return False
        if self.kind == "real" and not np.isfinite(float(v)):
            return False
        values = list(v) if self.kind == "list" else [v]
        if self.kind == "list" and self.item and not all(_is(self.item, x) for x in values):
            return False
        if self.low is not None or self.high is not None:
            for x in values:
                if not _is("real", x) or not np.isfinite(float(x)):
                    return False
                if (self.low is not None and x < self.low) or (self.high is not None and x > self.high):
                    return False
        return True


def real(low=None, high=None, none=False, doc="") -> Key:
    """A real number (an int is accepted: ``1`` means ``1.0``) in ``[low, high]``."""
    return Key("real", none, (), low, high, None, doc)


def integer(low=None, high=None, none=False, doc="") -> Key:
    """An integer in ``[low, high]``."""
    return Key("int", none, (), low, high, None, doc)


def flag(doc="") -> Key:
    """True or false."""
    return Key("bool", doc=doc)


def choice(*values, doc="") -> Key:
    """One of ``values`` (strings)."""
    return Key("str", False, tuple(values), doc=doc)


def text(none=False, doc="") -> Key:
    """Any string."""
    return Key("str", none, doc=doc)


def reals(low=None, high=None, none=False, doc="") -> Key:
    """A list of real numbers, each in ``[low, high]``."""
    return Key("list", none, (), low, high, "real", doc)


def integers(low=None, high=None, none=False, doc="") -> Key:
    """A list of integers, each in ``[low, high]``."""
    return Key("list", none, (), low, high, "int", doc)


def texts(*values, doc="") -> Key:
    """A list of strings (each one of ``values`` when given)."""
    return Key("list", False, (), None, None, "str", doc) if not values else \
        _Texts("list", False, (), None, None, "str", doc, allowed=tuple(values))


@dataclass(frozen=True)
class _Texts(Key):
    """A list of strings, each one of ``allowed``."""

    allowed: tuple = ()

    def expected(self) -> str:
        return "a list of strings, each one of " + ", ".join(repr(a) for a in self.allowed)

    def accepts(self, v) -> bool:
        return super().accepts(v) and all(x in self.allowed for x in v)


# keys shared by the methods, declared once
#: ``tune``: True tunes over the method's grid (the full profile), False trains one point.
TUNE = flag("tune over the method's grid (True) or train the single point (False)")
#: ``tune_bits``: the width the grid is tuned at, reused at the others (None: every width).
TUNE_BITS = integer(1, None, none=True, doc="code width the grid is tuned at, bits")
#: ``tune_ratings``: a dataset with more ratings is tuned on a user sample of about this many
#: (the rule, and its wording, of :func:`phdlib.data.needs_sample`).
TUNE_RATINGS = Key("int", True, (), 1, None, None, "ratings above which the grid runs on a sample",
                   "tune_ratings must be a positive integer (ratings) or None")
#: ``ties``: the tie rule of the evaluation (:data:`phdlib.evaluation.ties.TIE_RULES`).
TIES = text(doc="tie rule of the evaluation (phdlib.evaluation.ties)")
#: ``discount``: the NDCG discount of validation inside training.
DISCOUNT = text(doc="NDCG discount of the evaluation (phdlib.evaluation.metrics)")
#: ``impl``: the implementation revision.
IMPL = integer(0, None, doc="implementation revision (part of the run key)")


@dataclass(frozen=True)
class ConfigSpec:
    """The declaration of a method's config: ``{key: Key}`` per section (:data:`SECTIONS`).

    A key belongs to exactly one section. :meth:`check` checks one value,
    :meth:`check_config` a whole config (every key declared, every value
    allowed), :meth:`section` lists a section's keys.
    """

    hyper: Mapping[str, Key] = field(default_factory=dict)
    tuning: Mapping[str, Key] = field(default_factory=dict)
    evaluation: Mapping[str, Key] = field(default_factory=dict)
    impl: Mapping[str, Key] = field(default_factory=lambda: {"impl": IMPL})

    def __post_init__(self):
        seen: dict[str, str] = {}
        for sec in SECTIONS:
            for k, key in getattr(self, sec).items():
                if not isinstance(key, Key):
                    raise TypeError(f"ConfigSpec {sec}[{k!r}] must be a Key, got {key!r}")
                if k in seen:
                    raise ValueError(f"config key {k!r} is declared in {seen[k]!r} and {sec!r}")
                seen[k] = sec

    @property
    def keys(self) -> dict[str, Key]:
        """Every declared key -> its :class:`Key`, section by section."""
        return {k: v for sec in SECTIONS for k, v in getattr(self, sec).items()}

    def section(self, key: str) -> str:
        """The section of ``key`` (``KeyError`` naming it when undeclared)."""
        for sec in SECTIONS:
            if key in getattr(self, sec):
                return sec
        raise KeyError(f"config key {key!r} is not declared")

    def sections(self, config: Mapping[str, Any]) -> dict[str, dict]:
        """``config`` split by section: ``{section: {key: value}}`` (undeclared keys: KeyError)."""
        out: dict[str, dict] = {sec: {} for sec in SECTIONS}
        for k, v in config.items():
            out[self.section(k)][k] = v
        return out

    def check(self, key: str, value, method: str = "") -> None:
        """``ConfigTypeError`` naming ``key``, ``value`` and the expected type when ``value``
        is not allowed (``KeyError`` when ``key`` is not declared)."""
        spec = self.keys.get(key)
        if spec is None:
            raise KeyError(f"config key {key!r} is not declared"
                           + (f" by method {method!r}" if method else ""))
        if not spec.accepts(value):
            who = f"method {method!r}: " if method else ""
            says = spec.says or f"config {key!r} must be {spec.expected()}"
            raise ConfigTypeError(f"{who}{says}, got {value!r} ({type(value).__name__})")

    def check_config(self, config: Mapping[str, Any], method: str = "") -> None:
        """Check every value of ``config``; a key of the spec that ``config`` lacks, or a key
        of ``config`` the spec lacks, is a ``KeyError`` naming it."""
        missing = sorted(set(self.keys) - set(config))
        if missing:
            raise KeyError(f"config of {method or 'the method'} lacks declared keys {missing}")
        for k, v in config.items():
            self.check(k, v, method)
