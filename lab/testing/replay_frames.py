"""A reference decoder of the Replay tab's sparse grid frames (``grpo_lab.replay.grid.frames_data``), for tests.

Written from the format's description, not from the browser's code: per run, ``offsets`` (steps + 1, i4)
and per kept cell its ``prompt`` (``index`` dtype), ``codes`` (i1), ``k`` and ``K`` (``counts`` dtype);
every other cell of a step is ``not_sampled`` with k = K = 0.
"""

from __future__ import annotations

import base64

import numpy as np

__all__ = ["array", "decode_dense"]


def array(text: str, dtype: str) -> np.ndarray:
    """A base64 little-endian array of ``dtype`` ("i4", "u2", ...)."""
    return np.frombuffer(base64.b64decode(text), dtype=np.dtype("<" + dtype))


def decode_dense(run: dict, n_steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One run's frames as dense (codes, k, K), each (steps, prompts) int64; checks the layout on the way."""
    n = len(run["prompts"])
    offsets = array(run["offsets"], "i4")
    prompt = array(run["prompt"], run["index"])
    code, k, K = array(run["codes"], "i1"), array(run["k"], run["counts"]), array(run["K"], run["counts"])
    assert len(offsets) == n_steps + 1 and offsets[0] == 0 and offsets[-1] == len(prompt) == len(code)
    assert np.all(np.diff(offsets) >= 0) and len(k) == len(K) == len(code)
    codes = np.full((n_steps, n), run["not_sampled"], np.int64)
    kk, KK = np.zeros((n_steps, n), np.int64), np.zeros((n_steps, n), np.int64)
    for s in range(n_steps):
        cells = slice(offsets[s], offsets[s + 1])
        at = prompt[cells]
        assert len(np.unique(at)) == len(at), "a prompt twice in one step"
        codes[s, at], kk[s, at], KK[s, at] = code[cells], k[cells], K[cells]
    return codes, kk, KK
