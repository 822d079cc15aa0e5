"""The one ridge solver of the library: symmetric positive definite systems by Cholesky.

Used by the ALS half step of MF (:mod:`phdlib.kernels.mf`) and by the relaxed
row update of DCF/CCCF (:mod:`phdlib.kernels.dcf`).
"""
from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True)
def solve_spd(G, rhs):
    """Solve ``G x = rhs`` in place: ``rhs`` (d,) float64 receives ``x``.

    G: float64 (d, d), symmetric positive definite (a ridge system with
    ``lam > 0``); factored by LAPACK's Cholesky (``G = L L^T``, a
    ``LinAlgError`` when ``G`` is not positive definite), then forward and
    backward triangular solves.
    """
    d = G.shape[0]
    L = np.linalg.cholesky(G)
    for k in range(d):
        acc = rhs[k]
        for q in range(k):
            acc -= L[k, q] * rhs[q]
        rhs[k] = acc / L[k, k]
    for k in range(d - 1, -1, -1):
        acc = rhs[k]
        for q in range(k + 1, d):
            acc -= L[q, k] * rhs[q]
        rhs[k] = acc / L[k, k]
