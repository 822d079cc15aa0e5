"""The paper's published numbers, for comparison only (never used as results).

Every constant here is copied from Hansen et al. (WWW '21); chapters print
them beside the numbers this library recomputes. Other modules add their
tables here (data statistics, runtime) as plain dicts.
"""
from __future__ import annotations

#: Table 1: ``TABLE1[dataset][bits][method] = (NDCG@5, NDCG@10, MRR)``.
#: Methods by registry name; CCCF has no Amazon result in the paper.
TABLE1: dict[str, dict[int, dict[str, tuple[float, float, float]]]] = {
    "yelp": {
        32: {"cccf": (.7286, .8000, .6250), "dcf": (.7412, .8095, .6368),
             "mf-mean": (.6912, .7712, .5815), "mf-median": (.6935, .7734, .5769),
             "vh": (.7467, .8132, .6473), "vh-phd": (.8036, .8547, .7406),
             "mf": (.8071, .8573, .7513)},
        64: {"cccf": (.7371, .8060, .6329), "dcf": (.7497, .8155, .6574),
             "mf-mean": (.6912, .7712, .5810), "mf-median": (.6954, .7752, .5780),
             "vh": (.7537, .8185, .6561), "vh-phd": (.8075, .8577, .7540),
             "mf": (.8096, .8591, .7573)},
    },
    "ml-1m": {
        32: {"cccf": (.6867, .7110, .6493), "dcf": (.6791, .7092, .6382),
             "mf-mean": (.5631, .5950, .5053), "mf-median": (.5631, .5952, .5085),
             "vh": (.6851, .7123, .6419), "vh-phd": (.7135, .7360, .6940),
             "mf": (.7352, .7502, .7370)},
        64: {"cccf": (.7016, .7259, .6716), "dcf": (.7049, .7285, .6766),
             "mf-mean": (.5666, .5981, .5172), "mf-median": (.5649, .5966, .5105),
             "vh": (.7103, .7338, .6759), "vh-phd": (.7267, .7459, .7136),
             "mf": (.7424, .7552, .7439)},
    },
    "ml-10m": {
        32: {"cccf": (.5491, .5987, .5683), "dcf": (.5645, .6120, .5843),
             "mf-mean": (.4111, .4688, .4271), "mf-median": (.4082, .4665, .4225),
             "vh": (.5669, .6157, .5815), "vh-phd": (.5939, .6358, .6235),
             "mf": (.6029, .6427, .6385)},
        64: {"cccf": (.5645, .6134, .5837), "dcf": (.5865, .6316, .6088),
             "mf-mean": (.4104, .4675, .4257), "mf-median": (.4113, .4679, .4270),
             "vh": (.5860, .6328, .6013), "vh-phd": (.6034, .6427, .6373),
             "mf": (.6188, .6562, .6594)},
    },
    "amazon": {
        32: {"dcf": (.8256, .8714, .7759),
             "mf-mean": (.7899, .8452, .7342), "mf-median": (.7899, .8452, .7343),
             "vh": (.8254, .8712, .7758), "vh-phd": (.8479, .8877, .8062),
             "mf": (.8586, .8954, .8262)},
        64: {"dcf": (.8299, .8747, .7825),
             "mf-mean": (.7902, .8458, .7340), "mf-median": (.7902, .8457, .7334),
             "vh": (.8300, .8746, .7828), "vh-phd": (.8521, .8908, .8147),
             "mf": (.8586, .8954, .8259)},
    },
}

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
