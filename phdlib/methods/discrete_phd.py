r"""The discrete model scored by PHD: the derivation of DCF_PHD's bit updates, and a NumPy reference.

DCF (:mod:`phdlib.methods.discrete`) fits ±1 codes ``B`` (n_users x m) and ``D``
(n_items x m) to minimise, over the observed training pairs ``(u, i)``,

    L = sum_(u,i) (r_ui - s_ui)^2  -  2 alpha tr(B^T X)  -  2 beta tr(D^T Y)

(``r``: ratings scaled to [-m, m]; ``X``, ``Y``: the balanced, decorrelated
real surrogates) with the inner-product score ``s_ui = <b_u, d_i> = m - 2 H(u, i)``
(``H``: Hamming distance). DCF_PHD keeps ``L``, the surrogates and the
algorithm and scores by the projected Hamming dissimilarity instead:

    s_ui = m - 2 PHD(u, i),   PHD(u, i) = #{k : b_uk = +1, d_ik = -1}

(the Hamming distance counted on the user's +1 bits only; items are ranked by
PHD, smaller first, as :data:`phdlib.codes.PHD` does).

Derivation
----------
Write ``p_uk = (1 + b_uk)/2`` in {0, 1} (the user's bit is on) and
``[d_ik = -1] = (1 - d_ik)/2``. Then ``PHD(u, i) = sum_k p_uk (1 - d_ik)/2`` and

    s_ui = m - sum_k p_uk (1 - d_ik) = sum_k (1 - p_uk) + sum_k p_uk d_ik.

*Item bits* (users fixed): ``s_ui`` is linear in ``d_ik``,

    s_ui = a_ui + c_uk d_ik,   c_uk = p_uk = (1 + b_uk)/2 in {0, 1},

``a_ui`` collecting every term without ``d_ik``. *User bits* (items fixed):
substituting ``p = (1 + b)/2``, ``1 - p = (1 - b)/2``,

    s_ui = sum_k [ (1 + d_ik)/2 + b_uk (d_ik - 1)/2 ],

linear in ``b_uk`` with coefficient ``c_ik = (d_ik - 1)/2`` in {0, -1}: -1
exactly where the item bit is -1 (a user's bit matters only against items
that lack it), and the constant ``(1 + d_ik)/2`` goes into ``a_ui``. (Check:
``b = -1`` gives 1 whatever ``d``; ``b = d = 1`` gives 1; ``b = 1, d = -1``
gives -1.) Hamming's score ``<b_u, d_i>`` is the case ``c = d_ik`` (user bit)
and ``c = b_uk`` (item bit), with no constants.

The closed-form bit update
--------------------------
Fix every bit but one, ``x`` in {-1, +1}, on which the ratings ``t`` of its
row depend as ``s_t = a_t + c_t x``; its balance term is ``-2 alpha x x~``
(``x~``: its entry of ``X``, or of ``Y`` with ``beta``). The part of ``L``
that depends on ``x`` is

    f(x) = sum_t (r_t - a_t - c_t x)^2 - 2 alpha x x~
         = sum_t (r_t - a_t)^2 + x^2 sum_t c_t^2 - 2 x [ sum_t c_t (r_t - a_t) + alpha x~ ]

and ``x^2 = 1``, so ``f(+1) - f(-1) = -4 [sum_t c_t (r_t - a_t) + alpha x~]``:

    x  <-  sgn( sum_t c_t (r_t - a_t) + alpha x~ )     (kept when the argument is 0)

With the current score ``s_t = a_t + c_t x_old`` the argument is
``alpha x~ + sum_t c_t (r_t - s_t) + x_old sum_t c_t^2``, the form the kernel
:func:`phdlib.kernels.dcf.dcd_rows_linear` evaluates with running scores. So:

- Hamming (DCF), user bit: ``b_uk <- sgn(alpha x_uk + sum_i d_ik (r_ui - s_ui) + b_uk n_u)``;
  item bit: ``d_ik <- sgn(beta y_ik + sum_u b_uk (r_ui - s_ui) + d_ik n_i)``;
- PHD (DCF_PHD), user bit:
  ``b_uk <- sgn(alpha x_uk + sum_i (d_ik - 1)/2 (r_ui - s_ui) + b_uk #{i : d_ik = -1})``;
  item bit:
  ``d_ik <- sgn(beta y_ik + sum_u (1 + b_uk)/2 (r_ui - s_ui) + d_ik #{u : b_uk = +1})``

(sums over the row's observed pairs; ``s`` the score of the distance). Each
update cannot increase ``L``; so neither can a sweep, nor the closed-form
``X``, ``Y`` steps (they maximise ``tr(B^T X)``, ``tr(D^T Y)``), which is why
the discrete rounds of DCF_PHD are monotone as DCF's are.

The kernel :func:`phdlib.kernels.dcf.dcd_rows_linear` takes, for the side
being updated, the coefficient of each of its bits from each code of the other
side and a constant per code of the other side: the score of a pair is
``sum_k coef_k x_k + const`` (:func:`linear_terms`). Hamming: ``coef = y``,
``const = 0``; PHD, user rows: ``coef = (d - 1)/2``, ``const = #{k: d_k = +1}``;
item rows: ``coef = (1 + b)/2``, ``const = #{k: b_k = -1}``. Summed, the PHD
score is ``s_ui = (<b_u, d_i> - sum_k b_uk + sum_k d_ik + m) / 2``.

This module holds that bookkeeping and a plain-NumPy reference of both
distances' scores, objective and single-bit updates (:func:`scores`,
:func:`objective`, :func:`bit_update`), which the tests check against brute
force and the Numba sweep against.
"""
from __future__ import annotations

import numpy as np

