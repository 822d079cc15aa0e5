"""Sanity baselines (our addition): rankings that know nothing about the user.

Under the paper's protocol each user ranks only their own rated test items
(:mod:`phdlib.evaluation.metrics`). These baselines give every user the *same* item
order, so whatever they score measures how much of the task is solved
without any personalisation:

- ``random``: every item gets the same value, so all of a user's test items
  tie; with ``ties="expected"`` the metrics are their exact expectation
  under a uniformly random order (chance level).
- ``item-mean``: items ranked by their mean training rating, higher first
  (an item without training ratings gets the global mean training rating).
- ``popularity``: items ranked by their number of training ratings, more
  first.

Each run stores ``item_scores`` (float64 ``(n_items,)``, larger ranks first)
in ``Run.arrays``; :func:`item_scores` computes them.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from . import spec as S
from .base import Method
from .fitted import ItemScoreModel

__all__ = ["item_scores", "KINDS", "ITEM_MEAN", "POPULARITY", "RANDOM"]

KINDS = ("random", "item-mean", "popularity")

#: Implementation revision, part of the config (hence of the run key); bump
#: it when a change alters the results.
IMPL = 1


def item_scores(train, n_items: int, kind: str) -> np.ndarray:
    """One score per item from the training ratings: float64 ``(n_items,)``.

    train: a :class:`phdlib.data.Ratings` (item int32 ``(r,)``, rating
    float32 ``(r,)``); kind: ``"random"`` (all 0), ``"item-mean"`` (mean
    training rating; the global mean for items without training ratings) or
    ``"popularity"`` (count of training ratings).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    item = np.asarray(train.item)
    if item.size and (item.min() < 0 or item.max() >= n_items):
        bad = int(item.min()) if item.min() < 0 else int(item.max())
        raise ValueError(f"train.item holds id {bad}, outside 0..{n_items - 1}")
    if kind == "random":
        return np.zeros(n_items)
    cnt = np.bincount(item, minlength=n_items).astype(np.float64)
    if kind == "popularity":
        return cnt
    rating = np.asarray(train.rating, np.float64)
    if rating.size == 0:
        raise ValueError("train holds no ratings; the item mean is undefined")
    total = np.bincount(item, weights=rating, minlength=n_items)
    mean = np.full(n_items, rating.mean())
    np.divide(total, cnt, out=mean, where=cnt > 0)
    return mean


class SanityBaseline(Method):
    """A method scoring every user's items alike, by :func:`item_scores`.

    Config: ``ties`` (the tie rule of the evaluation), ``impl``. ``bits`` is
    ignored (nothing is encoded) but kept in the run's identity like every
    method's.
    """

    ranks_by = "score"
    model = ItemScoreModel
    #: nothing to make cheaper: one pass over the training ratings
    quick: dict = {}
    config_spec = S.ConfigSpec(evaluation={"ties": S.TIES})

    def __init__(self, name: str, label: str, description: str, color: str | None = None):
        if name not in KINDS:
            raise ValueError(f"unknown sanity baseline {name!r}; expected one of {KINDS}")
        self.name, self.label, self.description = name, label, description
        self.color = color

    def defaults(self, dataset: str, bits: int) -> dict:
        return {"ties": "expected", "impl": IMPL}

    def fit(self, split, bits, seed, config, progress=False) -> ItemScoreModel:
        t0 = time.perf_counter()
        s = item_scores(split.train, split.dataset.n_items, self.name)
        secs = time.perf_counter() - t0
        log = pd.DataFrame([{"step": 0, "train_seconds": secs}])
        return ItemScoreModel(int(bits), {"item_scores": s}, "score", log,
                              {"train_seconds": secs, "n_users": split.dataset.n_users})


RANDOM = SanityBaseline("random", "random (all tied)", "every item tied: chance level")
ITEM_MEAN = SanityBaseline("item-mean", "item mean rating", "items by mean training rating",
                           color="tab:purple")
POPULARITY = SanityBaseline("popularity", "item popularity", "items by number of training ratings")
