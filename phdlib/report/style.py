"""Presentation shared by every table and figure: labels, colours, number format.

Method labels come from the registry (:func:`phdlib.methods.label`); metric
names and labels from :mod:`phdlib.evaluation.metrics`. Only the line colours of the
figures are a presentation choice made here.
"""
from __future__ import annotations

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

#: Line colour of each method in the figures (matplotlib colour names);
#: a method not listed gets matplotlib's next colour.
COLORS: dict[str, str] = {"cccf": "tab:green", "dcf": "tab:orange", "vh": "tab:blue",
                          "vh-phd": "tab:red", "mf": "black", "mf-als": "tab:gray",
                          "item-mean": "tab:purple"}


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
