"""Numba kernels, kept together.

Each submodule groups the compiled kernels for one concern:

- ``bits``: the popcount intrinsic and the Hamming / PHD distance scans.
- ``order``: ``numpy.lexsort``'s order of integer keys from one packed stable sort
  (plain NumPy, no compiling).

Kernels take and return plain NumPy arrays and do no validation: the public
functions in ``phdlib.codes``, ``phdlib.serving.search`` and friends check their
inputs and then call in here.
"""
