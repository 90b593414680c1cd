r"""Prompt lists for the next run: retire, hard buffer, live middle.

From every draw of every prompt in the run (binarised successes, see :mod:`.groups`):

* **retire** candidates: drawn at least ``N`` times and all-pass in each of the last
  ``N`` draws (``N`` = :data:`DEFAULT_RETIRE_AFTER` unless given);
* **hard** buffer: drawn, and never solved (no passing rollout in any draw);
* **live** middle: every other drawn prompt.

Prompts never drawn are counted, not listed. Each list is written as JSON Lines,
one ``{"prompt_id", "text" (when the record has prompt texts), "draws",
"successes", "rollouts", "last_step"}`` per prompt, atomically (temporary file +
rename), ready to filter a dataset by id.

:data:`CAUTION`: retiring prompts for good can make the policy forget them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..record import atomic_write_bytes
from .groups import RunGroups
from .skip import sorted_draws

__all__ = ["DEFAULT_RETIRE_AFTER", "LISTS", "CAUTION", "prompt_lists", "write_prompt_lists"]

DEFAULT_RETIRE_AFTER = 3  #: all-pass in this many latest draws makes a retire candidate
LISTS = ("retire", "hard", "live")
CAUTION = ("Retiring prompts for good can make the policy forget them (others report instability from it): "
           "prefer to re-check retired prompts periodically, or down-weight them, over deleting them.")


def prompt_lists(groups: RunGroups, retire_after: int = DEFAULT_RETIRE_AFTER) -> dict:
    """``{retire, hard, live: [row, ...], counts: {...}, retire_after, caution}`` (see the module docstring)."""
    if not isinstance(retire_after, (int, np.integer)) or retire_after < 1:
        raise InputError(f"retire-after must be a positive integer, got {retire_after!r}")
    order, same = sorted_draws(groups)
    S, K = groups.successes[order], groups.K
    pid, step = groups.prompt_id[order], groups.step[order]
    P = groups.n_prompts
    draws = np.bincount(pid, minlength=P)
    succ = np.bincount(pid, weights=S, minlength=P).astype(np.int64)
    last_step = np.full(P, -1, np.int64)
    last_step[pid] = step  # sorted by step within a prompt: the last write is the latest draw
    # all-pass streak ending at each prompt's last draw
    idx = np.arange(len(S))
    ap = S == K
    start = np.concatenate([[True], ~same])
    brk = np.where(~ap, idx, -1)
    brk = np.where(start & ap, idx - 1, brk)
    streak = idx - np.maximum.accumulate(brk)
    end = np.concatenate([~same, [True]])
    tail_streak = np.zeros(P, np.int64)
    tail_streak[pid[end]] = streak[end]
    seen = draws > 0
    retire = seen & (tail_streak >= retire_after)
    hard = seen & (succ == 0) & ~retire
    live = seen & ~retire & ~hard

    def rows(mask):
        out = []
        for x in np.flatnonzero(mask):
            row = {"prompt_id": int(x)}
            if groups.labels is not None:
                row["text"] = str(groups.labels[x])
            row.update(draws=int(draws[x]), successes=int(succ[x]), rollouts=int(draws[x]) * K,
                       last_step=int(last_step[x]))
            out.append(row)
        return out

    return {"retire": rows(retire), "hard": rows(hard), "live": rows(live),
            "counts": {"retire": int(retire.sum()), "hard": int(hard.sum()), "live": int(live.sum()),
                       "never_drawn": int((~seen).sum())},
            "retire_after": int(retire_after), "caution": CAUTION}


def write_prompt_lists(lists: dict, out_dir) -> dict[str, str]:
    """Write ``retire.jsonl``, ``hard.jsonl`` and ``live.jsonl`` into ``out_dir`` atomically; return their paths."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {str(out)!r}: {exc.strerror}") from None
    paths = {}
    for name in LISTS:
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in lists[name])
        try:
            atomic_write_bytes(out / f"{name}.jsonl", text.encode("utf-8"))
        except OSError as exc:
            raise InputError(f"cannot write {str(out / (name + '.jsonl'))!r}: {exc.strerror}") from None
        paths[name] = str(out / f"{name}.jsonl")
    return paths
