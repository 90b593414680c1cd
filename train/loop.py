"""The training loop, readable in one sitting.

Per step: draw prompts, sample G completions each, score them with the verifier,
compute advantages with :func:`sims.advantages.advantages` (the core's estimators,
in numpy, then ``torch.as_tensor``), and take ``num_iterations`` Adam steps on the
clipped surrogate of :mod:`grpo_lab.train.loss`. With ``dynamic_sampling`` (DAPO, as
verl's ``filter_groups`` does it), groups whose rewards have no spread are dropped and fresh prompts
are drawn in rounds of ``prompts_per_step`` until the batch holds ``prompts_per_step`` groups; the
surplus of the last round is trimmed, and a step never trains on a partial batch: when the prompt set
(or ``max_num_gen_batches``) cannot fill it, the run ends there with :class:`BatchNotFilled`'s message
(recorded in the record's ``end_reason``).

Every group, kept or dropped, goes into the run record (:mod:`grpo_lab.sims.record`), with
per-step metrics and evaluations of every prompt (``eval_samples`` completions each)
at step 0, every ``eval_every`` steps and after the last step. Every ``save_every``
steps, at the end, and when the run is stopped (Ctrl-C or SIGTERM: the step in progress
is finished first), the record is rewritten atomically, then the model and optimizer
state go to ``checkpoint.pt`` (also atomically); both always describe the same step, so
a run killed at any moment leaves a valid record of the steps completed by its last save
and ``resume=True`` continues it from there. Every random draw of step s comes from
generators keyed by (seed, s), and the learning rate is a function of s alone, so a
resumed run repeats exactly the draws and updates an uninterrupted one would make.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import platform
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from grpo_lab.sims import __version__
from grpo_lab.sims.advantages import advantages as estimate, max_abs_advantage
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record import RunRecord, atomic_write_bytes, group_outcomes, read_record, summarise, write_record
from .config import GRPOConfig
from .loss import grpo_loss
from .model import TinyGPT
from .rollout import sample, token_logprobs
from . import warmstart
from .sft import warm_start
from .task import BLOCK_SIZE, VOCAB, encode, prompt_set, rewards as verify

CHECKPOINT = "checkpoint.pt"
_KEY_STEP, _KEY_EVAL = 2, 3
EVAL_SEED = 0  #: evaluations draw from (EVAL_SEED, step): every run is scored with the same random numbers
_SFT_SOURCES = ("sft.py", "model.py", "task.py")  #: files whose code the cached warm start depends on


class BatchNotFilled(Exception):
    """Dynamic sampling could not fill a step's batch: the run ends (the step is not trained)."""


@dataclass
class Batch:
    """The groups sampled in one round: G rows per prompt, prompt-major."""

    prompt_ids: np.ndarray  # (n,)
    completions: torch.Tensor  # (n*G, L)
    mask: torch.Tensor  # (n*G, L)
    rewards: np.ndarray  # (n, G)
    advantages: np.ndarray  # (n, G)
    lengths: np.ndarray  # (n, G)
    logprobs: torch.Tensor | None = None  # (n*G, L) sampling log-probabilities


@dataclass
class State:
    """Everything a resumed run needs besides the record: the curriculum pools of dynamic sampling.

    ``streak[i]``: consecutive all-pass groups of prompt i (retired at ``retire_after``);
    ``hard``: prompts whose last group was all-fail, oldest first.
    """

    retired: set = field(default_factory=set)
    hard: list = field(default_factory=list)
    streak: dict = field(default_factory=dict)


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise InputError(f"unknown device {device!r}; choose auto, cpu or cuda")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError("--device cuda was asked for but torch sees no CUDA device")
    return torch.device(device)


def _generators(seed: int, key: int, step: int, device) -> tuple[np.random.Generator, torch.Generator]:
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(key, step)))
    gen = torch.Generator(device=device)
    gen.manual_seed(int(rng.integers(2**62)))
    return rng, gen


# ---------------------------------------------------------------- stages (pure functions)

