"""Training, tuning and storing any method: the shared path behind the method contract.

- :func:`run`: resolve a method's config, reuse the stored run with the same
  inputs, else fit (or tune) it, evaluate it and store it. Returns a
  :class:`phdlib.results.Run`.
- :func:`tune`: the one tuning path. A method's :meth:`~phdlib.methods.Method.grid`
  gives the points; each point is a run of its own (stored, reused, so a
  grid resumes where it stopped); the point with the best validation
  NDCG@10 is chosen (the first in grid order on a tie); the tuned run is
  the chosen point's model, metrics and training log, with the grid as a
  table beside it. Grids are tuned at one point, seed :data:`TUNE_SEED` (and
  the width ``tune_bits`` where a config sets it: :mod:`phdlib.methods.tuning`,
  the one place that says so); other seeds and widths reuse that choice
  (:func:`transfer`) (:attr:`phdlib.results.Run.grid`: one row per point, its
  values, validation metrics, and test metrics for reading only). On a
  dataset with more than ``config["tune_ratings"]`` ratings the grid is
  chosen on a user sample of that size (:func:`tune_split`) and the chosen
  point is trained on all of it.
- :func:`evaluate_fitted`: a fitted model's test and validation metrics, as
  every run records them.
- :func:`fitted`: the :class:`~phdlib.methods.Fitted` model of a stored run,
  for re-scoring it (:mod:`phdlib.evaluation`).
"""
from __future__ import annotations

import time
import warnings
from numbers import Number

import numpy as np
import pandas as pd

from .. import codes as _codes
from .. import methods, results
from ..methods import tuning
from ..evaluation.fitted import evaluate, evaluate_many, summarize
from ..evaluation.metrics import METRICS
from .. import data
from ..data import needs_sample, sample_users

__all__ = ["run", "tune", "transfer", "tune_split", "evaluate_fitted", "fitted", "make_run",
           "grid_table"]

#: The metric a tuning grid chooses on (validation split).
CHOOSE_ON = "valid_ndcg@10"
#: The model seed every grid is tuned at; runs of other seeds reuse its choice
#: (:data:`phdlib.methods.tuning.TUNE_SEED`: the tuning policy lives there).
TUNE_SEED = tuning.TUNE_SEED


def fitted(run: results.Run) -> methods.Fitted:
    """The fitted model of a stored run (needs its arrays), rebuilt by its method."""
    if not run.arrays:
        raise ValueError(f"run {run.method!r} at {run.path} was loaded without arrays; "
                         f"load it with arrays=True to re-score it")
    return methods.get(run.method).from_arrays(run.bits, run.arrays)


def evaluate_fitted(model: methods.Fitted, split, ties: str, discount: str = "paper"):
    """(per-user test metrics, summary) of ``model`` on ``split``.

    The summary holds the test means (``ndcg@5``, ``ndcg@10``, ``mrr``,
    ``users``), the NDCG under the other discount (``released:ndcg@5`` ...
    or ``paper:...``) and the validation means (``valid_ndcg@5`` ...).
    """
    other = "released" if discount == "paper" else "paper"
    test = evaluate_many(model, split.test, ties=(ties,), discounts=(discount, other))
    per_user = test[ties, discount]
    summary = summarize(per_user)
    alt = summarize(test[ties, other])
    summary.update({f"{other}:{k}": v for k, v in alt.items() if k.startswith("ndcg@")})
    valid = summarize(evaluate(model, split.valid, ties=ties, discount=discount))
    summary.update({f"valid_{k}": valid[k] for k in METRICS})
    return per_user, summary


def make_run(method: methods.Method, split, bits: int, seed: int, config: dict,
             model: methods.Fitted, seconds: float) -> results.Run:
    """Evaluate ``model`` and wrap it as a run (not stored).

    Scalars of ``model.info`` join the metrics; other values (and the model's
    ``shape_info``, such as a user count) go to ``extra``.
    """
    per_user, summary = evaluate_fitted(model, split, config["ties"], config.get("discount", "paper"))
    ds = split.dataset
    extra = {"label": method.label, "ranks_by": method.ranks_by,
             "data": _data_info(split)}
    for k, v in model.info.items():
        if (isinstance(v, (Number, np.number, bool, np.bool_)) and k not in summary
                and k not in model.shape_info):
            summary[k] = v.item() if isinstance(v, np.generic) else v
        else:
            extra[k] = v
    return results.Run(method=method.name, dataset=split.dataset.name, bits=int(bits),
                       seed=int(seed), config=dict(config), metrics=summary, per_user=per_user,
                       fingerprint=split.fingerprint, wall_seconds=float(seconds),
                       arrays={**model.arrays, **_own_ids(ds)}, log=model.log, extra=extra)


