"""A folder of runs for the fleet's tests and benchmark: run records with groups, scalars-only records and tracker
logs (metrics.jsonl), each a run whose pass rates drift at its own speed, some still being written.

Every run draws ``groups`` groups of K = 8 binary rewards a step from prompts whose pass rates are a Beta(2, 3)
population moved on the logit scale by ``speed * step / 100``; its logged mixed share is the share of those groups
whose rewards are not all equal. A groups record holds the groups (:class:`~grpo_lab.sims.record_append.RecordAppender`,
left open: it can grow); a scalars record only the per-step shares (``frac_reward_zero_std``, ``groups_per_step``);
a tracker log writes tinker-cookbook's names (``env/all/by_group/frac_mixed`` and its all-good / all-bad shares) a
line a step. :func:`grow` appends steps to any of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.special import expit, logit

from grpo_lab.sims.record import write_record
from grpo_lab.sims.record_append import RecordAppender
from grpo_lab.sims.scalars_record import scalars_record

__all__ = ["K", "GROUPS", "Run", "make_fleet", "grow"]

K, GROUPS = 8, 32


class Run:
    """One run of the folder: ``kind`` groups / scalars / jsonl, its speed, the steps written and its writer."""

    def __init__(self, root: Path, name: str, kind: str, speed: float, seed: int):
        self.path, self.kind, self.speed = root / name, kind, speed
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.p0 = np.sort(self.rng.beta(2.0, 3.0, 200))
        self.step = 0
        self.app = None
        self.shares: list[tuple[int, float, float, float]] = []  # (step, mixed, all pass, all fail) as written

    def _draw(self, s: int):
        p = expit(logit(np.clip(self.p0, 1e-3, 1 - 1e-3)) + self.speed * s / 100.0)
        ids = self.rng.choice(len(p), GROUPS, replace=False)
        rewards = (self.rng.random((GROUPS, K)) < p[ids, None]).astype(float)
        ap = float(np.mean(rewards.min(axis=1) == 1))
        af = float(np.mean(rewards.max(axis=1) == 0))
        return ids, rewards, ap, af

    def write(self, n: int) -> None:
        """Append ``n`` steps (a scalars record is rewritten whole: such a record is written once, finished)."""
        rows = []
        for _ in range(n):
            self.step += 1
            ids, rewards, ap, af = self._draw(self.step)
            self.shares.append((self.step, 1.0 - ap - af, ap, af))
            rows.append((self.step, ids, rewards, ap, af))
        if self.kind == "groups":
            if self.app is None:
                self.app = RecordAppender(self.path, {"n_prompts": len(self.p0), "num_generations": K,
                                                      "name": self.name, "complete": False})
            for s, ids, rewards, ap, af in rows:
                self.app.append("groups", {"step": np.full(GROUPS, s, np.int64), "prompt_id": ids.astype(np.int64),
                                           "rewards": rewards, "advantages": rewards - rewards.mean(1, keepdims=True),
                                           "lengths": np.full((GROUPS, K), 3, np.int64),
                                           "kept": np.ones(GROUPS, bool)})
                self.app.append("steps", {"step": np.array([s], np.int64),
                                          "frac_reward_zero_std": np.array([ap + af]),
                                          "frac_all_pass": np.array([ap]), "frac_all_fail": np.array([af])})
            self.app.flush(steps_completed=self.step)
        elif self.kind == "scalars":
            s, mixed, ap, af = (np.array(c) for c in zip(*self.shares))
            rec = scalars_record(self.name, s.astype(np.int64), {"frac_all_pass": ap, "frac_all_fail": af,
                                                                  "frac_reward_zero_std": ap + af,
                                                                  "groups_per_step": np.full(len(s), GROUPS, float)},
                                 num_generations=K, source={"format": "test", "trainer": None})
            write_record(self.path, rec)
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            if not (self.path / "config.json").exists():
                (self.path / "config.json").write_text(json.dumps({"group_size": K, "groups_per_batch": GROUPS}))
            with open(self.path / "metrics.jsonl", "a") as fh:
                for s, _, _, ap, af in rows:
                    fh.write(json.dumps({"step": s, "env/all/by_group/frac_mixed": 1.0 - ap - af,
                                         "env/all/by_group/frac_all_good": ap,
                                         "env/all/by_group/frac_all_bad": af}) + "\n")


def make_fleet(root, n: int = 50, steps: int = 60, seed: int = 0) -> list[Run]:
    """``n`` runs under ``root`` (kinds in turn: groups, scalars, jsonl), each with ``steps`` steps written and its
    own drift speed (from 0.5 to 4 on the logit scale per 100 steps)."""
    root = Path(root)
    kinds = ("groups", "scalars", "jsonl")
    rng = np.random.default_rng(seed)
    runs = []
    for i in range(n):
        kind = kinds[i % 3]
        run = Run(root, f"{kind}-{i:02d}", kind, float(rng.uniform(0.5, 4.0)), seed + i)
        run.write(steps)
        runs.append(run)
    return runs


def grow(runs: list[Run], n: int) -> None:
    """Append ``n`` steps to each of ``runs``."""
    for run in runs:
        run.write(n)
