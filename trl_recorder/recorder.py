r"""Record a TRL ``GRPOTrainer`` run as a grpo-lab run record while it trains.

Two lines in a user's script::

    from grpo_lab.trl_recorder import GroupRecorder
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
  :mod:`grpo_lab.trl_recorder.metrics` go into TRL's own metric buffer (``trainer._metrics``),
  which TRL averages over each logging window and hands to every ``report_to``;
* ``_prepare_inputs`` (once per micro-step): the current batch is marked as trained on by
  optimizer step ``global_step + 1``, so each group carries the first (``step``) and the
  last (``last_step``) optimizer step that used it;
* the callback's ``on_step_end`` keeps the step's row (a tuple) and, at most every
  ``flush_interval_s``, flushes: the batches and step rows kept since the last flush become
  columns in one concatenation each and go to
  :class:`~grpo_lab.sims.record_append.RecordAppender` in background mode (the training
  thread only hands the arrays over; a writer thread writes the open chunk uncompressed,
  compresses each sealed segment once, fsyncs and replaces run.json last). The record on disk
  is consistent at every moment, including after a kill, and lags the training by at most the
  interval plus the writes in flight. The run's last step does not flush: ``on_train_end``
  follows, marks the record complete and waits for the writer (one write at the end, not two).
  Prompt labels go to the appender as a tuple made again only when a new prompt appears, so
  their JSON is not remade at every flush.

Per generation batch the training thread does whole-array work only (no loop over rows or
groups, no per-step file I/O): one copy of the rewards, advantages and lengths, the counts of
:func:`~grpo_lab.trl_recorder.metrics.batch_counts`, the rolling per-prompt update, and one
append per log key (``benchmarks/bench_trl_recording.py`` measures it).

Groups table columns beyond the core ones: ``last_step`` (int64), ``generation`` (int64,
generation batch index), ``tag`` (int64 index into ``meta["tags"]``, -1 untagged) and
``rewards_per_func`` (groups x G x functions, NaN where a function returned None).
Memory, whatever the run's length: the current generation batch, the batches of one flush
interval, one open record segment (fewer than :data:`SEGMENT_ROWS` rows; the appender keeps the
arrays handed to it, not copies, and merges flushes that wait for a busy disk into one) and the
per-prompt tables (``tests/test_trl_recorder.py`` checks this at every step).
Single process only (a multi-process run raises at attach).
"""

from __future__ import annotations

import atexit
import json
import platform
import time

import numpy as np

from grpo_lab.sims import __version__
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record_append import RecordAppender
from ._compat import check_trl
from .metrics import COUNT_FIELDS, PREFIX, RollingPassRates, batch_counts, metrics_from_counts, pool_counts

__all__ = ["GroupRecorder", "prompt_key", "combine_rewards", "to_numpy", "LABEL_CHARS"]

LABEL_CHARS = 60  #: prompt labels kept in run.json are cut to this many characters
FLUSH_INTERVAL_S = 0.5  #: default least time between flushes (the live replay polls every second)
#: rows per sealed record chunk: the open chunk, rewritten at each flush, holds fewer, so a flush's
#: write costs O(SEGMENT_ROWS) whatever the run's length
SEGMENT_ROWS = 1024
_STEP_COLUMNS = (("step", np.int64), ("frac_reward_zero_std", np.float64), ("frac_all_pass", np.float64),
                 ("frac_all_fail", np.float64), ("reward_mean", np.float64), ("max_abs_advantage", np.float64),
                 ("kl", np.float64), ("rollouts_generated", np.int64), ("rollouts_kept", np.int64),
                 ("wall_time_s", np.float64))
_C = {name: i for i, name in enumerate(COUNT_FIELDS)}
_MISSING = _C["missing"]
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


def to_numpy(tensor, dtype=np.float64) -> np.ndarray:
    """A fresh numpy copy of a torch tensor (any device; half precision widened first)."""
    t = tensor.detach()
    if t.is_floating_point():
        t = t.float()
    return t.cpu().numpy().astype(dtype)


