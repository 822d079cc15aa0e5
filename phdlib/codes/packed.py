"""The Hamming-space core: packed binary codes, Hamming distance and PHD.

A code of width ``m`` is a vector in {-1, 1}^m (equivalently {0, 1}^m or
bool). Packed, it occupies ``w = ceil(m / 64)`` unsigned 64-bit words; bit
``j % 64`` of word ``j // 64`` holds dimension ``j`` (1 for +1/True/1, 0 for
-1/False/0). Padding bits above ``m`` are always 0 in a plain code.

Distances (all ``int32`` bit counts in ``[0, m]``):

- Hamming: ``d_H(u, i) = popcount(u XOR i)``.
- Projected Hamming dissimilarity (PHD):
  ``PHD(u, i) = popcount(u XOR (u AND i)) = popcount(u AND NOT i)``.
  Item codes stored negated once (:meth:`PackedCodes.negate`) make PHD one AND
  and one popcount per word: the cost of Hamming.

``PHD`` is asymmetric: the first argument (the user, or query) selects the
bits that count; bits where the user is -1 are disabled.

Shapes: one code is a 1-d array, many codes a 2-d array with one row per code.
Distance functions return ``(n,)`` for one query and ``(q, n)`` for ``q``
queries.

The ``*_reference`` functions are plain NumPy versions of the same
definitions, computed on unpacked ±1 codes; tests compare the kernels to them.

What differs between the two distances as a concept (a name configs hold, the
form items are stored in, pair scoring, search and engine ops) is
:class:`phdlib.codes.distances.Distance`, one module up: it imports this one,
never the reverse.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import names as _names
from ..kernels import bits as _k

WORD_BITS = 64
_U64 = np.uint64

__all__ = [
    "PackedCodes",
    "n_words",
    "pack",
    "unpack",
    "hamming",
    "phd",
    "inner_product_pm1",
    "check_pair",
    "popcount",
    "hamming_reference",
    "phd_reference",
]


#: The widest code a run may have (:data:`phdlib.names.MAX_BITS`).
MAX_BITS = _names.MAX_BITS


def n_words(m: int) -> int:
    """Number of uint64 words that hold a code of ``m`` bits."""
    m = _check_width(m)
    return (m + WORD_BITS - 1) // WORD_BITS


def _check_width(m) -> int:
    if isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"code width m must be an integer, got {m!r} ({type(m).__name__})")
    if m <= 0:
        raise ValueError(f"code width m must be positive, got m={int(m)}")
    return int(m)


@dataclass(frozen=True)
class PackedCodes:
    """Binary codes packed into machine words.

    Attributes
    ----------
    words : np.ndarray
        ``uint64``, shape ``(n, w)`` for ``n`` codes or ``(w,)`` for one code,
        C-contiguous, ``w = ceil(m / 64)``.
    m : int
        Code width in bits.
    negated : bool
        True when ``words`` hold the bitwise NOT of the codes (the stored form
        for PHD); padding bits above ``m`` are then 1.
    """

    words: np.ndarray
    m: int
    negated: bool = False

    def __post_init__(self):
        m = _check_width(self.m)
        w = np.asarray(self.words)
        if w.dtype != _U64:
            raise TypeError(f"packed code words must be uint64, got dtype {w.dtype}")
        if w.ndim not in (1, 2):
            raise ValueError(
                f"packed codes must have shape (w,) or (n, w), got shape {w.shape}"
            )
        need = (m + WORD_BITS - 1) // WORD_BITS
        if w.shape[-1] != need:
            raise ValueError(
                f"codes of m={m} bits need {need} uint64 words, got {w.shape[-1]} "
                f"(shape {w.shape})"
            )
        pad = m % WORD_BITS
        if pad and w.size:
            high = ~((_U64(1) << _U64(pad)) - _U64(1))  # the bits above m in the last word
            last = w[..., -1]
            bad = (last & high) != (high if self.negated else 0)
            if np.any(bad):
                row = int(np.flatnonzero(np.atleast_1d(bad))[0])
                raise ValueError(
                    f"code {row}: padding bits above m={m} must be "
                    f"{'1 (negated codes)' if self.negated else '0'}; got last word "
                    f"{int(np.atleast_1d(last)[row]):#018x}")
        object.__setattr__(self, "words", np.ascontiguousarray(w))
        object.__setattr__(self, "m", m)

    @property
    def single(self) -> bool:
        """True for one code (1-d ``words``)."""
        return self.words.ndim == 1

    @property
    def n(self) -> int:
        """Number of codes (1 for a single code)."""
        return 1 if self.single else self.words.shape[0]

    @property
    def n_words(self) -> int:
        return self.words.shape[-1]

    def __len__(self) -> int:
        return self.n

    def rows(self) -> np.ndarray:
        """``words`` as a 2-d ``(n, w)`` array (a view)."""
        return self.words.reshape(-1, self.n_words)

    def negate(self) -> "PackedCodes":
        """The bitwise NOT of every code, including padding bits.

        ``negate()`` of a plain code is the stored form for PHD; negating twice
        gives back the plain code.
        """
        return PackedCodes(np.bitwise_not(self.words), self.m, not self.negated)

    def __getitem__(self, idx) -> "PackedCodes":
        if self.single:
            raise TypeError("a single packed code cannot be indexed")
        return PackedCodes(self.words[idx], self.m, self.negated)


# --------------------------------------------------------------------------- packing

_ENCODINGS = ("auto", "pm1", "01", "bool")


def _as_bits(codes: np.ndarray, encoding: str) -> np.ndarray:
    """Validate values and return a bool array (True = set bit)."""
    if encoding not in _ENCODINGS:
        raise ValueError(f"encoding must be one of {_ENCODINGS}, got {encoding!r}")
    dt = codes.dtype
    if dt == np.bool_:
        if encoding not in ("auto", "bool"):
            raise TypeError(f"encoding={encoding!r} expects numeric codes, got dtype bool")
        return codes
    if not (np.issubdtype(dt, np.integer) or np.issubdtype(dt, np.floating)):
        raise TypeError(
            f"codes must be bool, integer or float arrays of ±1 / 0-1 values, got dtype {dt}"
        )
    if encoding == "bool":
        raise TypeError(f"encoding='bool' expects a bool array, got dtype {dt}")
    if encoding == "auto":
        encoding = "pm1" if np.any(codes == -1) else "01"
    allowed = (-1, 1) if encoding == "pm1" else (0, 1)
    bad = (codes != allowed[0]) & (codes != allowed[1])
    if np.any(bad):
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        name = "{-1, 1}" if encoding == "pm1" else "{0, 1}"
        hint = " (mixed -1 and 0 values?)" if encoding == "pm1" and np.any(codes == 0) else ""
        raise ValueError(
            f"{'±1' if encoding == 'pm1' else '0/1'} codes must have values in {name}; "
            f"found {codes[pos].item()!r} at index {pos}{hint}"
        )
    return codes == 1


def pack(codes, encoding: str = "auto") -> PackedCodes:
    """Pack codes into uint64 words.

    Parameters
    ----------
    codes : array_like
        Shape ``(n, m)`` for ``n`` codes or ``(m,)`` for one code. Values in
        {-1, 1} (``encoding="pm1"``), {0, 1} (``"01"``) or bool (``"bool"``).
        ``"auto"`` takes bool arrays as bool, numeric arrays containing -1 as
        ±1 and any other numeric array as 0/1.
    encoding : str
        ``"auto"``, ``"pm1"``, ``"01"`` or ``"bool"``.

    Returns
    -------
    PackedCodes
        ``words`` of shape ``(n, ceil(m/64))`` (or ``(ceil(m/64),)``), dtype
        ``uint64``; bit ``j`` of the code is bit ``j % 64`` of word ``j // 64``.
    """
    arr = np.asarray(codes)
    if arr.ndim not in (1, 2):
        raise ValueError(f"codes must have shape (m,) or (n, m), got shape {arr.shape}")
    m = arr.shape[-1]
    if m <= 0:
        raise ValueError(f"code width m must be positive, got m={m} (shape {arr.shape})")
    bits = _as_bits(arr, encoding)
    single = bits.ndim == 1
    b2 = bits.reshape(-1, m)
    w = (m + WORD_BITS - 1) // WORD_BITS
    padded = np.zeros((b2.shape[0], w * WORD_BITS), dtype=np.uint8)
    padded[:, :m] = b2
    # little bit order within bytes, little-endian bytes within words: bit j of
    # the code lands on bit j % 64 of word j // 64 on every platform.
    by = np.packbits(padded, axis=1, bitorder="little")
    words = by.view("<u8").astype(_U64, copy=False).reshape(b2.shape[0], w)
    if single:
        words = words[0]
    return PackedCodes(np.ascontiguousarray(words), m)


def unpack(packed: PackedCodes, encoding: str = "pm1") -> np.ndarray:
    """Unpack codes to ``int8`` ±1 (``"pm1"``), ``uint8`` 0/1 (``"01"``) or bool.

    Negated codes are un-negated first, so ``unpack(pack(x).negate().negate())``
    and ``unpack(pack(x))`` agree. Returns shape ``(n, m)`` or ``(m,)``.
    """
    if not isinstance(packed, PackedCodes):
        raise TypeError(f"unpack expects PackedCodes, got {type(packed).__name__}")
    if encoding not in ("pm1", "01", "bool"):
        raise ValueError(f"encoding must be 'pm1', '01' or 'bool', got {encoding!r}")
    words = packed.rows()
    if packed.negated:
        words = np.bitwise_not(words)
    by = words.astype("<u8").view(np.uint8).reshape(words.shape[0], -1)
    bits = np.unpackbits(by, axis=1, bitorder="little")[:, : packed.m].astype(bool)
    if encoding == "pm1":
        out = np.where(bits, 1, -1).astype(np.int8)
    elif encoding == "01":
        out = bits.astype(np.uint8)
    else:
        out = bits
    return out[0] if packed.single else out


# --------------------------------------------------------------------------- references


def _pm1(x) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == np.bool_:
        return np.where(a, 1, -1).astype(np.int8)
    return a


def hamming_reference(query, items) -> np.ndarray:
    """Plain NumPy Hamming distance on unpacked ±1 (or bool) codes.

    query: ``(m,)`` or ``(q, m)``; items: ``(n, m)``. Returns int32
    ``(n,)`` or ``(q, n)``: the number of dimensions where the codes differ.
    """
    q, it = _pm1(query), _pm1(items)
    if q.ndim == 1:
        return (q[None, :] != it).sum(axis=1).astype(np.int32)
    return (q[:, None, :] != it[None, :, :]).sum(axis=2).astype(np.int32)


def phd_reference(query, items) -> np.ndarray:
    """Plain NumPy PHD on unpacked ±1 (or bool) codes.

    The number of dimensions where the user is +1 and the item is -1, i.e.
    Hamming restricted to the user's enabled bits. Shapes as
    :func:`hamming_reference`.
    """
    q, it = _pm1(query), _pm1(items)
    if q.ndim == 1:
        return ((q[None, :] == 1) & (it == -1)).sum(axis=1).astype(np.int32)
    return ((q[:, None, :] == 1) & (it[None, :, :] == -1)).sum(axis=2).astype(np.int32)


# --------------------------------------------------------------------------- distances


def check_pair(query, items, what: str) -> None:
    """Check that ``query`` and ``items`` are PackedCodes of one width, the query plain.

    ``what`` names the caller in the ``TypeError`` / ``ValueError`` raised."""
    for name, x in (("query", query), ("items", items)):
        if not isinstance(x, PackedCodes):
            raise TypeError(
                f"{what}: {name} must be PackedCodes (use phdlib.codes.pack), "
                f"got {type(x).__name__}"
            )
    if query.m != items.m:
        raise ValueError(
            f"{what}: code widths differ: query has m={query.m} bits, items have m={items.m}"
        )
    if query.negated:
        raise ValueError(f"{what}: the query must be a plain code, not a negated (stored NOT) one")


def _run(scan, op: int, query: PackedCodes, items: PackedCodes) -> np.ndarray:
    codes = items.rows()
    if query.single:
        out = np.empty(codes.shape[0], dtype=np.int32)
        scan(query.words, codes, out)
    else:
        out = np.empty((query.n, codes.shape[0]), dtype=np.int32)
        _k.scan_batch(op, query.words, codes, out)
    return out


def hamming(query: PackedCodes, items: PackedCodes) -> np.ndarray:
    """Hamming distance ``popcount(q XOR i)`` of each query to each item.

    query: one code (``(n,)`` result) or ``q`` codes (``(q, n)`` result).
    items: ``n`` plain codes of the same width. Returns int32.
    """
    check_pair(query, items, "hamming")
    if items.negated:
        raise ValueError("hamming: items are negated (stored NOT); pass the plain codes")
    return _run(_k.hamming_scan, _k.HAMMING, query, items)


def phd(query: PackedCodes, items: PackedCodes) -> np.ndarray:
    """Projected Hamming dissimilarity ``popcount(u AND NOT i)``.

    query: the user code(s), plain. items: ``n`` item codes, either plain
    (computed in the XOR-AND form ``popcount(u XOR (u AND i))``) or stored
    negated with :meth:`PackedCodes.negate` (one AND and one popcount).
    Returns int32 ``(n,)`` for one query, ``(q, n)`` for ``q``.
    """
    check_pair(query, items, "phd")
    if items.negated:
        return _run(_k.and_scan, _k.AND, query, items)
    return _run(_k.phd_xor_and_scan, _k.PHD_XOR_AND, query, items)


def popcount(codes: PackedCodes) -> np.ndarray:
    """Number of set (+1) bits of each code; int32 ``(n,)`` or a 0-d int for one code."""
    if not isinstance(codes, PackedCodes):
        raise TypeError(f"popcount expects PackedCodes, got {type(codes).__name__}")
    words = codes.rows()
    if codes.negated:
        words = np.bitwise_not(words)
        # padding bits of a negated code are 1: clear them before counting
        words = words.copy()
        tail = codes.m % WORD_BITS
        if tail:
            words[:, -1] &= _U64((1 << tail) - 1)
    out = _k.popcount_rows(words)
    return out[0] if codes.single else out


def inner_product_pm1(query: PackedCodes, items: PackedCodes) -> np.ndarray:
    """``<u, i>`` of the ±1 codes, from Hamming: ``m - 2 d_H(u, i)``. int32."""
    return query.m - 2 * hamming(query, items)
