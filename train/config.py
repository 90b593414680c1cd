"""Run configuration, with TRL's ``GRPOConfig`` names where the idea is the same.

=========================  ==========================================================
option                     meaning (TRL equivalent)
=========================  ==========================================================
``estimator``              advantage estimator from :mod:`grpo_lab.sims.advantages`:
                           ``grpo`` (TRL ``scale_rewards=True``), ``dr_grpo``
                           (``scale_rewards=False``), ``sign``, ``tasa``
``num_generations``        G, completions per prompt (same)
``prompts_per_step``       groups per optimizer step; TRL's
                           ``per_device_train_batch_size`` = this x G
``loss_type``              ``grpo`` (mean over each sequence's tokens, then over
                           sequences), ``dr_grpo`` (sum / (batch x
                           ``max_completion_length``)), ``dapo`` (sum / tokens in
                           the batch) (same)
``beta``                   weight of the k3 KL to the starting policy (same)
``epsilon``, ``epsilon_high``  clip range [1 - epsilon, 1 + epsilon_high] (same)
``num_iterations``         optimizer passes over each batch (same; 1 = on-policy)
``temperature``            sampling temperature (same)
``learning_rate``          Adam learning rate (same)
``max_grad_norm``          clip the global gradient norm to this before each Adam
                           step; 0 = no clipping (same; TRL's default is 1.0)
``adam_beta1``, ``adam_beta2``, ``adam_epsilon``  Adam's betas and eps (same)
``warmup_steps``           linear warm-up of the learning rate over the first steps:
                           lr_s = learning_rate * min(1, (s + 1) / warmup_steps) (same)
``max_completion_length``  tokens a completion may use (same)
``dynamic_sampling``       DAPO (verl ``algorithm.filter_groups``): drop groups whose
                           rewards have no spread, draw fresh prompts in rounds of
                           ``prompts_per_step`` until ``prompts_per_step`` groups are
                           kept, trim the surplus; never train on a partial batch
``max_num_gen_batches``    most sampling rounds per step (verl's name and default:
                           0 = no cap; the prompt set still bounds the rounds); a
                           step that cannot fill its batch ends the run
``retire_after``           curriculum option (dynamic sampling only): never draw a
                           prompt again after N consecutive all-pass groups (N >= 2;
                           0 = off, the default)
``hard_buffer_frac``       curriculum option (dynamic sampling only): share of each
                           round drawn from the prompts whose last group was
                           all-fail (0 = off, the default)
``eval_every``, ``eval_samples``  evaluate all prompts every so many steps, M samples each
``start``                  named warm-start regime (:data:`REGIMES`): ``broad``
                           (mean pass rate about 0.5-0.7, both tails) or ``weak``
                           (mean about 0.25, most prompts near 0, some near 1); it
                           sets the ``sft_*`` options below
``sft_seed``               seed of the warm start (model initialisation and its
                           problems); None = ``seed``. Runs that share it start from
                           the same policy whatever their ``seed``
``sft_steps``              steps of the deterministic supervised warm start;
                           ``sft_digit_weights`` skews its problems towards short
                           operands so that long ones stay mostly unsolved
=========================  ==========================================================
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from grpo_lab.sims.advantages import get_estimator
from grpo_lab.sims.errors import InputError
from .task import BLOCK_SIZE, MAX_ANSWER_LEN, N_PROMPTS, PROMPT_LEN, WIDTH

LOSS_TYPES = ("grpo", "dr_grpo", "dapo")

#: warm-start regimes: the ``sft_*`` settings each name stands for (measured starts in docs/trainer.md)
REGIMES = {
    "broad": {"sft_steps": 500, "sft_digit_weights": (1.0, 1.0, 1.0, 0.03)},
    "weak": {"sft_steps": 500, "sft_digit_weights": (1.0, 1.0, 0.05, 0.01)},
}
DEFAULT_START = "broad"


@dataclass
class GRPOConfig:
    estimator: str = "dr_grpo"
    num_generations: int = 4
    steps: int = 200
    seed: int = 0
    prompts_per_step: int = 128
    loss_type: str = "dapo"
    beta: float = 0.0
    epsilon: float = 0.2
    epsilon_high: float = 0.28
    num_iterations: int = 1
    temperature: float = 1.0
    learning_rate: float = 2e-4
    max_grad_norm: float = 1.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-8
    warmup_steps: int = 10
    max_completion_length: int = MAX_ANSWER_LEN
    dynamic_sampling: bool = False
    max_num_gen_batches: int = 0
    retire_after: int = 0
    hard_buffer_frac: float = 0.0
    n_prompts: int = N_PROMPTS
    eval_every: int = 50
    eval_samples: int = 8
    start: str = DEFAULT_START
    sft_seed: int | None = None
    sft_steps: int = REGIMES[DEFAULT_START]["sft_steps"]
    sft_batch_size: int = 128
    sft_digit_weights: tuple = REGIMES[DEFAULT_START]["sft_digit_weights"]
    sft_learning_rate: float = 3e-3
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64

    @classmethod
    def for_start(cls, start: str = DEFAULT_START, **options) -> "GRPOConfig":
        """A config whose ``sft_*`` settings are those of regime ``start``; explicit ``options`` win."""
        return cls(**{"start": start, **regime(start), **options})

    @property
    def warm_start_seed(self) -> int:
        """The seed of the warm start: ``sft_seed``, or ``seed`` when it is None."""
        return self.seed if self.sft_seed is None else self.sft_seed

    def validate(self) -> "GRPOConfig":
        get_estimator(self.estimator)
        regime(self.start)
        if self.loss_type not in LOSS_TYPES:
            raise InputError(f"unknown loss_type {self.loss_type!r}; choose from {', '.join(LOSS_TYPES)}")
        ints = {"num_generations": 2, "steps": 0, "seed": 0, "prompts_per_step": 1, "num_iterations": 1,
                "max_num_gen_batches": 0, "retire_after": 0, "n_prompts": 1, "eval_every": 1, "eval_samples": 1, "sft_steps": 0,
                "sft_batch_size": 1, "n_layer": 1, "n_head": 1, "n_embd": 1,
                "max_completion_length": MAX_ANSWER_LEN, "warmup_steps": 0}
        for name, lo in ints.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                what = "G (num_generations)" if name == "num_generations" else name
                raise InputError(f"{what} must be an integer >= {lo}, got {v!r}")
        if self.sft_seed is not None and (isinstance(self.sft_seed, bool) or not isinstance(self.sft_seed, int)
                                          or self.sft_seed < 0):
            raise InputError(f"sft_seed must be an integer >= 0 or None, got {self.sft_seed!r}")
        if self.max_completion_length > BLOCK_SIZE - PROMPT_LEN:
            raise InputError(f"max_completion_length ({self.max_completion_length}) exceeds what the model's block size "
                             f"allows ({BLOCK_SIZE} positions - {PROMPT_LEN} prompt tokens = {BLOCK_SIZE - PROMPT_LEN})")
        if self.retire_after == 1:
            raise InputError("retire_after must be 0 (off) or N >= 2 consecutive all-pass groups, got 1")
        if (self.retire_after or self.hard_buffer_frac) and not self.dynamic_sampling:
            raise InputError("retire_after and hard_buffer_frac are curriculum options of dynamic sampling; "
                             "add dynamic_sampling")
        if self.n_prompts > N_PROMPTS:
            raise InputError(f"n_prompts must be at most {N_PROMPTS}, got {self.n_prompts}")
        if self.prompts_per_step > self.n_prompts:
            raise InputError(f"a batch of {self.prompts_per_step} prompts per step cannot be filled from "
                             f"{self.n_prompts} prompts (prompts_per_step exceeds n_prompts)")
        if self.n_embd % self.n_head:
            raise InputError(f"n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")
        for name in ("beta", "epsilon", "epsilon_high", "hard_buffer_frac", "max_grad_norm"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and v >= 0 and v == v and v != float("inf")):
                raise InputError(f"{name} must be a finite number >= 0, got {v!r}")
        w = self.sft_digit_weights
        if (not isinstance(w, (list, tuple)) or len(w) != WIDTH
                or not all(isinstance(x, (int, float)) and 0 <= x < float("inf") for x in w) or sum(w) <= 0):
            raise InputError(f"sft_digit_weights must be {WIDTH} non-negative numbers with a positive sum, got {w!r}")
        self.sft_digit_weights = tuple(float(x) for x in w)
        if self.hard_buffer_frac > 1:
            raise InputError(f"hard_buffer_frac must be in [0, 1], got {self.hard_buffer_frac}")
        for name in ("adam_beta1", "adam_beta2"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0 <= v < 1):
                raise InputError(f"{name} must be a number in [0, 1), got {v!r}")
        for name in ("temperature", "learning_rate", "sft_learning_rate", "adam_epsilon"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0 < v < float("inf")):
                raise InputError(f"{name} must be a finite number > 0, got {v!r}")
        return self

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "GRPOConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        if "retire_all_pass" in d:
            raise InputError("this record was made by an older grpo-lab (option retire_all_pass); it cannot be resumed")
        unknown = sorted(set(d) - names)
        if unknown:
            raise InputError(f"unknown config option(s): {', '.join(unknown)}")
        return cls(**d).validate()


def regime(name: str) -> dict:
    """The ``sft_*`` settings of warm-start regime ``name`` (InputError for an unknown one)."""
    if name not in REGIMES:
        raise InputError(f"unknown start regime {name!r}; choose from {', '.join(REGIMES)}")
    return dict(REGIMES[name])
