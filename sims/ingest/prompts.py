r"""Prompt texts to integer codes across the files of a run, hashed in pyarrow rather than in a Python loop.

Each file's reader gives its rows codes into that file's distinct prompts (``texts``). :class:`PromptIndex`
maps those to run-wide codes, numbered in order of first appearance (file order, then the file's own
order). With pyarrow, files are taken in batches of :data:`BATCH_FILES`: the texts known so far and the
batch's texts are concatenated and dictionary-encoded in one pass (``pyarrow.compute.dictionary_encode``
numbers values in order of first appearance, so the known texts keep their codes and new ones follow);
the per-file codes are then a numpy take. Without pyarrow (the line reader's lists of str) a dict does it.
Either way the rows' ``prompt`` codes are rewritten in place when their batch is taken (:meth:`finish`
takes the last one); memory holds the distinct texts of the run and of one batch.
"""

from __future__ import annotations

import numpy as np

from .common import intern_codes

__all__ = ["PromptIndex", "BATCH_FILES"]

BATCH_FILES = 64  #: files whose texts are hashed in one pass


class PromptIndex:
    """Run-wide prompt codes (see the module docstring). ``add(rows, texts)`` per file, then ``finish()``."""

    def __init__(self):
        try:
            import pyarrow as pa
            import pyarrow.compute as pc
        except ImportError:
            pa = pc = None
        self._pa, self._pc = pa, pc
        self._known = pa.array([], pa.large_string()) if pa is not None else None
        self._index: dict[str, int] = {}
        self._texts: list[str] = []
        self._batch: list = []

    def add(self, rows, texts) -> None:
        """Queue one file: ``rows.prompt`` holds codes into ``texts`` (a pyarrow string array or a list of str)."""
        if self._pa is None:
            local = intern_codes(list(texts), self._index, self._texts)
            rows.prompt = local[rows.prompt] if len(rows.prompt) else np.asarray(rows.prompt, np.int64)
            return
        self._batch.append((rows, texts if isinstance(texts, self._pa.Array) else self._pa.array(texts, self._pa.string())))
        if len(self._batch) >= BATCH_FILES:
            self._take()

    def _take(self) -> None:
        if not self._batch:
            return
        pa = self._pa
        arrays = [self._known] + [t.cast(pa.large_string()) for _, t in self._batch]  # no 2 GB offset limit
        enc = self._pc.dictionary_encode(pa.concat_arrays(arrays))
        codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        offset = len(self._known)
        for rows, texts in self._batch:
            local = codes[offset:offset + len(texts)]
            rows.prompt = local[rows.prompt] if len(rows.prompt) else np.zeros(0, np.int64)
            offset += len(texts)
        self._known = enc.dictionary
        self._batch = []

    def finish(self) -> "PromptIndex":
        """Take the last batch; every added file's ``rows.prompt`` then holds run-wide codes."""
        self._take()
        return self

    def __len__(self) -> int:
        return len(self._texts) if self._pa is None else len(self._known)

    def texts(self, codes) -> list[str]:
        """The texts of run-wide ``codes`` (after :meth:`finish`)."""
        codes = np.asarray(codes, np.int64)
        if self._pa is None:
            return [self._texts[int(c)] for c in codes]
        return self._known.take(self._pa.array(codes)).to_pylist()
