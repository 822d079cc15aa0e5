"""Every method of the book behind one contract, and the registry of them.

The contract (:mod:`phdlib.methods.base`): a :class:`Method` has a name, a
label, what it ranks by, a default config and ``fit(split, bits, seed,
config, progress) -> Fitted``; a :class:`Fitted` model scores (user, item)
pairs and rebuilds from its stored arrays. Training, evaluation, tuning and
the store are shared code in :mod:`phdlib.experiments.training` and
:mod:`phdlib.evaluation`.

Adding a method: write one module with a :class:`Method` subclass and an
instance of it, and add one line to :data:`REGISTRY` (written in
:mod:`phdlib.names`). Everything else about it is declared on the method
itself: its label, description, what it ranks by, its quick profile
(:attr:`Method.quick`), its figure colour (:attr:`Method.color`) and its
config's sections and types (:attr:`Method.config_spec`,
:mod:`phdlib.methods.spec`); where its grid is tuned is
:mod:`phdlib.methods.tuning`'s rule. The lists of Hamming methods, PHD
methods, labels, colours and quick overrides are derived from the methods
(:func:`names`, :func:`label`, :func:`colors`, :func:`quick_overrides`), never
written out elsewhere; ``tests/test_method_declarations.py`` fails for a
method that leaves a declaration out.

Modules: ``base`` (the contract), ``fitted`` (what a method returns), ``loop`` (the training loop and its budget,
shared by learned methods, with its early-stopping rule),
``spec`` (the config declaration), ``tuning`` (where grids are tuned),
``vh_config`` (VH's configuration), ``vh_model`` (the PyTorch model),
``vh_step`` (its training step) and ``vh`` (its training and the methods VH,
VH_PHD, VH with a user bias), ``mf`` (MF by SGD and ALS), ``mf_methods``
(MF, MF-ALS, MFmean, MFmedian), ``rating_graph`` (the training ratings of the discrete learners),
``discrete`` (the discrete block model of DCF
and CCCF, fitting the inner-product or the PHD score), ``surrogates`` (its
balance and decorrelation surrogates in closed form), ``reuse`` (work kept in
a process for later fits, e.g. DCF's relaxed starts), ``discrete_phd`` (the
derivation and reference of DCF_PHD's bit updates), ``dcf``, ``dcf_phd``
(DCF_PHD), ``dcf_bias`` (DCF+bias), ``cccf``, ``sanity``.
"""
from __future__ import annotations

import importlib
from typing import Callable, Iterable, Iterator, Mapping

from ..names import METHODS
from .base import UNSET, Method
from .fitted import (RANKS, BlockCodeModel, CodeModel, Fitted, ItemScoreModel, VectorModel,
                     evaluate_codes, value_kind)
from .spec import ConfigSpec, ConfigTypeError, Key
from .tuning import TUNE_SEED

__all__ = ["REGISTRY", "RANKS", "Method", "Fitted", "CodeModel", "VectorModel", "ItemScoreModel",
           "BlockCodeModel", "value_kind", "evaluate_codes", "get", "names", "label", "register", "MethodNotAvailable",
           "UNSET", "ConfigSpec", "ConfigTypeError", "Key", "TUNE_SEED", "resolve_config",
           "quick_overrides", "colors", "Declarations", "forget_shared_work"]

#: name -> "module:attribute" of the method object, in the order of the
#: paper's Table 1 (its seven methods), then our additions. It is written in
#: :mod:`phdlib.names`, a module without imports, so that ``phd --help`` can
#: offer the names without importing the methods.
REGISTRY: dict[str, str] = METHODS

_EXTRA: dict[str, Method] = {}


class MethodNotAvailable(LookupError):
    """The name is not a registered method."""


def register(method: Method) -> Method:
    """Register a method object at run time (tests, a reader's own method)."""
    if not isinstance(method, Method):
        raise TypeError(f"expected a phdlib.methods.Method, got {type(method).__name__}")
    if not method.name or method.name in REGISTRY:
        raise ValueError(f"method name {method.name!r} is empty or already registered")
    _EXTRA[method.name] = method
    return method


def unregister(name: str) -> None:
    """Remove a method added with :func:`register`."""
    _EXTRA.pop(name, None)


def get(name: str) -> Method:
    """The method object registered as ``name``."""
    if name in _EXTRA:
        return _EXTRA[name]
    if name not in REGISTRY:
        known = ", ".join(list(REGISTRY) + list(_EXTRA))
        raise MethodNotAvailable(f"unknown method {name!r}; known: {known}")
    mod_name, attr = REGISTRY[name].split(":")
    return getattr(importlib.import_module(mod_name), attr)


