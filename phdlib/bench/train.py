"""The training benchmark (``phd bench --train``): VH / VH_PHD steps beside their limit.

One training step of the variational hashing model is tiny arithmetic on a
batch (``B x m`` bits) and a dense Adam update of every row of the
embeddings: each float32 parameter and its two moments are read and written
once per step. So a step cannot be faster than

- the **memory-traffic floor**: the bytes the step must move, timed with
  :func:`phdlib.kernels.adam.traffic_probe` (three float32 arrays of the
  parameters' shape read and rewritten once, with the Adam pass's loops and
  threads but little arithmetic) on this machine, in this run;
- the **arithmetic floor**: the Adam pass (a division and a square root per
  parameter) on a block of rows small enough to stay in the L1 cache, scaled
  to every row;

and the *limit* is the larger of the two. ``adam_pass_ms`` is the dense
Adam pass of the fused step alone on arrays of the shape (no gradient rows).
``subnormal_ms`` and ``flushed_ms`` are the same pass when a fraction
:data:`SUBNORMAL_ROWS` of the rows has subnormal first moments (rows a long
run leaves untouched for ~800 steps: 15% of the users at the ML-10M shape),
computed as they are and flushed to zero (:mod:`phdlib.kernels.fpenv`, what
training does), side by side in the same rounds. Synthetic ratings drawn
uniformly never get there in a benchmark's few iterations;
what the step costs beyond it is the batch (gather, PyTorch's sigmoid, the
random thresholds, the backward pass) and the calls that launch it. For each shape (ML-1M's 6,040 users
and 3,260 items; Amazon's 158,650 + 128,939 = 287,589 rows), each width and
each method (VH: Hamming, deterministic training; VH_PHD: PHD, stochastic
training, their single-point configurations), :func:`run` times
milliseconds per iteration of the fused step (:mod:`phdlib.methods.vh_step`)
on 1 and ``threads`` threads and of the autograd step (PyTorch's autograd and
fused Adam, the reference) on 1 thread, interleaved round by round, on
synthetic ratings of the shape (batch order, noise and sampling included).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from types import SimpleNamespace

import numba
import numpy as np

from .machine import machine_info
from .timing import interleaved
from ..data import SOURCES
from ..paper import dataset_shape
from .. import methods
from ..methods import vh
from ..kernels import adam as A
from ..kernels import fpenv

#: (users, items, ratings) of the benchmark's shapes, from the one declaration of
#: the paper's sizes (:func:`phdlib.paper.dataset_shape`): ML-1M's users and items
#: after filtering with the raw file's ratings (``SOURCES["ml-1m"].raw_rows``), and
#: the paper's Amazon set (Section 5.1).
SHAPES = {"ml-1m": dataset_shape("ml-1m")[:2] + (SOURCES["ml-1m"].raw_rows,),
          "amazon": dataset_shape("amazon")}
#: Iterations per timing sample, per shape (a sample lasts about a second).
ITERATIONS = {"ml-1m": 1000, "amazon": 20}
METHODS = ("vh", "vh-phd")
#: Fraction of rows with subnormal first moments in ``subnormal_ms`` /
#: ``flushed_ms`` (measured at the ML-10M shape after 3,000 steps).
SUBNORMAL_ROWS = 0.15


@dataclass
class TrainBench:
    """Rows of :func:`run` (one per shape, width, method, step and thread count) and the run."""

    rows: list[dict]
    info: dict

    def to_json(self) -> dict:
        return {"rows": self.rows, "_run": self.info}

    def table(self):
        import pandas as pd

        return pd.DataFrame(self.rows)


def _trainer(shape, bits, method, step, threads, seed):
    from ..methods.vh_model import torch_threads

    n_users, n_items, n = shape
    rng = np.random.default_rng(seed)
    train = SimpleNamespace(user=rng.integers(0, n_users, n), item=rng.integers(0, n_items, n),
                            rating=rng.integers(1, 6, n).astype(np.float32))
    cfg = vh.default_config(methods.get(method).ranks_by)
    with torch_threads(threads):
        return vh._Trainer(train, n_users, n_items, bits, (1, 5), cfg, seed, step, threads)


def _timed(tr, iterations, threads):
    import torch

    def call():
        old = torch.get_num_threads()
        torch.set_num_threads(threads)
        numba.set_num_threads(threads)
        try:
            tr.steps(iterations)
        finally:
            torch.set_num_threads(old)

    return call


def _floors(rows: int, bits: int, batch: int, threads: int, repeats: int) -> dict:
    """Memory-traffic and arithmetic floors of one step (milliseconds), measured now."""
    n = rows * bits
    a, b, c = (np.random.default_rng(k).random((rows, bits), dtype=np.float32) for k in range(3))
    numba.set_num_threads(threads)

    def probe():
        if threads > 1:
            A.traffic_probe_parallel(a, b, c, threads)
        else:
            A.traffic_probe(a, b, c)

    blk = 16
    p, m, v = (np.random.default_rng(k).random((blk, bits), dtype=np.float32) for k in range(3))
    consts = tuple(np.float32(x) for x in (0.1, 0.999, 0.001, 0.5, 1e-8, -1e-3))
    calls = max(1, rows // blk)
    probe()
    A.arithmetic_probe(p, m, v, 1, *consts)

    def adam_pass():  # the dense pass of a step on arrays of this shape, no gradient rows
        _dense_pass(a, b, c, threads, consts)

    adam_pass()
    sub = _subnormal_pass(rows, bits, threads, consts)
    mem, arith, dense, slow, fast = [], [], [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        probe()
        t1 = time.perf_counter()
        A.arithmetic_probe(p, m, v, calls, *consts)
        t2 = time.perf_counter()
        adam_pass()
        t3 = time.perf_counter()
        mem.append(t1 - t0)
        arith.append((t2 - t1) * rows / (calls * blk))
        dense.append(t3 - t2)
        slow.append(sub(False))
        fast.append(sub(True))
    dense_bytes = 6 * 4 * n                 # p, m, v: read and written once
    batch_bytes = 12 * 4 * batch * bits     # rows gathered, probabilities, thresholds, gradients
    bandwidth = dense_bytes / np.median(mem)
    traffic_ms = 1e3 * (dense_bytes + batch_bytes) / bandwidth
    arith_ms = 1e3 * float(np.median(arith)) / threads
    return {"bytes_per_step": dense_bytes + batch_bytes, "bandwidth_gbs": bandwidth / 1e9,
            "traffic_ms": traffic_ms, "arithmetic_ms": arith_ms,
            "limit_ms": max(traffic_ms, arith_ms),
            "adam_pass_ms": 1e3 * float(np.median(dense)),
            "subnormal_ms": 1e3 * float(np.median(slow)),
            "flushed_ms": 1e3 * float(np.median(fast))}


@lru_cache(maxsize=8)
def _no_gradient(rows: int, bits: int):
    """Buffers of a step without gradient rows (allocated once, not inside a timing):
    slot int64 ``(rows,)`` all -1 (the kernels leave it so), empty rows and gradients."""
    return (np.full(rows, -1, np.int64), np.empty(0, np.int64),
            np.empty((0, bits), np.float32))


def _dense_pass(p, m, v, threads: int, consts, flush: bool = False) -> None:
    """The dense Adam pass of one step on ``p, m, v`` with no gradient rows, as the
    fused step runs it on ``threads`` threads (``flush``: its workers flush)."""
    slot, no_rows, no_grad = _no_gradient(*p.shape)
    if threads > 1:
        A.adam_rows_parallel(p, m, v, no_rows, no_grad, slot, no_grad, *consts, threads, flush)
    else:
        A.adam_rows(p, m, v, no_rows, no_grad, slot, no_grad, *consts)


def _subnormal_pass(rows: int, bits: int, threads: int, consts):
    """A timer of the dense Adam pass with :data:`SUBNORMAL_ROWS` subnormal rows.

    Returns ``timed(flush) -> seconds``; the moments are restored (untimed)
    before each call, since one flushed pass zeroes them.
    """
    rng = np.random.default_rng(7)
    p = rng.uniform(-1, 1, (rows, bits)).astype(np.float32)
    m0 = (rng.standard_normal((rows, bits)) * 1e-3).astype(np.float32)
    m0[rng.random(rows) < SUBNORMAL_ROWS] = np.float32(1e-40)
    v0 = np.full((rows, bits), 1e-6, np.float32)
    m, v = m0.copy(), v0.copy()

    def timed(flush: bool) -> float:
        m[:], v[:] = m0, v0
        with fpenv.flush_denormals(flush):
            t0 = time.perf_counter()
            _dense_pass(p, m, v, threads, consts, flush)
            return time.perf_counter() - t0

    timed(False)
    timed(True)
    return timed


def run(shapes=("ml-1m", "amazon"), bits=(32, 64), methods=METHODS, threads: int | None = None,
        repeats: int = 5, iterations: dict | None = None, seed: int = 0, log=None) -> TrainBench:
    """Milliseconds per VH training iteration, fused and autograd, beside the limit.

    threads: the thread count measured beside 1 (default: Numba's threads, at
    most 2 here); repeats: interleaved rounds; iterations: per shape, the
    iterations of one timing sample (default :data:`ITERATIONS`). Returns
    :class:`TrainBench`; ``ms_per_iteration`` is the median over rounds and
    ``speedup`` the median per-round ratio of the autograd step's time to
    this row's.
    """
    tmax = int(threads or numba.config.NUMBA_NUM_THREADS)
    if not 1 <= tmax <= numba.config.NUMBA_NUM_THREADS:
        raise ValueError(f"threads must be in 1..{numba.config.NUMBA_NUM_THREADS}, got {threads}")
    bad = [s for s in shapes if s not in SHAPES]
    if bad:
        raise ValueError(f"unknown shape(s) {bad}; known: {sorted(SHAPES)}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    its = dict(ITERATIONS, **(iterations or {}))
    counts = sorted({1, tmax})
    rows = []
    for shape in shapes:
        for m in bits:
            floors = {t: _floors(SHAPES[shape][0] + SHAPES[shape][1], m, 400, t, repeats)
                      for t in counts}
            for method in methods:
                if log:
                    log(f"train bench: {shape}, {m} bits, {method}")
                fns = {("autograd", 1): _timed(_trainer(SHAPES[shape], m, method, "autograd", 1,
                                                        seed), its[shape], 1)}
                for t in counts:
                    fns[("fused", t)] = _timed(_trainer(SHAPES[shape], m, method, "fused", t, seed),
                                               its[shape], t)
                times, _ = interleaved({f"{s}-{t}": f for (s, t), f in fns.items()}, repeats, seed)
                ref = times["autograd-1"]
                for (s, t) in fns:
                    sec = times[f"{s}-{t}"] / its[shape]
                    ms = 1e3 * float(np.median(sec))
                    fl = floors[t]
                    rows.append({"shape": shape, "rows": SHAPES[shape][0] + SHAPES[shape][1],
                                 "bits": m, "method": method, "step": s, "threads": t,
                                 "ms_per_iteration": ms, "ms_best": 1e3 * float(sec.min()),
                                 "speedup": float(np.median(ref / times[f"{s}-{t}"])),
                                 **fl, "over_limit": ms / fl["limit_ms"]})
    info = {"machine": machine_info(), "repeats": repeats, "iterations": its, "seed": seed,
            "batch_size": 400}
    return TrainBench(rows, info)


def report(res: TrainBench) -> str:
    """The benchmark as a plain-text table."""
    df = res.table()
    cols = ["shape", "bits", "method", "step", "threads", "ms_per_iteration", "speedup",
            "limit_ms", "over_limit", "traffic_ms", "arithmetic_ms", "adam_pass_ms",
            "subnormal_ms", "flushed_ms", "bandwidth_gbs"]
    return df[cols].to_string(index=False, float_format=lambda x: f"{x:.3f}")
