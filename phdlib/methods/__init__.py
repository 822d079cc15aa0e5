"""Every method of the book behind one contract, and the registry of them.

The contract (:mod:`phdlib.methods.base`): a :class:`Method` has a name, a
label, what it ranks by, a default config and ``fit(split, bits, seed,
config, progress) -> Fitted``; a :class:`Fitted` model scores (user, item)
pairs and rebuilds from its stored arrays. Training, evaluation, tuning and
the store are shared code in :mod:`phdlib.experiments.training` and
:mod:`phdlib.evaluation`.

Adding a method: write one module with a :class:`Method` subclass and an
instance of it, and add one line to :data:`REGISTRY` (written in
:mod:`phdlib.names`). The lists of Hamming methods, PHD methods and labels
are derived from the methods (:func:`names`, :func:`label`), never written
out elsewhere.

Modules: ``base`` (the contract), ``loop`` (the training loop and its budget,
shared by learned methods; ``stopping`` re-exports its early stopping),
``vh_config`` (VH's configuration), ``vh_model`` (the PyTorch model),
``vh_step`` (its training step) and ``vh`` (its training and the methods VH,
VH_PHD, VH with a user bias), ``mf`` (MF by SGD and ALS), ``mf_methods``
(MF, MF-ALS, MFmean, MFmedian), ``blocks`` (the discrete block model of DCF
and CCCF), ``dcf``, ``cccf``, ``sanity``.
"""
from __future__ import annotations

import importlib

from ..names import METHODS
from .base import (RANKS, BlockCodeModel, CodeModel, Fitted, ItemScoreModel, Method,
                   evaluate_codes,
                   VectorModel, value_kind)

__all__ = ["REGISTRY", "RANKS", "Method", "Fitted", "CodeModel", "VectorModel", "ItemScoreModel",
           "BlockCodeModel", "value_kind", "evaluate_codes", "get", "names", "label", "register", "MethodNotAvailable"]

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


def names(ranks_by: str | None = None, learns_codes: bool | None = None,
          in_paper: bool | None = None) -> list[str]:
    """Registered names (registry order) whose method matches every given property.

    ``names(in_paper=True)``: the paper's Table 1 methods in its order;
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
    """Defaults of ``name`` updated with ``overrides``; an unknown key is an error."""
    cfg = dict(get(name).defaults(dataset, bits))
    for k, v in (overrides or {}).items():
        if k not in cfg:
            raise KeyError(f"method {name!r} has no config key {k!r}; keys: {', '.join(sorted(cfg))}")
        cfg[k] = v
    return cfg
