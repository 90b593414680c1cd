r"""NeMo-RL: dynamic sampling in generation batches of ``num_prompts_per_step x batch_multiplier`` prompts.

Source: NVIDIA-NeMo/RL at 7ea279a (2026-08-22, ``nemo_rl`` 0.6.0): ``nemo_rl/algorithms/grpo.py``
(``GRPOConfig``; the data setup multiplying the prompt batch by ``batch_multiplier`` when dynamic sampling is on;
``dynamic_sampling()``: groups with reward std 0 dropped, the kept ones cached until ``num_prompts_per_step``
are held, the surplus sliced off; the counter ``dynamic_sampling_num_gen_batches`` incremented before the check
``num_gen_batches <= dynamic_sampling_max_gen_batches``, else ``ValueError``), ``examples/configs/grpo_math_1B.yaml``.

=========================================  ===================================================================
key                                        read as
=========================================  ===================================================================
``grpo.num_prompts_per_step``              T (default 32)
``grpo.batch_multiplier``                  B = int(T x batch_multiplier) (default 1; > 1 only with dynamic sampling)
``grpo.num_generations_per_prompt``        K (default 16)
``grpo.use_dynamic_sampling``              on (default false)
``grpo.dynamic_sampling_max_gen_batches``  M (default 10, must be > 0): a step still short after batch M
                                           generates batch M + 1 and raises only if still short, so the cap in
                                           rounds is M + 1 (read so here)
=========================================  ===================================================================
"""

from __future__ import annotations

from ...errors import InputError
from ._keys import as_float, as_int

__all__ = ["read", "looks_like"]


def looks_like(nested: dict) -> bool:
    return isinstance(nested.get("grpo"), dict) and any(
        k in nested["grpo"] for k in ("num_prompts_per_step", "num_generations_per_prompt", "use_dynamic_sampling"))


def read(d: dict) -> dict:
    g = d["grpo"]
    T = as_int(g.get("num_prompts_per_step", 32), "grpo.num_prompts_per_step")
    K = as_int(g.get("num_generations_per_prompt", 16), "grpo.num_generations_per_prompt", 2)
    on = bool(g.get("use_dynamic_sampling", False))
    mult = as_float(g.get("batch_multiplier", 1.0), "grpo.batch_multiplier")
    if mult <= 0 or (mult != 1 and not on):
        raise InputError(f"trainer config (NeMo-RL): grpo.batch_multiplier must be positive, and 1 without "
                         f"use_dynamic_sampling (as NeMo-RL asserts), got {mult!r}")
    M = as_int(g.get("dynamic_sampling_max_gen_batches", 10), "grpo.dynamic_sampling_max_gen_batches")
    B = max(1, int(T * mult)) if on else T
    return {"trainer": "nemo-rl", "train_batch": T, "gen_batch": B, "cap": M + 1, "pool": None, "K": K, "enable": on,
            "scheme": "rounds", "inflight": None, "note": None, "gen_per_train": mult if on else 1.0}
