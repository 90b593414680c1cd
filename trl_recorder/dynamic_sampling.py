r"""DAPO dynamic sampling inside TRL's GRPOTrainer (TRL 1.16 has none).

TRL 1.16 has DAPO's token-level loss (``loss_type="dapo"``), its asymmetric clipping
(``epsilon_high``) and overlong masking (``mask_truncated_completions``), but not its dynamic
sampling: every generated group is trained on, zero-variance ones with zero advantage. This
module adds it as verl's ``algorithm.filter_groups`` does, in a subclass with two overrides:

* ``_generate_and_score_completions`` (training only): TRL's own generation and scoring runs on
  the batch the dataloader gave (B prompts x G); groups whose rewards have no spread (max = min
  over the scored rollouts: all-pass, all-fail, or nothing scored) are dropped (the split counts
all-pass / all-fail by the common reward against :data:`~grpo_lab.sims.advantages.THRESHOLD`); while fewer than
  B groups are kept, a *round* of B fresh prompts (drawn from ``train_dataset`` without
  replacement, none already used in this step, from a generator keyed by ``(seed, step)``) is
  generated and scored the same way. Groups with a spread are kept in draw order up to B; those
  beyond are the trimmed *surplus* (verl trims too). The kept rows of all rounds are merged into
  one batch of exactly B x G rows (prompt tensors left-padded, completion tensors right-padded,
  ``num_items_in_batch`` recounted), which TRL then shuffles, splits and trains on as usual.
* ``_calculate_rewards`` keeps each round's ``rewards_per_func``.

**Never a partial batch**: when ``max_num_gen_batches`` rounds (verl's name; 0 = no cap) or the
prompt set run out before B groups are kept, :class:`BatchNotFilled` is raised and nothing is
trained on that batch (``train()`` stops there; ``grpo-lab train-lm`` records the message as the
run's ``end_reason``).

Advantages are TRL's (or the subclass's, see below) per round, so only per-group estimators give
the same advantages as on the merged batch: ``scale_rewards="batch"`` and
``multi_objective_aggregation="normalize_then_sum"`` (batch-wide statistics) are refused.
Single process, text only (multimodal and vLLM importance-sampling fields are refused).

Logged into TRL's metric buffer (so every ``report_to``), per generation batch, with the names of
the project's own trainer: ``lab/ds/groups_drawn``, ``lab/ds/groups_kept``,
``lab/ds/effective_group_rate`` (share of drawn groups with a spread),
``lab/ds/rollout_amplification`` (drawn / kept), ``lab/ds/dropped_all_pass``,
``lab/ds/dropped_all_fail``, ``lab/ds/dropped_surplus``, ``lab/ds/gen_batches`` (rounds).
TRL's own figures (``reward``, ``frac_reward_zero_std``, ...) are appended once per round, so a
logging window averages them over every drawn round. :class:`~grpo_lab.trl_recorder.GroupRecorder`
records every drawn group with ``kept`` true only for the groups trained on.

Usage (dynamic sampling outermost, around any GRPOTrainer subclass)::

    from grpo_lab.trl_recorder import dynamic_sampling_trainer, fixed_reference_trainer
    Trainer = dynamic_sampling_trainer(base=fixed_reference_trainer("sign"), max_num_gen_batches=8)
"""

from __future__ import annotations

import numpy as np

from grpo_lab.sims.advantages import THRESHOLD
from grpo_lab.sims.errors import InputError
from ._compat import check_trl
from .metrics import PREFIX
from .recorder import combine_rewards, prompt_key, to_numpy

__all__ = ["dynamic_sampling_trainer", "BatchNotFilled", "merge_rounds", "spread_mask", "keep_mask"]

# output fields merged row-wise: name -> (padding side, padding value; None = the tokenizer's pad id)
_PADDED = {
    "prompt_ids": ("left", None),
    "prompt_mask": ("left", 0),
    "completion_ids": ("right", None),
    "completion_mask": ("right", 0),
    "old_per_token_logps": ("right", 0.0),
    "ref_per_token_logps": ("right", 0.0),
    "sampling_per_token_logps": ("right", 0.0),
    "tool_mask": ("right", 1),
    "advantages": ("right", 0.0),  # (rows,) or per token (rows, T)
}