def rollout(model, prompt_tokens, prompt_ids, cfg: GRPOConfig, gen):
    """G completions for each prompt id: tokens, masks and sampling log-probabilities, shape (n*G, L)."""
    x = prompt_tokens[torch.as_tensor(prompt_ids, device=prompt_tokens.device)]
    x = x.repeat_interleave(cfg.num_generations, dim=0)
    completions, mask, _, logp = sample(model, x, cfg.max_completion_length, cfg.temperature, gen,
                                        return_logprobs=True)
    return completions, mask, logp


def reward(problems, prompt_ids, completions, G: int) -> np.ndarray:
    """Verifier rewards, shape (n, G)."""
    rows = [problems[i] for i in prompt_ids for _ in range(G)]
    return verify(rows, completions.cpu().numpy()).reshape(len(prompt_ids), G)


def advantage(rewards: np.ndarray, estimator: str) -> np.ndarray:
    """The core's estimator, row by row (one implementation for the lab and the trainer)."""
    return estimate(rewards, estimator) if len(rewards) else np.zeros_like(rewards)


def ds_metrics(drawn: int, kept: int, dropped: dict) -> dict:
    """Per-step figures of dynamic sampling (record keys ``ds/...``, kept apart from the plain figures).

    effective_group_rate  = 1 - (all-pass + all-fail dropped) / drawn   (share of drawn groups with spread)
    rollout_amplification = drawn / kept                                 (groups generated per group trained)
    ``dropped_surplus``: groups with spread drawn in the last round beyond the batch and trimmed (verl does too).
    """
    zero = dropped["all_pass"] + dropped["all_fail"]
    return {
        "ds/groups_drawn": drawn,
        "ds/groups_kept": kept,
        "ds/effective_group_rate": 1 - zero / drawn if drawn else float("nan"),
        "ds/rollout_amplification": drawn / kept if kept else float("nan"),
        "ds/dropped_all_pass": dropped["all_pass"],
        "ds/dropped_all_fail": dropped["all_fail"],
        "ds/dropped_surplus": dropped["surplus"],
    }


def learning_rate(cfg: GRPOConfig, step: int) -> float:
    """The learning rate of step ``step``: linear warm-up over ``warmup_steps``, then constant."""
    return cfg.learning_rate * (min(1.0, (step + 1) / cfg.warmup_steps) if cfg.warmup_steps else 1.0)


def update(model, ref, opt, prompt_tokens, batch: Batch, keep: np.ndarray, cfg: GRPOConfig) -> dict:
    """``num_iterations`` optimizer steps on the kept groups of ``batch`` (gradient norm clipped to
    ``max_grad_norm`` when positive); returns loss diagnostics, ``grad_norm`` before clipping.

    With ``beta = 0`` a completion with zero advantage has zero loss and gradient, so only the others
    go through the model (the normalisers still count every kept completion: same loss, same
    gradient, less work); the KL diagnostic then uses the sampling log-probabilities of all kept
    completions, which are the policy's before this update.
    """
    G = cfg.num_generations
    rows = np.repeat(keep, G) if len(keep) else np.zeros(0, bool)
    rows_t = torch.as_tensor(rows, device=prompt_tokens.device)
    x = prompt_tokens[torch.as_tensor(batch.prompt_ids, device=prompt_tokens.device)].repeat_interleave(G, 0)[rows_t]
    y, mask = batch.completions[rows_t], batch.mask[rows_t]
    adv = torch.as_tensor(batch.advantages[keep].reshape(-1), device=x.device, dtype=torch.float32)
    n_rows, n_tokens = int(mask.shape[0]), int(mask.sum())
    with torch.no_grad():
        ref_logp = token_logprobs(ref, x, y, cfg.temperature)
    kl = float("nan")
    if cfg.beta == 0 and batch.logprobs is not None:
        lp = batch.logprobs[rows_t]
        m = mask.to(lp.dtype)
        r = ref_logp - lp
        kl = float(((torch.exp(r) - r - 1) * m).sum() / max(n_tokens, 1))
        active = adv != 0
        x, y, mask, adv = x[active], y[active], mask[active], adv[active]
        ref_logp = None
        if not len(adv):
            return {"loss": 0.0, "grad_norm": 0.0, "kl": kl, "clip_frac": 0.0}
    old_logp, stats = None, {}
    for it in range(cfg.num_iterations):
        logp = token_logprobs(model, x, y, cfg.temperature)
        if old_logp is None:
            old_logp = logp.detach()
        loss, s = grpo_loss(logp, old_logp, adv, mask, loss_type=cfg.loss_type, epsilon=cfg.epsilon,
                            epsilon_high=cfg.epsilon_high, beta=cfg.beta, ref_logp=ref_logp,
                            max_completion_length=cfg.max_completion_length, n_rows=n_rows, n_tokens=n_tokens)
        if ref_logp is None:
            s["kl"] = kl
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm if cfg.max_grad_norm > 0 else
                                              float("inf"))
        opt.step()
        stats = stats or {"loss": float(loss.detach()), "grad_norm": float(norm), **s}
    return stats


