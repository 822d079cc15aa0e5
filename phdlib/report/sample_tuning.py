"""Tables and sentences of the sample-tuning study (:mod:`phdlib.studies.sample_tuning`):
does choosing a grid on a user sample choose what all the data would, and what
does the difference cost on the test split? Read by the chapter "Cost at scale"."""
from __future__ import annotations

import pandas as pd

from .style import label

__all__ = ["tune_sample_findings", "tune_sample_table"]


def tune_sample_table(rows: pd.DataFrame) -> pd.DataFrame:
    """A :func:`phdlib.studies.sample_tuning.compare` frame for reading: per method and
    sample size, the two choices, whether they agree, and the test NDCG@10 of
    each choice trained on all the data (and their difference)."""
    t = rows.assign(method=rows["method"].map(label),
                    sample=[f"{r:,} ({u:,} users)" for r, u in
                            zip(rows["sample_ratings"], rows["sample_users"])])
    return t[["method", "sample", "chosen_all", "chosen_sample", "same",
              "test_ndcg@10_all", "test_ndcg@10_sample", "difference"]].rename(
        columns={"chosen_all": "chosen on all", "chosen_sample": "chosen on the sample"})


def tune_sample_findings(rows: pd.DataFrame, loss: float = 0.01) -> list[str]:
    """One sentence per sample size: how often the sample chose as all the data
    did, what its choice costs in test NDCG@10, and the methods it costs more
    than ``loss`` (absolute NDCG@10)."""
    out = []
    for cap, g in rows.groupby("cap", sort=True):
        of_ratings = int(g["of_ratings"].iloc[0])
        d = g["difference"]
        big = g[d < -loss].sort_values("difference")
        names = ", ".join(f"{label(m)} ({v:+.4f})" for m, v in zip(big["method"],
                                                                     big["difference"]))
        out.append(
            f"A sample of at most {cap:,} ratings (1/{of_ratings / cap:.0f} of the data): the "
            f"same point as on all the data for {int(g['same'].sum())} of {len(g)} methods; the "
            f"sample's choice changes test NDCG@10 by {d.min():+.4f} to {d.max():+.4f} (mean "
            f"{d.mean():+.4f}); it loses more than {loss} for "
            + (names or "no method") + f". Its grids trained for "
            f"{g['grid_s_sample'].sum() / 60:.1f} min against "
            f"{g['grid_s_all'].sum() / 60:.1f} min on all the data.")
    return out
