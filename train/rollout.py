"""Rollout: temperature sampling of completions, and the log-probabilities the loss needs."""

from __future__ import annotations

import torch
from torch.nn import functional as F

from .task import EOS


@torch.no_grad()
def sample(model, prompts: torch.Tensor, max_len: int, temperature: float, generator: torch.Generator,
           return_logprobs: bool = False):
    """Draw one completion per row of ``prompts`` (B, P).

    Returns ``completions`` (B, max_len) token ids, ``mask`` (B, max_len) True up to and
    including the first end token, and ``lengths`` (B,) = mask.sum(1); with ``return_logprobs``
    also the sampling log-probabilities log pi(y_t | x, y_<t) at ``temperature``, (B, max_len)
    (what :func:`token_logprobs` gives for the same tokens, up to rounding).
    """
    was_training = model.training
    model.eval()
    logits, cache = model.decode(prompts)  # the prompt once, then one token at a time against the cache
    out, logps = [], []
    for t in range(max_len):
        probs = F.softmax(logits[:, -1, :].float() / temperature, dim=-1)
        nxt = torch.multinomial(probs, 1, generator=generator)
        out.append(nxt)
        if return_logprobs:
            logps.append(torch.log(torch.gather(probs, 1, nxt)))
        if t + 1 < max_len:
            logits, cache = model.decode(nxt, cache)
    model.train(was_training)
    completions = torch.cat(out, dim=1)
    ended_before = torch.cumsum((completions == EOS).int(), dim=1) - (completions == EOS).int()
    mask = ended_before == 0
    if return_logprobs:
        return completions, mask, mask.sum(dim=1), torch.cat(logps, dim=1)
    return completions, mask, mask.sum(dim=1)


def token_logprobs(model, prompts: torch.Tensor, completions: torch.Tensor, temperature: float) -> torch.Tensor:
    """log pi(y_t | x, y_<t) at ``temperature`` for every completion token, shape (B, L)."""
    ids = torch.cat([prompts, completions], dim=1)
    logits = model(ids[:, :-1])[:, prompts.shape[1] - 1:, :].float() / temperature
    return torch.gather(F.log_softmax(logits, dim=-1), 2, completions.unsqueeze(-1)).squeeze(-1)
