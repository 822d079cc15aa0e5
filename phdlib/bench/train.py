"""The training benchmark (``phd bench --train``): VH / VH_PHD steps beside their limits.

One training step of the variational hashing model is tiny arithmetic on a
batch (``B x m`` bits) and an Adam update of the embeddings. Four ways to run
it are timed, interleaved round by round, on synthetic ratings of each shape
(batch order, noise and sampling included):

- ``autograd``: PyTorch's autograd and fused Adam, the reference (1 thread);
- ``dense``: the fused step (:mod:`phdlib.methods.vh_step`) with the dense
  Adam pass over every row, every step (the paper's semantics);
- ``exact``: the fused step updating the touched rows and bringing every
  other row up to date when it is next read (:mod:`phdlib.kernels.adam_replay`):
  the same parameters as ``dense``, bit for bit;
- ``auto``: the fused step as training runs it, each table dense or exact
  sparse by its size (:data:`phdlib.methods.vh_config.SPARSE_GAP`);
- ``lazy``: lazy Adam, only the touched rows, ever (another optimiser).

Each design has its own limit, measured in the same run on this machine:

- **dense**: every float32 parameter and its two moments are read and
  written once per step, so a step cannot beat the larger of the
  *memory-traffic floor* (the bytes the step must move, timed with
  :func:`phdlib.kernels.adam.traffic_probe`: three float32 arrays of the
  parameters' shape read and rewritten once, with the Adam pass's loops and
  threads but little arithmetic) and the *arithmetic floor* (the Adam pass on
  a block of rows small enough to stay in the L1 cache, scaled to every row);
- **exact**: the bytes of the touched rows, plus the arithmetic of the steps
  the untouched rows missed, counted in the timed steps themselves: the
  row-steps replayed in full (until a row's parameters settle; a step of
  part of a row counts as that part) at the arithmetic floor per row, and
  the others (moments only) at the floor of
  :func:`phdlib.kernels.adam_replay.decay_probe`;
- **lazy**: the bytes and the arithmetic of the touched rows;
- **auto**: the dense limit for the share of rows in densely updated tables,
  plus the exact step's for the others.

``adam_pass_ms`` is the dense Adam pass of the fused step alone on arrays of
the shape (no gradient rows). ``subnormal_ms`` and ``flushed_ms`` are the
same pass when a fraction :data:`SUBNORMAL_ROWS` of the rows has subnormal
first moments (rows a long run leaves untouched for ~800 steps: 15% of the
users at the ML-10M shape), computed as they are and flushed to zero
(:mod:`phdlib.kernels.fpenv`, what training does), side by side in the same
rounds. The shapes (:data:`SHAPES`): ML-1M's 6,040 users and 3,260 items,
ML-10M's 69,878 + 9,708 and Amazon's 158,650 + 128,939 = 287,589 rows; the
methods: VH (Hamming, deterministic training) and VH_PHD (PHD, stochastic
training), their single-point configurations.
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
from ..kernels import adam_replay as R
from ..kernels import fpenv

#: (users, items, ratings) of the benchmark's shapes, from the one declaration of
#: the paper's sizes (:func:`phdlib.paper.dataset_shape`): ML-1M's users and items
#: after filtering with the raw file's ratings (``SOURCES["ml-1m"].raw_rows``), and
#: the paper's Amazon set (Section 5.1).
SHAPES = {"ml-1m": dataset_shape("ml-1m")[:2] + (SOURCES["ml-1m"].raw_rows,),
          "ml-10m": dataset_shape("ml-10m"), "amazon": dataset_shape("amazon")}
#: Iterations per timing sample, per shape. Each sample ends as a validation interval
#: does, with every row brought up to date (the exact step's deferred work included).
ITERATIONS = {"ml-1m": 750, "ml-10m": 250, "amazon": 250}
METHODS = ("vh", "vh-phd")
#: The fused steps are timed from this Adam step on (:meth:`FusedStep.start_at
#: <phdlib.methods.vh_step.FusedStep.start_at>`): the bias corrections of a run past VH's
#: earliest stop (20,000 iterations), where most of its steps are; the autograd step's
#: cost does not depend on the step.
START_STEP = 20_000
#: The ``format`` of a file written by ``phd bench --train --out`` (read by :func:`load`).
FORMAT = "phd-train-steps"
#: The columns every row of such a file holds (:func:`load` checks them).
ROW_KEYS = ("shape", "rows", "bits", "method", "step", "threads", "ms_per_iteration",
            "vs_dense", "limit_ms", "over_limit", "full_rows_per_step", "touched_rows_per_step")
#: The steps timed (see the module docstring), in the order of the table.
STEPS = ("autograd", "dense", "exact", "auto", "lazy")
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
    """A :class:`phdlib.methods.vh._Trainer` of ``method`` on synthetic ratings of
    ``shape``, running step ``step`` (:data:`STEPS`) on ``threads`` threads."""
    from ..methods.vh_model import torch_threads

    n_users, n_items, n = shape
    rng = np.random.default_rng(seed)
    train = SimpleNamespace(user=rng.integers(0, n_users, n), item=rng.integers(0, n_items, n),
                            rating=rng.integers(1, 6, n).astype(np.float32))
    cfg = vh.default_config(methods.get(method).ranks_by)
    kind, rows = ("autograd", "all") if step == "autograd" else \
        ("fused", {"dense": "all", "exact": "touched", "auto": "auto", "lazy": "touched"}[step])
    if step == "lazy":
        cfg["adam"] = "lazy"
    with torch_threads(threads):
        tr = vh._Trainer(train, n_users, n_items, bits, (1, 5), cfg, seed, kind, threads,
                         rows=rows)
    if kind == "fused":
        tr.step.start_at(START_STEP)
    return tr


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


def _replayed(tr) -> tuple[float, float]:
    """Row-steps the trainer's exact step replayed so far, per step: in full, moments only
    (the replayed steps not computed in full: a lower bound, since a row whose moving
    elements were gathered also decays all its moments; see
    :func:`phdlib.kernels.adam_replay._replay`)."""
    params = getattr(tr.step, "params", [])
    full = sum(st.full for st in params)
    missed = sum(st.missed for st in params)
    steps = max(tr.it, 1)   # the trainer's own steps (start_at does not count)
    return full / steps, (missed - full) / steps


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
    dm = np.full((blk, bits), 1e-3, np.float32)
    dv = np.full((blk, bits), 1e-6, np.float32)
    decay_steps = 4096
    with fpenv.flush_denormals(True):   # as training runs: a decayed moment flushes to zero
        R.decay_probe(dm.copy(), dv.copy(), 8, consts[0], consts[1], consts[2])
    mem, arith, dense, slow, fast, decay = [], [], [], [], [], []
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
        dm[:], dv[:] = 1e-3, 1e-6
        with fpenv.flush_denormals(True):
            t4 = time.perf_counter()
            R.decay_probe(dm, dv, decay_steps, consts[0], consts[1], consts[2])
            decay.append((time.perf_counter() - t4) / (blk * decay_steps))
    dense_bytes = 6 * 4 * n                 # p, m, v: read and written once
    batch_bytes = 12 * 4 * batch * bits     # rows gathered, probabilities, thresholds, gradients
    bandwidth = dense_bytes / np.median(mem)
    traffic_ms = 1e3 * (dense_bytes + batch_bytes) / bandwidth
    arith_ms = 1e3 * float(np.median(arith)) / threads
    return {"bytes_per_step": dense_bytes + batch_bytes, "bandwidth_gbs": bandwidth / 1e9,
            "batch_bytes": batch_bytes, "row_bytes": 6 * 4 * bits,
            "arith_ns_per_row": 1e9 * float(np.median(arith)) / rows,
            "decay_ns_per_row": 1e9 * float(np.median(decay)),
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


def _tables(tr, n_rows: int) -> tuple[float, float]:
    """``(dense_share, touched)``: the share of the rows in tables the trainer's step
    updates with the dense pass, and the rows of the other tables its last batch touched."""
    params = getattr(tr.step, "params", None)
    if params is None:   # the autograd step: PyTorch's dense Adam
        return 1.0, 0.0
    dense = sum(st.p.shape[0] for st in params[:2] if st.mode == "all")
    touched = sum(len(np.unique(rows)) for st, rows in zip(params[:2], (tr.step.users,
                                                                       tr.step.items))
                  if st.mode != "all")
    return dense / n_rows, float(touched)


def _limit(fl: dict, dense_share: float, touched_rows: float, full: float, moments: float,
           threads: int) -> dict:
    """The limit of one step's design (ms; see the module docstring), from the floors
    ``fl`` of :func:`_floors`: the dense pass's limit for the share of rows updated
    densely, plus, for the tables updated sparsely, the bytes of the rows a step touches
    and the arithmetic of those rows and of the row-steps replayed (in full, moments only;
    per step)."""
    traffic = 1e3 * (touched_rows * fl["row_bytes"] + fl["batch_bytes"]) / (
        1e9 * fl["bandwidth_gbs"]) if touched_rows else 0.0
    arith = (1e-6 * (touched_rows + full) * fl["arith_ns_per_row"]
             + 1e-6 * moments * fl["decay_ns_per_row"]) / threads
    traffic += dense_share * fl["traffic_ms"]
    arith += dense_share * fl["arithmetic_ms"]
    if touched_rows == 0:   # all dense: the larger floor, as before
        return {"limit_ms": fl["limit_ms"], "limit_traffic_ms": fl["traffic_ms"],
                "limit_arithmetic_ms": fl["arithmetic_ms"]}
    return {"limit_ms": traffic + arith, "limit_traffic_ms": traffic,
            "limit_arithmetic_ms": arith}


def run(shapes=("ml-1m", "amazon"), bits=(32, 64), methods=METHODS, threads: int | None = None,
        repeats: int = 5, iterations: dict | None = None, seed: int = 0, steps=STEPS,
        log=None) -> TrainBench:
    """Milliseconds per VH training iteration of each step (:data:`STEPS`), beside its limit.

    threads: the thread count measured beside 1 for the dense, exact and auto steps
    (default: Numba's threads, at most 2 here; autograd and lazy run on 1);
    repeats: interleaved rounds; iterations: per shape, the iterations of one
    timing sample (default :data:`ITERATIONS`); steps: which of
    :data:`STEPS` to time (``dense`` always). Returns :class:`TrainBench`;
    ``ms_per_iteration`` is the median over rounds, ``vs_dense`` the median
    per-round ratio of the dense step's time (same threads) to this row's, and
    ``speedup`` the same against the autograd step (when timed).
    """
    tmax = int(threads or numba.config.NUMBA_NUM_THREADS)
    if not 1 <= tmax <= numba.config.NUMBA_NUM_THREADS:
        raise ValueError(f"threads must be in 1..{numba.config.NUMBA_NUM_THREADS}, got {threads}")
    bad = [s for s in shapes if s not in SHAPES]
    if bad:
        raise ValueError(f"unknown shape(s) {bad}; known: {sorted(SHAPES)}")
    bad = [s for s in steps if s not in STEPS]
    if bad:
        raise ValueError(f"unknown step(s) {bad}; known: {list(STEPS)}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    its = dict(ITERATIONS, **(iterations or {}))
    counts = sorted({1, tmax})
    variants = [(s, t) for s in STEPS if s in steps or s == "dense"
                for t in (counts if s in ("dense", "exact", "auto") else [1])]
    rows = []
    for shape in shapes:
        n_rows = SHAPES[shape][0] + SHAPES[shape][1]
        for m in bits:
            floors = {t: _floors(n_rows, m, 400, t, repeats) for t in counts}
            for method in methods:
                if log:
                    log(f"train bench: {shape}, {m} bits, {method}")
                trainers = {(s, t): _trainer(SHAPES[shape], m, method, s, t, seed)
                            for s, t in variants}
                fns = {f"{s}-{t}": _timed(tr, its[shape], t) for (s, t), tr in trainers.items()}
                times, _ = interleaved(fns, repeats, seed)
                for (s, t), tr in trainers.items():
                    sec = times[f"{s}-{t}"] / its[shape]
                    ms = 1e3 * float(np.median(sec))
                    full, moments = _replayed(tr)
                    share, touched = _tables(tr, n_rows)
                    lim = _limit(floors[t], share, touched, full, moments, t)
                    ref = times.get("autograd-1")
                    rows.append({
                        "shape": shape, "rows": n_rows, "bits": m, "method": method,
                        "step": s, "threads": t, "ms_per_iteration": ms,
                        "ms_best": 1e3 * float(sec.min()),
                        "vs_dense": float(np.median(times[f"dense-{t}"] / times[f"{s}-{t}"])),
                        "speedup": (float(np.median(ref / times[f"{s}-{t}"]))
                                    if ref is not None else float("nan")),
                        "full_rows_per_step": full, "moment_rows_per_step": moments,
                        "touched_rows_per_step": touched, "dense_share": share,
                        **floors[t], **lim, "over_limit": ms / lim["limit_ms"]})
    info = {"machine": machine_info(), "repeats": repeats, "iterations": its, "seed": seed,
            "batch_size": 400, "steps": [s for s in STEPS if s in steps or s == "dense"]}
    return TrainBench(rows, info)


def load(path) -> dict:
    """A benchmark written by ``phd bench --train --out``: ``{"provenance", "rows", "run"}``.

    ``ValueError`` naming the file and what is wrong when it is not such a file.
    """
    import json
    from pathlib import Path

    import pandas as pd

    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable training benchmark ({exc})") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise ValueError(f"{path}: not written by phd bench --train --out (format {FORMAT!r})")
    rows = obj.get("rows")
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"{path}: field 'rows' must be a non-empty list of rows")
    seen = {}
    for i, r in enumerate(rows):
        missing = [k for k in ROW_KEYS if not isinstance(r, dict) or k not in r]
        if missing:
            raise ValueError(f"{path}: row {i} lacks {missing}")
        if r["step"] not in STEPS or r["shape"] not in SHAPES:
            raise ValueError(f"{path}: row {i}: step {r['step']!r} or shape {r['shape']!r} "
                             f"is not one of {list(STEPS)} / {sorted(SHAPES)}")
        key = tuple(r[k] for k in ("shape", "bits", "method", "step", "threads"))
        if key in seen:
            raise ValueError(f"{path}: row {i} repeats row {seen[key]} (shape {key[0]!r}, "
                             f"{key[1]} bits, method {key[2]!r}, step {key[3]!r}, threads "
                             f"{key[4]}): each is timed once")
        seen[key] = i
    return {"provenance": obj.get("provenance", {}), "rows": pd.DataFrame(rows),
            "run": obj.get("_run", {})}


def report(res: TrainBench) -> str:
    """The benchmark as a plain-text table."""
    df = res.table()
    cols = ["shape", "bits", "method", "step", "threads", "ms_per_iteration", "vs_dense",
            "speedup", "limit_ms", "over_limit", "limit_traffic_ms", "limit_arithmetic_ms",
            "full_rows_per_step", "adam_pass_ms", "subnormal_ms", "flushed_ms",
            "bandwidth_gbs"]
    return df[cols].to_string(index=False, float_format=lambda x: f"{x:.3f}")
