"""The training budget's early-stopping rule, under its former name.

The rule (:class:`EarlyStopping`, :data:`CAP_REASON`) now lives with the loop
that applies it, :mod:`phdlib.methods.loop` (the training loop and its
budget, shared by every learned method); this module keeps
``phdlib.methods.stopping.EarlyStopping`` importable for the code, tests and
reports that name it here.
"""
from __future__ import annotations

from .loop import CAP_REASON, EarlyStopping

__all__ = ["CAP_REASON", "EarlyStopping"]
