"""DCF+bias: DCF with a real offset per user in training, ranking by the Hamming distance.

Under PHD every bit a user switches off adds +1 to that user's score against
*every* item (``m - 2 PHD(u, i) = #off bits of u + sum over u's on bits of
d_ik``), so DCF_PHD can fit a user's mean rating with its code; DCF's inner
product cannot. DCF+bias gives DCF that freedom directly: the score of a
training pair is ``<b_u, d_i> + o_u`` with ``o_u`` real, set to its exact
minimiser (the user's mean residual) before every outer iteration
(:func:`phdlib.methods.discrete.fit_blocks` with ``user_offset=True``). The
offset is a constant per user, so it cannot change a user's order: it is not
stored, and the codes rank by Hamming exactly as DCF's do. If DCF+bias closes
most of the gap from DCF to DCF_PHD, DCF_PHD's gain is that offset. It is the
discrete learners' counterpart of VH+bias (:mod:`phdlib.methods.vh`), and not
in the paper.
"""
from __future__ import annotations

from . import dcf
from .dcf import DCFVariant

#: Implementation revision of DCF+bias (its own: DCF's is :data:`phdlib.methods.dcf.IMPL`).
IMPL = 2

#: alpha = beta of the single-point run (``tune=False``, the quick profile); the full
#: profile tunes over DCF's grid.
ALPHA = 0.1


def fit_point(split, bits: int, seed: int, config: dict, progress: bool = False):
    """Fit one configuration on ``split.train`` with a per-user offset:
    :func:`phdlib.methods.dcf.fit_point` (one block, unit weights, ratings scaled
    to ``[-bits, bits]``) with ``user_offset=True``. Returns ``(model, info)``;
    ``model.offset`` float64 (n_users,) holds the offsets (in scaled-rating units)."""
    return dcf.fit_point(split, bits, seed, config, [int(bits)], progress=progress,
                         user_offset=True)


class DCFBiasMethod(DCFVariant):
    """Method ``dcf-bias``: DCF's config keys and grid (see :class:`phdlib.methods.dcf.DCFMethod`).

    Differences: ``alpha`` = ``beta`` default to :data:`ALPHA` for the single
    point, ``impl`` is :data:`IMPL`, and training fits a per-user offset. The
    :class:`~phdlib.methods.fitted.CodeModel` ranks by Hamming.
    """

    name = "dcf-bias"
    label = "DCF+bias (ours)"
    description = "DCF with a per-user offset in training, ranking by Hamming (not in the paper)"
    ranks_by = "hamming"
    user_offset = True
    learns_codes = True
    in_paper = False
    color = "tab:cyan"
    alpha = ALPHA
    impl = IMPL


#: The registry entry ``dcf-bias``.
DCF_BIAS = DCFBiasMethod()
