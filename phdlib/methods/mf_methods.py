"""The MF methods: MF (SGD, the paper's), MF-ALS (ours), MFmean and MFmedian.

All four are tuned through the shared path (:mod:`phdlib.experiments.training`) over a
grid of ``reg`` x ``epochs`` (x ``scope`` for the binarised ones), chosen on
validation NDCG@10. Grid points with the same ``reg`` share one fit: it runs
to the largest epoch count and is read at every count of the grid
(:func:`fit_path`, memoised in the process, so MF, MFmean and MFmedian of
one width share their SGD fits).
"""
from __future__ import annotations

import time
from itertools import groupby
from typing import Iterable, Iterator

import numpy as np
import pandas as pd

from .. import codes as C
from . import spec as S
from .base import TUNE_RATINGS, Method
from .fitted import CodeModel, VectorModel
from .mf import SCOPES, THRESHOLDS, binarize, fit_als, fit_sgd
from ..evaluation import evaluate
from ..evaluation.metrics import summarize

#: Implementation revision, part of every MF config (hence of the results
#: store's run key): bump it when a change alters what these methods compute.
IMPL = 2

_PATHS: dict = {}
_PATHS_MAX = 12


def fit_path(algorithm: str, split, dim: int, seed: int, reg: float, checkpoints: Iterable[int],
             **options) -> dict:
    """Factors after each of several epoch counts of one fit, memoised in the process.

    algorithm: ``"sgd"`` (:func:`phdlib.methods.mf.fit_sgd`; options ``lr``,
    ``init``) or ``"als"`` (:func:`phdlib.methods.mf.fit_als`; options
    ``weighted``, ``init_scale``). checkpoints: epoch counts >= 1; the fit runs
    to the largest. Returns ``{epochs: (P, Q, train_seconds)}`` with float32
    factors and the training wall time (seconds) to reach that count. The
    factors after ``n`` epochs equal those of a fit with ``epochs=n``. A
    memoised fit that holds every requested count is reused.
    """
    checkpoints = _checkpoints(checkpoints)
    key = _path_key(algorithm, split, dim, seed, reg, options)
    if _memoised(key, checkpoints):
        return _PATHS[key]
    out = FitPath()
    clock = {"train": 0.0, "t": time.perf_counter()}

    def cb(ep, P, Q):
        clock["train"] += time.perf_counter() - clock["t"]
        out.trace.append((ep, clock["train"]))
        if ep in checkpoints:
            out[ep] = (P.astype(np.float32), Q.astype(np.float32), clock["train"])
        clock["t"] = time.perf_counter()

    ds = split.dataset
    fitter = {"sgd": fit_sgd, "als": fit_als}.get(algorithm)
    if fitter is None:
        raise ValueError(f"algorithm must be 'sgd' or 'als', got {algorithm!r}")
    fitter(split.train, ds.n_users, ds.n_items, int(dim), reg, checkpoints[-1], seed=seed,
           callback=cb, **options)
    _memoise(key, out)
    return out


def fit_paths(split, requests: dict, jobs: int | None = 1) -> dict:
    """Several :func:`fit_path` fits of one split, ``jobs`` at a time, memoised here.

    requests: ``{name: (algorithm, dim, seed, reg, checkpoints, options)}`` with
    ``options`` a dict, as :func:`fit_path` takes them; jobs: joblib ``n_jobs`` (1: in
    this process; -1: one worker per core). Returns ``{name: path}`` in the same order.
    Requests that name the same fit (the same arguments but the checkpoints) share one
    fit, run to the union of their checkpoints. Fits this process has memoised are
    reused; the others run in worker processes (one fit is one thread) and are then
    memoised here, so a later :func:`fit_path` of the same arguments returns them. A fit
    is deterministic given its arguments: each path holds the factors :func:`fit_path`
    computes in this process, and the seconds its worker took.
    """
    import joblib

    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs == 0):
        raise ValueError(f"jobs must be a nonzero integer (-1: one per core) or None, "
                         f"got {jobs!r}")
    fits: dict = {}  # key -> [arguments, union of checkpoints]
    keys = {}
    for name, request in requests.items():
        try:
            algorithm, dim, seed, reg, checkpoints, options = request
            if algorithm not in ("sgd", "als"):
                raise ValueError(f"algorithm must be 'sgd' or 'als', got {algorithm!r}")
            if not isinstance(options, dict):
                raise ValueError(f"options must be a dict, got {options!r}")
            checkpoints = _checkpoints(checkpoints)
        except (TypeError, ValueError) as e:
            raise ValueError(f"request {name!r}: {e}") from None
        keys[name] = key = _path_key(algorithm, split, dim, seed, reg, options)
        fits.setdefault(key, [(algorithm, dim, seed, reg, options), set()])[1].update(checkpoints)
    paths = {k: _PATHS[k] for k, (_, cps) in fits.items() if _memoised(k, tuple(cps))}
    todo = [k for k in fits if k not in paths]
    run = joblib.delayed(_fit_path_of)
    calls = [run(split, *fits[k][0], tuple(sorted(fits[k][1]))) for k in todo]
    # (joblib runs a single call, or n_jobs=1, in this process)
    paths.update(zip(todo, joblib.Parallel(n_jobs=jobs if len(calls) > 1 else 1)(calls)))
    for k in todo:
        _memoise(k, paths[k])
    return {name: paths[keys[name]] for name in requests}