def forget_shared_work(names: Iterable[str]) -> None:
    """:meth:`Method.forget_shared_work` of each method named (an unknown name is skipped:
    its cell has failed already, saying so)."""
    for name in dict.fromkeys(names):
        try:
            method = get(name)
        except MethodNotAvailable:
            continue
        method.forget_shared_work()


def names(ranks_by: str | None = None, learns_codes: bool | None = None,
          in_paper: bool | None = None, variant: bool | None = None) -> list[str]:
    """Registered names (registry order) whose method matches every given property.

    ``names(variant=False)``: Table 1's catalogue (no method that is a variant of
    another, :attr:`Method.variant_of`); ``names(in_paper=True)``: the paper's
    Table 1 methods in its order;
    ``names(ranks_by="hamming")``: the Hamming methods; ``names(learns_codes=True,
    in_paper=True)`` minus PHD: the paper's hashing baselines.
    """
    if ranks_by is not None and ranks_by not in RANKS:
        raise ValueError(f"ranks_by must be one of {RANKS}, got {ranks_by!r}")
    out = []
    for n in list(REGISTRY) + list(_EXTRA):
        m = get(n)
        if ranks_by is not None and m.ranks_by != ranks_by:
            continue
        if learns_codes is not None and m.learns_codes != learns_codes:
            continue
        if in_paper is not None and m.in_paper != in_paper:
            continue
        if variant is not None and (m.variant_of is not None) != variant:
            continue
        out.append(n)
    return out


def hashing_baselines() -> list[str]:
    """The paper's code-learning methods that do not rank by PHD (VH_PHD's comparisons)."""
    return [n for n in names(learns_codes=True, in_paper=True) if get(n).ranks_by != "phd"]


def label(name: str) -> str:
    """The display label of a method (its name when unknown)."""
    try:
        return get(name).label
    except MethodNotAvailable:
        return name


def resolve_config(name: str, dataset: str, bits: int, overrides: dict | None = None) -> dict:
    """Defaults of ``name`` updated with ``overrides``: the config a run is keyed by.

    An unknown key is a ``KeyError``; a value its :attr:`Method.config_spec`
    does not allow is a :class:`ConfigTypeError` (a ``TypeError`` and a
    ``ValueError``) naming the key, the value and the expected type. The
    values are kept as given (the run key hashes them).
    """
    method = get(name)
    cfg = dict(method.defaults(dataset, bits))
    spec = method.config_spec
    for k, v in (overrides or {}).items():
        if k not in cfg:
            raise KeyError(f"method {name!r} has no config key {k!r}; keys: {', '.join(sorted(cfg))}")
        if spec is not None and k in spec.keys:
            spec.check(k, v, name)
        cfg[k] = v
    return cfg


def quick_overrides(name: str) -> dict:
    """The quick profile's overrides of ``name`` (:attr:`Method.quick`, a copy).

    A method that has not declared them is a ``ValueError`` naming it: an
    undeclared quick profile would train at full strength in CI.
    """
    q = get(name).quick
    if q is UNSET or not isinstance(q, dict):
        raise ValueError(f"method {name!r} declares no quick profile (Method.quick is {q!r}); "
                         f"set quick = {{}} when it is cheap already, else the overrides that "
                         f"make it cheap (e.g. {{'tune': False}})")
    return dict(q)


def colors() -> dict[str, str]:
    """``{name: colour}`` of the registered methods that declare a colour (:attr:`Method.color`)."""
    return {n: get(n).color for n in names() if get(n).color is not None}


class Declarations(Mapping):
    """A read-only ``{name: value}`` view of one declaration of the registered methods,
    read from the methods at every access (a method registered later is in it).

    ``value(name)`` gives the value; a method whose value is None is left out
    (``COLORS.get(m)`` is then None, as for an unknown name).
    """

    def __init__(self, value: Callable[[str], object], doc: str = ""):
        self._value, self.__doc__ = value, doc or type(self).__doc__

    def _items(self) -> dict:
        return {n: v for n in names() if (v := self._value(n)) is not None}

    def __getitem__(self, name: str):
        if name not in REGISTRY and name not in _EXTRA:
            raise KeyError(name)
        v = self._value(name)
        if v is None:
            raise KeyError(name)
        return v

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items()!r})"
