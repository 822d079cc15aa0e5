"""DCF_PHD: DCF's discrete learner fitted to, and ranking by, the projected Hamming dissimilarity.

The objective, surrogates, initialisation, tuning grid and config keys are
DCF's (:mod:`phdlib.methods.dcf`); the score of a pair is ``m - 2 PHD(u, i)``
instead of ``<b_u, d_i> = m - 2 H(u, i)``, so every bit update is the closed
form derived in :mod:`phdlib.methods.discrete_phd` and a user ranks items by
PHD (smaller first). The relaxed initialisation is DCF's inner-product one:
its signs start the descent, which then fits PHD's score. It is not in the
paper; the book's chapter "Does the gain travel?" compares it with DCF.
"""
from __future__ import annotations

from . import dcf
from .dcf import DCFVariant

#: Implementation revision of DCF_PHD (its own: DCF's is :data:`phdlib.methods.dcf.IMPL`).
IMPL = 2

#: alpha = beta of the single-point run (``tune=False``); no grid has chosen one yet.
ALPHA = 0.1


def fit_point(split, bits: int, seed: int, config: dict, progress: bool = False):
    """Fit one configuration on ``split.train`` with the PHD score:
    :func:`phdlib.methods.dcf.fit_point` (one block, unit weights, ratings scaled
    to ``[-bits, bits]``) with ``score="phd"``. Returns ``(model, info)``."""
    return dcf.fit_point(split, bits, seed, config, [int(bits)], progress=progress, score="phd")


class DCFPHDMethod(DCFVariant):
    """Method ``dcf-phd``: DCF's config keys and grid (see :class:`phdlib.methods.dcf.DCFMethod`).

    Differences: ``alpha`` = ``beta`` default to :data:`ALPHA` everywhere,
    ``impl`` is :data:`IMPL`, the discrete rounds fit the PHD score and the
    :class:`~phdlib.methods.fitted.CodeModel` ranks by ``"phd"``. The codes are
    stored plain (uint64, bit 1 = +1), as every code model stores them; PHD
    negates the item codes itself when it scans (:data:`phdlib.codes.PHD`).
    """

    name = "dcf-phd"
    label = "DCF_PHD (ours)"
    description = "DCF's discrete learner fitted to and ranking by PHD (not in the paper)"
    ranks_by = "phd"
    fits = "phd"
    learns_codes = True
    in_paper = False
    color = "tab:olive"
    alpha = ALPHA
    impl = IMPL


#: The registry entry ``dcf-phd``.
DCF_PHD = DCFPHDMethod()
