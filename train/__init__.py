"""A small, real GRPO run: a tiny causal transformer learns multi-digit addition from a verifier.

Only :mod:`grpo_lab.train.task`, :mod:`grpo_lab.train.config` and
:mod:`grpo_lab.train.study` are importable without torch; the rest import it at module level and are loaded by ``grpo-lab train`` on demand.

- :mod:`grpo_lab.train.task`    the problems, the tokenizer, the verifier, the fixed set of 600 prompts
- :mod:`grpo_lab.train.config`  :class:`GRPOConfig` (TRL's option names) and its validation
- :mod:`grpo_lab.train.model`   a nanoGPT-style causal transformer (plain PyTorch)
- :mod:`grpo_lab.train.sft`     the deterministic supervised warm start
- :mod:`grpo_lab.train.rollout` temperature sampling of completions and their log-probabilities
- :mod:`grpo_lab.train.loss`    clipped surrogate, k3 KL, the loss aggregations grpo / dr_grpo / dapo
- :mod:`grpo_lab.train.loop`    the training loop: sampling, dynamic sampling, recording, resume
- :mod:`grpo_lab.train.study`   the controlled estimator study: presets, cells, intervals, tables
- :mod:`grpo_lab.train.warmstart` the shipped warm starts (runs/warmstarts): save, find, load with a hash check
- :mod:`grpo_lab.train.reproduce` rerun a recorded cell's first steps and compare them with its record
"""
