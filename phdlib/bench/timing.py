"""Interleaved timing on a shared machine: loop counts, rounds, paired ratios."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np


def _loops_for(fn: Callable, min_seconds: float) -> int:
    """Calls per timing sample so that one sample lasts at least ``min_seconds``."""
    dt = np.inf
    for _ in range(3):  # the fastest of three calls: one slow call must not decide
        t0 = time.perf_counter()
        fn()
        dt = min(dt, time.perf_counter() - t0)
        if dt >= min_seconds:
            return 1
    return max(1, int(np.ceil(min_seconds / max(dt, 1e-7))))


def interleaved(fns: dict[str, Callable], repeats: int, seed: int = 0, min_seconds: float = 0.0,
                progress=None, alternate: bool = False
                ) -> tuple[dict[str, np.ndarray], dict[str, object]]:
    """Time every function once per round, rounds in a fresh random order.

    Returns per-method arrays of seconds per call (``repeats`` values) and the
    value each returned (checked equal across rounds). One untimed warm-up
    call each. Calls are repeated within a sample when one call is shorter
    than ``min_seconds``. ``alternate``: instead of random orders, round ``r``
    runs the methods in their order rotated by ``r`` (for two methods,
    A-B, B-A, A-B, ...: a position effect cancels out).
    """
    rng = np.random.default_rng(seed)
    names = list(fns)
    values = {nm: fns[nm]() for nm in names}  # warm-up (and compile)
    loops = {nm: _loops_for(fns[nm], min_seconds) if min_seconds else 1 for nm in names}
    times = {nm: np.empty(repeats) for nm in names}
    it = range(repeats)
    if progress is not None:
        it = progress(it)
    for r in it:
        order = (np.roll(np.arange(len(names)), -r) if alternate
                 else rng.permutation(len(names)))
        for j in order:
            nm = names[j]
            fn, lp = fns[nm], loops[nm]
            t0 = time.perf_counter()
            for _ in range(lp):
                v = fn()
            times[nm][r] = (time.perf_counter() - t0) / lp
            if not _same(v, values[nm]):
                raise RuntimeError(f"benchmark method {nm!r} returned {v!r}, earlier {values[nm]!r}")
    return times, values


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return all(np.array_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b or abs(a - b) <= 1e-6 * max(abs(a), abs(b))
    return a == b


def paired_ratio(num: np.ndarray, den: np.ndarray) -> dict:
    """Median and quartiles of per-round ratios ``num[r] / den[r]``."""
    r = np.asarray(num) / np.asarray(den)
    return {"median": float(np.median(r)), "q25": float(np.quantile(r, 0.25)),
            "q75": float(np.quantile(r, 0.75)), "rounds": int(r.size)}
