"""This machine: its description, thread settings and measured read bandwidth."""
from __future__ import annotations

import os
import platform
from contextlib import contextmanager
from pathlib import Path

import numba
import numpy as np


def load_average() -> list | None:
    """The 1, 5 and 15 minute load averages, where the OS reports them."""
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def _cpu_name() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return cpu


def machine_info() -> dict:
    """CPU, cores, memory and library versions of this machine."""
    cpu = _cpu_name()
    mem = None
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        pass
    import llvmlite.binding as ll

    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet
        layer = numba.config.THREADING_LAYER
    info = {"cpu": cpu, "llvm_cpu": ll.get_host_cpu_name(), "cores": os.cpu_count(),
            "memory_bytes": mem, "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__,
            "numba_threading_layer": layer,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "load_average": load_average()}
    try:
        import faiss

        info["faiss"] = faiss.__version__
    except ImportError:
        info["faiss"] = None
    return info


def set_threads(t: int) -> None:
    """Numba's thread count and faiss's OpenMP thread count (when installed)."""
    numba.set_num_threads(t)
    try:
        import faiss

        faiss.omp_set_num_threads(t)
    except ImportError:
        pass


@contextmanager
def limited_threads(t: int):
    """:func:`set_threads`, and BLAS / OpenMP pools capped at ``t`` (threadpoolctl) inside."""
    set_threads(t)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        threadpool_limits = None
    limit = threadpool_limits(limits=t) if threadpool_limits else None
    try:
        yield
    finally:
        if limit is not None:
            limit.unregister()


def read_bandwidth(times: dict, n_items: int, bytes_per_item: int, stat=np.median,
                   names=("read", "read_numpy")) -> float:
    """GB/s of the fastest read probe in ``times`` (seconds per call), by ``stat`` of rounds."""
    return max(n_items * bytes_per_item / stat(times[nm]) / 1e9 for nm in names if nm in times)