from ..codes import HAMMING, PHD

__all__ = ["SCORES", "linear_terms", "check_score", "scores", "objective", "bit_update", "sweep"]

#: The scores the discrete model can fit, by the name of the distance it ranks by: the two
#: whose bit updates are derived above (another distance needs its own derivation).
SCORES = (HAMMING.name, PHD.name)


def linear_terms(score: str, side: str, other: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The score as linear in each bit of ``side``'s codes, given the other side's codes.

    other int8 (m, r): ±1 codes of the other side (items when ``side`` is
    "user", users when "item"). Returns ``(coef, const)``: int8 (m, r) and
    float64 (m,), so that a pair scores ``sum_k coef[j, k] x_k + const[j]``
    (the arguments of :func:`phdlib.kernels.dcf.dcd_rows_linear`). Hamming:
    ``(other, 0)`` (the array itself, no copy); PHD users: ``((d - 1)/2,
    #{d_k = +1})``; PHD items: ``((1 + b)/2, #{b_k = -1})``.
    """
    other = np.asarray(other)
    if side not in ("user", "item"):
        raise ValueError(f"side must be 'user' or 'item', got {side!r}")
    if check_score(score) == HAMMING.name:
        return other, np.zeros(other.shape[0])
    on = other == (-1 if side == "user" else 1)  # where the coefficient is nonzero
    coef = on.astype(np.int8)
    if side == "user":
        coef = -coef
    const = (other.shape[1] - on.sum(axis=1)).astype(np.float64)
    return coef, const


def check_score(score: str) -> str:
    """``score`` if it is one of :data:`SCORES`, else ``ValueError`` naming it."""
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    return score


def scores(B, D, score: str) -> np.ndarray:
    """float64 (n_users, n_items): ``<b_u, d_i>`` (Hamming) or ``m - 2 PHD(u, i)`` (PHD).

    B int (n_users, m), D int (n_items, m): ±1 codes. Computed from the
    definitions (counts of bits), not from the kernels' linear terms.
    """
    B = np.asarray(B, dtype=np.int64)
    D = np.asarray(D, dtype=np.int64)
    m = B.shape[1]
    if check_score(score) == HAMMING.name:
        return (B @ D.T).astype(np.float64)
    phd = ((B[:, None, :] == 1) & (D[None, :, :] == -1)).sum(axis=2)
    return (m - 2 * phd).astype(np.float64)


def objective(user, item, target, B, D, X, Y, alpha: float, beta: float, score: str) -> float:
    """``sum_t (target_t - s_(user_t, item_t))^2 - 2 alpha tr(B^T X) - 2 beta tr(D^T Y)``.

    user, item int (nnz,): the observed pairs; target float64 (nnz,); B, D
    ±1 codes; X float64 (n_users, m), Y float64 (n_items, m); score: "hamming" or "phd".
    """
    s = scores(B, D, score)[np.asarray(user), np.asarray(item)]
    return float(np.sum((np.asarray(target, dtype=np.float64) - s) ** 2)
                 - 2.0 * alpha * np.sum(B * X) - 2.0 * beta * np.sum(D * Y))


def _coefficient(side: str, score: str, other_bits: np.ndarray) -> np.ndarray:
    """float64: ``c`` of each rating on the bit being updated, from the other side's bit.

    side "user": other_bits are the items' ``d_ik`` (Hamming ``d``, PHD ``(d - 1)/2``);
    side "item": the users' ``b_uk`` (Hamming ``b``, PHD ``(1 + b)/2``).
    """
    y = other_bits.astype(np.float64)
    if score == HAMMING.name:
        return y
    return (y - 1.0) / 2.0 if side == "user" else (1.0 + y) / 2.0


def bit_update(user, item, target, B, D, bias: float, score: str, side: str, row: int,
               k: int) -> int:
    """The closed-form new value (±1) of bit ``k`` of user (side "user") or item ``row``.

    ``sgn(sum_t c_t (target_t - a_t) + bias)`` over the row's observed pairs,
    where ``s_t = a_t + c_t x`` (:func:`_coefficient`; ``a_t`` is the score
    less the bit's term) and ``bias`` is ``alpha x~`` (``beta y~`` for an
    item); the current bit when the argument is 0. user, item, target as
    :func:`objective`; B, D ±1 codes (not changed).
    """
    user, item = np.asarray(user), np.asarray(item)
    target = np.asarray(target, dtype=np.float64)
    if side not in ("user", "item"):
        raise ValueError(f"side must be 'user' or 'item', got {side!r}")
    codes, other = (B, D) if side == "user" else (D, B)
    mine, theirs = (user, item) if side == "user" else (item, user)
    sel = mine == row
    s = scores(B, D, check_score(score))[user[sel], item[sel]]
    c = _coefficient(side, score, np.asarray(other)[theirs[sel], k])
    x = int(codes[row, k])
    a = s - c * x
    g = float(np.sum(c * (target[sel] - a))) + float(bias)
    return 1 if g > 0 else (-1 if g < 0 else x)


def sweep(user, item, target, B, D, bias, score: str, side: str) -> np.ndarray:
    """One cyclic sweep of :func:`bit_update` over every row's bits (row by row, bit 0 first).

    bias float64 (n_rows, m): ``alpha X`` (users) or ``beta Y`` (items).
    Returns the updated codes of ``side`` (int8, a copy); B and D unchanged.
    """
    B, D = np.array(B, dtype=np.int8), np.array(D, dtype=np.int8)
    codes = B if side == "user" else D
    for row in range(codes.shape[0]):
        for k in range(codes.shape[1]):
            codes[row, k] = bit_update(user, item, target, B, D, bias[row, k], score, side, row, k)
    return codes
