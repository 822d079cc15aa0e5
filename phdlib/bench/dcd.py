"""The cost of one discrete-coordinate-descent sweep scored by PHD against one scored by Hamming.

DCF (:mod:`phdlib.methods.dcf`) and DCF_PHD (:mod:`phdlib.methods.dcf_phd`)
run the same kernel (:func:`phdlib.kernels.dcf.dcd_rows_linear`) with different
linear terms (:func:`phdlib.methods.discrete_phd.linear_terms`). :func:`sweep_ratio` times one sweep of each on the same problem:
the training split's ratings scaled to ``[-bits, bits]``, the same seeded
random ±1 starting codes and balance surrogates, one cyclic pass over every
user's bits then every item's (``max_sweeps=1``), each call on fresh copies
of the codes, the two distances interleaved (A-B, B-A, ...). A sweep includes making the
linear terms of the other side (for Hamming the codes themselves, for PHD an
int8 copy), as a training round does. The work of a
sweep also depends on how many bits flip (a flip updates the row's running
scores), so the flip counts are reported beside the times.
"""
from __future__ import annotations

import numpy as np

from .machine import machine_info
from .timing import interleaved, paired_ratio
from ..kernels import dcf as K
from ..methods.discrete import RatingGraph, scale_ratings
from ..methods.surrogates import balanced_decorrelated
from ..methods.discrete_phd import linear_terms

__all__ = ["sweep_problem", "sweep_ratio"]


def sweep_problem(split, bits: int, alpha: float = 0.1, seed: int = 0) -> dict:
    """The inputs of one sweep on ``split.train``.

    Returns a dict: ``graph`` (:class:`phdlib.methods.discrete.RatingGraph`),
    ``target`` float64 (nnz,) (user layout) and ``target_items`` (item
    layout), ``B`` int8 (n_users, bits), ``D`` int8 (n_items, bits): seeded
    random ±1 codes; ``bias_users`` = alpha X, ``bias_items`` = alpha Y
    float64 (their balanced, decorrelated surrogates).
    """
    ds = split.dataset
    g = RatingGraph.from_ratings(split.train, ds.n_users, ds.n_items)
    target = scale_ratings(g.rating, *ds.rating_scale, float(bits))
    rng = np.random.default_rng(seed)
    B = np.where(rng.standard_normal((g.n_users, bits)) >= 0, 1, -1).astype(np.int8)
    D = np.where(rng.standard_normal((g.n_items, bits)) >= 0, 1, -1).astype(np.int8)
    return {"graph": g, "target": target, "target_items": np.ascontiguousarray(target[g.i_pos]),
            "B": B, "D": D, "bias_users": alpha * balanced_decorrelated(B, rng),
            "bias_items": alpha * balanced_decorrelated(D, rng)}


def _sweep(pb: dict, score: str):
    """A function running one user sweep then one item sweep on copies; returns the flips."""
    g = pb["graph"]
    ones_u, ones_i = np.ones(g.n_users), np.ones(g.n_items)

    def run() -> int:
        B, D = pb["B"].copy(), pb["D"].copy()
        f = K.dcd_rows_linear(g.u_indptr, g.u_items, pb["target"], ones_u, ones_i, B,
                              *linear_terms(score, "user", D), pb["bias_users"], 1).sum()
        f += K.dcd_rows_linear(g.i_indptr, g.i_users, pb["target_items"], ones_i, ones_u, D,
                               *linear_terms(score, "item", B), pb["bias_items"], 1).sum()
        return int(f)

    return run


def sweep_ratio(split, bits: int, repeats: int = 21, alpha: float = 0.1, seed: int = 0) -> dict:
    """Seconds of one PHD sweep over one Hamming sweep on ``split.train`` at ``bits``.

    ``repeats`` interleaved rounds (:func:`phdlib.bench.timing.interleaved`,
    alternating order) after one warm-up call each. Returns a dict:
    ``ratio`` (median, q25, q75 of the per-round PHD / Hamming ratios),
    ``seconds`` (median seconds per sweep per distance), ``flips`` (bit flips
    of one sweep per distance), ``bits``, ``nnz`` and ``machine``
    (:func:`phdlib.bench.machine.machine_info`).
    """
    pb = sweep_problem(split, int(bits), alpha, seed)
    fns = {"hamming": _sweep(pb, "hamming"), "phd": _sweep(pb, "phd")}
    times, flips = interleaved(fns, int(repeats), seed=seed, alternate=True)
    return {"ratio": paired_ratio(times["phd"], times["hamming"]),
            "seconds": {k: float(np.median(v)) for k, v in times.items()},
            "flips": flips, "bits": int(bits), "nnz": pb["graph"].nnz, "machine": machine_info()}
