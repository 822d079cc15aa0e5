"""The names of methods, grid parts and profiles, and the widest code, in a module that
imports nothing.

``phd --help`` must answer at once, so the ``phd`` parsers cannot import
:mod:`phdlib.methods` or :mod:`phdlib.experiments` (pandas, Numba, PyTorch)
to learn the names they offer as choices. The names live here instead, and
those modules take them from here (:data:`phdlib.methods.REGISTRY` is
:data:`METHODS`; :data:`phdlib.experiments.PARTS` and ``PROFILES`` are these),
so the command line and the library cannot drift apart. Keep this module free
of imports.
"""

#: The method registry (:data:`phdlib.methods.REGISTRY`): name -> "module:attribute"
#: of the method object, in the order of the paper's Table 1 (its seven
#: methods), then our additions. The method modules are imported only when a
#: method is used (:func:`phdlib.methods.get`).
METHODS: dict[str, str] = {
    "cccf": "phdlib.methods.cccf:CCCF",
    "dcf": "phdlib.methods.dcf:DCF",
    "mf-mean": "phdlib.methods.mf_methods:MF_MEAN",
    "mf-median": "phdlib.methods.mf_methods:MF_MEDIAN",
    "vh": "phdlib.methods.vh:VH",
    "vh-phd": "phdlib.methods.vh:VH_PHD",
    "mf": "phdlib.methods.mf_methods:MF",
    # our additions
    "mf-als": "phdlib.methods.mf_methods:MF_ALS",
    "vh-bias": "phdlib.methods.vh:VH_BIAS",
    "vh-lazy": "phdlib.methods.vh:VH_LAZY",
    "vh-phd-lazy": "phdlib.methods.vh:VH_PHD_LAZY",
    "dcf-phd": "phdlib.methods.dcf_phd:DCF_PHD",
    "dcf-bias": "phdlib.methods.dcf_bias:DCF_BIAS",
    "item-mean": "phdlib.methods.sanity:ITEM_MEAN",
    "popularity": "phdlib.methods.sanity:POPULARITY",
    "random": "phdlib.methods.sanity:RANDOM",
}

#: The parts of the reproduction grid (:func:`phdlib.experiments.plan`), in order.
PARTS = ("table1", "vh", "users", "sampling", "convergence", "protocol", "travel", "lazy")
#: The reproduction profiles: the paper's settings and reduced ones for checks.
PROFILES = ("full", "quick")

#: The engines of ``phd bench --serving`` (:data:`phdlib.bench.serving.ENGINES` is this).
SERVING_ENGINES = ("binaryindex", "faiss-flat", "faiss-hnsw", "faiss-ivf", "phd-ivf",
                   "usearch", "milvus-lite")

#: The rules that order tied items in a served list, ``id`` (the default) first
#: (:data:`phdlib.serving.ties.RULES` is this; ``phd recommend --tie-break``).
TIE_BREAKS = ("id", "popularity", "mean-rating", "score", "seeded")

#: The widest code a run may have, in bits (16 words; VH's Adam state at Amazon's shape
#: is then ~5 GB). :data:`phdlib.codes.MAX_BITS` is this.
MAX_BITS = 1024
