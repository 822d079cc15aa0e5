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
    means), ``X = sqrt(n) P Q^T`` (DCF's Eq. 16). Directions where ``J W`` is
    rank deficient (e.g. a bit equal for every user) are completed with
    random unit vectors orthogonal to ``1`` and to ``P`` (Gram-Schmidt on a
    seeded random draw) and paired with the null right singular vectors, so
    the constraints hold exactly whatever the rank. (The reference pairs the
    completed left vectors with right vectors in eigenvalue order, which
    keeps the constraints but not the optimum; we pair them correctly.)
    """
    W = np.asarray(W, dtype=np.float64)
    n, r = W.shape
    if n < r + 1:
        raise ValueError(f"need more rows than bits + 1 for balanced codes, got n={n}, r={r}")
    J = W - W.mean(axis=0)
    P, s, Qt = np.linalg.svd(J, full_matrices=False)  # P (n, r), Qt (r, r)
    tol = max(n, r) * np.finfo(np.float64).eps * (s[0] if s.size else 0.0)
    keep = s > max(tol, 1e-12)
    k = int(keep.sum())
    Pk = P[:, keep]
    if k < r:
        Z = rng.random((n, r - k))
        Z -= Z.mean(axis=0)
        for _ in range(2):  # twice is enough for orthogonality to rounding
            Z -= Pk @ (Pk.T @ Z)
            Z -= Z.mean(axis=0)
            Z, _r = np.linalg.qr(Z)
        Pk = np.hstack([Pk, Z])
        Qt = np.vstack([Qt[keep], Qt[~keep]])
    return np.sqrt(n) * (Pk @ Qt)
