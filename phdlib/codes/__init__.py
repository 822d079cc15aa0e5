"""Binary codes and the distances between them (above the kernels).

:mod:`~phdlib.codes.packed` holds codes packed into 64-bit words
(:class:`PackedCodes`, :func:`pack`, :func:`unpack`) and the Hamming distance and
the projected Hamming dissimilarity (PHD) over them; :mod:`~phdlib.codes.distances`
the :class:`Distance` concept above them, that every other module asks for a
distance's name, its pair and table scoring and what ranks by it.
:mod:`~phdlib.codes.padding` turns PHD into a
Hamming distance over padded codes for engines that only know Hamming (faiss,
Milvus). :mod:`~phdlib.codes.autograd` holds both scores as differentiable
PyTorch ops for any model (it imports torch, so this package does not import
it). The names below are re-exported so that ``from phdlib import codes``
reads as before.
"""
from .distances import (DISTANCE_NAMES, DISTANCES, HAMMING, PHD, RANKS, Distance, distance,
                        item_store, pair_distances)
from .packed import (MAX_BITS, WORD_BITS, PackedCodes, hamming, hamming_reference,
                     inner_product_pm1, n_words, pack, phd, phd_reference, popcount, unpack)

__all__ = ["DISTANCE_NAMES", "DISTANCES", "HAMMING", "MAX_BITS", "PHD", "RANKS", "WORD_BITS",
           "Distance", "PackedCodes", "distance", "hamming", "hamming_reference",
           "inner_product_pm1", "item_store", "n_words", "pack", "pair_distances", "phd",
           "phd_reference", "popcount", "unpack"]