def _data_info(split) -> dict:
    """Where a run's data came from (``extra["data"]``): enough to find the dataset, and so
    its original ids, again (:func:`phdlib.data.provenance`: the dataset, split seed,
    fingerprints, preprocessing and, for a user's file, its path and separator;
    :func:`phdlib.data.reload` rebuilds it)."""
    ds = split.dataset
    seed = getattr(split, "seed", None)
    if isinstance(getattr(ds, "fingerprint", None), str) and seed is not None:
        return data.provenance(split)
    # a split made by hand (tests, a reader's own container): what it has
    return {"split_seed": None if seed is None else int(seed),
            "dataset_fingerprint": getattr(ds, "fingerprint", None),
            "preprocessing": getattr(ds, "preprocessing", {})}


def _own_ids(ds) -> dict:
    """A user's own file (:func:`phdlib.data.load_file`) cannot be found again by name, so
    its runs keep the original ids (``user_ids``/``item_ids``, dense id -> original)."""
    if getattr(ds, "preprocessing", {}).get("origin") != "file":
        return {}
    return {"user_ids": np.asarray(ds.user_ids), "item_ids": np.asarray(ds.item_ids)}


def _grid_row(point: dict, r: results.Run) -> dict:
    row = {k: (str(v) if isinstance(v, list) else v) for k, v in point.items() if k != "tune"}
    row["train_seconds"] = r.metrics.get("train_seconds", r.wall_seconds)
    if "train_cpu_seconds" in r.metrics:
        row["train_cpu_seconds"] = r.metrics["train_cpu_seconds"]
    row.update({f"valid_{k}": r.metrics[f"valid_{k}"] for k in METRICS})
    row.update({f"test_{k}": r.metrics[k] for k in METRICS})
    return row


def tune(method: methods.Method, split, bits: int, seed: int, config: dict, points: list[dict],
         reuse: bool = True, store: bool = True, progress: bool = False, root=None) -> results.Run:
    """Run every grid point as its own run and return the tuned run (see the module docstring).

    Points already in the store are reused; the others are fitted together
    through :meth:`~phdlib.methods.Method.fit_grid` (so points that share
    work, like MF's epoch counts, share it) and stored one by one.
    """
    from tqdm import tqdm  # plain text bar: tqdm.auto warns without ipywidgets in notebooks

    t0 = time.perf_counter()
    configs = [{**config, **pt} for pt in points]
    ds, fp = split.dataset.name, split.fingerprint
    runs = [results.find(method.name, ds, bits, seed, c, fp, root=root) if reuse else None
            for c in configs]
    todo = [i for i, r in enumerate(runs) if r is None]
    bar = tqdm(total=len(configs), initial=len(configs) - len(todo), disable=not progress,
               desc=f"{method.name} {bits}b grid", unit="point", leave=False)
    fits = method.fit_grid(split, bits, seed, [configs[i] for i in todo], False)
    for i in todo:
        t = time.perf_counter()
        model = next(fits)
        runs[i] = make_run(method, split, bits, seed, configs[i], model, time.perf_counter() - t)
        if store:
            store_run(runs[i], root)
        bar.update(1)
    bar.close()
    grid = pd.DataFrame([_grid_row(pt, r) for pt, r in zip(points, runs)])
    score = grid[CHOOSE_ON].to_numpy(dtype=float)
    if np.isnan(score).all():
        raise ValueError(f"{method.name} {bits} bits: every grid point has a NaN {CHOOSE_ON}")
    best = int(np.nanargmax(score))
    grid["chosen"] = np.arange(len(grid)) == best
    chosen = runs[best]
    metrics = {**chosen.metrics, "grid_seconds": time.perf_counter() - t0, "grid_points": len(points)}
    extra = {**chosen.extra, "chosen_on": f"validation {CHOOSE_ON[6:]}, ties={config['ties']}",
             "chosen": {k: v for k, v in points[best].items() if k != "tune"},
             "chosen_key": chosen.key}
    return results.Run(method=method.name, dataset=ds, bits=int(bits), seed=int(seed),
                       config=dict(config), metrics=metrics, per_user=chosen.per_user,
                       fingerprint=fp, wall_seconds=time.perf_counter() - t0,
                       arrays=chosen.arrays, log=chosen.log, grid=grid, extra=extra)


