"""A small cache of values that depend on no session, shared by every session of one server process.

A new visit to the default view asks for the same packed population and the same plot curves as the
last one; :class:`Memo` keeps the most recent ones (least recently used dropped first). Values are
shared between sessions, so callers must not modify what they get. :func:`array_key` names an
array by its bytes (a 16-byte BLAKE2b digest), for keys that include a population's pass rates.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Callable, Hashable

import numpy as np

__all__ = ["Memo", "array_key"]


def array_key(array) -> bytes:
    """A digest of ``array``'s dtype, shape and bytes: equal arrays, equal keys."""
    a = np.ascontiguousarray(array)
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.digest()


class Memo:
    """``get(key, compute)``: the value cached under ``key``, or ``compute()``'s, kept (at most ``size`` values)."""

    def __init__(self, size: int = 16):
        self.size = size
        self._values: OrderedDict = OrderedDict()

    def get(self, key: Hashable, compute: Callable[[], object]):
        try:
            self._values.move_to_end(key)
            return self._values[key]
        except KeyError:
            value = self._values[key] = compute()
            while len(self._values) > self.size:
                self._values.popitem(last=False)
            return value
