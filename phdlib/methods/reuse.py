"""Work a fit keeps in its process for later fits to reuse, bit for bit.

A :class:`Reuse` store holds values under keys that hash every input of the
work (:func:`digest`), so a value is found again only by a fit that would
have computed exactly it. It hands out copies (a fit may change what it is
given in place), keeps the newest values within a byte budget (the oldest
leave first) and is emptied by :meth:`Reuse.forget`. Which fits share work
is a property of the methods (:meth:`phdlib.methods.base.Method.shared_work`);
the grid runner runs them one after another in one worker and then calls
:meth:`phdlib.methods.base.Method.forget_shared_work`.
"""
from __future__ import annotations

import hashlib
from typing import Callable, Protocol

import numpy as np


class Reusable(Protocol):
    nbytes: int

    def copy(self): ...


def digest(*arrays: np.ndarray, **params) -> str:
    """sha256 hex digest over the arrays (dtype, shape, bytes) and the parameters' repr."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.data)
    h.update(repr(sorted(params.items())).encode())
    return h.hexdigest()


class Reuse:
    """Values kept in this process under a key, newest last, at most ``max_bytes`` in all.

    what: what the values are, for messages; max_bytes: the budget (an
    attribute: a value over it alone is not kept).
    """

    def __init__(self, what: str, max_bytes: int):
        self.what, self.max_bytes = what, int(max_bytes)
        self._items: dict = {}

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"<Reuse {self.what}: {len(self)} kept, {self.nbytes:,} of {self.max_bytes:,} bytes>"

    @property
    def nbytes(self) -> int:
        return sum(v.nbytes for v in self._items.values())

    def get(self, key: str, make: Callable[[], Reusable]) -> tuple[Reusable, bool]:
        """``(value, reused)``: a copy of the value kept under ``key`` (``reused`` True),
        else ``make()``'s value, a copy of which is kept."""
        if key in self._items:
            self._items[key] = self._items.pop(key)  # newest again
            return self._items[key].copy(), True
        value = make()
        self._items[key] = value.copy()
        while self.nbytes > self.max_bytes and len(self._items) > 1:
            self._items.pop(next(iter(self._items)))
        if self._items[key].nbytes > self.max_bytes:
            self._items.pop(key)
        return value, False

    def forget(self) -> None:
        """Keep nothing."""
        self._items.clear()
