"""The registry of methods that ``phd train`` and the experiments can run.

A method is an object (a module-level instance, usually) with

- ``name``: str, the registry name;
- ``defaults(dataset: str, bits: int) -> dict``: the full default config;
- ``train(split, bits: int, seed: int, config: dict, progress: bool) -> results.Run``:
  train on ``split.train`` (select on ``split.valid`` only), evaluate on
  ``split.test`` with :mod:`phdlib.metrics`, and return the run (not saved).

``REGISTRY`` maps each name to ``"module:attribute"``; modules are imported
only when their method is asked for. :func:`run` merges the defaults with the
caller's overrides, reuses a stored run with the same inputs, else trains and
stores it.
"""
from __future__ import annotations

import importlib
from typing import Any

REGISTRY: dict[str, str] = {
    # the paper's model (section 4)
    "vh": "phdlib.models.vh:VH",
    "vh-phd": "phdlib.models.vh:VH_PHD",
    # the paper's baselines (section 5.3)
    "dcf": "phdlib.baselines.dcf:DCF",
    "cccf": "phdlib.baselines.cccf:CCCF",
    "mf": "phdlib.baselines.mf:MF",
    "mf-mean": "phdlib.baselines.mf:MF_MEAN",
    "mf-median": "phdlib.baselines.mf:MF_MEDIAN",
    # our additions
    "mf-als": "phdlib.baselines.mf:MF_ALS",
    "item-mean": "phdlib.baselines.sanity:ITEM_MEAN",
    "popularity": "phdlib.baselines.sanity:POPULARITY",
    "random": "phdlib.baselines.sanity:RANDOM",
}


class MethodNotAvailable(LookupError):
    pass


def get(name: str):
    """The method object registered as ``name``."""
    if name not in REGISTRY:
        raise MethodNotAvailable(f"unknown method {name!r}; known: {', '.join(sorted(REGISTRY))}")
    mod_name, attr = REGISTRY[name].split(":")
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        if exc.name and mod_name.startswith(exc.name):
            raise MethodNotAvailable(
                f"method {name!r} is registered to {mod_name}, which is not part of this "
                f"build of phdlib yet"
            ) from None
        raise
    return getattr(mod, attr)


def available() -> list[str]:
    """Names whose implementation imports."""
    out = []
    for name in REGISTRY:
        try:
            get(name)
        except MethodNotAvailable:
            continue
        out.append(name)
    return out


def resolve_config(name: str, dataset: str, bits: int, overrides: dict | None = None) -> dict:
    """Defaults of ``name`` updated with ``overrides``; unknown keys are an error."""
    method = get(name)
    cfg = dict(method.defaults(dataset, bits))
    for k, v in (overrides or {}).items():
        if k not in cfg:
            raise KeyError(f"method {name!r} has no config key {k!r}; keys: {', '.join(sorted(cfg))}")
        cfg[k] = v
    return cfg


def run(name: str, split, bits: int, seed: int = 0, overrides: dict | None = None,
        reuse: bool = True, store: bool = True, progress: bool = True, root=None) -> Any:
    """Train and evaluate ``name`` on ``split``, through the results store."""
    from . import results

    method = get(name)
    cfg = resolve_config(name, split.dataset.name, bits, overrides)
    fp = split.fingerprint
    if reuse:
        found = results.find(name, split.dataset.name, bits, seed, cfg, fp, root=root)
        if found is not None:
            return found
    r = method.train(split, bits, seed, cfg, progress)
    if store:
        results.save(r, root=root)
    return r
