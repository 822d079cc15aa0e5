"""What a run measured: :class:`Measurements` while it runs, :class:`BenchResult` after."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__
from ..io import write_json


@dataclass
class Measurements:
    """The figures the stages of one run fill in, in the order they measure them.

    methods: see :class:`BenchResult`; bandwidth, bandwidth_min,
    bandwidth_topk: {threads: GB/s}; ratios: name -> paired ratio summary;
    checks: name -> value; skipped: part -> why.
    """

    methods: dict = field(default_factory=dict)
    bandwidth: dict = field(default_factory=dict)
    bandwidth_min: dict = field(default_factory=dict)
    bandwidth_topk: dict = field(default_factory=dict)
    ratios: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)

    def record(self, name: str, nitems: int, bpi: int, t: int, secs, bw, bwmin) -> None:
        """Store method ``name``'s rounds at ``t`` threads (``nitems`` of ``bpi`` bytes each)."""
        m = self.methods.setdefault(name, {"n": nitems, "bytes_per_item": bpi, "threads": {}})
        med, best = float(np.median(secs)), float(np.min(secs))
        gbs = nitems * bpi / med / 1e9
        m["threads"][t] = {"seconds": med, "seconds_min": best,
                           "seconds_all": [float(s) for s in secs],
                           "items_per_s": nitems / med, "gb_per_s": gbs,
                           "pct_bandwidth": 100.0 * gbs / bw if bw else None,
                           "pct_bandwidth_min": (100.0 * nitems * bpi / best / 1e9 / bwmin
                                                 if bwmin else None)}


@dataclass
class BenchResult:
    """Everything one benchmark run measured.

    methods: name -> {"n", "bytes_per_item", "threads": {T: {"seconds" (median
    s per call), "seconds_all" (list), "items_per_s", "gb_per_s",
    "pct_bandwidth"}}}; bandwidth: {T: GB/s}; ratios: name -> paired ratio
    summary; sweep / topk: long tables (one row per method, N, threads, k).
    """

    config: dict
    machine: dict
    methods: dict
    bandwidth: dict
    bandwidth_min: dict
    ratios: dict
    checks: dict
    sweep: pd.DataFrame
    topk: pd.DataFrame
    skipped: dict = field(default_factory=dict)
    version: str = __version__
    created: str = ""

    def to_json(self) -> dict:
        """One object keyed by method name; run information under ``"_run"``."""
        out = {nm: m for nm, m in self.methods.items()}
        out["_run"] = {"config": self.config, "machine": self.machine,
                       "bandwidth_gb_per_s": self.bandwidth,
                       "bandwidth_gb_per_s_from_min": self.bandwidth_min, "ratios": self.ratios,
                       "checks": self.checks, "skipped": self.skipped, "version": self.version,
                       "created": self.created, "sweep": self.sweep.to_dict("records"),
                       "topk": self.topk.to_dict("records")}
        return out

    def save(self, path) -> Path:
        """Write :meth:`to_json` atomically (:func:`phdlib.io.write_json`)."""
        return write_json(path, self.to_json())

    def table(self, threads: int = 1) -> pd.DataFrame:
        """Throughput table at ``threads``: seconds, codes/s, GB/s, % of bandwidth.

    Medians (the figures the acceptance uses), and beside them the fastest
    round with the percentage of the bandwidth from the fastest read rounds
    (what the hardware does when no other job interferes).
    """
        rows = []
        for nm, m in self.methods.items():
            th = m["threads"].get(threads)
            if th is None:
                continue
            rows.append({"method": nm, "N": m["n"], "seconds": th["seconds"],
                         "items/s": th["items_per_s"], "GB/s": th["gb_per_s"],
                         "% of read bandwidth": th["pct_bandwidth"],
                         "seconds (min)": th["seconds_min"],
                         "% of read bandwidth (min)": th["pct_bandwidth_min"],
                         "s per 100M": th["seconds"] / m["n"] * 1e8})
        return pd.DataFrame(rows).set_index("method")

