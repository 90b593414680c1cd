r"""A reward vector typed as text, parsed once for every caller: the lab's advantage explorer (``lab/state.py``) and
``grpo-lab advantages --rewards`` (``lab/commands/core.py``) read the same text the same way and differ only in how
they word a refusal.

:func:`parse_rewards`: the words of ``text`` separated by commas, semicolons or whitespace (empty words skipped:
``"1,, 0"`` is two rewards), each a float as Python reads one (``1``, ``0.5``, ``-2e-3``); the vector as
:func:`grpo_lab.sims.advantages.as_rewards` returns it. A text that does not parse raises :class:`RewardTextError`
(an :class:`~grpo_lab.sims.errors.InputError`) whose ``kind`` says why, so each caller words it its own way:

``empty``         no word at all
``too_many``      more than ``max_count`` words (``count`` of them), where a cap is given
``not_a_number``  ``word`` is the first word that is not a number
``not_finite``    a word reads NaN or infinity (``word`` the first)
"""

from __future__ import annotations

import math
import re

import numpy as np

from .advantages import as_rewards
from .errors import InputError

__all__ = ["RewardTextError", "parse_rewards", "SEPARATORS"]

SEPARATORS = re.compile(r"[,;\s]+")  #: what separates typed rewards: commas, semicolons, whitespace


class RewardTextError(InputError):
    """Why a typed reward vector does not parse (module docstring): ``kind``, ``word`` (the offending word or
    None), ``count`` (the words typed)."""

    def __init__(self, kind: str, message: str, word: str | None = None, count: int = 0):
        super().__init__(message)
        self.kind, self.word, self.count = kind, word, count


def parse_rewards(text: str, max_count: int | None = None) -> np.ndarray:
    """The rewards typed in ``text`` (module docstring); ``max_count``: the most words taken (None: no cap)."""
    words = [w for w in SEPARATORS.split(str(text)) if w]
    if not words:
        raise RewardTextError("empty", "no number typed")
    if max_count is not None and len(words) > max_count:
        raise RewardTextError("too_many", f"{len(words):,} rewards typed; at most {max_count:,}", count=len(words))
    values = []
    for w in words:
        try:
            values.append(float(w))
        except ValueError:
            raise RewardTextError("not_a_number", f"{w!r} is not a number", w, len(words)) from None
    bad = next((w for w, v in zip(words, values) if not math.isfinite(v)), None)
    if bad is not None:
        raise RewardTextError("not_finite", f"{bad!r} is not a finite number", bad, len(words))
    return as_rewards(values)
