"""The items' training statistics that travel in a codes file (its optional ``item_stats``).

The second signal of the tie rules (:mod:`phdlib.serving.ties`): each item's number
of training ratings and mean training rating, computed from the split a run was
trained on (:func:`stats_of_split`), with their provenance, and checked when a codes
file is read (:func:`check_item_stats`: present together with its provenance or
absent together, counts whole and adding up, a mean exactly where an item has
ratings). :mod:`phdlib.serving.codes_file` writes and reads the field.
"""
from __future__ import annotations

import json

import numpy as np

from .ties import ITEM_STATS_HOW, STAT_COLUMNS, item_stats as _item_stats

__all__ = ["stats_of_split", "check_item_stats", "STATS_PROVENANCE"]

#: The JSON types of the fields of the provenance's ``item_stats`` object (all required).
STATS_PROVENANCE = {"columns": (list,), "split": (str,), "split_fingerprint": (str,),
                    "ratings": (int,), "how": (dict,)}



def stats_of_split(split, n_items: int) -> tuple[np.ndarray, dict]:
    """``item_stats`` of a split's training ratings and their provenance (module doc)."""
    if split.dataset.n_items != n_items:
        raise ValueError(f"the split has {split.dataset.n_items} items but the codes {n_items}")
    tr = split.train
    prov = {"columns": list(STAT_COLUMNS), "split": "train",
            "split_fingerprint": split.fingerprint, "ratings": int(len(tr)),
            "how": dict(ITEM_STATS_HOW)}
    return _item_stats(tr.item, tr.rating, n_items), prov



def check_item_stats(a, prov: dict, n_items: int, bad):
    """The optional ``item_stats`` field checked against its meaning and its provenance
    (present together or absent together); returns it or None."""
    sp = prov.get("item_stats")
    if a is None:
        if sp is not None:
            raise bad("the provenance describes 'item_stats' but the file has no such field")
        return None
    if sp is None:
        raise bad("field 'item_stats' has no provenance (expected an 'item_stats' object in "
                  "the provenance: columns, split, split_fingerprint, ratings, how)")
    for key, types in STATS_PROVENANCE.items():
        v = sp.get(key)
        if not isinstance(v, types) or isinstance(v, bool):
            raise bad(f"provenance field 'item_stats.{key}' is {json.dumps(v)[:80]}; expected "
                      f"{ {list: 'a list', str: 'text', int: 'an integer', dict: 'an object'}[types[0]]}")
    if sp["columns"] != list(STAT_COLUMNS):
        raise bad(f"provenance field 'item_stats.columns' is {json.dumps(sp['columns'])[:80]}; "
                  f"expected {json.dumps(list(STAT_COLUMNS))}")
    want = (n_items, len(STAT_COLUMNS))
    if a.dtype != np.float64 or a.shape != want:
        raise bad(f"field 'item_stats' is {a.dtype} {a.shape}; expected float64 {want}")
    pop, mean = a[:, 0], a[:, 1]
    if not (np.isfinite(pop).all() and (pop >= 0).all() and (pop == np.floor(pop)).all()):
        j = int(np.flatnonzero(~(np.isfinite(pop) & (pop >= 0) & (pop == np.floor(pop))))[0])
        raise bad(f"field 'item_stats' gives item row {j} a popularity of {float(pop[j])!r}; expected "
                  f"a whole number of ratings >= 0")
    if int(pop.sum()) != sp["ratings"]:
        raise bad(f"field 'item_stats' counts {int(pop.sum()):,} training ratings but its "
                  f"provenance records {sp['ratings']:,}")
    ok = np.where(pop > 0, np.isfinite(mean), np.isnan(mean))
    if not ok.all():
        j = int(np.flatnonzero(~ok)[0])
        raise bad(f"field 'item_stats' gives item row {j} ({pop[j]:.0f} ratings) a mean rating "
                  f"of {float(mean[j])!r}; expected a finite mean where the item has ratings, NaN "
                  f"where it has none")
    return a
