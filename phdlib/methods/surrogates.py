"""The real surrogates of the codes' balance and decorrelation constraints, in closed form.

DCF (Zhang et al., SIGIR 2016) relaxes "every bit is balanced over the users
and the bits are uncorrelated" into a real ``X`` (n, r), zero-mean per column
and with ``X^T X = n I``, kept close to the codes by ``- 2 alpha tr(B^T X)``.
For fixed codes the best ``X`` is the polar factor of the centred codes
(the paper's Eq. 16): :func:`balanced_decorrelated`. DCF, its variants and
CCCF (:mod:`phdlib.methods.discrete`) update ``X`` and ``Y`` with it after
every round.
"""
from __future__ import annotations

import numpy as np

__all__ = ["balanced_decorrelated"]


def balanced_decorrelated(W: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The ``X`` maximising ``tr(W^T X)`` s.t. ``1^T X = 0`` and ``X^T X = n I``.

    W: (n, r) real (codes or relaxed vectors), n >= r + 1. Returns float64
    (n, r). With the centred ``J W = P S Q^T`` (thin SVD; ``J`` removes column
    means), ``X = sqrt(n) P Q^T`` (DCF's Eq. 16).

    It is computed from the r x r Gram matrix, not from an SVD of the n x r
    matrix: ``Q`` and ``S^2`` are the eigenvectors and eigenvalues of
    ``(JW)^T JW``, and ``P = JW Q S^-1``. That is 7 to 10 times faster at
    n = 160,000, r = 64 (one BLAS thread) and agrees with the SVD to about
    1e-13 at full rank. The Gram matrix squares the condition number: a
    direction whose squared singular value is below ``max(n, r) * eps`` times
    the largest is taken as null, and where the kept singular values spread
    by more than ``eps^(1/4)`` (where the Gram route would lose the
    constraints) the SVD is used instead. ±1 codes and the relaxed factors
    are far from that.

    Null directions (e.g. a bit equal for every user) are completed with
    random unit vectors orthogonal to ``1`` and to ``P`` (Gram-Schmidt on a
    seeded random draw) and paired with the null eigenvectors, so the
    constraints hold exactly whatever the rank. (The reference pairs the
    completed left vectors with right vectors in eigenvalue order, which
    keeps the constraints but not the optimum; we pair them correctly.)
    """
    W = np.asarray(W, dtype=np.float64)
    n, r = W.shape
    if n < r + 1:
        raise ValueError(f"need more rows than bits + 1 for balanced codes, got n={n}, r={r}")
    J = W - W.mean(axis=0)
    eps = np.finfo(np.float64).eps
    ev, Q = np.linalg.eigh(J.T @ J)  # ascending; Q (r, r): the right singular vectors
    ev, Q = ev[::-1], Q[:, ::-1]
    keep = ev > max(max(n, r) * eps * ev[0], 1e-24)
    if keep.any() and ev[keep][-1] < np.sqrt(eps) * ev[0]:
        # ill-conditioned but not null (singular values spread by more than eps^(1/4)):
        # the Gram matrix would lose the constraints, the SVD keeps them
        return _from_svd(J, rng)
    Pk = J @ (Q[:, keep] / np.sqrt(ev[keep]))  # (n, k): orthonormal columns
    Pk = _complete(Pk, r, rng)
    return np.sqrt(n) * (Pk @ np.vstack([Q[:, keep].T, Q[:, ~keep].T]))


def _complete(Pk: np.ndarray, r: int, rng: np.random.Generator) -> np.ndarray:
    """``Pk`` (n, k) orthonormal, zero-mean columns, completed to (n, r) with seeded random
    unit vectors orthogonal to ``1`` and to ``Pk`` (Gram-Schmidt, twice)."""
    n, k = Pk.shape
    if k == r:
        return Pk
    Z = rng.random((n, r - k))
    Z -= Z.mean(axis=0)
    for _ in range(2):  # twice is enough for orthogonality to rounding
        Z -= Pk @ (Pk.T @ Z)
        Z -= Z.mean(axis=0)
        Z, _r = np.linalg.qr(Z)
    return np.hstack([Pk, Z])


def _from_svd(J: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """:func:`balanced_decorrelated` of the centred ``J`` (n, r) by its thin SVD (the
    path for an ill-conditioned ``J``): float64 (n, r)."""
    n, r = J.shape
    P, s, Qt = np.linalg.svd(J, full_matrices=False)
    keep = s > max(max(n, r) * np.finfo(np.float64).eps * s[0], 1e-12)
    Pk = _complete(P[:, keep], r, rng)
    return np.sqrt(n) * (Pk @ np.vstack([Qt[keep], Qt[~keep]]))
