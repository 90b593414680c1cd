"""The task: add two non-negative integers of 1 to 4 digits, answer checked exactly.

A prompt is the fixed-width string ``"{a:>4}+{b:>4}="`` (10 tokens, spaces pad the
operands on the left), a completion is the decimal sum written least significant digit first
(so each answer digit depends only on the digits above it and one carry, which a
tiny transformer can learn) followed by the end token ``"."``; ``12+9=`` is answered ``12.``. The verifier gives reward 1 when the completion, cut at its first end
token, equals the sum and the end token was produced, and 0 otherwise.

Difficulty comes from the operand widths (1 to 4 digits each, drawn uniformly) and
the carries they imply: after a short supervised warm start the tiny policy solves
one-digit sums every time and long sums never, the spread GRPO needs to show its
zero-variance groups at both tails.

The prompt set is fixed (600 prompts from :data:`TASK_SEED`), the same for every
run, so runs with different seeds and estimators are compared prompt by prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "VOCAB", "EOS", "PAD", "WIDTH", "PROMPT_LEN", "MAX_ANSWER_LEN", "BLOCK_SIZE", "TASK_SEED", "N_PROMPTS",
    "Problem", "encode", "decode", "draw_problems", "prompt_set", "reward", "rewards",
]

VOCAB = "0123456789+= ."  #: token i is VOCAB[i]
PAD = VOCAB.index(" ")  #: left padding of operands
EOS = VOCAB.index(".")  #: end of the answer
WIDTH = 4  #: the widest operand, in digits
PROMPT_LEN = 2 * WIDTH + 2  #: tokens in every prompt
MAX_ANSWER_LEN = WIDTH + 2  #: longest correct completion: WIDTH + 1 digits and the end token
BLOCK_SIZE = PROMPT_LEN + MAX_ANSWER_LEN  #: positions the policy model has: a prompt and the longest completion
TASK_SEED = 20250  #: seed of the fixed prompt set
N_PROMPTS = 600


@dataclass(frozen=True)
class Problem:
    a: int
    b: int

    @property
    def text(self) -> str:
        return f"{self.a:>{WIDTH}}+{self.b:>{WIDTH}}="

    @property
    def answer(self) -> str:
        return f"{str(self.a + self.b)[::-1]}."


def encode(text: str) -> list[int]:
    return [VOCAB.index(c) for c in text]


def decode(tokens) -> str:
    return "".join(VOCAB[int(t)] for t in tokens)


def draw_problems(n: int, rng: np.random.Generator, digit_weights=None) -> tuple[np.ndarray, np.ndarray]:
    """Operands (a, b) of ``n`` problems: each operand's digit count drawn from 1..WIDTH.

    Uniformly by default, or with probabilities proportional to ``digit_weights`` (length WIDTH).
    """
    w = np.ones(WIDTH) if digit_weights is None else np.asarray(digit_weights, dtype=float)
    digits = 1 + rng.choice(WIDTH, size=(2, n), p=w / w.sum())
    lo = np.where(digits == 1, 0, 10 ** (digits - 1))
    hi = 10 ** digits
    ops = lo + np.floor(rng.random((2, n)) * (hi - lo)).astype(np.int64)
    return ops[0], ops[1]


def prompt_set(n: int = N_PROMPTS, seed: int = TASK_SEED) -> list[Problem]:
    """The fixed prompt set: ``n`` distinct problems drawn under ``seed``."""
    rng = np.random.default_rng(seed)
    seen: dict[tuple[int, int], None] = {}
    while len(seen) < n:
        a, b = draw_problems(n, rng)
        for pair in zip(a.tolist(), b.tolist()):
            if len(seen) < n:
                seen.setdefault(pair, None)
    return [Problem(a, b) for a, b in seen]


def reward(problem: Problem, completion) -> float:
    """1.0 if ``completion`` (tokens) spells the sum and then the end token, else 0.0."""
    return float(decode(completion)[: len(problem.answer)] == problem.answer)


def rewards(problems: list[Problem], completions: np.ndarray) -> np.ndarray:
    """Vectorised :func:`reward` over rows of a (n, MAX_ANSWER_LEN) token array (anything after the end token is ignored)."""
    target = np.full((len(problems), MAX_ANSWER_LEN), -1, dtype=np.int64)
    mask = np.zeros_like(target, dtype=bool)
    for i, p in enumerate(problems):
        t = encode(p.answer)
        target[i, : len(t)] = t
        mask[i, : len(t)] = True
    comp = np.asarray(completions, dtype=np.int64)[:, :MAX_ANSWER_LEN]
    return np.all((comp == target) | ~mask, axis=1).astype(np.float64)
