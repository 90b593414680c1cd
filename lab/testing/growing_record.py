"""A run record still being written (the core's ``RecordAppender``), for the live-replay tests: ``growing_record``
writes its first steps, ``append_step`` one more (four groups of G = 4 random binary rewards)."""

from __future__ import annotations

import numpy as np

from grpo_lab.sims.record_append import RecordAppender

G, N_PROMPTS = 4, 12


def append_step(app, s, rng):
    """Step ``s``: four distinct prompts, G rewards each, group-centred advantages."""
    ids = rng.choice(N_PROMPTS, 4, replace=False).astype(np.int64)
    rewards = rng.integers(0, 2, (4, G)).astype(float)
    app.append("groups", {"step": np.full(4, s, np.int64), "prompt_id": ids, "rewards": rewards,
                          "advantages": rewards - rewards.mean(axis=1, keepdims=True),
                          "lengths": np.full((4, G), 3, np.int64), "kept": np.ones(4, bool)})
    app.append("steps", {"step": np.array([s], np.int64), "reward_mean": np.array([rewards.mean()])})


def growing_record(path, steps):
    """A record at ``path`` with ``steps`` steps flushed, still open: (its appender, the random generator)."""
    app = RecordAppender(path, {"n_prompts": N_PROMPTS, "num_generations": G, "complete": False})
    rng = np.random.default_rng(0)
    for s in range(1, steps + 1):
        append_step(app, s, rng)
        app.flush(steps_completed=s)
    return app, rng
