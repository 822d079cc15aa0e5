"""Does a grid chosen on a user sample choose as the grid on all the data?

On a dataset with more than ``tune_ratings`` ratings (default
:data:`phdlib.methods.base.TUNE_RATINGS`), every tuning grid is chosen on a
user sample of that size and the chosen point is trained on all the data
(:func:`phdlib.experiments.training.run`). :func:`compare` measures what that costs in
quality where both can be run: on one dataset, each tunable method's grid
on all the data beside the same grid on user samples of the given sizes,
every chosen point trained on all the data at seed 0 and evaluated on the
same test split. :func:`save` / :func:`load` keep such a comparison with its
provenance (``phd tune-sample --out``); the chapter "Cost at scale" reads it.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import data, methods
from ..experiments import training
from ..io import read_recorded, records, write_json
from .scale import provenance

FORMAT = "phd-tune-sample"

__all__ = ["tunable", "compare", "save", "load"]


def tunable(dataset: str, bits: int = 64) -> list[str]:
    """The registered methods whose default config tunes a grid (registry order)."""
    out = []
    for n in methods.names(variant=False):
        cfg = methods.resolve_config(n, dataset, bits)
        if methods.get(n).tunes(cfg, bits):
            out.append(n)
    return out


def _choice(run) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(run.extra["chosen"].items()))


def _grid_seconds(run) -> float:
    return float(run.grid["train_seconds"].sum())


def compare(split, caps, names=None, bits: int = 64, root=None,
            progress: bool = True) -> pd.DataFrame:
    """One row per (method, sample size): the choice and test NDCG@10 of each grid.

    Parameters
    ----------
    split : a :class:`phdlib.data.Split` (e.g. ``data.load_split("ml-1m")``).
    caps : sample sizes (ratings, ints), each smaller than the split.
    names : methods (default: :func:`tunable`); bits : the code width.

    Returns
    -------
    DataFrame with ``method``, ``bits``, ``cap``, ``of_ratings`` (the
    split's), ``sample_users``,
    ``sample_ratings``, ``chosen_all`` / ``chosen_sample`` (the grid points,
    as text), ``same`` (bool), ``test_ndcg@10_all`` / ``test_ndcg@10_sample``
    (the chosen point trained on all the data, seed 0), ``difference``
    (sample minus all), ``grid_s_all`` / ``grid_s_sample`` (training seconds
    summed over each grid's points). Runs go through the results store
    (``root``), so the all-data grids are the book's own where it holds them.
    """
    from tqdm import tqdm

    dataset = split.dataset.name
    caps = [int(c) for c in caps]
    for c in caps:
        if not data.needs_sample(split, c):
            raise ValueError(f"sample size {c} is not smaller than {dataset}'s "
                             f"{split.dataset.n_ratings} ratings")
    names = list(names) if names is not None else tunable(dataset, bits)
    root = None if root is None else Path(root)
    rows = []
    bar = tqdm(total=len(names) * (1 + len(caps)), desc=f"{dataset}: grids", unit="grid",
               disable=not progress)
    for n in names:
        # all the data: the cap lifted (on data within the default cap, the very run the
        # book's default config stores: a run that draws no sample has no cap in its key)
        full = training.run(n, split, bits, 0, overrides={"tune_ratings": None},
                            progress=False, root=root)
        bar.update()
        for c in caps:
            s = training.run(n, split, bits, 0, overrides={"tune_ratings": c}, progress=False,
                             root=root)
            info = s.extra["tuned_at"]["sample"]
            rows.append({
                "method": n, "bits": int(bits), "cap": c, "of_ratings": info["of_ratings"],
                "sample_users": info["users"],
                "sample_ratings": info["ratings"], "chosen_all": _choice(full),
                "chosen_sample": _choice(s), "same": full.extra["chosen"] == s.extra["chosen"],
                "test_ndcg@10_all": full.metrics["ndcg@10"],
                "test_ndcg@10_sample": s.metrics["ndcg@10"],
                "difference": s.metrics["ndcg@10"] - full.metrics["ndcg@10"],
                "grid_s_all": _grid_seconds(full), "grid_s_sample": _grid_seconds(s)})
            bar.update()
    bar.close()
    return pd.DataFrame(rows)


def save(path, rows: pd.DataFrame, dataset: str, fingerprint: str, command: str = "") -> Path:
    """Write a comparison atomically, with its provenance (:func:`phdlib.studies.scale.provenance`,
    the dataset and its split's ``fingerprint``)."""
    prov = {**provenance(command), "dataset": dataset, "split_fingerprint": fingerprint}
    return write_json(path, {"format": FORMAT, "version": 1, "provenance": prov,
                             "rows": records(rows)})


def load(path) -> dict:
    """A comparison written by :func:`save`: ``{"provenance": dict, "rows": DataFrame}``;
    ``ValueError`` naming the file when it is not one."""
    return read_recorded(path, FORMAT, "tuning-sample comparison", "comparison",
                         "phdlib.studies.sample_tuning.save", need=("method", "cap", "same", "difference"))
