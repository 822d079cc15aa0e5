"""The benchmark's inputs: random 64-bit codes and float32 vectors."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CODE_BYTES = 8          # one 64-bit code
IP_DIM = 64             # float32 dimensions of the inner-product baseline
IP_BYTES = IP_DIM * 4   # bytes read per float vector


def random_codes(n: int, seed: int = 0) -> np.ndarray:
    """``n`` codes of 64 random bits: uint64 (n, 1)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, np.iinfo(np.uint64).max, size=(n, 1), dtype=np.uint64, endpoint=True)


def random_vectors(n: int, seed: int = 0, dim: int = IP_DIM) -> np.ndarray:
    """``n`` float32 vectors (n, dim), standard normal."""
    rng = np.random.default_rng(seed + 1)
    return rng.standard_normal(size=(n, dim), dtype=np.float32)


@dataclass
class Inputs:
    """One run's data and the optional engines measured on it.

    One array serves every scan. Random codes are random whether read as
    plain codes (Hamming, PHD in the XOR-AND form) or as the stored NOT of
    other random codes (PHD, ``popcount(q AND stored)``), and on one array a
    difference in time is the operation's, not the memory's: two arrays of
    the same size can differ by a few percent in scan speed, depending on how
    the OS backs each with pages.
    """

    codes: np.ndarray    # uint64 (n, 1)
    q: np.ndarray        # the query code, uint64 (1,)
    X: np.ndarray        # float32 (ip_n, IP_DIM)
    xq: np.ndarray       # the query vector, float32 (IP_DIM,)
    cl: object = None    # the compiled C loop (:class:`~phdlib.bench.cloop.CLoop`), or None
    faiss: object = None  # the faiss module, or None

    @property
    def q0(self) -> int:
        """The query code as one Python int (what the C loop takes)."""
        return int(self.q[0])


def make_inputs(n: int, ip_n: int, seed: int) -> Inputs:
    """``n`` random codes, ``ip_n`` random vectors and a query of each, from ``seed``."""
    return Inputs(codes=random_codes(n, seed), q=random_codes(1, seed + 7)[0],
                  X=random_vectors(ip_n, seed), xq=random_vectors(1, seed + 7)[0])
