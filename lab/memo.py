"""A small cache of values that depend on no session, shared by every session of one server process.

A new visit to the default view asks for the same packed population and the same plot curves as the
last one; :class:`Memo` keeps the most recent ones (least recently used dropped first). Values are
shared between sessions, so callers must not modify what they get. :func:`array_key` names an
array by its bytes (a 16-byte BLAKE2b digest), for keys that include a population's pass rates.
"""

from __future__ import annotations

import hashlib
import weakref
from collections import OrderedDict
from typing import Callable, Hashable

import numpy as np

__all__ = ["Memo", "array_key", "drop_room_values"]


def array_key(array) -> bytes:
    """A digest of ``array``'s dtype, shape and bytes: equal arrays, equal keys."""
    a = np.ascontiguousarray(array)
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.digest()


#: the memos whose values go when a room leaves (``Memo(..., room=True)``), emptied by :func:`drop_room_values`
_ROOM_MEMOS: "weakref.WeakSet[Memo]" = weakref.WeakSet()


class Memo:
    """``get(key, compute)``: the value cached under ``key``, or ``compute()``'s, kept (at most ``size`` values).

    ``room=True``: large values that only a room's visitors share (a replay link's runs, several MB each): they
    are dropped with :func:`drop_room_values` once no session is left (:func:`grpo_lab.memory.release`), so a
    room that left gives their memory back; the small values of the other memos stay for the next visitor."""

    def __init__(self, size: int = 16, room: bool = False):
        self.size = size
        self._values: OrderedDict = OrderedDict()
        if room:
            _ROOM_MEMOS.add(self)

    def clear(self) -> None:
        """Forget every value."""
        self._values.clear()

    def get(self, key: Hashable, compute: Callable[[], object]):
        try:
            self._values.move_to_end(key)
            return self._values[key]
        except KeyError:
            value = self._values[key] = compute()
            while len(self._values) > self.size:
                self._values.popitem(last=False)
            return value


def drop_room_values() -> None:
    """Empty the memos made with ``room=True``."""
    for memo in list(_ROOM_MEMOS):
        memo.clear()
