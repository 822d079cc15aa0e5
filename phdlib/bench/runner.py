"""``run()``: one benchmark run, every stage on the same codes, every figure from it."""
from __future__ import annotations

import time

from .cloop import compile_c
from .config import BenchConfig
from .data import IP_DIM, Inputs, make_inputs, random_codes
from .machine import load_average, machine_info, set_threads
from .result import BenchResult, Measurements
from .stages import phd_forms_check, scan_table, sweep_stage
from .topk import batch_stage, topk_frame, topk_indexes, topk_stage


def run(n: int | None = None, threads: int | None = None, profile: str = "quick",
        repeats: int | None = None, seed: int = 0, sweep=None, n_topk: int | None = None,
        ip_n: int | None = None, ks=None, faiss_: bool = True, c_loop: bool = True,
        sweep_min_seconds: float = 0.02, topk_min_seconds: float | None = None,
        min_seconds: float | None = None, batch_queries: int = 64, batch_repeats: int = 7,
        log=print,
        progress: bool = False) -> BenchResult:
    """Run the whole benchmark; every figure comes from this one run.

    Parameters
    ----------
    n : codes for the throughput table (default: the profile's; full 1e8).
    threads : the multi-thread count (default: all of Numba's threads); every
        scan is measured with 1 thread and with ``threads``.
    profile : "full" or "quick" (see :data:`PROFILES`); explicit arguments win.
    repeats : interleaved rounds for the table and the top-k (>= 20 for the
        acceptance ratios).
    ip_n : float vectors for the inner product (64-dim float32, 256 bytes
        each); capped at ``n``. Compare inner products by time per vector.
    batch_queries, batch_repeats : the many-query comparison (tiled top-k
        against one query at a time and faiss) at ``n_topk``; 0 skips it.
    min_seconds, topk_min_seconds, sweep_min_seconds : in the table, the
        top-k and the sweep, a timing sample is the mean of as many
        back-to-back calls as last this long (the paper averaged 1,000 runs);
        a call longer than that is timed alone. Defaults: the profile's.

    The arguments become a :class:`BenchConfig` (:meth:`BenchConfig.from_profile`),
    measured by :func:`run_config`.
    """
    cfg = BenchConfig.from_profile(
        profile, threads=threads, seed=seed, sweep_min_seconds=sweep_min_seconds,
        batch_queries=batch_queries, batch_repeats=batch_repeats, faiss=faiss_, c_loop=c_loop,
        n=n, repeats=repeats, sweep=sweep, n_topk=n_topk, ip_n=ip_n, ks=ks,
        min_seconds=min_seconds, topk_min_seconds=topk_min_seconds)
    return run_config(cfg, log=log, progress=progress)


def run_config(cfg: BenchConfig, log=print, progress: bool = False) -> BenchResult:
    """Measure ``cfg``: the scan table, top-k, many queries, the sweep; in that order."""
    bar = _progress_bar() if progress else None
    acc = Measurements()
    load_start = load_average()
    log(f"bench: {cfg.n:,} random 64-bit codes, {cfg.ip_n:,} float32 {IP_DIM}-d vectors, "
        f"threads {list(cfg.threads)}, {cfg.repeats} rounds")
    inp = _prepare(cfg, acc, log)
    for t in cfg.threads:
        scan_table(cfg, inp, acc, t, log=log, bar=bar)
    phd_forms_check(inp, acc)
    idx = topk_indexes(cfg, inp)
    trows = []
    for t in cfg.threads:
        trows += topk_stage(cfg, inp, idx, acc, t, log=log, bar=bar)
    if cfg.batch_queries:
        Qb = random_codes(cfg.batch_queries, cfg.seed + 11)
        for t in cfg.threads:
            trows += batch_stage(cfg, Qb, idx, acc, t, log=log)
    topk = topk_frame(trows)
    sweep_df = sweep_stage(cfg, inp, log=log)
    set_threads(cfg.max_threads)

    machine = machine_info()
    machine["load_average_start"] = load_start
    config = cfg.to_dict()
    config["bandwidth_topk_gb_per_s"] = acc.bandwidth_topk
    return BenchResult(config=config, machine=machine, methods=acc.methods,
                       bandwidth=acc.bandwidth, bandwidth_min=acc.bandwidth_min,
                       ratios=acc.ratios, checks=acc.checks, sweep=sweep_df, topk=topk,
                       skipped=acc.skipped,
                       created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def _progress_bar():
    from tqdm import tqdm  # plain text bar: tqdm.auto warns without ipywidgets in notebooks

    return lambda it: tqdm(it, leave=False)


def _prepare(cfg: BenchConfig, acc: Measurements, log) -> Inputs:
    """The random inputs, the compiled C loop and faiss (what is missing goes to skipped)."""
    inp = make_inputs(cfg.n, cfg.ip_n, cfg.seed)
    if cfg.c_loop:
        inp.cl, why = compile_c()
        if inp.cl is None:
            log(f"bench: {why}")
            acc.skipped["c"] = why
    else:
        acc.skipped["c"] = "disabled by the caller"
    if cfg.faiss:
        try:
            import faiss

            inp.faiss = faiss
        except ImportError as exc:
            acc.skipped["faiss"] = f"faiss not importable ({exc}): faiss top-k skipped"
            log(f"bench: {acc.skipped['faiss']}")
    else:
        acc.skipped["faiss"] = "disabled by the caller"
    return inp
