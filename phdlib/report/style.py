"""Presentation shared by every table and figure: labels, colours, number format.

Method labels and line colours come from the registry (:func:`phdlib.methods.label`,
:attr:`phdlib.methods.Method.color`, viewed here as :data:`COLORS`); metric
names and labels from :mod:`phdlib.evaluation.metrics`; dataset labels are
written here.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from .. import methods
from ..evaluation.metrics import METRIC_LABELS, METRICS
from .page import mean_std

__all__ = ["METRICS", "METRIC_LABELS", "COLORS", "PHD", "VH", "MF", "label", "fmt_value",
           "DATASET_LABELS", "dataset_label"]

#: The paper's model, the method VH_PHD (Table 1's Delta% row is its gain).
PHD = "vh-phd"
#: VH_PHD's Hamming twin, trained identically but for the distance.
VH = "vh"
#: The paper's real-valued reference, MF (finding 4, the order of Figure 1).
MF = "mf"

#: Line colour of each method in the figures (matplotlib colour names), a read-only
#: view of each method's :attr:`phdlib.methods.Method.color`; a method without
#: one is not in it (``COLORS.get(m)`` is None: matplotlib's next colour).
COLORS: Mapping[str, str] = methods.Declarations(
    lambda name: methods.get(name).color, "name -> line colour (Method.color)")


#: How the book names a dataset on its pages (a name not listed is shown as it is).
DATASET_LABELS = {"ml-100k": "ML-100K", "ml-1m": "ML-1M", "ml-10m": "ML-10M",
                  "yelp": "Yelp", "amazon": "Amazon", "synthetic": "synthetic data",
                  "synthetic-yelp": "Yelp shape", "synthetic-ml-10m": "ML-10M shape",
                  "synthetic-amazon": "Amazon shape"}


def dataset_label(name: str) -> str:
    """``"ml-1m"`` -> ``"ML-1M"``, ``"synthetic-ml-10m"`` -> ``"ML-10M shape"``."""
    return DATASET_LABELS.get(str(name), str(name))


def label(method: str) -> str:
    """Display label of ``method`` (:func:`phdlib.methods.label`; the name when unknown)."""
    return methods.label(method)


def fmt_value(v: float, std: float = np.nan, mark: str = "") -> str:
    """A metric value as Table 1 prints it: ``.7267``, ``.7267* ± .0012`` (the mark on the
    mean, one line), ``n/a`` for NaN (:func:`phdlib.report.page.mean_std`)."""
    return mean_std(v, std, mark=mark)
