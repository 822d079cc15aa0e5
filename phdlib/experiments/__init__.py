"""Runs, grids and executors (above the methods, the store and the benchmarks): train, tune, store and evaluate many runs.

:mod:`~phdlib.experiments.training` trains, tunes and stores one method (the
shared path behind the method contract); :mod:`~phdlib.experiments.cells` says
what one run of a grid is and where it stands in the store;
:mod:`~phdlib.experiments.runner` runs a grid on this machine and
:mod:`~phdlib.experiments.cluster` on a Dask cluster;
:mod:`~phdlib.experiments.grids` declares the paper's grids (Table 1, the
figures) and their profiles; :mod:`~phdlib.experiments.usage` measures what a
process spends. The grid names are re-exported here so that
``from phdlib import experiments`` reads as before.
"""
from .cells import Cell, freeze, load_split
from .grids import (FIGURE_METHODS, QUICK, SAMPLINGS, Block, Grid, ensure, ensure_point,
                    load_runs, only_methods, plan, profile_note, profile_overrides,
                    run_profiled, sample_note, select, summary_table)
from .runner import GridError, run_grid, status
from ..names import PARTS, PROFILES

__all__ = ["Cell", "freeze", "load_split", "FIGURE_METHODS", "QUICK", "SAMPLINGS", "Block",
           "Grid", "ensure", "ensure_point", "load_runs", "only_methods", "plan",
           "profile_note", "profile_overrides", "run_profiled", "sample_note", "select",
           "summary_table", "GridError", "run_grid", "status", "PARTS", "PROFILES"]
