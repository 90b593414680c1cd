r"""Record a TRL ``GRPOTrainer`` run as a grpo-lab run record while it trains.

Two lines in a user's script::

    from grpo_lab.sims.trl import GroupRecorder
    trainer = GRPOTrainer(model=..., reward_funcs=[...], args=args, train_dataset=ds)
    GroupRecorder("runs/my-run").attach(trainer)      # <- the integration
    trainer.train()

:meth:`GroupRecorder.attach` wraps three of the trainer's own methods on the instance
(nothing global is patched) and adds a callback:

* ``_calculate_rewards`` returns TRL's ``rewards_per_func`` (rows x reward functions,
  None already turned into NaN): kept for the batch being scored, with each row's prompt
  id and tag;
* ``_generate_and_score_completions`` (training mode only; once per *generation batch*,
  whatever ``steps_per_generation`` / ``num_iterations`` are): the rows are cut into
  groups of ``num_generations`` consecutive rows (TRL's ``RepeatSampler`` order), the
  combined reward is TRL's ``nansum(rewards_per_func * reward_weights)`` (NaN where every
  function returned None), and the advantages and completion lengths come from the
  batch TRL returns. The previous batch becomes final; the log figures of
  :mod:`grpo_lab.sims.trl.metrics` go into TRL's own metric buffer (``trainer._metrics``),
  which TRL averages over each logging window and hands to every ``report_to``;
* ``_prepare_inputs`` (once per micro-step): the current batch is marked as trained on by
  optimizer step ``global_step + 1``, so each group carries the first (``step``) and the
  last (``last_step``) optimizer step that used it;
* the callback's ``on_step_end`` appends the step's row and flushes the record
  (:class:`~grpo_lab.sims.record_append.RecordAppender` in background mode: the training
  thread copies the rows, a writer thread compresses, writes and fsyncs; the record on disk
  is consistent after every flush and after a kill, and lags the training by the writes
  in flight), ``on_train_end`` marks it complete and waits for the writer.

Groups table columns beyond the core ones: ``last_step`` (int64), ``generation`` (int64,
generation batch index), ``tag`` (int64 index into ``meta["tags"]``, -1 untagged) and
``rewards_per_func`` (groups x G x functions, NaN where a function returned None).
Memory: the current generation batch, one open record segment and per-prompt tables.
Single process only (a multi-process run raises at attach).
"""

from __future__ import annotations

import atexit
import json
import platform
import time

import numpy as np

from .. import __version__
from ..errors import InputError
from ..record_append import RecordAppender
from ._compat import check_trl
from .metrics import PREFIX, RollingPassRates, batch_metrics

__all__ = ["GroupRecorder", "prompt_key", "combine_rewards", "LABEL_CHARS"]

LABEL_CHARS = 60  #: prompt labels kept in run.json are cut to this many characters
FLUSH_INTERVAL_S = 0.5  #: default least time between flushes (the live replay polls every second)
_CONFIG_KEYS = ("num_generations", "per_device_train_batch_size", "gradient_accumulation_steps",
                "steps_per_generation", "generation_batch_size", "num_iterations", "logging_steps", "max_steps",
                "learning_rate", "beta", "loss_type", "scale_rewards", "temperature", "max_completion_length",
                "reward_weights", "multi_objective_aggregation", "seed")


def prompt_key(prompt) -> str:
    """A hashable key for a dataset prompt (a string, or a conversation: a list of messages)."""
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)


def _label(prompt) -> str:
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        prompt = prompt[-1].get("content", "")
    text = str(prompt)
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def combine_rewards(rewards_per_func, weights) -> np.ndarray:
    """TRL's combined reward: sum over functions of weight x reward, None/NaN terms skipped;
    NaN where every function returned None (rows x functions -> rows)."""
    rpf = np.asarray(rewards_per_func, dtype=float)
    w = np.asarray(weights, dtype=float)
    total = np.nansum(rpf * w[None, :], axis=1)
    return np.where(np.all(np.isnan(rpf), axis=1), np.nan, total)