class BatchNotFilled(RuntimeError):
    """Dynamic sampling could not fill a step's batch: nothing is trained on it and the run ends."""


def spread_mask(rewards) -> np.ndarray:
    """Per group (rows of ``rewards``, groups x G, NaN = missing): True where the scored rewards differ."""
    r = np.asarray(rewards, dtype=float)
    return np.fmax.reduce(r, axis=1) > np.fmin.reduce(r, axis=1)  # all-NaN rows: NaN > NaN is False


def keep_mask(spread, already_kept: int, target: int) -> np.ndarray:
    """Groups with a spread, in order, while fewer than ``target`` are kept (``already_kept`` before)."""
    spread = np.asarray(spread, bool)
    return spread & (np.cumsum(spread) + already_kept <= target)


def merge_rounds(outputs: list[dict], keeps: list[np.ndarray], G: int, pad_token_id: int) -> dict:
    """The kept groups' rows of several TRL output batches as one batch (see the module docstring)."""
    import torch
    import torch.nn.functional as F

    rows = [torch.as_tensor(np.repeat(np.asarray(k, bool), G)) for k in keeps]
    merged = {}
    for key in outputs[0]:
        if key == "num_items_in_batch":
            continue
        if key not in _PADDED or any(key not in o for o in outputs):
            raise InputError(f"dynamic sampling cannot merge TRL's output field {key!r} "
                             "(multimodal inputs and vLLM importance sampling are not supported)")
        side, value = _PADDED[key]
        value = pad_token_id if value is None else value
        parts = [o[key][m.to(o[key].device)] for o, m in zip(outputs, rows)]
        if parts[0].ndim > 1:
            width = max(p.shape[1] for p in parts)
            parts = [F.pad(p, (width - p.shape[1], 0) if side == "left" else (0, width - p.shape[1]), value=value)
                     for p in parts]
        merged[key] = torch.cat(parts)
    mask = merged["completion_mask"] * merged["tool_mask"] if "tool_mask" in merged else merged["completion_mask"]
    ref = outputs[0]["num_items_in_batch"]
    merged["num_items_in_batch"] = mask.sum().to(dtype=ref.dtype, device=ref.device)
    return merged