def _fit_path_of(split, algorithm, dim, seed, reg, options, checkpoints):
    """:func:`fit_path` with its options as one dict (a worker's call)."""
    return fit_path(algorithm, split, dim, seed, reg, checkpoints, **options)


def _checkpoints(checkpoints: Iterable[int]) -> tuple:
    out = tuple(sorted({int(c) for c in checkpoints}))
    if not out or out[0] < 1:
        raise ValueError(f"checkpoints must be epoch counts >= 1, got {out}")
    return out


def _path_key(algorithm, split, dim, seed, reg, options) -> tuple:
    return (algorithm, split.fingerprint, int(dim), int(seed), float(reg),
            tuple(sorted(options.items())))


def _memoised(key: tuple, checkpoints: tuple) -> bool:
    return key in _PATHS and set(checkpoints) <= set(_PATHS[key])


def _memoise(key: tuple, path: "FitPath") -> None:
    """Keep ``path`` under ``key``, the oldest of :data:`_PATHS_MAX` leaving first."""
    _PATHS.pop(key, None)
    while len(_PATHS) >= _PATHS_MAX:
        _PATHS.pop(next(iter(_PATHS)))
    _PATHS[key] = path


class FitPath(dict):
    """``{epochs: (P, Q, train_seconds)}`` at the checkpoints, and ``trace``: (epoch,
    train_seconds) after every epoch of the fit."""

    def __init__(self):
        super().__init__()
        self.trace: list[tuple[int, float]] = []


def _trace(path: FitPath, epochs: int) -> pd.DataFrame:
    """The training trace up to ``epochs``: one row per epoch (the same whatever was memoised)."""
    return pd.DataFrame([{"epoch": ep, "train_seconds": secs} for ep, secs in path.trace
                         if ep <= epochs])


class _MFBase(Method):
    """Shared by the MF methods: the SGD/ALS fit of one (reg, epochs) point, grouped grids."""

    algorithm = "sgd"
    parallel_grid = False  # points of one reg share one fit
    cost = 2
    #: the quick profile: the single point (no grid)
    quick = {"tune": False}

    def _options(self, config) -> dict:
        if self.algorithm == "sgd":
            return {"lr": float(config["lr"]), "init": config["init"]}
        return {"weighted": bool(config["weighted"]), "init_scale": float(config["init_scale"])}

    def grid(self, config: dict, bits: int) -> list[dict]:
        if not config["tune"]:
            return []
        extra = [{"scope": s} for s in config["scopes"]] if "scopes" in config else [{}]
        return [{"reg": float(r), "epochs": int(e), **x, "tune": False}
                for r in config["reg_grid"] for e in sorted({int(e) for e in config["epochs_grid"]})
                for x in extra]

    def _from_factors(self, P, Q, secs, bits, config, trace):
        """The fitted model of factors ``P``, ``Q`` trained for ``secs`` seconds."""
        raise NotImplementedError

    def shared_work(self, config: dict, bits: int) -> tuple | None:
        """The memoised fits of :func:`fit_path`: the same for MF, MFmean and MFmedian (SGD).
        A tuned config's single point (``reg``, ``epochs``) is not part of it."""
        return self.config_work(f"mf fit path {self.algorithm}", config,
                                sorted(self._options(config)),
                                grid=["tune_ratings", "reg_grid", "epochs_grid"],
                                point=["reg", "epochs"])

    def forget_shared_work(self) -> None:
        _PATHS.clear()

    def fit(self, split, bits, seed, config, progress=False):
        return next(self.fit_grid(split, bits, seed, [config], progress))

    def fit_grid(self, split, bits, seed, configs, progress=False) -> Iterator:
        """Fit every config; points of one ``reg`` share one fit to their largest epoch count."""
        configs = list(configs)
        for reg, group in groupby(configs, key=lambda c: float(c["reg"])):
            group = list(group)
            path = fit_path(self.algorithm, split, bits, seed, reg, [c["epochs"] for c in group],
                            **self._options(group[0]))
            for cfg in group:
                P, Q, secs = path[int(cfg["epochs"])]
                yield self._from_factors(P, Q, secs, int(bits), cfg, _trace(path, int(cfg["epochs"])))


