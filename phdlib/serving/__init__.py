"""Serving trained codes (above the store): search, engines and the codes file.

:mod:`~phdlib.serving.search` is the exact search index over binary codes
(:class:`~phdlib.serving.search.BinaryIndex`, in the manner of faiss's
``IndexBinaryFlat``); :mod:`~phdlib.serving.engines` serves PHD through engines
that only know the Hamming distance (faiss, Milvus), through padded codes;
:mod:`~phdlib.serving.ivf` (:class:`~phdlib.serving.ivf.IVFIndex`, an inverted file)
and :mod:`~phdlib.serving.usearch_engine` (:class:`~phdlib.serving.usearch_engine.USearchIndex`,
usearch's HNSW with PHD compiled in) search the native codes approximately, trading
recall for speed; :mod:`~phdlib.serving.codes_file`
writes trained codes out of the store into one verified ``.npz`` (``phd export``)
and :mod:`~phdlib.serving.recommend` recommends from it, leaving out what a user
has seen (``phd recommend``); :mod:`~phdlib.serving.ties` orders the tied items of a
served list by a rule (item id, popularity, mean rating, a score, a seeded order).
"""