def dynamic_sampling_trainer(base=None, max_num_gen_batches: int = 0) -> type:
    """A subclass of ``base`` (default ``trl.GRPOTrainer``) with DAPO dynamic sampling (module docstring).

    ``max_num_gen_batches``: most rounds per generation batch, the first included (0 = no cap).
    """
    trl = check_trl()
    base = base or trl.GRPOTrainer
    if int(max_num_gen_batches) < 0:
        raise InputError("max_num_gen_batches must be 0 (no cap) or more")

    class DynamicSamplingGRPOTrainer(base):
        lab_dynamic_sampling = {"max_num_gen_batches": int(max_num_gen_batches)}

        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            args = self.args
            if args.scale_rewards == "batch" or args.multi_objective_aggregation == "normalize_then_sum":
                raise InputError("dynamic sampling needs per-group advantages: scale_rewards must be 'group' or "
                                 "'none' and multi_objective_aggregation 'sum_then_normalize'")
            if self.accelerator.num_processes != 1:
                raise InputError("dynamic sampling runs on a single process only")
            if not hasattr(self.train_dataset, "__len__"):
                raise InputError("dynamic sampling draws fresh prompts from train_dataset: "
                                 "it needs a map-style dataset")
            self._lab_prompt_keys = None
            self.lab_ds_rounds: list[dict] = []  # the last generation batch's rounds (for GroupRecorder)

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            rpf = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            self._lab_ds_rpf = rpf
            return rpf

        def _fresh_prompts(self, n: int, used: set, round_index: int) -> list[dict]:
            """``n`` dataset rows whose prompts are not in ``used`` (fewer when the set runs out), each G times."""
            ds = self.train_dataset
            if self._lab_prompt_keys is None:
                self._lab_prompt_keys = [prompt_key(p) for p in ds["prompt"]]
            free = np.array([i for i, k in enumerate(self._lab_prompt_keys) if k not in used], np.int64)
            rng = np.random.default_rng([int(self.args.seed), int(self.state.global_step), round_index])
            chosen = rng.permutation(free)[:n]
            rows = []
            for i in chosen.tolist():
                row = ds[i]
                used.add(self._lab_prompt_keys[i])
                rows.extend(dict(row) for _ in range(self.num_generations))
            return rows

        def _generate_and_score_completions(self, inputs):
            if not self.model.training:
                return super()._generate_and_score_completions(inputs)
            G = self.num_generations
            target = len(inputs) // G
            cap = self.lab_dynamic_sampling["max_num_gen_batches"]
            weights = self.reward_weights.detach().cpu().numpy().astype(float)
            used = {prompt_key(x["prompt"]) for x in inputs}
            outputs, keeps, rounds = [], [], []
            n_kept, drawn, dropped = 0, 0, {"all_pass": 0, "all_fail": 0, "surplus": 0}
            batch = inputs
            while True:
                out = super()._generate_and_score_completions(batch)
                rpf = to_numpy(self._lab_ds_rpf)
                r = combine_rewards(rpf, weights).reshape(-1, G)
                spread = spread_mask(r)
                keep = keep_mask(spread, n_kept, target)
                hi = np.fmax.reduce(r, axis=1)
                flat = ~spread & ~np.isnan(hi)  # scored, every scored reward equal to hi
                dropped["all_pass"] += int(np.count_nonzero(flat & (hi > THRESHOLD)))
                dropped["all_fail"] += int(np.count_nonzero(flat & ~(hi > THRESHOLD)))
                dropped["surplus"] += int(np.count_nonzero(spread & ~keep))
                n_kept += int(keep.sum())
                drawn += len(keep)
                outputs.append(out)
                keeps.append(keep)
                adv = out["advantages"].detach()
                rounds.append({"keep": keep,
                               "advantages": to_numpy(adv[:, 0] if adv.ndim > 1 else adv),
                               "lengths": to_numpy(out["completion_mask"].sum(dim=1), np.int64)})
                if n_kept >= target:
                    break
                if cap and len(outputs) >= cap:
                    raise BatchNotFilled(f"dynamic sampling could not fill step {self.state.global_step + 1}'s batch: "
                                         f"{n_kept} of {target} groups with reward spread after "
                                         f"max_num_gen_batches = {cap} rounds")
                batch = self._fresh_prompts(target, used, len(outputs))
                if not batch:
                    raise BatchNotFilled(f"dynamic sampling could not fill step {self.state.global_step + 1}'s batch: "
                                         f"{n_kept} of {target} groups with reward spread after drawing all "
                                         f"{len(used)} prompts in {len(outputs)} rounds")
            self.lab_ds_rounds = rounds
            figures = {"groups_drawn": drawn, "groups_kept": n_kept,
                       "effective_group_rate": (n_kept + dropped["surplus"]) / drawn,
                       "rollout_amplification": drawn / n_kept, "dropped_all_pass": dropped["all_pass"],
                       "dropped_all_fail": dropped["all_fail"], "dropped_surplus": dropped["surplus"],
                       "gen_batches": len(outputs)}
            buf = self._metrics["train"]
            for k, v in figures.items():
                buf[f"{PREFIX}ds/{k}"].append(float(v))
            if len(outputs) == 1 and keep.all():
                return out
            return merge_rounds(outputs, keeps, G, self._tokenizer.pad_token_id)

    DynamicSamplingGRPOTrainer.__name__ = DynamicSamplingGRPOTrainer.__qualname__ = \
        "DynamicSampling" + base.__name__
    return DynamicSamplingGRPOTrainer
