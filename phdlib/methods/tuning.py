"""The tuning policy, in one place: where a method's grid is tuned, and whether it is.

A method with a grid (:meth:`phdlib.methods.Method.grid`) tunes it once, at
one point (:func:`tune_point`): seed :data:`TUNE_SEED` and the width
``config["tune_bits"]`` when the config sets it (VH: 64), else the width of
the run itself. Every other seed and width reuses the choice made there
(:func:`phdlib.experiments.training.transfer` records it as
``extra["tuned_at"]``). The grid runner (:mod:`phdlib.experiments.cells`),
the cluster executor (:mod:`phdlib.experiments.cluster`) and training
(:mod:`phdlib.experiments.training`) all ask here; none reads ``tune_bits``
itself.
"""
from __future__ import annotations

from typing import Mapping

__all__ = ["TUNE_SEED", "tune_bits", "tune_point", "is_anchor"]

#: The seed every grid is tuned at.
TUNE_SEED = 0


def tune_bits(config: Mapping, bits: int) -> int:
    """The width (bits) the grid of a run at ``bits`` with ``config`` is tuned at:
    ``config["tune_bits"]`` when set (not None, not 0), else ``bits``."""
    return int(config.get("tune_bits") or bits)


def tune_point(config: Mapping, bits: int) -> tuple[int, int]:
    """``(bits, seed)`` where the grid of a run at ``bits`` with ``config`` is tuned."""
    return tune_bits(config, bits), TUNE_SEED


def is_anchor(config: Mapping, bits: int, seed: int) -> bool:
    """Whether a run at ``bits`` and ``seed`` is the one that tunes the grid itself."""
    return (int(bits), int(seed)) == tune_point(config, bits)
