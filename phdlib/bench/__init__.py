"""The runtime benchmark behind ``phd bench`` and the *Runtime* chapter.

It re-measures the paper's Table 2 (Section 5.5.2): ``N`` random 64-bit codes
in memory, one query, the distance of the query to every code. Unlike the
released ``runTime.c`` (see the chapter), every distance is *consumed*: the
scans return the sum of all distances (a checksum the compiler cannot drop,
checked equal across implementations), codes carry 64 random bits, and time
is wall-clock (``time.perf_counter``), the median over repeats.

Methods (keys of :attr:`BenchResult.methods`):

=====================  ==========================================================
``read``               memory read probe: Numba sum of the code words (bandwidth)
``read_numpy``         the same with ``ndarray.sum`` (one thread)
``hamming``            Numba scan, ``popcount(q XOR c)``
``phd``                Numba scan on stored NOT codes, ``popcount(q AND ~i)``
``phd_xor_and``        Numba scan, PHD in the defining form ``q XOR (q AND i)``
``hamming_c``          the paper's C loop, ``-O3 -march=native``, result summed
``phd_c``              the same for PHD on stored NOT codes
``hamming_c_overwrite`` the C loop with its result overwritten, as released
``hamming_numpy``      ``np.bitwise_count(codes ^ q).sum()``
``ip_numba``           64-dim float32 inner products, Numba loop, scores summed
``ip_blas``            the same with NumPy's BLAS (``X @ q``), scores summed
``topk{k}``            fused top-k (Hamming), :class:`phdlib.serving.search.BinaryIndex`
``topk{k}_phd``        fused top-k (PHD)
``faiss_topk{k}``      faiss ``IndexBinaryFlat`` top-k (Hamming)
=====================  ==========================================================

Timings on a shared machine are noisy, so methods are *interleaved*: each
round runs every method once, in a fresh random order, and ratios are the
median of the per-round ratios. The PHD / Hamming ratio, the paper's claim,
is also measured on its own, Hamming and PHD called back to back in at least
41 pairs, in alternating order. Bandwidth and every percentage come from the same run.

Modules: :mod:`~phdlib.bench.config` (profiles, acceptance targets,
:class:`BenchConfig`), :mod:`~phdlib.bench.data` (random codes and vectors),
:mod:`~phdlib.bench.machine` (machine information, threads, read bandwidth),
:mod:`~phdlib.bench.timing` (interleaved rounds, paired ratios),
:mod:`~phdlib.bench.cloop` (the C loop), :mod:`~phdlib.bench.stages` (the
scan table and the sweep), :mod:`~phdlib.bench.topk` (top-k, one query and
many), :mod:`~phdlib.bench.runner` (:func:`run`), :mod:`~phdlib.bench.result`
(:class:`BenchResult`) and :mod:`~phdlib.bench.tables` (tables and report).
Beside the runtime benchmark, imported only when used: :mod:`~phdlib.bench.train`
(a VH training step against its memory-traffic floors), :mod:`~phdlib.bench.serving`
(recall and QPS of the serving engines), :mod:`~phdlib.bench.dcd` (a DCF_PHD sweep
against a DCF sweep) and :mod:`~phdlib.bench.autograd` (the differentiable PHD score
against Hamming's, on CPU or CUDA).
"""
from .cloop import C_SOURCE, CLoop, compile_c, find_compiler
from .config import ACCEPT, PROFILES, BenchConfig
from .data import CODE_BYTES, IP_BYTES, IP_DIM, random_codes, random_vectors
from .machine import machine_info, set_threads
from .result import BenchResult, Measurements
from .runner import run, run_config
from .tables import acceptance, batch_table, report, table2, topk_table
from .timing import interleaved, paired_ratio

__all__ = [
    "ACCEPT", "BenchConfig", "BenchResult", "CLoop", "CODE_BYTES", "C_SOURCE", "IP_BYTES",
    "IP_DIM", "Measurements", "PROFILES", "acceptance", "batch_table", "compile_c",
    "find_compiler", "interleaved", "machine_info", "paired_ratio", "random_codes",
    "random_vectors", "report", "run", "run_config", "set_threads", "table2", "topk_table",
]