class VectorMF(_MFBase):
    """MF ranked by the inner product of real vectors (``mf``: SGD; ``mf-als``: ALS)."""

    ranks_by = "score"
    model = VectorModel

    def __init__(self, name, label, algorithm, in_paper, description, defaults, color=None):
        self.name, self.label, self.algorithm = name, label, algorithm
        self.in_paper, self.description, self._defaults = in_paper, description, defaults
        self.config_spec = SGD_SPEC if algorithm == "sgd" else ALS_SPEC
        self.color = color

    def defaults(self, dataset: str, bits: int) -> dict:
        return {**self._defaults, "ties": "expected", "impl": IMPL}

    def _from_factors(self, P, Q, secs, bits, config, trace):
        return VectorModel(bits, {"user_vectors": P, "item_vectors": Q}, "score", trace,
                           {"train_seconds": secs})


class BinarizedMF(_MFBase):
    """MFmean / MFmedian: the paper's MF binarised per dimension, ranked by Hamming.

    Its hyper-parameters are those of the MF it binarises (``reg``,
    ``epochs`` of :func:`phdlib.methods.mf.fit_sgd` with the repository's
    ``lr`` and ``init``) and the threshold's ``scope``
    (:func:`phdlib.methods.mf.binarize`); the grid is ``reg_grid`` x
    ``epochs_grid`` x ``scopes``, chosen on the validation NDCG@10 *of the
    codes* (the MF that ranks best as real vectors is not the one that
    binarises best).
    """

    ranks_by = "hamming"
    learns_codes = True
    in_paper = True
    model = CodeModel

    def __init__(self, name: str, threshold: str, color: str | None = None):
        if threshold not in THRESHOLDS:
            raise ValueError(f"threshold must be one of {THRESHOLDS}, got {threshold!r}")
        self.name, self.threshold, self.label = name, threshold, f"MF{threshold}"
        self.description = f"MF (SGD) binarised at each dimension's {threshold}"
        self.config_spec, self.color = BINARIZED_SPEC, color

    def defaults(self, dataset: str, bits: int) -> dict:
        return {**SGD_DEFAULTS, "scopes": list(SCOPES), "reg": 0.1, "scope": "joint",
                "ties": "expected", "impl": IMPL}

    def _from_factors(self, P, Q, secs, bits, config, trace):
        if config["scope"] not in SCOPES:
            raise ValueError(f"{self.name}: scope {config['scope']!r} is not one of {SCOPES}")
        bu, bi, tu, ti = binarize(P, Q, self.threshold, config["scope"])
        arrays = {"user_codes": C.pack(bu, "bool").words, "item_codes": C.pack(bi, "bool").words,
                  "user_thresholds": tu, "item_thresholds": ti}
        info = {"train_seconds": secs, "user_ones": float(bu.mean()), "item_ones": float(bi.mean())}
        return CodeModel(bits, arrays, "hamming", trace, info)