def tune_split(split, config: dict):
    """The split a grid of ``config`` is chosen on: ``split``, or its user sample of at most
    ``config["tune_ratings"]`` ratings (:func:`phdlib.data.sample_users`, drawn with the
    split's seed) when the dataset has more ratings than that."""
    cap = config.get("tune_ratings")
    if cap is None:
        return split
    key = (split.fingerprint, cap, int(split.seed))
    if key not in _SAMPLES:  # every run, transfer and Dask cell of a grid draws the same one
        sample = sample_users(split, cap, seed=int(split.seed))
        if sample is split:
            return split
        if len(_SAMPLES) >= 2:
            _SAMPLES.pop(next(iter(_SAMPLES)))
        _SAMPLES[key] = sample
    return _SAMPLES[key]


#: The last user samples drawn by :func:`tune_split`, by (split fingerprint, cap, seed).
_SAMPLES: dict = {}


def stored_on_sample(name: str, split, bits: int, overrides: dict | None = None,
                     root=None) -> list[results.Run]:
    """The stored runs on the user sample that a run of ``name`` on ``split`` would reuse.

    Where ``split`` is larger than the config's ``tune_ratings``, the grid of
    the anchor (``tune_bits``, :data:`TUNE_SEED`) runs on :func:`tune_split`'s
    sample: its points and the tuned run there are runs of their own. This
    returns those found in the store ``root`` (empty when the grid draws no
    sample), e.g. to ship them with a cell to a worker that has no store.
    """
    cfg, points, tune_bits = config_of(name, split, bits, overrides)
    if not points or "tune_ratings" not in cfg:
        return []
    on = tune_split(split, cfg)
    scfg, spoints, _ = config_of(name, on, tune_bits, overrides)
    configs = [scfg] + [{**scfg, **pt} for pt in spoints]
    found = (results.find(name, on.dataset.name, tune_bits, TUNE_SEED, c, on.fingerprint,
                          root=root) for c in configs)
    return [r for r in found if r is not None]


def transfer(name: str, split, bits: int, seed: int, config: dict, tune_bits: int,
             overrides: dict | None = None, reuse: bool = True, store: bool = True,
             progress: bool = False, root=None, on=None):
    """A run at ``bits`` and ``seed`` with the configuration chosen by the grid at
    ``tune_bits`` and seed :data:`TUNE_SEED` (on the split ``on``, default ``split``).

    Grids are tuned on one seed (and, where the config says ``tune_bits``, one
    width; where the data is larger than ``tune_ratings``, on a user sample:
    ``on`` is :func:`tune_split`); the tuned run there is run or reused, its
    chosen point is fitted on ``split`` at ``bits`` and ``seed`` as a run of
    its own, and returned with ``config`` (the tuning config), the grid and
    the choice (``extra["tuned_at"]``: width, seed and, for a sample, its
    users, ratings and fingerprint). ``overrides``: the caller's overrides,
    resolved again at ``tune_bits``.
    """
    on = split if on is None else on
    anchor = (int(bits), int(seed)) == (int(tune_bits), TUNE_SEED)  # the tuning point itself
    # other widths and seeds reuse the anchor's run on ``split`` (one stored run holds
    # the choice, wherever the grid ran); only the anchor itself tunes on ``on``
    tuned = run(name, on if anchor else split, tune_bits, TUNE_SEED, overrides=overrides,
                reuse=reuse, store=store, progress=progress, root=root)
    chosen = tuned.extra["chosen"]
    point = run(name, split, bits, seed, overrides={**config, **chosen, "tune": False},
                reuse=reuse, store=store, progress=progress, root=root)
    at = {"bits": tune_bits, "seed": TUNE_SEED}
    sample = (_sample_info(on) if anchor and on is not split
              else tuned.extra.get("tuned_at", {}).get("sample"))
    if sample:
        at["sample"] = sample
    extra = {**point.extra, "chosen_on": tuned.extra["chosen_on"], "chosen": chosen,
             "chosen_key": point.key, "tuned_at": at}
    return results.Run(method=name, dataset=point.dataset, bits=int(bits), seed=int(seed),
                       config=dict(config), metrics=dict(point.metrics), per_user=point.per_user,
                       fingerprint=point.fingerprint, wall_seconds=point.wall_seconds,
                       arrays=point.arrays, log=point.log, grid=tuned.grid, extra=extra)


def _sample_info(sample) -> dict:
    """What ``extra["tuned_at"]["sample"]`` records of a grid's user sample (what
    :func:`phdlib.data.sample_users` wrote into its preprocessing)."""
    info = sample.dataset.preprocessing["user_sample"]
    return {"users": info["users"], "ratings": info["ratings"], "fingerprint": sample.fingerprint,
            "of_users": info["of_users"], "of_ratings": info["of_ratings"]}


