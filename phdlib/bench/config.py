"""Profiles, acceptance targets and :class:`BenchConfig`, one run's settings."""
from __future__ import annotations

from dataclasses import dataclass

import numba

from .data import IP_DIM

PROFILES = {
    # n: codes for Table 2; sweep: the N of the log-log plot; n_topk: codes for
    # top-k; ip_n: float vectors (largest that fits); repeats: rounds;
    # min_seconds / topk_min_seconds: a timing sample is the mean of as many
    # back-to-back calls as last this long (one call when a call is longer);
    # pairs / pair_min_seconds: the same for the PHD / Hamming pairs.
    "full": dict(n=100_000_000, sweep=(10**5, 10**6, 10**7, 10**8), n_topk=10_000_000,
                 ip_n=20_000_000, repeats=25, sweep_repeats=9, ks=(1, 10, 100),
                 min_seconds=0.02, topk_min_seconds=0.05, pairs=61, pair_min_seconds=0.1),
    "quick": dict(n=10_000_000, sweep=(10**5, 10**6, 10**7), n_topk=10_000_000,
                  ip_n=1_000_000, repeats=11, sweep_repeats=3, ks=(1, 10, 100),
                  min_seconds=0.02, topk_min_seconds=0.02, pairs=41, pair_min_seconds=0.02),
}

ACCEPT = {"phd_ratio": (0.98, 1.02), "pct_bandwidth": 85.0, "topk_over_scan": 1.25,
          "faiss_speedup": 2.0, "min_rounds": 20}

# run() arguments that replace the profile's value when given (not None)
_OVERRIDABLE = ("n", "repeats", "sweep", "n_topk", "ip_n", "ks", "min_seconds",
                "topk_min_seconds")


@dataclass(frozen=True)
class BenchConfig:
    """Everything one run measures with: a profile with the caller's overrides applied.

    Sizes are already capped (``ip_n``, ``n_topk`` and the sweep at ``n``);
    ``threads`` are the thread counts measured (1 and the maximum).
    """

    profile: str
    n: int
    threads: tuple
    repeats: int
    seed: int
    sweep: tuple
    n_topk: int
    ip_n: int
    ks: tuple
    min_seconds: float
    topk_min_seconds: float
    sweep_min_seconds: float
    pairs: int
    pair_min_seconds: float
    sweep_repeats: int
    batch_queries: int
    batch_repeats: int
    faiss: bool = True
    c_loop: bool = True

    @property
    def max_threads(self) -> int:
        return self.threads[-1]

    @classmethod
    def from_profile(cls, profile: str = "quick", threads: int | None = None, seed: int = 0,
                     sweep_min_seconds: float = 0.02, batch_queries: int = 64,
                     batch_repeats: int = 7, faiss: bool = True, c_loop: bool = True,
                     **overrides) -> BenchConfig:
        """The profile's settings, ``overrides`` (see ``_OVERRIDABLE``) that are not None winning."""
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
        unknown = set(overrides) - set(_OVERRIDABLE)
        if unknown:
            raise TypeError(f"unknown benchmark settings: {sorted(unknown)}")
        p = dict(PROFILES[profile])
        p.update({k: v for k, v in overrides.items() if v is not None})
        n = int(p["n"])
        if n < 1:
            raise ValueError(f"n must be positive, got {n}")
        tmax = int(threads) if threads is not None else numba.config.NUMBA_NUM_THREADS
        if not 1 <= tmax <= numba.config.NUMBA_NUM_THREADS:
            raise ValueError(f"threads must be in 1..{numba.config.NUMBA_NUM_THREADS}, got {threads}")
        return cls(profile=profile, n=n, threads=tuple(sorted({1, tmax})),
                   repeats=int(p["repeats"]), seed=seed,
                   sweep=tuple(sorted(int(x) for x in p["sweep"] if int(x) <= n) or [n]),
                   n_topk=min(int(p["n_topk"]), n), ip_n=min(int(p["ip_n"]), n),
                   ks=tuple(int(k) for k in p["ks"]), min_seconds=float(p["min_seconds"]),
                   topk_min_seconds=float(p["topk_min_seconds"]),
                   sweep_min_seconds=sweep_min_seconds,
                   pairs=max(int(p["pairs"]), 2 * ACCEPT["min_rounds"] + 1),
                   pair_min_seconds=float(p["pair_min_seconds"]),
                   sweep_repeats=int(p["sweep_repeats"]), batch_queries=int(batch_queries),
                   batch_repeats=int(batch_repeats), faiss=faiss, c_loop=c_loop)

    def to_dict(self) -> dict:
        """The run's ``config`` as saved in the JSON result (keys in their saved order)."""
        return {"profile": self.profile, "n": self.n, "min_seconds": self.min_seconds,
                "pairs": self.pairs, "pair_min_seconds": self.pair_min_seconds,
                "topk_min_seconds": self.topk_min_seconds,
                "sweep_min_seconds": self.sweep_min_seconds, "threads": list(self.threads),
                "repeats": self.repeats, "seed": self.seed, "sweep": list(self.sweep),
                "n_topk": self.n_topk, "ip_n": self.ip_n, "ks": list(self.ks),
                "sweep_repeats": self.sweep_repeats, "code_bits": 64, "ip_dim": IP_DIM,
                "batch_queries": self.batch_queries, "batch_repeats": self.batch_repeats}
