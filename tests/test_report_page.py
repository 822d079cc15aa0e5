"""How a page shows numbers (phdlib.report.page): no NaN, one-line mean ± std, the best in
bold, captions outside the scrolling box, verdicts in words, the folded provenance block."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import pandas as pd

from phdlib.report import page


def test_numbers_read_like_a_paper():
    assert page.mean_std(0.72671, 0.00123, mark="*") == ".7267*\u00a0±\u00a0.0012"
    assert page.mean_std(0.7267, np.nan) == ".7267"  # one seed: no std
    assert page.mean_std(np.nan) == "n/a"
    assert page.num(-2.0279e-04) == "−.0002" and page.num(0.5, 2, lead_zero=True) == "0.50"
    assert page.count(100000000) == "100,000,000" and page.count(943.0) == "943"
    assert page.pct(6269.6) == "+6269.6%" and page.pct(np.nan) == "n/a"
    assert page.p_text(0.0496) == "p = 0.049" and page.p_text(0.0004) == "p < 0.001"
    assert page.p_text(0.41) == "p = 0.41" and page.p_text(np.nan) == "n/a"


def test_a_table_has_no_nan_bolds_the_best_and_keeps_its_caption_outside_the_scroll_box():
    df = pd.DataFrame({"NDCG@10": [0.7, np.nan, 0.75], "users": [6040, 943, 10 ** 8],
                       "ok": [True, False, True]},
                      index=pd.MultiIndex.from_tuples([(64, "VH"), (32, "B"), (32, "A")]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # labels in reading order: no pandas warning
        html = page.table(df, "ML-1M <5 seeds>", bold=page.best_mask(df[["NDCG@10"]])).data
    assert "NaN" not in html and "nan" not in html and "n/a" in html
    assert "<strong>.7500</strong>" in html and "<strong>.7000</strong>" not in html
    assert "6,040" in html and "100,000,000" in html and "yes" in html
    caption, rest = html.split('<div class="phd-table-wrap">', 1)
    assert "ML-1M &lt;5 seeds&gt;" in caption and "<table" in rest


def test_verdicts_become_words_wherever_they_stand():
    md = page.findings(["AGREES (finding 1): VH_PHD is best.",
                        "NDCG@10 spans .01. DISAGREES (finding 3): their spread is larger."]).data
    assert "- **Agrees with the paper (finding 1).** VH_PHD is best." in md
    assert "**Differs from the paper (finding 3).** their spread" in md
    assert "AGREES" not in md.replace("Agrees", "")


def test_the_provenance_block_is_folded_and_names_the_commit():
    status = pd.DataFrame({"status": ["ran", "stored", "stored"], "seconds": [12.0, 0, 0]})
    html = page.computed("ml-1m", "full", 5, status=status, timer=page.Timer(),
                         notes=["line one\nline two"]).data
    assert html.startswith('<details class="phd-computed">') and "<summary>How this page" in html
    assert "0, 1, 2, 3, 4" in html and "1 ran, 2 stored" in html and "commit" in html
    assert "line one<br>line two" in html
    assert page.profile_banner("full") is None
    assert "not the paper" in page.profile_banner("quick").data


def test_a_record_names_its_machine_as_far_as_it_can():
    epyc = "AMD EPYC 9454 48-Core Processor (family 25, model 17)"
    assert page.cores_text({"cpus": 2, "cpu": epyc}) == f"2 cores of an {epyc}"
    assert page.cores_text({"cpus": 1, "cpu": "Intel(R) Xeon(R) Processor"}) == \
        "1 core of an Intel(R) Xeon(R) Processor"
    assert page.cores_text({"cpus": 16, "cpu": "Neoverse-V2"}) == "16 cores of a Neoverse-V2"
    assert page.cores_text({"cpus": 2}) == "2 cores"   # a record from before the field
    assert page.cores_text({"cpu": epyc}) == f"an {epyc}"
    assert page.cores_text({}) is None


@pytest.mark.parametrize("name, art", [
    ("AMD EPYC 9454", "an"), ("Intel(R) Xeon(R) Processor", "an"), ("x86_64", "an"),
    ("8-core", "an"), ("11th Gen Intel(R) Core(TM)", "an"), ("unknown", "an"), ("HP", "an"),
    ("M1", "an"),
    ("Xeon", "a"), ("Neoverse-V2", "a"), ("12th Gen Intel(R) Core(TM)", "a"), ("", "a")])
def test_the_article_before_a_cpu_name_is_the_one_said(name, art):
    assert page.article(name) == art