class GroupRecorder:
    """Write a TRL GRPO run as a run record (see the module docstring).

    Parameters
    ----------
    out : record directory (created).
    tag_column : dataset column naming each prompt's tag (used when the dataset has it).
    window : groups per prompt in the rolling pass-rate estimate.
    reward_tolerance : reward spread at or below which a group counts as zero-variance.
    meta : extra run.json entries (for example ``{"model": "SmolLM2-135M-Instruct"}``).
    flush_interval_s : least time between two flushes at step ends (0: every step); the end of
        training and evaluations always flush. The record on disk lags by at most this much.
    """

    def __init__(self, out, tag_column: str = "tag", window: int = 4, reward_tolerance: float = 0.0,
                 meta: dict | None = None, flush_interval_s: float = FLUSH_INTERVAL_S):
        self.trl = check_trl()
        self.out = out
        self.tag_column = tag_column
        self.window = window
        self.tolerance = float(reward_tolerance)
        self.extra_meta = dict(meta or {})
        self.flush_interval_s = float(flush_interval_s)
        self._last_flush = float("-inf")
        self.trainer = None
        self.callback = None

    # -- set-up
    def attach(self, trainer):
        """Wrap ``trainer``'s methods and add the callback; returns ``trainer``."""
        if trainer.accelerator.num_processes != 1:
            raise InputError("GroupRecorder records single-process runs only "
                             f"(this run has {trainer.accelerator.num_processes} processes)")
        self.trainer = trainer
        self.G = int(trainer.num_generations)
        self.weights = trainer.reward_weights.detach().cpu().numpy().astype(float)
        self.func_names = list(trainer.reward_func_names)
        self._index_prompts(trainer.train_dataset)
        self.rolling = RollingPassRates(self.n_prompts, self.window)
        args = trainer.args
        self.steps_per_batch = args.steps_per_generation * trainer.num_iterations / args.gradient_accumulation_steps
        self.appender = RecordAppender(self.out, self._meta(trainer), background=True)
        atexit.register(self._drain)  # a run that dies by an exception still gets its last flush on disk
        self.current = None  # the generation batch being trained on: dict of group columns
        self.generation = 0
        self.step_batches: dict[int, list] = {}  # step -> (rewards, advantages) of the batches generated for it
        self.missing = np.zeros(len(self.func_names) + 1, np.int64)  # per function, then combined
        self.rollouts = 0
        self.t0 = time.perf_counter()
        self._scored = None

        calc, gen, prep = trainer._calculate_rewards, trainer._generate_and_score_completions, trainer._prepare_inputs

        def _calculate_rewards(inputs, prompts, completions, completion_ids_list):
            rpf = calc(inputs, prompts, completions, completion_ids_list)
            if trainer.model.training:
                self._scored = (rpf.detach().float().cpu().numpy().astype(np.float64), self._ids(inputs))
            return rpf

        def _generate_and_score_completions(inputs):
            out = gen(inputs)
            if trainer.model.training and self._scored is not None:
                self._on_batch(out)
            self._scored = None
            return out

        def _prepare_inputs(generation_batch):
            out = prep(generation_batch)
            if trainer.model.training and self.current is not None:
                self.current["last_step"][:] = trainer.state.global_step + 1
            return out

        trainer._calculate_rewards = _calculate_rewards
        trainer._generate_and_score_completions = _generate_and_score_completions
        trainer._prepare_inputs = _prepare_inputs
        self.callback = _make_callback(self)
        trainer.add_callback(self.callback)
        return trainer

    def _index_prompts(self, dataset) -> None:
        cols = list(getattr(dataset, "column_names", None) or [])
        if "prompt" not in cols:
            raise InputError("GroupRecorder needs a train_dataset with a 'prompt' column")
        prompts = dataset["prompt"]
        self.has_ids = "prompt_id" in cols
        ids = [int(v) for v in dataset["prompt_id"]] if self.has_ids else list(range(len(prompts)))
        self.ids = {}
        for key, pid in zip(map(prompt_key, prompts), ids):
            self.ids.setdefault(key, pid)
        self.n_prompts = max(ids) + 1 if ids else 0
        labels = [""] * self.n_prompts
        for p, pid in zip(prompts, ids):
            labels[pid] = labels[pid] or _label(p)
        self.labels = labels
        self.tag_names: list[str] = []
        self.prompt_tag = np.full(self.n_prompts, -1, np.int64)
        if self.tag_column in cols:
            tags = [str(t) for t in dataset[self.tag_column]]
            self.tag_names = sorted(set(tags))
            index = {t: i for i, t in enumerate(self.tag_names)}
            for pid, t in zip(ids, tags):
                self.prompt_tag[pid] = index[t]

    def _ids(self, inputs) -> np.ndarray:
        if self.has_ids:
            return np.asarray([int(x["prompt_id"]) for x in inputs], np.int64)
        out = []
        for x in inputs:
            key = prompt_key(x["prompt"])
            if key not in self.ids:  # a prompt not in train_dataset (an iterable or changed dataset)
                self.ids[key] = self.n_prompts
                self.n_prompts += 1
                self.labels.append(_label(x["prompt"]))
                self.prompt_tag = np.append(self.prompt_tag, -1)
            out.append(self.ids[key])
        return np.asarray(out, np.int64)

    def _meta(self, trainer) -> dict:
        import torch
        import transformers

        args = trainer.args
        model = trainer.accelerator.unwrap_model(trainer.model)
        name = getattr(getattr(model, "config", None), "_name_or_path", "") or type(model).__name__
        meta = {
            "name": str(self.out).rstrip("/").split("/")[-1],
            "model": name,
            "trainer": {"name": "TRL GRPOTrainer", "package": "trl", "version": self.trl.__version__},
            "source": {"kind": "trl-live", "trainer": "GRPOTrainer", "trl": self.trl.__version__},
            "num_generations": self.G,
            "reward_funcs": self.func_names,
            "reward_weights": self.weights.tolist(),
            "reward_tolerance": self.tolerance,
            "config": {k: getattr(args, k, None) for k in _CONFIG_KEYS},
            "versions": {"grpo_lab": __version__, "trl": self.trl.__version__, "transformers": transformers.__version__,
                         "torch": torch.__version__, "numpy": np.__version__, "python": platform.python_version()},
            "device": str(trainer.accelerator.device),
            "tags": self.tag_names,
            "complete": False,
        }
        meta.update(self.extra_meta)
        return meta

    # -- during training
    def _on_batch(self, out) -> None:
        rpf, ids = self._scored
        G, trainer = self.G, self.trainer
        rows = len(rpf)
        if rows % G:
            raise InputError(f"GroupRecorder: a generation batch of {rows} rows is not whole groups of {G}")
        n = rows // G
        ids = ids.reshape(n, G)
        if np.any(ids != ids[:, :1]):
            raise InputError("GroupRecorder: a group mixes prompts (TRL's row order is not the one this version expects)")
        combined = combine_rewards(rpf, self.weights).reshape(n, G)
        adv = out["advantages"].detach().float().cpu().numpy().astype(np.float64)
        if adv.ndim > 1:  # per-token advantages (a subclass): one value per rollout is kept, the first token's
            adv = adv[:, 0]
        lengths = out["completion_mask"].sum(dim=1).cpu().numpy().astype(np.int64)
        self._finalise()
        step = trainer.state.global_step + 1
        self.current = {
            "step": np.full(n, step, np.int64),
            "prompt_id": ids[:, 0].copy(),
            "rewards": combined,
            "advantages": adv.reshape(n, G),
            "lengths": lengths.reshape(n, G),
            "kept": np.ones(n, bool),
            "last_step": np.full(n, step, np.int64),
            "generation": np.full(n, self.generation, np.int64),
            "tag": self.prompt_tag[ids[:, 0]],
            "rewards_per_func": rpf.reshape(n, G, -1),
        }
        self.generation += 1
        self.missing[:-1] += np.isnan(rpf).sum(axis=0)
        self.missing[-1] += int(np.isnan(combined).sum())
        self.rollouts += rows
        self.rolling.update(ids[:, 0], combined)
        figures = batch_metrics(combined, adv.reshape(n, G), self.steps_per_batch, self.current["tag"],
                                self.tag_names, self.tolerance)
        self.step_batches.setdefault(step, []).append((combined, adv.reshape(n, G), figures))
        figures.update(self.rolling.d_values(G))
        buf = trainer._metrics["train"]
        for k, v in figures.items():
            buf[PREFIX + k].append(v)

    def _finalise(self) -> None:
        if self.current is not None:
            self.appender.append("groups", self.current)
            self.current = None

    def _step_row(self, step: int) -> dict[str, np.ndarray]:
        batches = self.step_batches.pop(step, [])
        r = np.concatenate([b[0] for b in batches]) if batches else np.zeros((0, self.G))
        a = np.concatenate([b[1] for b in batches]) if batches else np.zeros((0, self.G))
        # one batch for this step (the usual case): its figures are the step's
        fig = batches[0][2] if len(batches) == 1 else batch_metrics(r, a, self.steps_per_batch, tolerance=self.tolerance)
        nan = float("nan")
        row = {
            "step": step,
            "frac_reward_zero_std": 1.0 - fig["effective_group_rate"] if len(r) else nan,
            "frac_all_pass": fig["frac_all_pass"],
            "frac_all_fail": fig["frac_all_fail"],
            "reward_mean": float(np.nanmean(r)) if np.any(~np.isnan(r)) else nan,
            "max_abs_advantage": fig["max_abs_advantage"] if len(r) else nan,
            "kl": nan,
            "rollouts_generated": int(r.size),
            "rollouts_kept": int(r.size),
            "wall_time_s": time.perf_counter() - self.t0,
        }
        return {k: np.asarray([v], np.int64 if k in ("step", "rollouts_generated", "rollouts_kept") else np.float64)
                for k, v in row.items()}

    def on_step_end(self, step: int) -> None:
        """Append step ``step``'s row and flush the record."""
        self.appender.append("steps", self._step_row(step))
        if time.perf_counter() - self._last_flush >= self.flush_interval_s:
            self.flush(step)

    def flush(self, step: int, complete: bool = False) -> None:
        pending = {"groups": self.current} if self.current is not None else {}
        if not self.generation:
            return  # nothing generated yet: no record to write (a record needs its groups table)
        self._last_flush = time.perf_counter()
        summary = {"rollouts": self.rollouts, "generation_batches": self.generation,
                   "rewards_missing": int(self.missing[-1]),
                   "rewards_missing_per_func": dict(zip(self.func_names, self.missing[:-1].tolist()))}
        self.appender.flush(pending, n_prompts=self.n_prompts, prompt_labels=self.labels,
                            steps_completed=step, complete=complete, wall_time_s=time.perf_counter() - self.t0,
                            recording=summary)

    def add_eval(self, step: int, pass_rate, samples: int) -> None:
        """Add an evaluation: every prompt's measured pass rate (NaN where not evaluated) at ``step``."""
        ev = self.appender.evals
        rate = np.full((1, self.n_prompts), np.nan)
        rate[0, : len(pass_rate)] = pass_rate
        ev["step"] = np.append(ev.get("step", np.zeros(0, np.int64)), np.int64(step))
        ev["pass_rate"] = np.vstack([ev.get("pass_rate", np.zeros((0, self.n_prompts))), rate])
        ev["samples"] = np.append(ev.get("samples", np.zeros(0, np.int64)), np.int64(samples))
        self.flush(step, complete=bool(self.appender.meta.get("complete")))

    def on_train_end(self, step: int) -> None:
        self._finalise()
        self.flush(step, complete=True)
        self.appender.close()

    def wait(self) -> None:
        """Block until every flush so far is on disk."""
        self.appender.wait()

    def _drain(self) -> None:
        try:
            self.appender.wait()
        except Exception:  # at exit there is nobody left to tell
            pass


def _make_callback(recorder: GroupRecorder):
    from transformers import TrainerCallback

    class GroupRecorderCallback(TrainerCallback):
        """Flushes the record after every optimizer step and at the end of training."""

        def on_step_end(self, args, state, control, **kwargs):
            recorder.on_step_end(state.global_step)

        def on_train_end(self, args, state, control, **kwargs):
            recorder.on_train_end(state.global_step)

    return GroupRecorderCallback()
