"""A small, real GRPO run: a tiny causal transformer learns multi-digit addition from a verifier.

Only :mod:`sims.trainer.task` and :mod:`sims.trainer.config` are importable without
torch; the rest import it at module level and are loaded by ``grpo-lab train`` on demand.

- :mod:`sims.trainer.task`    the problems, the tokenizer, the verifier, the fixed set of 600 prompts
- :mod:`sims.trainer.config`  :class:`GRPOConfig` (TRL's option names) and its validation
- :mod:`sims.trainer.model`   a nanoGPT-style causal transformer (plain PyTorch)
- :mod:`sims.trainer.sft`     the deterministic supervised warm start
- :mod:`sims.trainer.rollout` temperature sampling of completions and their log-probabilities
- :mod:`sims.trainer.loss`    clipped surrogate, k3 KL, the loss aggregations grpo / dr_grpo / dapo
- :mod:`sims.trainer.loop`    the training loop: sampling, dynamic sampling, recording, resume
"""
