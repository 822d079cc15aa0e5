"""Work a fit keeps in its process for later fits to reuse, bit for bit.

A :class:`Reuse` store holds values under keys that hash every input of the
work (:func:`digest`), so a value is found again only by a fit that would
have computed exactly it. It hands out copies (a fit may change what it is
given in place), keeps the newest values within a byte budget (the oldest
leave first) and is emptied by :meth:`Reuse.forget`. It is safe under
threads (a backend that runs several tasks in one process): a value
forgotten under a task only makes its next fit compute it again. Which fits share work
is a property of the methods (:meth:`phdlib.methods.base.Method.shared_work`);
the grid runner runs them one after another in one worker and then calls
:meth:`phdlib.methods.base.Method.forget_shared_work`.
"""
from __future__ import annotations

import hashlib
import threading
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
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"<Reuse {self.what}: {len(self)} kept, {self.nbytes:,} of {self.max_bytes:,} bytes>"

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(v.nbytes for v in self._items.values())

    def get(self, key: str, make: Callable[[], Reusable]) -> tuple[Reusable, bool]:
        """``(value, reused)``: a copy of the value kept under ``key`` (``reused`` True),
        else ``make()``'s value, a copy of which is kept."""
        with self._lock:
            kept = self._items.pop(key, None)
            if kept is not None:
                self._items[key] = kept  # newest again
        if kept is not None:
            return kept.copy(), True  # kept is never changed: copies go in and out
        value = make()  # (outside the lock: other threads' fits go on meanwhile)
        kept = value.copy()
        with self._lock:
            if kept.nbytes <= self.max_bytes:  # (a value over the budget alone is not kept)
                self._items[key] = kept
            while self._items and sum(v.nbytes for v in self._items.values()) > self.max_bytes:
                self._items.pop(next(iter(self._items)))
        return value, False

    def forget(self) -> None:
        """Keep nothing."""
        with self._lock:
            self._items.clear()
