"""The chapter "Data": tables and computed statements of phdlib.report.datasets."""
from __future__ import annotations

from types import SimpleNamespace as NS

import numpy as np
import pandas as pd

from phdlib.report import datasets


def _comparison():
    return pd.DataFrame([
        {"dataset": "yelp", "status": "not available in this build", "users": None,
         "paper_users": 22087, "items": None, "paper_items": 14873, "ratings": None,
         "paper_ratings": 602517, "density": None, "paper_density": 0.18, "fingerprint": None},
        {"dataset": "ml-1m", "status": "ours", "users": 6040, "paper_users": 6040, "items": 3260,
         "paper_items": 3260, "ratings": 998539, "paper_ratings": 998539, "density": 5.07,
         "paper_density": 5.07, "fingerprint": "ab"},
        {"dataset": "ml-100k", "status": "ours", "users": 943, "paper_users": None, "items": 1152,
         "paper_items": None, "ratings": 97953, "paper_ratings": None, "density": 9.02,
         "paper_density": None, "fingerprint": "cd"},
    ])


def test_paper_table_keeps_counts_integer_and_missing_values_missing():
    t = datasets.paper_table(_comparison())
    assert list(t.index) == ["Yelp", "ML-1M", "ML-100K"]
    assert t.loc["ML-100K", ("Users", "ours")] == 943
    assert str(t[("Users", "ours")].dtype) == "Int64"
    assert pd.isna(t.loc["Yelp", ("Users", "ours")]) and pd.isna(t.loc["ML-100K", ("Users", "paper")])
    from phdlib.report import page

    html = page.table(t, "c").data
    assert "943.0" not in html and ">943<" in html and "n/a" in html


def test_paper_findings_and_conclusion():
    c = _comparison()
    lines = datasets.paper_findings(c)
    assert lines[0].startswith("AGREES (dataset statistics): ML-1M has exactly")
    assert "not in the paper" in lines[1] and "943 users" in lines[1]
    assert lines[2] == ("The raw file of Yelp is not in this build: its row shows the paper's "
                        "numbers only.")
    c.loc[1, "items"] = 3261
    assert "items 3,261 against 3,260" in datasets.paper_findings(c)[0]
    sizes = pd.DataFrame({"train": [5, 5], "valid": [1, 1], "test": [6, 6]}, index=[0, 1])
    text = datasets.conclusion(_comparison(), "ml-1m", sizes, {"train": 5, "valid": 1, "test": 6})
    assert "this build had 1 (ML-1M)" in text and "split exactly" in text and "Yelp could" in text


def test_split_findings_and_test_items():
    sizes = pd.DataFrame({"train": [5, 5], "valid": [1, 1], "test": [6, 6]}, index=[0, 1])
    lines = datasets.split_findings("ml-1m", sizes, {"train": 5, "valid": 1, "test": 6}, 12)
    assert lines[0].startswith("AGREES (split sizes)") and "(0, 1)" in lines[0]
    assert "train 41.67%" in lines[1]
    lines = datasets.split_findings("ml-1m", sizes, {"train": 4, "valid": 1, "test": 7}, 12)
    assert lines[0].startswith("DISAGREES")
    s = datasets.test_items_finding("ml-1m", np.array([0, 0, 1]), 3)
    assert s.startswith("ML-1M: a user has between 0 and 2 test items")


def test_trace_source_and_shape():
    t = pd.DataFrame({"step": list("abcde"), "users": [10, 10, 10, 9, 8],
                      "items": [20, 20, 15, 15, 15], "ratings": [100, 98, 90, 85, 80]})
    s = datasets.trace_finding("ml-1m", t)
    assert "2 repeated" in s and "5 items and 1 users" in s and "differ (85 against 80" in s
    checks = pd.DataFrame({"dataset": ["ml-1m", "yelp", "ml-100k"], "found": [True, False, True],
                           "known": ["x", "y", None], "fingerprint": ["x", None, "z"]})
    lines = datasets.source_findings(checks)
    assert lines == ["The raw file of ML-1M matches the known content fingerprint.",
                     "No fingerprint is known for ML-100K."]
    st = {"users": 3, "items": 2, "ratings": 4, "density": 0.5, "histogram": {"1": 1, "5": 3},
          "ratings_per_user": {"min": 1, "median": 1.5, "mean": 1.3, "max": 2},
          "ratings_per_item": {"min": 2, "median": 2.0, "mean": 2.0, "max": 2}}
    shape = datasets.shape_table({"synthetic": st, "ml-1m": {**st, "histogram": {"1": 4}}})
    assert shape.loc["density %", "ML-1M"] == "50.00" and shape.loc["% rated 5", "ML-1M"] == "n/a"
    act = datasets.activity_table({"ml-1m": st})
    assert act.loc[("ML-1M", "per user"), "max"] == 2


def test_rating_findings():
    ds = NS(name="ml-1m", rating_scale=(1.0, 5.0), ratings=NS(rating=np.array([1.0, 4.0, 5.0, 5.0])))
    assert datasets.rating_findings([ds]) == [
        "ML-1M: mean rating 3.75 on 1 to 5; 75% of the ratings are in the top quarter of the scale."]