#: MF as the paper ran it (the CCCF repository's ``MF.m``): lr 0.001, factors
#: uniform in [0, 1]; grids of reg (powers of ten 0.001..10) and epochs; the
#: single point (``tune=False``) is what the full grid chooses on ML-1M.
SGD_DEFAULTS = {"lr": 0.001, "init": "uniform01", "tune": True, "tune_ratings": TUNE_RATINGS,
                "reg_grid": [0.001, 0.01, 0.1, 1.0, 10.0], "epochs_grid": [10, 20, 50, 100, 200],
                "reg": 1.0, "epochs": 200}
#: ALS-WR (Zhou et al. 2008): each row's ridge weight reg times its number of ratings.
ALS_DEFAULTS = {"tune": True, "tune_ratings": TUNE_RATINGS,
                "reg_grid": [0.025, 0.05, 0.1, 0.2, 0.4], "epochs_grid": [5, 10, 20],
                "reg": 0.1, "epochs": 10, "weighted": True, "init_scale": 0.1}

_GRID = {"tune": S.TUNE, "tune_ratings": S.TUNE_RATINGS,
         "reg_grid": S.reals(doc="regularisation values of the grid"),
         "epochs_grid": S.integers(1, doc="epoch counts of the grid")}
_FIT = {"reg": S.real(doc="regularisation"), "epochs": S.integer(1, doc="passes over the ratings")}
#: The sections and types of MF's (SGD) config keys.
SGD_SPEC = S.ConfigSpec(
    hyper={**_FIT, "lr": S.real(doc="SGD learning rate"),
           "init": S.text(doc="initialisation of the factors (phdlib.methods.mf.fit_sgd)")},
    tuning=_GRID, evaluation={"ties": S.TIES})
#: The sections and types of MF-ALS's config keys.
ALS_SPEC = S.ConfigSpec(
    hyper={**_FIT, "weighted": S.flag("ALS-WR: ridge weight reg times the row's ratings"),
           "init_scale": S.real(doc="standard deviation of the initial factors")},
    tuning=_GRID, evaluation={"ties": S.TIES})
#: The sections and types of MFmean's and MFmedian's config keys.
BINARIZED_SPEC = S.ConfigSpec(
    hyper={**SGD_SPEC.hyper, "scope": S.choice(*SCOPES, doc="scope of the threshold")},
    tuning={**_GRID, "scopes": S.texts(*SCOPES, doc="threshold scopes of the grid")},
    evaluation={"ties": S.TIES})

MF = VectorMF("mf", "MF", "sgd", True, "MF by SGD as in the CCCF repository (the paper's MF)",
              SGD_DEFAULTS, color="black")
MF_ALS = VectorMF("mf-als", "MF (ALS, ours)", "als", False, "MF by ALS-WR (our addition)",
                  ALS_DEFAULTS, color="tab:gray")
MF_MEAN = BinarizedMF("mf-mean", "mean", color="tab:brown")
MF_MEDIAN = BinarizedMF("mf-median", "median", color="tab:pink")


def binarization_variants(split, vectors: dict, thresholds=THRESHOLDS, scopes=SCOPES,
                          ties: str = "expected") -> pd.DataFrame:
    """Validation and test metrics of every binarisation of every set of vectors.

    vectors: ``{label: (P, Q)}`` float arrays (n_users, dim), (n_items, dim).
    One row per (label, threshold, scope): ``vectors``, ``threshold``,
    ``scope``, ``valid_ndcg@10``, ``test_ndcg@5``, ``test_ndcg@10``,
    ``test_mrr``, and the fraction of 1 bits of user and item codes. For
    reading, not choosing: the methods choose on validation only.
    """
    rows = []
    for label, (P, Q) in vectors.items():
        for th in thresholds:
            for sc in scopes:
                bu, bi, _, _ = binarize(P, Q, th, sc)
                m = CodeModel(P.shape[1], {"user_codes": C.pack(bu, "bool").words,
                                           "item_codes": C.pack(bi, "bool").words})
                sv = summarize(evaluate(m, split.valid, ties))
                st = summarize(evaluate(m, split.test, ties))
                rows.append({"vectors": label, "threshold": th, "scope": sc,
                             "valid_ndcg@10": sv["ndcg@10"], "test_ndcg@5": st["ndcg@5"],
                             "test_ndcg@10": st["ndcg@10"], "test_mrr": st["mrr"],
                             "user_ones": float(bu.mean()), "item_ones": float(bi.mean())})
    return pd.DataFrame(rows)
