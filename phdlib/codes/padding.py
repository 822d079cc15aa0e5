"""PHD served by any Hamming engine: the padded reduction.

For one user, PHD is the Hamming distance of padded codes, up to an
increasing map. With ``m``-bit codes, write ``|x|`` for ``popcount(x)``, and
pad every code to ``2m`` bits:

- an item code ``i`` gets ``m - |i|`` ones and then ``|i|`` zeros;
- a user code ``u`` gets ``m`` zeros.

The padding bits of a user are all 0, so they add ``m - |i|`` to the Hamming
distance, and

.. math::

    H(u', i') = |u \\oplus i| + m - |i|
              = |u| + |i| - 2|u \\wedge i| + m - |i|
              = 2(|u| - |u \\wedge i|) + m - |u|
              = 2\\,\\mathrm{PHD}(u, i) + m - |u|,

since :math:`\\mathrm{PHD}(u, i) = |u \\wedge \\lnot i| = |u| - |u \\wedge i|`.
For a fixed user, ``m - |u|`` is a constant, so the order of the items (ties
included) by ``H`` is their order by PHD, and
``PHD = (H - m + |u|) / 2`` recovers the distance. The padded codes take
``2m`` bits (rounded up to whole bytes, the extra bits 0 in both, so they add
nothing): twice the memory of the plain codes, and a Hamming scan of twice
the width.

Codes come in as this library packs them (uint64 ``(n, ceil(m/64))``, bit
``j`` in bit ``j % 64`` of word ``j // 64``) and go out as uint8
``(n, ceil(2m/8))`` rows, the byte layout of faiss' binary indexes and
Milvus' binary vectors (bit ``j`` in bit ``j % 8`` of byte ``j // 8``; any
bit order works for Hamming as long as users and items share it).
"""
from __future__ import annotations

import numpy as np

# This module imports nothing of phdlib: :mod:`phdlib.codes` (its
# :class:`~phdlib.codes.Distance` PHD) asks it how to serve PHD in a Hamming engine.

#: Rows converted at a time (bounds the temporary bit arrays to ~2m x 2^18 bytes).
CHUNK = 1 << 18


def padded_bytes(m: int) -> int:
    """Bytes of one padded code: ``ceil(2m / 8)``."""
    return (2 * int(m) + 7) // 8


def _n_words(m: int) -> int:
    """uint64 words of an ``m``-bit code (:func:`phdlib.codes.n_words`, widths checked there)."""
    return (int(m) + 63) // 64


def _bits(words: np.ndarray, m: int) -> np.ndarray:
    w = np.ascontiguousarray(words, dtype="<u8")
    if w.ndim != 2 or w.shape[1] != _n_words(m):
        raise ValueError(f"expected uint64 codes of shape (n, {_n_words(m)}) for {m} bits, "
                         f"got {w.shape}")
    return np.unpackbits(w.view(np.uint8), axis=1, bitorder="little")[:, :m]


def _pad(words: np.ndarray, m: int, items: bool) -> np.ndarray:
    words = np.asarray(words)
    out = np.empty((words.shape[0], padded_bytes(m)), dtype=np.uint8)
    ar = np.arange(m)
    for a in range(0, words.shape[0], CHUNK):
        b = _bits(words[a:a + CHUNK], m)
        if items:
            pad = ar[None, :] < (m - b.sum(axis=1, dtype=np.int64))[:, None]
        else:
            pad = np.zeros_like(b)
        both = np.concatenate([b, pad.astype(np.uint8)], axis=1)
        out[a:a + CHUNK] = np.packbits(both, axis=1, bitorder="little")
    return out


def pad_items(words: np.ndarray, m: int) -> np.ndarray:
    """Item codes padded with ``m - |i|`` ones then zeros: uint8 ``(n, ceil(2m/8))``."""
    return _pad(words, m, items=True)


def pad_users(words: np.ndarray, m: int) -> np.ndarray:
    """User codes padded with ``m`` zeros: uint8 ``(n, ceil(2m/8))``."""
    return _pad(words, m, items=False)


def popcounts(words: np.ndarray, m: int) -> np.ndarray:
    """``|u|`` of every code: int64 ``(n,)``."""
    return np.concatenate([_bits(words[a:a + CHUNK], m).sum(axis=1, dtype=np.int64)
                           for a in range(0, max(len(words), 1), CHUNK)])[:len(words)]


def phd_from_padded(hamming: np.ndarray, user_popcount: np.ndarray, m: int) -> np.ndarray:
    """PHD from the padded Hamming distances ``(q, k)`` of users with ``|u|`` ``(q,)``:
    ``(H - m + |u|) / 2`` as int32. ``ValueError`` when a value is not such a distance."""
    h = np.asarray(hamming, dtype=np.int64)
    twice = h - int(m) + np.asarray(user_popcount, dtype=np.int64)[:, None]
    if (twice % 2).any() or (twice < 0).any():
        raise ValueError("these are not padded Hamming distances of these users "
                         "(2 PHD + m - |u| must be even and at least m - |u|)")
    return (twice // 2).astype(np.int32)
