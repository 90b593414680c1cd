"""The supervised warm start: a few hundred steps of teacher forcing on random problems, fully seeded.

Training problems are drawn fresh each step from the same generator as the prompt
set (under the run's seed, not the prompt set's), and the loss is cross-entropy on
the answer tokens only. The same seed gives the same starting policy on the same
device and torch build.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from .task import MAX_ANSWER_LEN, PROMPT_LEN, Problem, draw_problems, encode


def sequences(problems: list[Problem]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (n, PROMPT_LEN + MAX_ANSWER_LEN) of prompt + answer, and the answer mask (end token padded)."""
    n, L = len(problems), PROMPT_LEN + MAX_ANSWER_LEN
    ids = np.full((n, L), encode(".")[0], dtype=np.int64)
    mask = np.zeros((n, L), dtype=bool)
    for i, p in enumerate(problems):
        t = encode(p.text + p.answer)
        ids[i, : len(t)] = t
        mask[i, PROMPT_LEN: len(t)] = True
    return torch.from_numpy(ids), torch.from_numpy(mask)


def warm_start(model, steps: int, batch_size: int, learning_rate: float, seed: int, device, digit_weights=None) -> list[float]:
    """Train ``model`` in place on ``steps`` batches; returns the loss per step."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
    opt = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    losses = []
    model.train()
    for step in range(steps):
        a, b = draw_problems(batch_size, rng, digit_weights)
        ids, mask = sequences([Problem(int(x), int(y)) for x, y in zip(a, b)])
        ids, mask = ids.to(device), mask.to(device)
        logits = model(ids[:, :-1])
        lr = learning_rate * min(1.0, (step + 1) / 20) * 0.5 * (1 + np.cos(np.pi * step / max(steps, 1)))
        for g in opt.param_groups:
            g["lr"] = lr
        loss = F.cross_entropy(logits[mask[:, 1:]], ids[:, 1:][mask[:, 1:]])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses
