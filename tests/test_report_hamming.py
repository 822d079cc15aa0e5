"""The chapter "Hamming space and the projected dissimilarity": its numerical checks."""
from __future__ import annotations

import pandas as pd

from phdlib.report import hamming


def test_identity_checks_hold_on_random_codes():
    c = hamming.identity_checks(seed=1, n_items=200, widths=(8, 65))
    assert list(c.columns) == ["identity", "bits", "pairs", "holds"]
    assert set(c["identity"]) == set(hamming.IDENTITIES)
    assert c["holds"].all()
    assert set(c.loc[c["identity"] == "phd-ip", "bits"]) == {8, 65}
    assert (c.loc[c["identity"] == "not", "pairs"] == 3 * 200).all()


def test_findings_and_summary_say_what_held_or_failed():
    c = hamming.identity_checks(seed=0, n_items=50, widths=(8,))
    lines = hamming.identity_findings(c)
    assert len(lines) == 1 and lines[0].startswith("All 8 identities") and "900 comparisons" in lines[0]
    bad = c.copy()
    bad.loc[bad["identity"] == "masked", "holds"] = False
    lines = hamming.identity_findings(bad)
    assert lines == [f"FAILS: {hamming.IDENTITIES['masked'][0]} does not hold at 8 bits."]
    md = hamming.summary_markdown(bad)
    assert md.count("\n") == len(hamming.IDENTITIES) - 1 and "**fails**" in md
    assert "holds on 150 pairs (64 bits)" in md


def test_bit_string():
    assert hamming.bit_string([1, -1, 1, 1]) == "1011"
    assert hamming.bit_string(pd.Series([0, 1])) == "01"