@torch.inference_mode()
def evaluate(model, prompt_tokens, problems, cfg: GRPOConfig, step: int, device, chunk: int = 8192) -> np.ndarray:
    """Pass rate of every prompt from ``eval_samples`` completions each, keyed by (:data:`EVAL_SEED`, step)
    only, so two runs whose policies are equal at a step get the same evaluation there.

    All n x M completions are sampled in batches of ``chunk`` rows (one batch for the default 600 x 8).
    """
    _, gen = _generators(EVAL_SEED, _KEY_EVAL, step, device)
    M, n = cfg.eval_samples, len(problems)
    x = prompt_tokens.repeat_interleave(M, dim=0)
    wins = []
    for lo in range(0, len(x), chunk):
        comp, _, _ = sample(model, x[lo:lo + chunk], cfg.max_completion_length, cfg.temperature, gen)
        rows = [problems[i // M] for i in range(lo, min(lo + chunk, len(x)))]
        wins.append(verify(rows, comp.cpu().numpy()))
    return np.concatenate(wins).reshape(n, M).mean(axis=1)


# ---------------------------------------------------------------- prompt selection

def draw_prompts(rng, cfg: GRPOConfig, state: State, exclude: set) -> np.ndarray:
    """Prompt ids for one round of ``prompts_per_step``: uniform without replacement; with dynamic
    sampling, never a prompt already drawn this step (``exclude``) or retired, and a
    ``hard_buffer_frac`` share from the all-fail buffer. Fewer (or none) once the pool runs short."""
    n = cfg.prompts_per_step
    if not cfg.dynamic_sampling:
        return rng.choice(cfg.n_prompts, size=n, replace=False)
    pool = np.array([i for i in range(cfg.n_prompts) if i not in state.retired and i not in exclude], dtype=np.int64)
    hard = np.array([i for i in state.hard if i not in exclude], dtype=np.int64)
    n_hard = min(len(hard), int(round(cfg.hard_buffer_frac * n)))
    chosen = rng.choice(hard, size=n_hard, replace=False) if n_hard else np.zeros(0, np.int64)
    rest = np.setdiff1d(pool, chosen)
    more = rng.choice(rest, size=min(n - n_hard, len(rest)), replace=False) if len(rest) else np.zeros(0, np.int64)
    return np.concatenate([chosen, more]).astype(np.int64)


def update_pools(state: State, prompt_ids, all_pass, all_fail, cfg: GRPOConfig) -> None:
    """Curriculum bookkeeping after a round: all-pass streaks (retire at ``retire_after``), the hard buffer."""
    for pid, ap, af in zip(prompt_ids.tolist(), all_pass, all_fail):
        state.streak[pid] = state.streak.get(pid, 0) + 1 if ap else 0
        if cfg.retire_after and state.streak[pid] >= cfg.retire_after:
            state.retired.add(pid)
        if af and pid not in state.hard:
            state.hard.append(pid)
        elif not af and pid in state.hard:
            state.hard.remove(pid)


# ---------------------------------------------------------------- the run

class Run:
    """A run in progress: model, optimizer, pools and the record tables built so far."""

    def __init__(self, cfg: GRPOConfig, out: Path, device: torch.device, command: str | None = None):
        self.cfg, self.out, self.device, self.command = cfg, Path(out), device, command
        self.problems = prompt_set()[: cfg.n_prompts]
        self.prompt_tokens = torch.tensor([encode(p.text) for p in self.problems], device=device)
        self.groups = {k: [] for k in ("step", "prompt_id", "rewards", "advantages", "lengths", "kept")}
        self.steps: dict[str, list] = {}
        self.evals = {"step": [], "pass_rate": [], "samples": []}
        self.state = State()
        self.step = 0
        self.wall_before = 0.0
        self.cpu_before = 0.0  # CPU seconds of the run's earlier sessions (NaN: a checkpoint made before they were kept)
        self.cpu_t0 = time.process_time()  # process CPU time at which this session's span starts (set by train)
        self.sft_seconds = 0.0
        self.warmstart_sha256: str | None = None  # SHA-256 of the shipped warm start loaded (None: computed here)
        self.end_reason: str | None = None  # why a run ended before cfg.steps (BatchNotFilled's message)

    # -- model
    def build(self, sft_cache: Path | None) -> None:
        cfg = self.cfg
        torch.manual_seed(cfg.warm_start_seed)  # the start depends on sft_seed alone, not on the run's seed
        self.model = TinyGPT(len(VOCAB), BLOCK_SIZE, cfg.n_layer, cfg.n_head, cfg.n_embd).to(self.device)
        ship = warmstart.shipped(cfg)
        if ship is not None:  # the shipped start of this (regime, sft_seed): the same weights on every machine
            self.warmstart_sha256 = warmstart.load(self.model, ship)
            self._finish_build()
            return
        key = _sft_key(cfg, self.device)
        cached = sft_cache / f"sft-{key}.pt" if sft_cache else None
        if cached and cached.is_file():
            try:
                self.model.load_state_dict(torch.load(cached, map_location=self.device, weights_only=True))
            except Exception:
                cached.unlink(missing_ok=True)
        if not (cached and cached.is_file()):
            t0 = time.perf_counter()
            warm_start(self.model, cfg.sft_steps, cfg.sft_batch_size, cfg.sft_learning_rate, cfg.warm_start_seed,
                       self.device, cfg.sft_digit_weights)
            self.sft_seconds = time.perf_counter() - t0
            if cached:
                try:
                    cached.parent.mkdir(parents=True, exist_ok=True)
                    _save(cached, self.model.state_dict())
                except OSError:
                    pass
        self._finish_build()

    def _finish_build(self) -> None:
        self.ref = copy.deepcopy(self.model).eval()
        for p in self.ref.parameters():
            p.requires_grad_(False)
        self.opt = _adam(self.model, self.cfg)

    def restore(self) -> None:
        """Load checkpoint.pt and the record, and cut the record back to the checkpoint's step."""
        try:
            ck = torch.load(self.out / CHECKPOINT, map_location=self.device, weights_only=True)
        except FileNotFoundError:
            raise InputError(f"cannot resume: {str(self.out / CHECKPOINT)!r} is missing") from None
        except Exception as exc:
            raise InputError(f"cannot resume: {CHECKPOINT} is unreadable ({type(exc).__name__})") from None
        rec = read_record(self.out)
        self.warmstart_sha256 = (rec.meta.get("start") or {}).get("warmstart_sha256")
        self.model = TinyGPT(len(VOCAB), BLOCK_SIZE, self.cfg.n_layer, self.cfg.n_head, self.cfg.n_embd).to(self.device)
        self.model.load_state_dict(ck["model"])
        self.ref = copy.deepcopy(self.model).eval()
        self.ref.load_state_dict(ck["ref"])
        for p in self.ref.parameters():
            p.requires_grad_(False)
        self.opt = _adam(self.model, self.cfg)
        self.opt.load_state_dict(ck["optimizer"])
        self.step = int(ck["step"])
        self.wall_before = float(ck["wall_time_s"])
        self.cpu_before = float(ck.get("cpu_time_s", float("nan")))
        self.state = State(retired=set(ck["retired"]), hard=list(ck["hard"]),
                           streak={int(k): int(v) for k, v in ck.get("streak", [])})
        g = rec.groups
        sel = g["step"] < self.step
        for k in self.groups:
            self.groups[k] = list(np.asarray(g[k])[sel])
        ssel = rec.steps["step"] < self.step
        self.steps = {k: list(np.asarray(v)[ssel]) for k, v in rec.steps.items()}
        esel = rec.evals["step"] <= self.step if len(rec.evals.get("step", [])) else np.zeros(0, bool)
        for k in self.evals:
            self.evals[k] = list(np.asarray(rec.evals[k])[esel]) if len(esel) else []
        if self.evals["step"] and self.evals["step"][-1] == self.step:
            for k in self.evals:  # re-run the eval at the checkpoint step: identical draws
                self.evals[k].pop()

    # -- one step
    def sample_batch(self, rng, gen):
        """Sampling rounds of one step: ``(batches, keeps, dropped)``.

        Plain runs: one round, every group kept. Dynamic sampling: rounds of fresh prompts until
        ``prompts_per_step`` groups with reward spread are kept (DAPO's filter is on the rewards,
        whatever the estimator); mixed groups beyond that are the trimmed ``surplus``. Raises
        :class:`BatchNotFilled` when the prompt set or ``max_num_gen_batches`` runs out first.
        """
        cfg, G = self.cfg, self.cfg.num_generations
        target = cfg.prompts_per_step
        batches, keeps, used, n_kept = [], [], set(), 0
        dropped = {"all_pass": 0, "all_fail": 0, "surplus": 0}
        while True:
            ids = draw_prompts(rng, cfg, self.state, used)
            if len(ids) == 0:
                raise BatchNotFilled(
                    f"dynamic sampling could not fill step {self.step}'s batch: {n_kept} of {target} groups with "
                    f"reward spread after drawing all {len(used)} available prompts in {len(batches)} rounds")
            used.update(ids.tolist())
            comp, mask, logp = rollout(self.model, self.prompt_tokens, ids, cfg, gen)
            r = reward(self.problems, ids, comp, G)
            b = Batch(ids, comp, mask, r, advantage(r, cfg.estimator), mask.sum(1).cpu().numpy().reshape(-1, G), logp)
            batches.append(b)
            if not cfg.dynamic_sampling:
                keeps.append(np.ones(len(ids), bool))
                return batches, keeps, dropped
            degenerate, all_pass, all_fail = group_outcomes(r)
            keep = ~degenerate & (np.cumsum(~degenerate) + n_kept <= target)
            dropped["all_pass"] += int(all_pass.sum())
            dropped["all_fail"] += int(all_fail.sum())
            dropped["surplus"] += int((~degenerate & ~keep).sum())
            update_pools(self.state, ids, all_pass, all_fail, cfg)
            n_kept += int(keep.sum())
            keeps.append(keep)
            if n_kept >= target:
                return batches, keeps, dropped
            if cfg.max_num_gen_batches and len(batches) >= cfg.max_num_gen_batches:
                raise BatchNotFilled(
                    f"dynamic sampling could not fill step {self.step}'s batch: {n_kept} of {target} groups with "
                    f"reward spread after max_num_gen_batches = {cfg.max_num_gen_batches} rounds")

    def train_step(self) -> dict:
        cfg, G, step = self.cfg, self.cfg.num_generations, self.step
        rng, gen = _generators(cfg.seed, _KEY_STEP, step, self.device)
        t0 = time.perf_counter()
        batches, keeps, dropped = self.sample_batch(rng, gen)  # may raise BatchNotFilled: nothing trained
        t1 = time.perf_counter()
        lr = learning_rate(cfg, step)
        for g in self.opt.param_groups:
            g["lr"] = lr
        merged = Batch(np.concatenate([b.prompt_ids for b in batches]),
                       torch.cat([b.completions for b in batches]), torch.cat([b.mask for b in batches]),
                       *(np.concatenate([getattr(b, k) for b in batches]) for k in ("rewards", "advantages", "lengths")),
                       torch.cat([b.logprobs for b in batches]))
        keep_all = np.concatenate(keeps)
        stats = update(self.model, self.ref, self.opt, self.prompt_tokens, merged, keep_all, cfg)
        t2 = time.perf_counter()
        for b, keep in zip(batches, keeps):
            self.groups["step"].extend([step] * len(b.prompt_ids))
            self.groups["prompt_id"].extend(b.prompt_ids.tolist())
            self.groups["rewards"].extend(b.rewards)
            self.groups["advantages"].extend(b.advantages)
            self.groups["lengths"].extend(b.lengths)
            self.groups["kept"].extend(keep.tolist())
        rewards_all, adv_all = merged.rewards, merged.advantages
        degenerate, all_pass, all_fail = group_outcomes(rewards_all)
        m = {
            "step": step,
            "frac_reward_zero_std": float(np.mean(degenerate)),
            "frac_all_pass": float(np.mean(all_pass)),
            "frac_all_fail": float(np.mean(all_fail)),
            "reward_mean": float(np.mean(rewards_all)),
            "max_abs_advantage": max_abs_advantage(adv_all[keep_all]),
            "kl": stats["kl"],
            "loss": stats["loss"],
            "clip_frac": stats["clip_frac"],
            "grad_norm": stats["grad_norm"],
            "learning_rate": lr,
            "rollouts_generated": int(rewards_all.size),
            "rollouts_kept": int(keep_all.sum()) * G,
            "gen_batches": len(batches),
            "time_generate_s": t1 - t0,
            "time_update_s": t2 - t1,
        }
        if cfg.dynamic_sampling:
            m.update(ds_metrics(len(keep_all), int(keep_all.sum()), dropped))
        return m

    def run_eval(self) -> float:
        t0 = time.perf_counter()
        rates = evaluate(self.model, self.prompt_tokens, self.problems, self.cfg, self.step, self.device)
        self.evals["step"].append(self.step)
        self.evals["pass_rate"].append(rates)
        self.evals["samples"].append(self.cfg.eval_samples)
        return time.perf_counter() - t0

    # -- persistence
    def record(self, wall: float, complete: bool) -> RunRecord:
        cfg, G = self.cfg, self.cfg.num_generations
        n = len(self.groups["step"])
        groups = {
            "step": np.asarray(self.groups["step"], np.int64).reshape(n),
            "prompt_id": np.asarray(self.groups["prompt_id"], np.int64).reshape(n),
            "rewards": np.asarray(self.groups["rewards"], np.float64).reshape(n, G),
            "advantages": np.asarray(self.groups["advantages"], np.float64).reshape(n, G),
            "lengths": np.asarray(self.groups["lengths"], np.int64).reshape(n, G),
            "kept": np.asarray(self.groups["kept"], bool).reshape(n),
        }
        ints = ("step", "rollouts_generated", "rollouts_kept", "gen_batches", "ds/groups_drawn", "ds/groups_kept",
                "ds/dropped_all_pass", "ds/dropped_all_fail", "ds/dropped_surplus")
        steps = {k: np.asarray(v, np.int64 if k in ints else np.float64) for k, v in self.steps.items()}
        evals = {"step": np.asarray(self.evals["step"], np.int64),
                 "pass_rate": np.asarray(self.evals["pass_rate"], np.float64).reshape(-1, cfg.n_prompts),
                 "samples": np.asarray(self.evals["samples"], np.int64)}
        cpu = self.cpu_time()
        meta = {
            "name": self.out.name,
            "n_prompts": cfg.n_prompts,
            "num_generations": G,
            "seed": cfg.seed,
            "device": str(self.device),
            "config": cfg.to_dict(),
            "versions": {"grpo_lab": __version__, "torch": torch.__version__, "numpy": np.__version__,
                         "python": platform.python_version()},
            "torch_threads": torch.get_num_threads(),
            "wall_time_s": wall,
            # CPU seconds of this process (all its threads) over the same span: a figure the machine's load
            # changes far less than the wall time (NaN if the run resumed from a checkpoint without it)
            "cpu_time_s": cpu if cpu == cpu else None,
            "source": {"kind": "grpo-lab-train", "command": self.command},
            "reward_tolerance": 0.0,
            "task": "addition of two 1-4 digit integers, answer written least significant digit first",
            "prompt_labels": [p.text.replace(" ", "") for p in self.problems],
            "steps_completed": self.step,
            "complete": complete,
            "end_reason": self.end_reason,
            "start": {"regime": cfg.start, "sft_seed": cfg.warm_start_seed, **self._start_source()},
            "checkpoint": CHECKPOINT,
        }
        rec = RunRecord(meta=meta, groups=groups, steps=steps, evals=evals)
        s = summarise(rec)
        s.pop("evals")
        rec.meta["summary"] = s
        return rec

    def _start_source(self) -> dict:
        """The record's word on where the warm start came from: the shipped file's hash, or computed here."""
        if self.warmstart_sha256:
            return {"warmstart": "shipped", "warmstart_sha256": self.warmstart_sha256}
        return {"warmstart": "computed"}

    def save(self, wall: float, complete: bool) -> None:
        write_record(self.out, self.record(wall, complete))
        _save(self.out / CHECKPOINT, {
            "step": self.step, "model": self.model.state_dict(), "ref": self.ref.state_dict(),
            "optimizer": self.opt.state_dict(), "retired": sorted(self.state.retired), "hard": list(self.state.hard),
            "streak": sorted((k, v) for k, v in self.state.streak.items() if v),
            "wall_time_s": wall, "cpu_time_s": self.cpu_time(), "config": json.dumps(self.cfg.to_dict()),
        })

    def cpu_time(self) -> float:
        return self.cpu_before + time.process_time() - self.cpu_t0


def _adam(model, cfg: GRPOConfig):
    return torch.optim.Adam(model.parameters(), lr=cfg.learning_rate, betas=(cfg.adam_beta1, cfg.adam_beta2),
                            eps=cfg.adam_epsilon)


class _DeferredStop:
    """While active (main thread only), the first SIGINT/SIGTERM only sets ``requested``, so the
    step in progress finishes and is saved; a second one interrupts at once."""

    def __init__(self):
        self.requested, self._old = False, {}

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)
        return False


def _save(path: Path, obj) -> None:
    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, buf.getvalue())


