"""Declarative experiment grids over the results store.

A *cell* is one run: (dataset, method, bits, seed, options), where options are
config overrides of the method (e.g. ``train_sampling``). A :class:`Grid` is a
list of :class:`Block` lines, each a product ``methods x bits x seeds x
options`` on every dataset of the grid; :func:`plan` builds the grid of the
paper's tables and figures for a *profile*:

- ``"full"``: the paper's settings, i.e. each method's defaults (which carry
  the paper's hyper-parameters and the baselines' validation grids);
- ``"quick"``: reduced settings for checks and CI (fixed hyper-parameters, no
  tuning grids, short training: each method's :attr:`phdlib.methods.Method.quick`,
  viewed here as :data:`QUICK`). Numbers from it are not
  the paper's settings and every chapter says so.

:func:`run_grid` runs only the cells that the store does not hold yet (so an
interrupted reproduction resumes where it stopped: a run is stored atomically
by :func:`phdlib.experiments.training.run`, complete or absent), in parallel with joblib,
and writes a manifest (provenance) beside the runs.

This module holds the paper's grids, profiles and parts. What a cell is
(:class:`Cell`, :func:`freeze`, :func:`load_split`) lives below it in
:mod:`phdlib.experiments.cells`, and the executor (:func:`run_grid`, :func:`status`,
:class:`GridError`) in :mod:`phdlib.experiments.runner`; both are imported here, never
the other way round, and :mod:`phdlib.experiments` exports their names.

Parallel backends
-----------------
``run_grid(cells, jobs=J)`` uses joblib's default backend (loky processes) on
one machine, each worker storing its runs in the shared results folder.

On a Dask cluster, pass the scheduler (``phd reproduce --dask tcp://HOST:8786``)::

    experiments.run_grid(cells, dask="tcp://scheduler:8786")   # or a distributed.Client

The client ships each cell its split and the stored runs it depends on, the
workers train in private temporary stores and send the runs back, and the
client stores them: workers need neither the data nor a shared disk
(:mod:`phdlib.experiments.cluster`, which also shows the ``dask scheduler`` / ``dask
worker`` commands).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

import pandas as pd

from .. import methods, results
from . import training
# the grids below are made of cells (phdlib.experiments.cells) and run by the executor
# (phdlib.experiments.runner); the package phdlib.experiments exports their names
from .cells import Cell, freeze, load_split
from ..data import needs_sample
from ..names import PARTS, PROFILES  # the grid's parts and profiles (read by phd --help)
from .runner import run_grid, status

#: Methods of Figures 1 to 3 (the paper's figure choice).
FIGURE_METHODS = ["cccf", "dcf", "vh", "vh-phd", "mf"]
#: Methods of the chapter "Does the gain travel?": each learner for Hamming, for PHD, and
#: with a per-user offset in training (VH and DCF).
TRAVEL_METHODS = ["vh", "vh-phd", "vh-bias", "dcf", "dcf-phd", "dcf-bias"]
#: Methods of the section on lazy Adam (chapter "Cost at scale"): VH and VH_PHD with the
#: paper's dense Adam and with lazy Adam.
LAZY_METHODS = ["vh", "vh-phd", "vh-lazy", "vh-phd-lazy"]
#: The four (train, eval) sampling combinations of Figure 4.
SAMPLINGS = [
    ("stochastic", "deterministic"),
    ("deterministic", "deterministic"),
    ("stochastic", "stochastic"),
    ("deterministic", "stochastic"),
]

#: Config overrides of the quick profile, per method: a read-only view of each
#: method's own declaration (:attr:`phdlib.methods.Method.quick`). Keys a method
#: does not have are reported by :func:`profile_overrides` (never dropped silently).
QUICK: Mapping[str, dict] = methods.Declarations(
    methods.quick_overrides, "name -> overrides of the quick profile (Method.quick)")


# --------------------------------------------------------------------------- grids


@dataclass
class Block:
    """One line of a grid: the product ``methods x bits x seeds x options``."""

    methods: list[str]
    bits: list[int]
    seeds: list[int] = field(default_factory=lambda: [0])
    options: list[dict] = field(default_factory=lambda: [{}])
    part: str = ""


@dataclass
class Grid:
    """A declarative grid: every block on every dataset; ``profile`` adds overrides."""

    datasets: list[str]
    blocks: list[Block]
    profile: str = "full"
    split_seed: int = 0

    def cells(self) -> list[Cell]:
        """Distinct cells in declaration order (a cell named twice runs once)."""
        out: dict[Cell, None] = {}
        for ds in self.datasets:
            for b in self.blocks:
                for m in b.methods:
                    for bits in b.bits:
                        for seed in b.seeds:
                            for opt in b.options:
                                ov = dict(profile_overrides(self.profile, m, ds, bits)[0])
                                ov.update(opt)
                                out[Cell(ds, m, int(bits), int(seed), freeze(ov), self.split_seed)] = None
        return list(out)


def profile_overrides(profile: str, method: str, dataset: str = "ml-1m",
                      bits: int = 64) -> tuple[dict, list[str]]:
    """(overrides, keys the method does not know) of ``profile`` for ``method``.

    ``"full"`` has no overrides (the defaults are the paper's settings);
    ``"quick"`` takes the method's :attr:`phdlib.methods.Method.quick`
    restricted to its config keys. The second element lists the keys of its
    quick overrides that the method lacks, so a caller can show them. A
    method that declares ``quick = {}`` gets ``{}``; one that declares nothing
    is a ``ValueError`` naming it (:func:`phdlib.methods.quick_overrides`).
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    if profile == "full":
        return {}, []
    wanted = methods.quick_overrides(method)
    if not wanted:
        return {}, []
    keys = set(methods.get(method).defaults(dataset, bits))
    return ({k: v for k, v in wanted.items() if k in keys},
            sorted(k for k in wanted if k not in keys))


def run_profiled(name: str, split, bits: int, profile: str = "full", seed: int = 0,
                 extra: dict | None = None, progress: bool = False):
    """:func:`phdlib.experiments.training.run` with ``profile``'s overrides (plus ``extra``) for ``name``.

    The one way chapters get a run: the stored run is reused when the store has
    it, else the method is trained and stored. Returns a :class:`results.Run`.
    """
    overrides, _ = profile_overrides(profile, name, split.dataset.name, bits)
    overrides.update(extra or {})
    return training.run(name, split, bits, seed=seed, overrides=overrides, progress=progress)


def plan(dataset: str | list[str], profile: str = "full", seeds: int = 1,
         parts: Iterable[str] = PARTS, split_seed: int = 0) -> Grid:
    """The grid behind the paper's tables and figures.

    parts: any of ``table1`` (all methods and our additions, 32 and 64 bits),
    ``vh`` (the chapter "Variational hashing": VH and VH_PHD, 32 and 64 bits;
    VH+bias at seed 0, trained with them),
    ``users`` (Figures 1-3: the figure methods at 64 bits), ``sampling``
    (Figure 4: VH_PHD at 64 bits, four sampling combinations), ``convergence``
    (Figure 5: VH and VH_PHD at 64 bits), ``protocol`` (the chapter on the
    protocol: the Table 1 cells), ``travel`` (the chapter "Does the gain
    travel?": :data:`TRAVEL_METHODS`, 32 and 64 bits), ``lazy`` (the chapter
    "Cost at scale": :data:`LAZY_METHODS`, 32 and 64 bits). seeds: model seeds
    0..seeds-1.
    """
    parts = list(parts)
    bad = set(parts) - set(PARTS)
    if bad:
        raise ValueError(f"unknown part(s) {sorted(bad)}; known: {PARTS}")
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    sd = list(range(seeds))
    blocks = []
    if "table1" in parts or "protocol" in parts:
        blocks.append(Block(methods.names(variant=False), [32, 64], sd, part="table1"))
    if "vh" in parts:
        blocks.append(Block(["vh", "vh-phd"], [32, 64], sd, part="vh"))
        blocks.append(Block(["vh-bias"], [32, 64], [0], part="vh"))  # one grid with VH's

    if "travel" in parts:
        blocks.append(Block(TRAVEL_METHODS, [32, 64], sd, part="travel"))
    if "lazy" in parts:
        blocks.append(Block(LAZY_METHODS, [32, 64], sd, part="lazy"))
    if "users" in parts:
        blocks.append(Block(FIGURE_METHODS, [64], sd, part="users"))
    if "convergence" in parts:
        blocks.append(Block(["vh", "vh-phd"], [64], sd, part="convergence"))
    if "sampling" in parts:
        blocks.append(Block(["vh-phd"], [64], sd,
                            [{"train_sampling": t, "eval_sampling": e, "tune": False}
                             for t, e in SAMPLINGS],
                            part="sampling"))
    ds = [dataset] if isinstance(dataset, str) else list(dataset)
    return Grid(ds, blocks, profile=profile, split_seed=split_seed)


def profile_note(profile: str, method_names: Iterable[str], dataset: str | None = None,
                 data_dir=None) -> str:
    """A plain-text statement of what ``profile`` means for these methods (on ``dataset``:
    whether its grids are chosen on a user sample, :func:`sample_note`)."""
    if profile == "full":
        note = ("Profile 'full': every method runs with its default configuration, which is the "
                "paper's settings (baselines tuned on validation over their grids).")
        sampled = sample_note(dataset, method_names, data_dir) if dataset else ""
        return f"{note}\n{sampled}" if sampled else note
    lines = ["Profile 'quick': REDUCED settings for checks, NOT the paper's settings "
             "(fixed hyper-parameters, no tuning grids, shorter training). "
             "Numbers below are not comparable to the paper's at full strength."]
    for m in method_names:
        ov, missing = profile_overrides(profile, m)
        if ov or missing:
            s = f"  {m}: " + (", ".join(f"{k}={v}" for k, v in ov.items()) or "defaults")
            if missing:
                s += f" (quick keys this method does not have: {', '.join(missing)})"
            lines.append(s)
    return "\n".join(lines)


def sample_note(dataset: str, method_names: Iterable[str], data_dir=None) -> str:
    """A statement that the grids of these methods are chosen on a user sample of
    ``dataset`` (more ratings than their ``tune_ratings``), or ``""`` when they are not."""
    split = load_split(dataset, data_dir=data_dir)
    out = []
    for cap in sorted({training.config_of(m, split, 64)[0].get("tune_ratings")
                       for m in method_names} - {None}):
        if needs_sample(split, cap):  # config_of kept the cap: a grid draws a sample
            s = training.tune_split(split, {"tune_ratings": cap})
            out.append(
                f"On {dataset} ({split.dataset.n_ratings:,} ratings, more than {cap:,}) every "
                f"tuning grid is chosen on a user sample of {s.dataset.n_ratings:,} ratings "
                f"({s.dataset.n_users:,} of {split.dataset.n_users:,} users) and the chosen "
                f"point is trained on all the data; the paper tuned on all of it (chapter "
                f"'Cost at scale' measures on ML-1M what this changes).")
    return "\n".join(out)


# --------------------------------------------------------------------------- reading back


def load_runs(cells: Iterable[Cell], root=None, data_dir=None, arrays: bool = False,
              missing: str = "raise") -> dict[Cell, results.Run]:
    """The stored run of each cell. missing: ``"raise"`` or ``"skip"`` (absent cells left out)."""
    st = status(list(cells), root=root, data_dir=data_dir)
    out = {}
    for _, row in st.iterrows():
        if row["status"] != "stored":
            if missing == "raise":
                raise LookupError(f"no stored run for {row['cell'].label()} ({row['status']}"
                                  + (f": {row['error']}" if row["error"] else "") + ")")
            continue
        out[row["cell"]] = results.load(row["path"], arrays=arrays)
    return out


def only_methods(cells: Iterable[Cell], names: Iterable[str]) -> list[Cell]:
    """The cells of the methods ``names``; an unknown name is an error naming the known ones."""
    keep = set(names)
    for n in keep:
        methods.get(n)
    return [c for c in cells if c.method in keep]


def ensure(dataset: str, profile: str, parts: Iterable[str], seeds: int = 1, jobs: int | None = 1,
           root=None, data_dir=None, progress: bool = True, methods_only: Iterable[str] | None = None,
           arrays: bool = False) -> tuple[dict[Cell, results.Run], pd.DataFrame]:
    """Run what ``parts`` need (resuming from the store) and load the runs.

    Returns ``(runs, report)``: ``runs`` maps each cell to its run;
    ``report`` is :func:`run_grid`'s table.
    """
    grid = plan(dataset, profile, seeds=seeds, parts=parts)
    cells = grid.cells()
    if methods_only is not None:
        cells = only_methods(cells, methods_only)
    report = run_grid(cells, jobs=jobs, root=root, data_dir=data_dir, progress=progress,
                      name=f"{dataset}-{profile}-{'+'.join(parts)}")
    ok = report[report["status"].isin(["stored", "ran"])]
    # load from the paths the workers reported (not by resolving configs again here)
    runs = {c: results.load(p, arrays=arrays) for c, p in zip(ok["cell"], ok["path"])}
    return runs, report


def ensure_point(dataset: str, profile: str, names: Iterable[str], widths: Iterable[int],
                 seed: int = 0, split_seed: int = 0, jobs: int | None = 1, root=None,
                 data_dir=None, progress: bool = False) -> dict[tuple[str, int], results.Run]:
    """The run of every (method, width) in ``names`` x ``widths`` at one model seed.

    What the store lacks is trained by :func:`run_grid`, ``jobs`` cells (and
    tuning points) at a time; the runs are the ones :func:`run_profiled`
    would give one by one. Returns ``{(method, bits): Run}``.
    """
    grid = Grid([dataset], [Block(list(names), [int(b) for b in widths], [int(seed)])],
                profile=profile, split_seed=int(split_seed))
    report = run_grid(grid.cells(), jobs=jobs, root=root, data_dir=data_dir, progress=progress,
                      name=f"{dataset}-{profile}-seed{seed}")
    return {(c.method, c.bits): results.load(p) for c, p in zip(report["cell"], report["path"])}


def select(runs: dict[Cell, results.Run], method: str | None = None, bits: int | None = None,
           **options) -> dict[Cell, results.Run]:
    """The runs whose cell matches ``method``, ``bits`` and option values.

    An option given as ``None`` means the cell must not set it.
    """
    out = {}
    for c, r in runs.items():
        if method is not None and c.method != method:
            continue
        if bits is not None and c.bits != bits:
            continue
        ov = c.overrides
        if any((k in ov) if v is None else ov.get(k) != v for k, v in options.items()):
            continue
        out[c] = r
    return out


def summary_table(report: pd.DataFrame) -> pd.DataFrame:
    """The report as a compact table for printing (one row per cell)."""
    cols = ["dataset", "method", "bits", "seed", "options", "status", "seconds", "ndcg@10"]
    t = report[cols].copy()
    t["seconds"] = t["seconds"].round(1)
    t["ndcg@10"] = t["ndcg@10"].round(4)
    return t