def combine_rewards(rewards_per_func, weights) -> np.ndarray:
    """TRL's combined reward: sum over functions of weight x reward, None/NaN terms skipped;
    NaN where every function returned None (rows x functions -> rows)."""
    rpf = np.asarray(rewards_per_func, dtype=float)
    w = np.asarray(weights, dtype=float)
    total = rpf @ w
    if not np.isnan(total.sum()):  # the usual case: nothing missing (a NaN term makes its row's product NaN)
        return total
    missing = np.isnan(rpf)
    total = np.where(missing, 0.0, rpf) @ w
    return np.where(missing.all(axis=1), np.nan, total)


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
    complete_on_train_end : mark the record complete when ``train()`` ends (the default); False when the
        caller still adds to it (a final :meth:`add_eval`) and completes it with :meth:`finish`.
    """

    def __init__(self, out, tag_column: str = "tag", window: int = 4, reward_tolerance: float = 0.0,
                 meta: dict | None = None, flush_interval_s: float = FLUSH_INTERVAL_S,
                 complete_on_train_end: bool = True):
        self.trl = check_trl()
        self.out = out
        self.tag_column = tag_column
        self.window = window
        self.tolerance = float(reward_tolerance)
        self.extra_meta = dict(meta or {})
        self.flush_interval_s = float(flush_interval_s)
        self.complete_on_train_end = bool(complete_on_train_end)
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
        self.rolling = RollingPassRates(self.n_prompts, self.window, self.G)
        args = trainer.args
        self.steps_per_batch = args.steps_per_generation * trainer.num_iterations / args.gradient_accumulation_steps
        self.appender = RecordAppender(self.out, self._meta(trainer), segment_rows=SEGMENT_ROWS, background=True)
        atexit.register(self._drain)  # a run that dies by an exception still gets its last flush on disk
        self.current = None  # the generation batch being trained on (a _Batch)
        self.done: list[_Batch] = []  # final batches not yet handed to the appender (one flush's worth)
        self.generation = 0
        self.step_counts: dict[int, list] = {}  # step -> (count vector, rows kept) of its generation batches
        self.step_rows: list[tuple] = []  # steps table rows not yet handed to the appender (one flush's worth)
        self.metric_keys = {}  # figure name -> TRL log key, built once
        self.missing = np.zeros(len(self.func_names) + 1, np.int64)  # per function, then combined
        self.rollouts = 0
        self.t0 = time.perf_counter()
        self._scored: list[tuple] = []  # (rewards_per_func, prompt ids) of each scoring call in this batch
        self._all_kept: dict[int, np.ndarray] = {}  # groups -> all-True kept flags

        calc, gen, prep = trainer._calculate_rewards, trainer._generate_and_score_completions, trainer._prepare_inputs

        def _calculate_rewards(inputs, prompts, completions, completion_ids_list):
            rpf = calc(inputs, prompts, completions, completion_ids_list)
            if trainer.model.training:
                self._scored.append((to_numpy(rpf), self._ids(inputs)))
            return rpf

        def _generate_and_score_completions(inputs):
            try:
                out = gen(inputs)
                if trainer.model.training and self._scored:
                    self._on_batch(out)
            finally:
                self._scored = []
            return out

        def _prepare_inputs(generation_batch):
            out = prep(generation_batch)
            if trainer.model.training and self.current is not None:
                self.current.last_step = trainer.state.global_step + 1
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
        self._label_tuple = ()  # frozen copy of the labels handed to the appender (its JSON is made once)
        self.tag_names: list[str] = []
        self.prompt_tag = np.full(self.n_prompts, -1, np.int64)
        if self.tag_column in cols:
            tags = [str(t) for t in dataset[self.tag_column]]
            self.tag_names = sorted(set(tags))
            index = {t: i for i, t in enumerate(self.tag_names)}
            for pid, t in zip(ids, tags):
                self.prompt_tag[pid] = index[t]

    def _ids(self, inputs) -> np.ndarray:
        """Each row's prompt id. Rows come in runs of one prompt (TRL repeats each prompt G times in a
        row), so a prompt is keyed once per run; the others are compared with the row before."""
        if self.has_ids:
            return np.fromiter((x["prompt_id"] for x in inputs), np.int64, len(inputs))
        out = np.empty(len(inputs), np.int64)
        prev, pid = None, -1
        for i, x in enumerate(inputs):
            prompt = x["prompt"]
            if i == 0 or prompt != prev:
                pid = self._prompt_id(prompt)
                prev = prompt
            out[i] = pid
        return out

    def _prompt_id(self, prompt) -> int:
        key = prompt_key(prompt)
        if key not in self.ids:  # a prompt not in train_dataset (an iterable or changed dataset)
            self.ids[key] = self.n_prompts
            self.n_prompts += 1
            self.labels.append(_label(prompt))
            self.prompt_tag = np.append(self.prompt_tag, -1)
        return self.ids[key]

    def _meta(self, trainer) -> dict:
        import torch
        import transformers

        args = trainer.args
        ds = getattr(trainer, "lab_dynamic_sampling", None)  # dynamic_sampling_trainer's settings
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
            "config": {k: getattr(args, k, None) for k in _CONFIG_KEYS}
                      | {"dynamic_sampling": ds is not None,
                         "max_num_gen_batches": (ds or {}).get("max_num_gen_batches")},
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
        """Keep one generation batch (the previous one becomes final) and put its figures into TRL's logs.

        Whole-array work only: the batch's counts (:func:`~grpo_lab.trl_recorder.metrics.batch_counts`),
        the rolling per-prompt update, and one append per log key."""
        G, trainer, scored = self.G, self.trainer, self._scored
        rounds = getattr(trainer, "lab_ds_rounds", None)
        if rounds is not None and len(rounds) != len(scored):
            raise InputError("GroupRecorder: the dynamic-sampling rounds do not match the scoring calls")
        if rounds is None and len(scored) != 1:
            raise InputError("GroupRecorder: a generation batch was scored more than once (an unknown subclass)")
        if len(scored) == 1:
            rpf, ids = scored[0]
        else:
            rpf, ids = np.concatenate([p[0] for p in scored]), np.concatenate([p[1] for p in scored])
        rows = len(rpf)
        if rows % G:
            raise InputError(f"GroupRecorder: a generation batch of {rows} rows is not whole groups of {G}")
        n = rows // G
        pids = ids[::G]
        if (ids.reshape(n, G) != pids[:, None]).any():
            raise InputError("GroupRecorder: a group mixes prompts "
                             "(TRL's row order is not the one this version expects)")
        combined = combine_rewards(rpf, self.weights).reshape(n, G)
        missing = None if np.isnan(rpf.sum()) else False  # None: some reward function returned None (NaN)
        if missing is None:
            self.missing[:-1] += np.isnan(rpf).sum(axis=0)
        if rounds is None:  # plain: every group of TRL's batch is trained on
            adv = out["advantages"]
            if adv.ndim > 1:  # per-token advantages (a subclass): one value per rollout is kept, the first token's
                adv = adv[:, 0]
            adv = to_numpy(adv).reshape(n, G)
            lengths = to_numpy(out["completion_mask"].sum(dim=1), np.int64).reshape(n, G)
            kept = self._all_kept.get(n)
            if kept is None:  # never changed once made: batches of one size share it
                kept = self._all_kept[n] = np.ones(n, bool)
            kept_adv, n_kept = adv, n
        else:  # dynamic sampling: every drawn group, with the advantages TRL computed in its round
            adv = np.concatenate([r["advantages"] for r in rounds]).reshape(n, G)
            lengths = np.concatenate([r["lengths"] for r in rounds]).reshape(n, G)
            kept = np.concatenate([r["keep"] for r in rounds])
            kept_adv, n_kept = adv[kept], int(np.count_nonzero(kept))
        if self.current is not None:
            self.done.append(self.current)
        step = trainer.state.global_step + 1
        tag = self.prompt_tag[pids]
        self.current = _Batch(step, step, self.generation, pids, combined, adv, lengths, tag, rpf.reshape(n, G, -1),
                              kept)
        self.generation += 1
        vec, by_tag = batch_counts(combined, kept_adv, self.tolerance, tag, len(self.tag_names), missing)
        self.missing[-1] += int(vec[_MISSING])
        self.rollouts += rows
        self.rolling.update(pids, combined, missing)
        counts = self.step_counts.get(step)
        if counts is None:
            self.step_counts[step] = [(vec, n_kept * G)]
        else:
            counts.append((vec, n_kept * G))
        figures = metrics_from_counts(vec, self.steps_per_batch, by_tag, self.tag_names)
        figures.update(self.rolling.d_values(G))
        buf, keys = trainer._metrics["train"], self.metric_keys
        for k, v in figures.items():
            key = keys.get(k)
            if key is None:
                key = keys[k] = PREFIX + k
            buf[key].append(v)

    def _finalise(self) -> None:
        if self.current is not None:
            self.done.append(self.current)
            self.current = None

    def _step_row(self, step: int) -> tuple:
        """The steps-table row of ``step``: its batches' counts pooled (no batch: NaN shares)."""
        batches = self.step_counts.pop(step, None) or []
        if len(batches) == 1:
            vec, kept = batches[0]
        else:
            vec, kept = pool_counts([b[0] for b in batches]), sum(b[1] for b in batches)
        v = vec.tolist()  # Python floats: cheaper scalar arithmetic than numpy's
        n, rollouts = v[_C["groups"]], int(v[_C["rollouts"]])
        scored = rollouts - v[_C["missing"]]
        nan = float("nan")
        return (step, 1.0 - v[_C["useful"]] / n if n else nan, v[_C["all_pass"]] / n if n else nan,
                v[_C["all_fail"]] / n if n else nan, v[_C["reward_sum"]] / scored if scored else nan,
                v[_C["max_abs_advantage"]] if n else nan, nan, rollouts, kept, time.perf_counter() - self.t0)

    def on_step_end(self, step: int, last: bool = False) -> None:
        """Keep step ``step``'s row; flush the record when the flush interval has passed, unless ``step`` is
        the run's last (``on_train_end`` follows and flushes: one write at the end instead of two)."""
        self.step_rows.append(self._step_row(step))
        if not last and time.perf_counter() - self._last_flush >= self.flush_interval_s:
            self.flush(step)

    def _hand_over_groups(self) -> None:
        """The final batches kept since the last flush, as one block of columns, to the appender."""
        if self.done:
            self.appender.append("groups", _columns(self.done))
            self.done = []

    def _hand_over_steps(self) -> None:
        """The kept step rows, as columns, to the appender (once per flush)."""
        if self.step_rows:
            cols = list(zip(*self.step_rows))
            self.appender.append("steps", {name: np.asarray(col, kind)
                                           for (name, kind), col in zip(_STEP_COLUMNS, cols)})
            self.step_rows = []

    def flush(self, step: int, complete: bool = False) -> None:
        if not self.generation:
            return  # nothing generated yet: no record to write (a record needs its groups table)
        pending = {"groups": _columns([self.current])} if self.current is not None else {}
        self._hand_over_groups()
        self._hand_over_steps()
        self._last_flush = time.perf_counter()
        summary = {"rollouts": self.rollouts, "generation_batches": self.generation,
                   "rewards_missing": int(self.missing[-1]),
                   "rewards_missing_per_func": dict(zip(self.func_names, self.missing[:-1].tolist()))}
        if len(self._label_tuple) != len(self.labels):  # labels only grow: a new tuple when they did
            self._label_tuple = tuple(self.labels)
        self.appender.flush(pending, n_prompts=self.n_prompts, prompt_labels=self._label_tuple,
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
        if self.complete_on_train_end:
            self.finish(step)
        else:
            self.flush(step)

    def finish(self, step: int, **meta) -> None:
        """Mark the record complete at ``step`` (with extra run.json entries ``meta``), wait for the writer
        and remove the files the final run.json does not name."""
        self._finalise()
        self.appender.meta.update(meta)
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


class _Batch:
    """One generation batch as the recorder keeps it until a flush: per-group arrays and three scalars."""

    __slots__ = ("step", "last_step", "generation", "prompt_id", "rewards", "advantages", "lengths", "tag",
                 "rewards_per_func", "kept")

    def __init__(self, step, last_step, generation, prompt_id, rewards, advantages, lengths, tag, rewards_per_func,
                 kept):
        self.step, self.last_step, self.generation = step, last_step, generation
        self.prompt_id, self.rewards, self.advantages, self.lengths = prompt_id, rewards, advantages, lengths
        self.tag, self.rewards_per_func, self.kept = tag, rewards_per_func, kept


def _columns(batches: list[_Batch]) -> dict[str, np.ndarray]:
    """The groups-table columns of ``batches``, in order (fresh arrays)."""
    n = [len(b.prompt_id) for b in batches]
    cat = (lambda name: np.concatenate([getattr(b, name) for b in batches]))
    rep = (lambda name: np.repeat(np.asarray([getattr(b, name) for b in batches], np.int64), n))
    return {"step": rep("step"), "prompt_id": cat("prompt_id"), "rewards": cat("rewards"),
            "advantages": cat("advantages"), "lengths": cat("lengths"), "kept": cat("kept"),
            "last_step": rep("last_step"), "generation": rep("generation"), "tag": cat("tag"),
            "rewards_per_func": cat("rewards_per_func")}


def _make_callback(recorder: GroupRecorder):
    from transformers import TrainerCallback

    class GroupRecorderCallback(TrainerCallback):
        """Flushes the record after every optimizer step and at the end of training."""

        def on_step_end(self, args, state, control, **kwargs):
            recorder.on_step_end(state.global_step, last=state.global_step >= state.max_steps)

        def on_train_end(self, args, state, control, **kwargs):
            recorder.on_train_end(state.global_step)

    return GroupRecorderCallback()
