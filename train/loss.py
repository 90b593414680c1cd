r"""The GRPO loss: clipped surrogate, optional k3 KL, and three ways to aggregate over tokens.

Per completion token t of completion i (mask m_it), with ratio
rho_it = exp(log pi(y_it) - log pi_old(y_it)) and advantage A_i,

    l_it = -min(rho_it A_i, clip(rho_it, 1 - epsilon, 1 + epsilon_high) A_i) + beta k3_it,
    k3_it = exp(r_it) - r_it - 1,  r_it = log pi_ref(y_it) - log pi(y_it)

(k3 is an unbiased, non-negative estimator of KL(pi || pi_ref)). The clip fraction counts, as TRL's
``clip_ratio/region_mean`` does, only tokens where the clip binds, i.e. where the min picks the
clipped term and its gradient is cut off:

    clipped_it = (rho_it < 1 - epsilon and A_i < 0) or (rho_it > 1 + epsilon_high and A_i > 0),
    clip_frac  = sum_it m_it clipped_it / sum_it m_it

(a ratio outside the range on the other side of the advantage keeps the unclipped term and its
gradient, so it is not counted). The loss is

    grpo     mean_i [ sum_t m_it l_it / sum_t m_it ]            (per-sequence mean)
    dr_grpo  sum_it m_it l_it / (B * max_completion_length)     (fixed normaliser)
    dapo     sum_it m_it l_it / sum_it m_it                     (token mean over the batch)

With A_i = 0 for every completion of a group and beta = 0, every l_it of that
group is exactly 0 whatever the ratio, so the group adds nothing to the gradient;
the trainer then leaves such rows out of the forward pass and passes the batch's
``n_rows`` and ``n_tokens`` so that the normalisers (and the loss) are unchanged.
"""

from __future__ import annotations

import torch


def per_token_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(pi || pi_ref) per token."""
    r = ref_logp - logp
    return torch.exp(r) - r - 1


def grpo_loss(logp, old_logp, advantages, mask, *, loss_type: str, epsilon: float, epsilon_high: float,
              beta: float = 0.0, ref_logp=None, max_completion_length: int | None = None,
              n_rows: int | None = None, n_tokens: int | None = None):
    """Scalar loss and a dict of diagnostics (mean token KL when ``ref_logp`` is given, clip fraction).

    ``logp``, ``old_logp``, ``ref_logp``, ``mask``: (B, L); ``advantages``: (B,).
    ``n_rows``, ``n_tokens``: completions and completion tokens of the whole batch when only some
    of its rows are passed (the others having zero loss); default: B and mask.sum().
    """
    mask = mask.to(logp.dtype)
    ratio = torch.exp(logp - old_logp)
    adv = advantages.to(logp.dtype).unsqueeze(1)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon_high) * adv
    per_token = -torch.min(unclipped, clipped)
    kl = per_token_kl(logp, ref_logp) if ref_logp is not None else None
    if beta > 0:
        per_token = per_token + beta * kl
    B = mask.shape[0] if n_rows is None else n_rows
    n_tok = mask.sum().clamp(min=1) if n_tokens is None else max(n_tokens, 1)
    if loss_type == "grpo":
        loss = ((per_token * mask).sum(1) / mask.sum(1).clamp(min=1)).sum() / max(B, 1)
    elif loss_type == "dr_grpo":
        loss = (per_token * mask).sum() / (max(B, 1) * (max_completion_length or mask.shape[1]))
    elif loss_type == "dapo":
        loss = (per_token * mask).sum() / n_tok
    else:
        raise ValueError(f"unknown loss_type {loss_type!r}")
    binds = ((ratio < 1 - epsilon) & (adv < 0)) | ((ratio > 1 + epsilon_high) & (adv > 0))
    stats = {
        "kl": float(((kl * mask).sum() / n_tok).detach()) if kl is not None else float("nan"),
        "clip_frac": float((binds.to(logp.dtype) * mask).sum().detach() / n_tok),
    }
    return loss, stats
