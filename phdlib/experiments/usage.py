"""What this process spends: wall time, CPU time and peak resident memory.

:func:`usage_start` and :func:`usage_since` bracket a stretch of work in the
process that runs it (a cell of a grid, a task on a Dask worker);
:func:`peak_rss_mb` and :func:`cpu_seconds` read the process's totals so far
(what :func:`phdlib.studies.scale.measure` reads after each stage of a cell, so a
stage's peak there is the cell process's peak up to that stage);
:class:`TreeMemory` samples what a process and all its descendants hold at
once (a book build's kernels and their workers). Units: seconds and MB
(2**20 bytes).
"""
from __future__ import annotations

import os
import resource
import socket
import sys
import time
from pathlib import Path


def peak_rss_mb() -> float:
    """This process's peak resident set so far (MB)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024.0 if sys.platform != "darwin" else r / 2**20


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (seconds, all its threads)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _vm_hwm_mb() -> float | None:
    """Linux: the peak resident set of this process's memory since it was last reset (MB)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return None


def usage_start(reset: bool = True) -> dict:
    """Start measuring what this process spends from now (:func:`usage_since`).

    With ``reset``, where Linux allows (``/proc/self/clear_refs``), the
    process's peak resident set is reset to its current size, so the peak
    read later is this stretch's own; otherwise (a process that runs other
    work at the same time, or whose own peak must stay whole) it is the
    process's peak since it began,
    which for a pool worker includes the cells it ran before and, for a
    process started by vfork and exec (loky's workers), its parent's peak.
    The reset may also lower what ``getrusage`` reports as this process's own
    peak afterwards (:func:`peak_rss_mb`), which is why grids call this in
    the process that runs a cell, not around one.
    """
    done = False
    if reset:
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")  # 5: reset the peak resident set ("high water mark") only
            done = _vm_hwm_mb() is not None
        except OSError:
            pass
    return {"t0": time.perf_counter(), "c0": cpu_seconds(), "reset": done}


def usage_since(start: dict) -> dict:
    """What this process spent since :func:`usage_start` returned ``start``:
    ``seconds`` (wall), ``cpu_seconds`` (user + system, all its threads),
    ``peak_rss_mb`` (MB) and ``peak_rss``, which says what that peak is:
    ``"since start"`` (this stretch's own) or ``"process"`` (the process's
    peak since it began: an upper bound), with ``host`` and ``pid``. A
    process running several stretches at once (a Dask worker's threads)
    reports their CPU time and peak together."""
    peak = _vm_hwm_mb() if start["reset"] else None
    kind = "since start"
    if peak is None:
        peak, kind = peak_rss_mb(), "process"
    return {"seconds": time.perf_counter() - start["t0"],
            "cpu_seconds": cpu_seconds() - start["c0"], "peak_rss_mb": peak, "peak_rss": kind,
            "host": socket.gethostname(), "pid": os.getpid()}


class TreeMemory:
    """The resident memory of this process and all its descendants together, sampled.

    Used as a context manager: while the block runs, a thread sums the resident
    set of the process tree (this process, its children and theirs: a book
    build's kernels and their workers) every ``interval`` seconds. After it,
    ``peak_total_mb`` is the largest sum seen, ``peak_process_mb`` the largest
    single process, ``peaks`` each process's largest (by pid), ``samples`` how
    many sums were taken (MB: 2**20 bytes).
    A sample is a snapshot: a peak shorter than the interval can fall between
    two, so both peaks are lower bounds of the true ones.

    Each sample also adds up the CPU time the whole machine was busy since the
    one before, and what of it the tree's processes used (their user and system
    time): ``machine_cpu_seconds`` and ``tree_cpu_seconds``. Their difference,
    ``other_cpu_seconds``, is the other work that shared the machine meanwhile
    (other users' jobs, a test run): an estimate, which also counts what a
    process of the tree did after the last sample it was seen in (one that ends
    within an interval of its start: all of it). The sum counts
    pages that several processes share (a forked worker's inherited arrays,
    one memory-mapped file) once in each, so the total can exceed what the
    tree holds in physical memory.
    """

    def __init__(self, interval: float = 1.0):
        if not interval > 0:
            raise ValueError(f"interval: seconds above 0; got {interval!r}")
        self.interval = float(interval)
        self.peak_total_mb = 0.0
        self.peak_process_mb = 0.0
        self.samples = 0
        self.peaks: dict[int, float] = {}
        self.machine_cpu_seconds = 0.0
        self.tree_cpu_seconds = 0.0
        self._busy = None
        self._cpu: dict[int, float] = {}
        self._stop = None
        self._thread = None

    def sample(self) -> float:
        """Take one sample now; returns the tree's total resident set (MB)."""
        import psutil

        me = psutil.Process()
        total = largest = 0
        try:
            procs = [me] + me.children(recursive=True)
        except psutil.Error:  # (this process is always readable; a child may be gone)
            procs = [me]
        cpu: dict[int, float] = {}
        for p in procs:
            try:
                rss = p.memory_info().rss
                t = p.cpu_times()
            except psutil.Error:  # ended between the listing and the read
                continue
            cpu[p.pid] = t.user + t.system
            total += rss
            largest = max(largest, rss)
            self.peaks[p.pid] = max(self.peaks.get(p.pid, 0.0), rss / 2**20)
        self._count_cpu(psutil.cpu_times(), cpu)
        self.samples += 1
        self.peak_total_mb = max(self.peak_total_mb, total / 2**20)
        self.peak_process_mb = max(self.peak_process_mb, largest / 2**20)
        return total / 2**20

    def _count_cpu(self, machine, cpu: dict) -> None:
        """Add the machine's busy CPU seconds since the last sample, and the tree's (a
        process new since then counts from its start: it started after the block did)."""
        busy = machine.user + machine.nice + machine.system + getattr(machine, "irq", 0.0) \
            + getattr(machine, "softirq", 0.0) + getattr(machine, "steal", 0.0)
        if self._busy is not None:
            self.machine_cpu_seconds += max(0.0, busy - self._busy)
            self.tree_cpu_seconds += sum(max(0.0, t - self._cpu.get(pid, 0.0))
                                         for pid, t in cpu.items())
        self._busy, self._cpu = busy, cpu

    @property
    def other_cpu_seconds(self) -> float:
        """CPU seconds of other work on the machine while the block ran (an estimate)."""
        return max(0.0, self.machine_cpu_seconds - self.tree_cpu_seconds)

    def __enter__(self) -> "TreeMemory":
        import threading

        self._stop = threading.Event()
        self.sample()

        def run():
            while not self._stop.wait(self.interval):
                self.sample()

        self._thread = threading.Thread(target=run, daemon=True, name="tree-memory")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()