def grid_table(run: results.Run, value: str = "valid_ndcg@10", rows: str = "reg",
               columns: str = "epochs") -> pd.DataFrame:
    """A tuned run's grid pivoted to ``rows`` x ``columns`` of ``value`` (first per cell)."""
    if run.grid is None:
        raise ValueError(f"run {run.method!r} ({run.bits} bits) was not tuned: it has no grid")
    return run.grid.pivot_table(index=rows, columns=columns, values=value, aggfunc="first")


def _check_grid_overrides(method, dataset: str, bits: int, points: list, overrides) -> None:
    """An override of a key the tuning grid sets would be silently replaced: refuse it."""
    if not points or not overrides:
        return
    defaults = method.defaults(dataset, bits)
    grid_keys = {k for pt in points for k in pt} - {"tune"}
    clash = sorted(k for k in overrides if k in grid_keys and overrides[k] != defaults.get(k))
    if clash:
        raise ValueError(f"method {method.name!r}: {', '.join(clash)} is chosen by the tuning grid "
                         f"(tune=True); set tune=False to fix it, or change the grid's values")


#: The widest code a run may have (:data:`phdlib.codes.MAX_BITS`).
MAX_BITS = _codes.MAX_BITS


def check_bits_seed(bits, seed) -> tuple[int, int]:
    """``(bits, seed)`` as ints, or ``ValueError`` naming the value that is out of range."""
    for name, v, lo, hi in (("bits", bits, 1, MAX_BITS), ("seed", seed, 0, 2**63 - 1)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) \
                or not lo <= int(v) <= hi:
            raise ValueError(f"{name} must be an integer in {lo}..{hi}, got {v!r}")
    return int(bits), int(seed)


def run(name: str, split, bits: int, seed: int = 0, overrides: dict | None = None,
        reuse: bool = True, store: bool = True, progress: bool = True, root=None) -> results.Run:
    """Train and evaluate method ``name`` on ``split`` through the results store.

    The config is the method's defaults updated with ``overrides`` (an unknown
    key is an error). With ``reuse`` a stored run with the same inputs is
    returned as is; otherwise the method is tuned (when its config asks for a
    grid) or fitted, evaluated on the validation and test splits, and stored.
    bits: 1..:data:`MAX_BITS`; seed: 0..2^63 - 1 (``ValueError`` otherwise).
    """
    bits, seed = check_bits_seed(bits, seed)
    method = methods.get(name)
    cfg, points, tune_bits = config_of(name, split, bits, overrides)
    _check_grid_overrides(method, split.dataset.name, bits, points, overrides)
    if reuse:
        found = results.find(name, split.dataset.name, bits, seed, cfg, split.fingerprint, root=root)
        if found is not None:
            return found
    on = tune_split(split, cfg) if points else split
    if points and (not tuning.is_anchor(cfg, bits, seed) or on is not split):
        r = transfer(name, split, bits, seed, cfg, tune_bits, overrides, reuse, store, progress,
                     root, on)
    elif points:
        r = tune(method, split, bits, seed, cfg, points, reuse, store, progress, root)
    else:
        t0 = time.perf_counter()
        model = method.fit(split, int(bits), int(seed), cfg, progress)
        r = make_run(method, split, bits, seed, cfg, model, time.perf_counter() - t0)
    if store:
        store_run(r, root)
    return r


def config_of(name: str, split, bits: int, overrides: dict | None = None):
    """``(config, grid points, tune_bits)`` of a run of ``name`` on ``split``: the config
    as the run is keyed and stored.

    ``tune_ratings`` stays in the config only where it draws a sample (a grid,
    on data with more ratings than it): a run that draws none is the same run
    whatever the cap, and keeps the key it had before the key existed. A bad
    value is a ``ValueError`` naming it.
    """
    cfg = methods.resolve_config(name, split.dataset.name, bits, overrides)
    method = methods.get(name)
    tune_bits, _ = method.tune_point(cfg, bits)
    points = method.grid(cfg, tune_bits)
    if "tune_ratings" in cfg:
        cap = cfg["tune_ratings"]
        sampled = needs_sample(split, cap)  # validates cap (None: never)
        if not (points and sampled):
            del cfg["tune_ratings"]
    return cfg, points, tune_bits


def store_run(run: results.Run, root=None) -> bool:
    """:func:`phdlib.results.save` ``run``; a store that cannot be written only warns.

    The run (and its metrics) stays usable in memory; it is recomputed the
    next time. Returns whether it was stored.
    """
    try:
        results.save(run, root=root)
        return True
    except OSError as exc:
        warnings.warn(f"phdlib: the {run.method} run ({run.dataset}, {run.bits} bits, seed "
                      f"{run.seed}) could not be stored ({exc}); its result is returned but "
                      f"not kept", RuntimeWarning, stacklevel=3)
        return False
