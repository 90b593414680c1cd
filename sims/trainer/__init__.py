"""A small, real GRPO run: a tiny causal transformer learns multi-digit addition from a verifier.

Only :mod:`grpo_lab.sims.trainer.task`, :mod:`grpo_lab.sims.trainer.config` and
:mod:`grpo_lab.sims.trainer.study` are importable without torch; the rest import it at module level and are loaded by ``grpo-lab train`` on demand.

- :mod:`grpo_lab.sims.trainer.task`    the problems, the tokenizer, the verifier, the fixed set of 600 prompts
- :mod:`grpo_lab.sims.trainer.config`  :class:`GRPOConfig` (TRL's option names) and its validation
- :mod:`grpo_lab.sims.trainer.model`   a nanoGPT-style causal transformer (plain PyTorch)
- :mod:`grpo_lab.sims.trainer.sft`     the deterministic supervised warm start
- :mod:`grpo_lab.sims.trainer.rollout` temperature sampling of completions and their log-probabilities
- :mod:`grpo_lab.sims.trainer.loss`    clipped surrogate, k3 KL, the loss aggregations grpo / dr_grpo / dapo
- :mod:`grpo_lab.sims.trainer.loop`    the training loop: sampling, dynamic sampling, recording, resume
- :mod:`grpo_lab.sims.trainer.study`   the controlled estimator study: presets, cells, intervals, tables
"""
