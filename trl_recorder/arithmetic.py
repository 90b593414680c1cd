r"""A verifiable task for the real language-model run: arithmetic questions in tiers of difficulty.

Tier (operation, operand ranges), easiest first::

    0  a + b        a, b in 1..9
    1  a + b        a in 10..99, b in 1..9
    2  a + b        a, b in 10..99
    3  a x b        a in 10..99, b in 2..9
    4  a x b        a, b in 10..99

Each prompt is one user message ``"What is a + b? Reply with the number only."``;
the answer checker takes the *last* integer written in the completion (an optional
minus sign, digits, thousands commas removed) and compares it exactly with the answer:
the small model tends to restate the question (``"7 + 5 = 12"``), so the first number
would be an operand.
The reward is binary: 1.0 for the exact answer, 0.0 otherwise (no number: 0.0).

The prompt set is drawn with ``numpy.random.default_rng(seed)``: the same seed gives
the same questions; ``per_tier`` questions per tier, tiers interleaved.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["TIERS", "make_prompts", "extract_answer", "check_answer", "reward_exact"]

#: tier -> (operator, (low, high) of a, (low, high) of b), bounds inclusive
TIERS = {
    0: ("+", (1, 9), (1, 9)),
    1: ("+", (10, 99), (1, 9)),
    2: ("+", (10, 99), (10, 99)),
    3: ("*", (10, 99), (2, 9)),
    4: ("*", (10, 99), (10, 99)),
}
_SYMBOL = {"+": "+", "*": "x"}
_NUMBER = re.compile(r"-?\d[\d,]*")


def make_prompts(per_tier: int, seed: int = 0, tiers=tuple(TIERS)) -> list[dict]:
    """``per_tier`` questions of each tier: dicts with ``prompt`` (a one-message conversation),
    ``answer`` (int), ``tier`` (the tag, ``"t<k>"``), ``question`` (text) and ``prompt_id``."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(per_tier):
        for t in tiers:
            op, (alo, ahi), (blo, bhi) = TIERS[t]
            a, b = int(rng.integers(alo, ahi + 1)), int(rng.integers(blo, bhi + 1))
            question = f"What is {a} {_SYMBOL[op]} {b}? Reply with the number only."
            rows.append({"prompt": [{"role": "user", "content": question}], "question": question,
                         "answer": a + b if op == "+" else a * b, "tier": f"t{t}"})
    for pid, row in enumerate(rows):
        row["prompt_id"] = pid
    return rows


def extract_answer(completion) -> int | None:
    """The last integer written in a completion (text or a list of chat messages); None if none."""
    if isinstance(completion, list):
        completion = " ".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    found = _NUMBER.findall(str(completion))
    if not found:
        return None
    digits = found[-1].replace(",", "")
    try:
        return int(digits)
    except ValueError:
        return None


def check_answer(completion, answer: int) -> bool:
    """Exact match of :func:`extract_answer` with ``answer``."""
    return extract_answer(completion) == int(answer)


def reward_exact(prompts, completions, answer, **kwargs) -> list[float]:
    """TRL reward function: 1.0 for an exact answer, else 0.0."""
    return [1.0 if check_answer(c, a) else 0.0 for c, a in zip(completions, answer)]
