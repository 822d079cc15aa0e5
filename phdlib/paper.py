"""The paper's published numbers, for comparison only (never used as results).

Every constant here is copied from Hansen et al. (WWW '21); chapters print
them beside the numbers this library recomputes. Other modules add their
tables here (data statistics, runtime) as plain dicts.
"""
from __future__ import annotations

def _read_table1() -> dict:
    """``paper_table1.csv`` (the paper's Table 1, one row per dataset, bits, method)."""
    import csv
    from importlib import resources

    out: dict = {}
    with resources.files("phdlib").joinpath("paper_table1.csv").open() as fh:
        for row in csv.DictReader(fh):
            vals = tuple(float(row[k]) for k in ("ndcg@5", "ndcg@10", "mrr"))
            out.setdefault(row["dataset"], {}).setdefault(int(row["bits"]), {})[row["method"]] = vals
    return out


#: Table 1: ``TABLE1[dataset][bits][method] = (NDCG@5, NDCG@10, MRR)``, read from
#: ``phdlib/paper_table1.csv`` (copied from the paper). Methods by registry
#: name; CCCF has no Amazon result in the paper.
TABLE1: dict[str, dict[int, dict[str, tuple[float, float, float]]]] = _read_table1()

#: The metric order of :data:`TABLE1`'s tuples.
TABLE1_METRICS = ("ndcg@5", "ndcg@10", "mrr")

#: Table 1's printed Delta% row (VH_PHD over the best Hamming method, per column),
#: ``TABLE1_DELTA[dataset][bits] = (NDCG@5, NDCG@10, MRR)`` in percent.
TABLE1_DELTA: dict[str, dict[int, tuple[float, float, float]]] = {
    "yelp": {32: (7.6, 5.1, 14.4), 64: (7.1, 4.8, 14.7)},
    "ml-1m": {32: (3.9, 3.3, 6.9), 64: (2.3, 1.7, 5.5)},
    "ml-10m": {32: (4.8, 3.3, 6.7), 64: (2.9, 1.6, 4.7)},
    "amazon": {32: (2.7, 1.9, 3.9), 64: (2.7, 1.8, 4.1)},
}

#: Table 1's significance marks: in every column VH_PHD and MF carry an asterisk
#: (significantly better than the Hamming baselines, paired two-tailed t-test at
#: 0.05, Bonferroni).
TABLE1_STARRED = ("vh-phd", "mf")


def table1(dataset: str, bits: int) -> dict[str, dict[str, float]]:
    """The paper's Table 1 block for one dataset and width: ``{method: {metric: value}}``.

    An empty dict for a dataset the paper does not report (e.g. ``ml-100k``).
    """
    block = TABLE1.get(dataset, {}).get(int(bits), {})
    return {m: dict(zip(TABLE1_METRICS, v)) for m, v in block.items()}

#: Table 1, bottom ("Dataset properties"), after removing users and items with
#: fewer than 10 ratings: ``DATA_STATS[dataset] = {users, items, ratings, density}``
#: (density as printed, in percent).
DATA_STATS: dict[str, dict[str, float]] = {
    "yelp": {"users": 22_087, "items": 14_873, "ratings": 602_517, "density": 0.18},
    "ml-1m": {"users": 6_040, "items": 3_260, "ratings": 998_539, "density": 5.07},
    "ml-10m": {"users": 69_878, "items": 9_708, "ratings": 9_995_471, "density": 1.47},
    "amazon": {"users": 158_650, "items": 128_939, "ratings": 4_701_968, "density": 0.02},
}



def dataset_shape(dataset: str) -> tuple[int, int, int]:
    """``(users, items, ratings)`` of ``dataset`` after filtering, from :data:`DATA_STATS`
    (the one declaration of these sizes: the synthetic scale shapes of
    :mod:`phdlib.data.registry` and the training benchmark's shapes read them here).
    ``KeyError`` naming the datasets the paper reports for any other name."""
    try:
        st = DATA_STATS[dataset]
    except KeyError:
        raise KeyError(f"the paper reports no sizes for dataset {dataset!r}; it reports "
                       f"{', '.join(DATA_STATS)}") from None
    return int(st["users"]), int(st["items"]), int(st["ratings"])


#: Split sizes hard-coded in the released code (not printed in the paper):
#: ``RELEASED_SPLITS[dataset] = {train, valid, test}``.
RELEASED_SPLITS: dict[str, dict[str, int]] = {
    "ml-1m": {"train": 420_336, "valid": 77_436, "test": 500_767},
    "ml-10m": {"train": 4_201_261, "valid": 779_388, "test": 5_014_822},
    "yelp": {"train": 241_876, "valid": 54_245, "test": 306_396},
    "amazon": {"train": 1_896_886, "valid": 417_192, "test": 2_387_890},
}


#: Table 2 (Section 5.5.2): seconds to compute 100M distances of one query to
#: 100M codes (mean over 1,000 runs, one thread, C, Intel i9-9940X @ 3.30GHz),
#: and the printed overhead over the Hamming distance in percent. The inner
#: product is over 64-dim float vectors (no code for it was released).
TABLE2: dict[str, dict[str, float | None]] = {
    "hamming": {"seconds": 0.07401, "overhead_pct": None},
    "phd": {"seconds": 0.07401, "overhead_pct": 0.0},
    "inner_product": {"seconds": 4.71414, "overhead_pct": 6269.6},
}
#: The setup of Table 2, as the paper states it.
TABLE2_SETUP = {"n_codes": 100_000_000, "code_bits": 64, "runs": 1000, "threads": 1,
                "cpu": "Intel Core i9-9940X @ 3.30GHz", "ram_gb": 128, "ip_dim": 64}
