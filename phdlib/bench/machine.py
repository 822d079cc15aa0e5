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


#: Where Linux describes the CPU (:func:`cpu_model`).
CPUINFO = Path("/proc/cpuinfo")


def cpu_model(cpuinfo: str | None = None) -> str:
    """This machine's CPU as records name it: the model name of the first processor in
    ``/proc/cpuinfo`` (or the text ``cpuinfo``) with its family and model numbers where
    the file gives them, e.g. ``"Intel(R) Xeon(R) Processor (family 6, model 207)"``;
    a virtual machine's model name can be as generic as that, and the numbers still tell
    one CPU from another. Without the file, the platform's processor name."""
    if cpuinfo is None:
        try:
            cpuinfo = CPUINFO.read_text()
        except OSError:
            cpuinfo = ""
    fields = {}
    for line in cpuinfo.splitlines():
        if not line.strip():   # the first processor's block ends here
            if fields:
                break
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name") or platform.processor() or platform.machine() or "unknown"
    numbers = [f"{label} {fields[key]}" for key, label in (("cpu family", "family"),
                                                           ("model", "model"))
               if fields.get(key)]
    return name + (f" ({', '.join(numbers)})" if numbers else "")


def machine_info() -> dict:
    """CPU, cores, memory and library versions of this machine."""
    cpu = cpu_model()
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