def _sft_key(cfg: GRPOConfig, device) -> str:
    """Cache key of the warm start: every input it depends on, the thread count (float reductions)
    and the source of the code that computes it included."""
    d = {k: getattr(cfg, k) for k in ("sft_steps", "sft_batch_size", "sft_learning_rate", "sft_digit_weights",
                                      "n_layer", "n_head", "n_embd")}
    here = Path(__file__).resolve().parent
    code = hashlib.sha256(b"".join((here / f).read_bytes() for f in _SFT_SOURCES)).hexdigest()
    d.update(sft_seed=cfg.warm_start_seed, torch=torch.__version__, numpy=np.__version__, device=str(device),
             threads=torch.get_num_threads(), code=code, task=VOCAB, block_size=BLOCK_SIZE)
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def default_cache() -> Path | None:
    from grpo_lab.sims.cache import cache_root

    return cache_root() / "sft"


def _check_out(out: Path, resume: bool) -> None:
    if resume:
        if not (out / "run.json").is_file():
            raise InputError(f"cannot resume: {str(out)!r} holds no run record")
        return
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{str(out)!r} already exists and is not empty; choose another --out or pass --resume")
    parent = out.parent if str(out.parent) else Path(".")
    probe = out if out.exists() else next((p for p in [parent, *parent.parents] if p.exists()), Path("."))
    if not probe.is_dir() or not os.access(probe, os.W_OK):
        raise InputError(f"output {str(out)!r} is not writable")


