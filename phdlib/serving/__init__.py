"""Serving trained codes (above the store): search, engines and the codes file.

:mod:`~phdlib.serving.search` is the exact search index over binary codes
(:class:`~phdlib.serving.search.BinaryIndex`, in the manner of faiss's
``IndexBinaryFlat``); :mod:`~phdlib.serving.engines` serves PHD through engines
that only know the Hamming distance (faiss, Milvus); :mod:`~phdlib.serving.codes_file`
writes trained codes out of the store into one verified ``.npz`` (``phd export``)
and :mod:`~phdlib.serving.recommend` recommends from it, leaving out what a user
has seen (``phd recommend``).
"""