def train(cfg: GRPOConfig | None, out, *, resume: bool = False, device: str = "auto", threads: int | None = None,
          progress: bool = False, sft_cache: Path | None | str = "default", command: str | None = None,
          on_step=None, save_every: int = 10) -> RunRecord:
    """Train (or resume) a run into directory ``out`` and return its final record.

    With ``resume`` the config comes from the record (``cfg.steps``, if given, may extend it).
    The record and checkpoint are written every ``save_every`` steps, at the end, and on
    any exception raised between steps (then re-raised). A dynamic-sampling step that cannot fill
    its batch ends the run early: the record is completed there (``meta["end_reason"]`` says why,
    ``steps_completed`` < ``config.steps``). ``on_step(run, metrics)`` is called
    after each completed step (tests interrupt runs with it).
    """
    if isinstance(save_every, bool) or not isinstance(save_every, int) or save_every < 1:
        raise InputError(f"save_every must be an integer >= 1, got {save_every!r}")
    out = Path(out)
    _check_out(out, resume)
    if resume:
        old = read_record(out)
        saved = GRPOConfig.from_dict({k: tuple(v) if isinstance(v, list) else v for k, v in old.meta["config"].items()})
        if cfg is not None:
            saved.steps = cfg.steps
        cfg = saved.validate()
        command = command or (old.meta.get("source") or {}).get("command")
    cfg = (cfg or GRPOConfig()).validate()
    dev = resolve_device(device)
    if threads:
        torch.set_num_threads(int(threads))
    run = Run(cfg, out, dev, command)
    if sft_cache == "default":
        sft_cache = default_cache()
    if resume:
        run.restore()
    else:
        out.mkdir(parents=True, exist_ok=True)
        run.build(Path(sft_cache) if sft_cache else None)
    t_start = time.perf_counter() - run.wall_before
    run.cpu_t0 = time.process_time()
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=cfg.steps, initial=run.step, desc=out.name, unit="step", file=sys.stderr, dynamic_ncols=True)
    eff = []
    consistent = True  # False while a step is half done (model updated, record not yet)
    try:
        with _DeferredStop() as stop:
            while run.step < cfg.steps:
                t_eval = run.run_eval() if run.step % cfg.eval_every == 0 else 0.0
                consistent = False
                pools = copy.deepcopy(run.state)
                try:
                    m = run.train_step()
                except BatchNotFilled as exc:  # nothing was trained: the record stays that of the last step
                    run.state, run.end_reason, consistent = pools, str(exc), True
                    break
                m["time_eval_s"] = t_eval
                m["wall_time_s"] = time.perf_counter() - t_start
                for k, v in m.items():
                    run.steps.setdefault(k, []).append(v)
                run.step += 1
                consistent = True
                if run.step % save_every == 0 and run.step < cfg.steps:
                    run.save(m["wall_time_s"], complete=False)
                eff.append(1 - m["frac_reward_zero_std"])
                if bar is not None:
                    bar.set_postfix(reward=f"{m['reward_mean']:.3f}", eff_groups=f"{np.mean(eff[-20:]):.2f}")
                    bar.update(1)
                if on_step is not None:
                    on_step(run, m)
                if stop.requested:
                    raise KeyboardInterrupt
    except BaseException:
        if consistent and run.step > 0:
            run.save(time.perf_counter() - t_start, complete=False)
        raise
    finally:
        if bar is not None:
            bar.close()
    if not run.evals["step"] or run.evals["step"][-1] != run.step:
        run.run_eval()
    wall = time.perf_counter() - t_start
    run.save(wall, complete=True)
    return read_record(out)
