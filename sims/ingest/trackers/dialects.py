r"""Every trainer's dialect: which logged scalars say how many of a step's groups were unanimous.

One row per trainer (:data:`DIALECTS`), each quoted from the trainer's source at the commit named in it
(read with ``git show`` on a mirror of the repository; docs/ingest.md "Tracker scalars" renders the same
table). A row maps the trainer's metric names onto the standard columns of a scalars-only record
(:mod:`grpo_lab.sims.scalars_record`): ``frac_all_pass``, ``frac_all_fail``, ``frac_reward_zero_std``,
``reward_mean`` (shares of **groups** at K), ``groups_per_step``, ``rounds`` (generation rounds a step
drew); it says what each name counts and the
trainer's known mistakes, and converts counts and per-rollout figures into shares of groups.

:func:`map_run` applies a row to a run: it finds each column's series (a metric name matches a pattern
anywhere after a ``/``-separated prefix, so ``train/frac_reward_zero_std`` and ``frac_reward_zero_std``
both match TRL's), puts every series on the union of their steps, converts, and returns the columns, the
names read, the columns it could not find, and notes. Where all-pass and all-fail are both known and the
zero-std share is not, the zero-std share is their sum (true for binary rewards, and whatever the rewards where the
trainer splits every tied group into the two, :attr:`Dialect.ties_split`: tinker-cookbook's; said in ``notes``).
A row's :attr:`Dialect.evidence` names are kept as logged for the doctor's reading of the rewards' kind.
:func:`detect` picks the row whose patterns match the most of a run's metric names.

K (``num_generations``) comes from the run's config where the tracker stored one (the keys of
:attr:`Dialect.k_keys`, matched as the last dotted parts of a flattened key), else from the caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError

__all__ = ["Rule", "Dialect", "DIALECTS", "TRAINERS", "detect", "map_run", "config_value"]


@dataclass(frozen=True)
class Rule:
    """Column ``column`` from the series whose name matches ``pattern`` (a regex on the name's tail after
    any ``prefix/``), converted by ``how``:

    ``share``        the value is already a share of the step's groups
    ``count``        a count of groups: / groups_per_step (needs it)
    ``rollouts_per_group_percent``  OpenRLHF: 100 * kept rollouts / prompts drawn; kept share of groups is
                     value / (100 K), and the zero-std share 1 - that (needs K)
    ``batches``      generation batches drawn: * the config's prompts per batch = groups drawn
    ``v1_zero_std``  verl V1: evicted / (evicted + data.train_batch_size + discarded surplus)
    ``v1_groups``    verl V1: evicted + data.train_batch_size + discarded surplus (groups drawn)
    ``miles_groups`` miles: zero_std/count_1.0 / zero_std/all_one_percentage, where both are nonzero
    ``episodes``     tinker-cookbook: trajectories the row's figures are over / K = the groups behind the row
                     (needs K; a row short of the config's batch, an epoch's last batch, counts its own groups)

    A trainer that logs a count only when it is nonzero is marked :attr:`Dialect.sparse` (absent = 0).
    """

    column: str
    pattern: str
    how: str = "share"
    detect: bool = True  #: False: a name too common to tell the trainer by (TRL's ``reward``)


@dataclass(frozen=True)
class Dialect:
    trainer: str                    #: key for ``--trainer``
    label: str                      #: the trainer's name as shown
    repo: str                       #: GitHub owner/name read
    version: str                    #: the commit (and release) read
    source: str                     #: file(s) the names and definitions were quoted from
    rules: tuple[Rule, ...]
    counts: str                     #: what the names count, quoted from the source
    mistakes: str = ""              #: known mistakes
    k_keys: tuple[str, ...] = ()    #: config keys that hold K
    batch_keys: tuple[str, ...] = ()  #: config keys that hold the prompts (groups) per generation batch
    signature: tuple[str, ...] = field(default=())  #: extra patterns that mark this trainer (detection only)
    sparse: bool = False            #: its counts are logged only when nonzero: absent = 0 on the run's steps
    scope: str = ""                 #: over what the figure is taken (processes, batches, log interval)
    #: metric names kept as logged (``scalar/<name>``), mapped to no column: the evidence the doctor reads of the
    #: rewards' kind (:mod:`grpo_lab.sims.doctor.rewards`); each under the same prefix as the names the rules read
    evidence: tuple[str, ...] = ()
    #: where non-empty, why all-pass + all-fail is exactly the zero-std share whatever the rewards (the trainer
    #: splits every tied group into the two); empty: the sum is the zero-std share for binary rewards only
    ties_split: str = ""


def _d(**kw) -> Dialect:
    kw["rules"] = tuple(Rule(*r) for r in kw["rules"])
    return Dialect(**kw)


DIALECTS: tuple[Dialect, ...] = (
    _d(trainer="trl",
       scope=("global: the rewards are gathered from every process first; log() averages the batches since the "
              "last log (logging_steps)"),
       label="TRL (GRPOTrainer)", repo="huggingface/trl", version="f2cd57710 (2026-07-24, 1.10.0.dev0)",
       source="trl/trainer/grpo_trainer.py (_generate_and_score_completions, log)",
       rules=[("frac_reward_zero_std", r"frac_reward_zero_std"), ("reward_mean", r"reward", "share", False)],
       signature=(r"reward_std", r"completions/mean_length|completion_length"),
       counts="frac_reward_zero_std = is_std_zero.float().mean(), is_std_zero = isclose(std of each group's "
              "rewards repeated per rollout, 0): a share of rollouts, equal to the share of groups (K each); "
              "computed on the gathered batch (all processes); reward = nanmean of the weighted reward sum. "
              "log() averages each metric over the batches since the last log (logging_steps). No all-pass / "
              "all-fail split.",
       evidence=(r"reward_std", r"rewards/[^/]+/mean"),
       mistakes="PR #5777 (closed, not merged) slices is_std_zero to the local process's groups for the loss "
                "mask; at this commit the logged share is over the gathered batch (all processes), and a build "
                "that logged after such a slice would log one process's share. With scale_rewards='batch' or "
                "normalize_then_sum, std_rewards is the batch's std, so frac_reward_zero_std is 0 or 1 for the "
                "whole batch, not a share of groups (read it only with scale_rewards='group').",
       k_keys=("num_generations",), batch_keys=()),
    _d(trainer="verl-dapo",
       scope="global (the driver's batch), once per training step",
       label="verl DAPO recipe", repo="verl-project/verl-recipe",
       version="48ea0a7 (2026-08-05)", source="dapo/dapo_ray_trainer.py (fit)",
       rules=[("groups_per_step", r"train/num_gen_batches", "batches"), ("rounds", r"train/num_gen_batches")],
       signature=(r"critic/score/mean",),
       counts="train/num_gen_batches = generation batches (data.gen_batch_size prompts each) drawn until "
              "train_batch_size prompts with std > 0 were kept; kept groups exclude zero-std ones, so "
              "critic/score/mean is over mixed groups only and is not the population's reward. The zero-std "
              "share lies between 1 - train_batch_size/(n gen_batch_size) and 1 - train_batch_size/((n-1) "
              "gen_batch_size) only, so it is not mapped.",
       mistakes="raises ValueError once num_gen_batches >= max_num_gen_batches (a stall ends the run).",
       k_keys=("actor_rollout_ref.rollout.n", "rollout.n"), batch_keys=("data.gen_batch_size",)),
    _d(trainer="verl-v1",
       scope="global (the replay buffer), summed over the step's iterations",
       label="verl V1 trainer", repo="verl-project/verl", version="1dda039b9 (2026-08-22, 0.10.0.dev)",
       source="verl/trainer/ppo/v1/replay_buffer.py (_evict_terminal_groups, sync selection); v1/utils.py",
       rules=[("frac_reward_zero_std", r"training/filter_groups/evicted_samples", "v1_zero_std"),
              ("groups_per_step", r"training/filter_groups/evicted_samples", "v1_groups")],
       counts="training/filter_groups/evicted_samples = len(dapo_uids): groups (prompt uids) evicted for zero "
              "spread, summed over the step's iterations; .../discarded_surplus_samples = mixed groups drawn "
              "beyond the batch. Both are logged only when nonzero. Groups drawn = evicted + "
              "data.train_batch_size + surplus; the zero-std share = evicted / drawn.",
       mistakes="PR #7082: no longer stops at max_num_gen_batches (max_inflight_gen_batches instead): a run "
                "with too-easy data slows down instead of raising. 'samples' in the names counts groups.",
       k_keys=("actor_rollout_ref.rollout.n", "rollout.n"), batch_keys=("data.train_batch_size",),
       signature=(r"training/filter_groups/discarded_surplus_samples",), sparse=True),
    _d(trainer="verl-mixed-cuts",
       scope="global (the step's batch: data.train_batch_size prompt groups), once per training step",
       label="verl V1 + Mixed-CUTS diagnostics", repo="dumbkin31/exploration-in-grpo",
       version="58130c5 (2026-10; verl v0.9.0 PPOTrainerSync)",
       source="src/mixed_cuts/diagnostics.py (compute_group_diagnostics); trainer.py (metrics.jsonl)",
       rules=[("frac_all_pass", r"mixed_cuts/all_correct_frac"), ("frac_all_fail", r"mixed_cuts/all_wrong_frac"),
              ("frac_reward_zero_std", r"mixed_cuts/advantage_collapse_rate"),
              ("reward_mean", r"critic/score/mean", "share", False)],
       counts="mixed_cuts/advantage_collapse_rate = groups (uids) whose rewards have population std < 1e-6 / "
              "n_groups; all_correct_frac / all_wrong_frac = those collapsed groups whose reward is 1 / 0; "
              "mixed_cuts/n_groups = groups of the step (data.train_batch_size); critic/score/mean = verl's mean "
              "sequence score. A project's own diagnostics on verl, written to metrics.jsonl as flat rows.",
       mistakes="a collapsed group whose common reward is neither 0 nor 1 counts in the collapse rate and in "
                "neither mode; its own metrics.jsonl holds no config (K and the batch from the hydra config).",
       k_keys=("actor_rollout_ref.rollout.n", "mixed_cuts.group_size"), batch_keys=("data.train_batch_size",),
       evidence=(r"reward/var", r"critic/score/max", r"critic/score/min"),
       signature=(r"mixed_cuts/n_groups",)),
    _d(trainer="prime-rl",
       scope="global (the orchestrator's rollouts of the step), once per step",
       label="prime-rl (since PR #2907)", repo="PrimeIntellect-ai/prime-rl",
       version="559b44772 (2026-08-21, 0.8.0)", source="src/prime_rl/orchestrator/metrics.py (solve_rates, to_dict)",
       rules=[("frac_all_pass", r"train/agg/all/(?:[^/]+/)?solved_all"),
              ("frac_all_fail", r"train/agg/all/(?:[^/]+/)?solved_none"),
              ("reward_mean", r"train/agg/all/(?:[^/]+/)?reward/mean")],
       counts="solved_all = share of groups with all(reward == 1.0); solved_none = share with sum(reward) == 0; "
              "solved_some = 1 - both; over the 'all' subset (every arrival), logged once per step, keyed "
              "train/{agg,<env>}/{all,effective}/<agent>/... (the agg/all row is read); <agent>/reward/mean = "
              "mean reward over the traces.",
       mistakes="PR #3152: the 'trainable' rate was over all generated rollouts, now over the effective subset "
                "(the warning only; solved_* are on 'all'). solved_none is sum == 0, so negative rewards can "
                "cancel.",
       k_keys=("group_size", "rollouts_per_example")),
    _d(trainer="prime-rl-old",
       scope="global (the orchestrator's results of the step), once per step",
       label="prime-rl (before PR #2907)", repo="PrimeIntellect-ai/prime-rl",
       version="9f425fffc^ (2026-06, 0.6.0)", source="src/prime_rl/orchestrator/metrics.py (compute_solve_rates)",
       rules=[("frac_all_pass", r"solve_all/all"), ("frac_all_fail", r"solve_none/all"),
              ("reward_mean", r"reward/all/mean")],
       counts="solve_all/all = share of groups whose reward sum == the env's group_size (so every reward 1 "
              "for binary rewards); solve_none/all = share with sum == 0; reward/all/mean = mean over groups of "
              "the group's mean reward.",
       mistakes="sums, not all(reward == 1): a group of fractional rewards can sum to K.",
       k_keys=("group_size", "rollouts_per_example")),
    _d(trainer="roll",
       scope="global (the pipeline's batch of the step)",
       label="ROLL", repo="alibaba/ROLL", version="8eb27cc2 (2026-08-19)",
       source="roll/utils/metrics/metrics_manager.py (add_group_metrics)",
       rules=[("frac_all_pass", r"all_correct_groups_ratio"), ("frac_all_fail", r"all_incorrect_groups_ratio"),
              ("reward_mean", r"group/correct_ratio/mean")],
       counts="group/all_correct_groups_ratio = groups whose every score == 1 / num_prompts; "
              "all_incorrect = every score == 0; mixed = the rest; group/correct_ratio/mean = mean over groups "
              "of the share of scores == 1 (the mean reward for binary scores).",
       mistakes="max_score = 1 and min_score = 0 are fixed: with other reward scales all three read 0 / 0 / 1.",
       k_keys=("num_return_sequences_in_group", "num_return_sequences"), batch_keys=("rollout_batch_size",),
       signature=(r"mixed_groups_ratio",)),
    _d(trainer="miles",
       scope="global (every sample of the rollout step)",
       label="miles", repo="radixark/miles", version="31f1ca961 (2026-08-21)",
       source="miles/ray/rollout/metrics.py (_compute_zero_std_metrics)",
       rules=[("frac_all_pass", r"zero_std/all_one_percentage"), ("frac_all_fail", r"zero_std/all_zero_percentage"),
              ("groups_per_step", r"zero_std/count_1\.0", "miles_groups")],
       counts="zero_std/all_one_percentage = groups whose rewards are all equal and round to 1.0 / all groups "
              "(a share in [0, 1] despite the name); all_zero_percentage likewise for 0.0; "
              "zero_std/count_<r> = the count of such groups (logged only for values that occur); groups per "
              "step = count_1.0 / all_one_percentage where both are nonzero.",
       mistakes="rewards are rounded to one decimal before grouping (0.96 counts as 1.0).",
       k_keys=("n_samples_per_prompt",), batch_keys=("rollout_batch_size",)),
    _d(trainer="slime",
       scope="global (every sample of the rollout step)",
       label="slime", repo="THUDM/slime", version="624b824a8 (2026-08-21)",
       source="slime/observability/rollout_metrics.py (_compute_zero_std_metrics)",
       rules=[("frac_all_pass", r"zero_std/count_1\.0", "count"), ("frac_all_fail", r"zero_std/count_0\.0", "count")],
       counts="zero_std/count_<r> = number of groups whose rewards are all equal, keyed by the reward rounded "
              "to one decimal; a key is logged only when such groups occur (absent = 0 on steps the run "
              "logged); shares need the groups per step (--rollout-batch-size in the config).",
       mistakes="no total is logged, so shares need the config; rounding as in miles.",
       k_keys=("n_samples_per_prompt",), batch_keys=("rollout_batch_size",), sparse=True),
    _d(trainer="skyrl",
       scope="global (the trainer's batch of the step)",
       label="SkyRL", repo="NovaSky-AI/SkyRL", version="a9564572e (2026-08-21)",
       source="skyrl/train/trainer.py (zero_variance_filter block, reward metrics)",
       rules=[("frac_reward_zero_std", r"reward/num_zero_variance_filtered", "count"),
              ("reward_mean", r"reward/avg_raw_reward")],
       counts="reward/num_zero_variance_filtered = num_groups - num_kept_groups (groups whose reward spread "
              "<= zero_variance_filter_tol, 1e-6), logged only with zero_variance_filter on; "
              "reward/avg_raw_reward = mean score over the batch.",
       mistakes="",
       k_keys=("n_samples_per_prompt",), batch_keys=("train_batch_size",)),
    _d(trainer="tinker-cookbook",
       scope="global (every trajectory group of the iteration, env/all)",
       label="tinker-cookbook", repo="thinking-machines-lab/tinker-cookbook",
       version="9dfcc3a2 (2026-08-19)", source="tinker_cookbook/rl/metric_util.py (_compute_by_group_metrics)",
       rules=[("frac_all_pass", r"env/all/by_group/frac_all_good"), ("frac_all_fail", r"env/all/by_group/frac_all_bad"),
              ("reward_mean", r"env/all/reward/total"),
              ("groups_per_step", r"env/all/total_episodes", "episodes", False)],
       counts="env/all/by_group/frac_all_good = groups whose total rewards are all the same and >= 0.5 / "
              "groups; frac_all_bad = all the same and < 0.5; frac_mixed = the rest; env/all/reward/total = "
              "mean total reward over trajectories; env/all/total_episodes = the trajectories of the row, K per "
              "group, so groups of the row = total_episodes / group_size (an epoch's last batch, or a row some "
              "groups dropped out of, is smaller than groups_per_batch) (metrics.jsonl, config.json beside it).",
       mistakes="#905 (named by the issue; not found in the mirror's log nor the issue search): what the "
                "source shows is that 'all good' is all-equal and >= good_thresh 0.5, so a group of all 0.6 "
                "counts as all good (all-pass only for binary rewards). #155: remove_constant_reward_groups had "
                "no effect in rl/train.py (one group per call), so constant groups were trained on; since #163 "
                "(2025-12-12) it acts, and then the by_group shares and reward/total are over the kept groups "
                "only (read: 1 - total_episodes / (K groups_per_batch) is the zero-std share).",
       k_keys=("group_size",), batch_keys=("groups_per_batch", "batch_size"),
       signature=(r"env/all/by_group/frac_mixed",),
       # rl/problem_env.py ProblemEnv.step: reward = correct + format_coef (format - 1), metrics {format, correct}
       # (each 0.0 or 1.0); metric_util._compute_trajectory_metrics: their means over the iteration's transitions,
       # total_episodes = the trajectories reward/total averages
       evidence=(r"env/all/correct", r"env/all/format", r"env/all/total_episodes"),
       ties_split=("tinker-cookbook's _compute_by_group_metrics puts every group whose total rewards are all the "
                   "same (all_same, exact equality) in all-good (>= 0.5) or all-bad (< 0.5)")),
    _d(trainer="openrlhf",
       scope="global (one generation round, logged with the train step that follows)",
       label="OpenRLHF", repo="OpenRLHF/OpenRLHF", version="3c3be623 (2026-08-13, 0.11.0)",
       source="openrlhf/trainer/ppo_utils/samples_generator.py; openrlhf/trainer/ppo_trainer.py",
       rules=[("frac_reward_zero_std", r"dynamic_filtering_pass_rate", "rollouts_per_group_percent")],
       counts="dynamic_filtering_pass_rate = len(experiences) / prompts_consumed * 100, experiences being "
              "rollouts (K per kept prompt) and prompts_consumed including the replacements drawn for "
              "filtered prompts; a prompt is filtered when its mean score is outside dynamic_filtering_range. "
              "Kept share of groups = value / (100 K); read as 1 - that = the zero-std share for binary "
              "rewards with range (0, 1).",
       mistakes="#1282 (PR, closed unmerged at this commit): the rate counts rollouts over prompts, so with "
                "K = 8 and nothing filtered it reads 800%. Read here as rollouts, as at this commit; a version "
                "carrying #1282's fix (groups x 100) would have its kept share read K times too low.",
       k_keys=("n_samples_per_prompt",), batch_keys=("rollout_batch_size", "vllm_generate_batch_size")),
    _d(trainer="nemo-rl",
       scope="global (the driver's loop of the step)",
       label="NeMo-RL", repo="NVIDIA-NeMo/RL", version="7ea279abf (2026-08-22)",
       source="nemo_rl/algorithms/grpo.py (dynamic_sampling, grpo_train)",
       rules=[("groups_per_step", r"dynamic_sampling_num_gen_batches", "batches"),
              ("rounds", r"dynamic_sampling_num_gen_batches")],
       counts="dynamic_sampling_num_gen_batches = generation batches (num_prompts_per_step prompts each) drawn "
              "until enough prompts with std != 0 were cached; only the groups drawn are known, the zero-std "
              "share is bounded, not logged.",
       mistakes="",
       k_keys=("num_generations_per_prompt",), batch_keys=("num_prompts_per_step",)),
    _d(trainer="areal",
       scope="",
       label="AReaL", repo="inclusionAI/AReaL", version="4aef98d8d (2026-05-21)",
       source="areal/trainer/rl_trainer.py (dynamic_filter_fn)",
       rules=[],
       counts="no rejected_by_all_correct / rejected_by_all_wrong (the names the issue lists) in this "
              "mirror: dynamic_filter_fn is a user-supplied group filter and the trainer logs no count of "
              "what it rejects. Not mapped; the mirror is older than the issue (2026-05).",
       mistakes="", k_keys=("n_samples",)),
)

TRAINERS = tuple(d.trainer for d in DIALECTS)
_BY_NAME = {d.trainer: d for d in DIALECTS}


def _regex(pattern: str) -> re.Pattern:
    return re.compile(rf"(?:^|.*/)(?:{pattern})$")


def _find(pattern: str, names) -> str | None:
    """The first name (shortest, then sorted) matching ``pattern`` after any prefix."""
    rx = _regex(pattern)
    hits = sorted((n for n in names if rx.match(n)), key=lambda n: (len(n), n))
    return hits[0] if hits else None


def detect(names) -> Dialect:
    """The dialect whose patterns match the most of ``names``; InputError when none matches."""
    names = list(names)
    best, score = None, 0
    for d in DIALECTS:
        pats = {r.pattern for r in d.rules if r.detect} | set(d.signature)
        s = sum(_find(p, names) is not None for p in pats)
        if s > score:
            best, score = d, s
    if best is None:
        shown = ", ".join(sorted(names)[:12]) + (" ..." if len(names) > 12 else "")
        raise InputError(f"no known trainer metric names in this run (read {len(names)}: {shown or 'none'}); "
                         f"pass --trainer {{{','.join(TRAINERS)}}} if it is one of them")
    return best


def dialect(name: str) -> Dialect:
    if name not in _BY_NAME:
        raise InputError(f"unknown trainer {name!r}; choose one of {', '.join(TRAINERS)}")
    return _BY_NAME[name]


def config_value(config: dict, keys) -> float | None:
    """The first of ``keys`` found in a flattened config (a key matches the last dotted parts), as a number."""
    for key in keys:
        for k, v in config.items():
            if k == key or k.endswith("." + key):
                try:
                    x = float(v)
                except (TypeError, ValueError):
                    continue
                if np.isfinite(x) and x > 0:
                    return x
    return None


def trl_groups_per_log(config: dict, K: int | None) -> tuple[float | None, str]:
    """TRL's groups behind one logged row, from ``GRPOConfig`` as trl 1.16's ``grpo_trainer.py`` uses it.

    ``_prepare_inputs`` generates once every ``steps_per_generation x num_iterations`` calls of
    ``training_step`` (``self._step`` counts micro-batches: ``gradient_accumulation_steps`` of them make one
    optimizer step), each generation scoring ``generation_batch_size`` completions gathered over every process
    (``GRPOConfig.__post_init__``: ``per_device_train_batch_size x num_processes x steps_per_generation``,
    ``steps_per_generation`` defaulting to ``gradient_accumulation_steps``) and appending one
    ``frac_reward_zero_std`` over its ``generation_batch_size / num_generations`` groups; ``log()`` averages
    what was appended since the last log, every ``logging_steps`` optimizer steps. So

        groups per row = generation_batch_size / K x max(1, logging_steps x GA / (steps_per_generation x num_iterations))

    which with the defaults is ``per_device_train_batch_size x processes x GA x logging_steps / K``. Keys read
    (a flattened config; a key matches the last dotted parts): ``generation_batch_size``,
    ``per_device_train_batch_size``, ``num_processes`` / ``world_size``, ``gradient_accumulation_steps``,
    ``steps_per_generation``, ``num_iterations``, ``logging_steps``; a missing GA, process count or iteration count
    is taken as 1 and said. (None, why) where neither batch key nor K is known."""
    if not K:
        return None, "TRL: K is unknown (--num-generations)"
    per_dev = config_value(config, ("per_device_train_batch_size",))
    gb = config_value(config, ("generation_batch_size",))
    assumed = []
    procs = config_value(config, ("num_processes", "world_size"))
    if procs is None:
        procs = 1.0
        assumed.append("processes 1")
    ga = config_value(config, ("gradient_accumulation_steps",))
    if ga is None:
        ga = 1.0
        assumed.append("gradient_accumulation_steps 1")
    spg = config_value(config, ("steps_per_generation",))
    if gb is None and per_dev is None:
        return None, "TRL: the config gives no generation_batch_size nor per_device_train_batch_size"
    if spg is None:
        spg = gb / (per_dev * procs) if gb is not None and per_dev is not None else ga
    if gb is None:
        gb = per_dev * procs * spg
    iters = config_value(config, ("num_iterations",)) or 1.0
    logs = config_value(config, ("logging_steps",))
    if logs is None:
        logs = 1.0
        assumed.append("logging_steps 1")
    gens = max(1.0, logs * ga / (spg * iters))
    how = (f"groups per logged row = generation_batch_size {gb:g} / K {K} x {gens:g} generation(s) a log averages "
           f"(logging_steps {logs:g} x gradient_accumulation_steps {ga:g} / (steps_per_generation {spg:g} x "
           f"num_iterations {iters:g})), trl 1.16 GRPOTrainer")
    if assumed:
        how += f"; not in the config, taken as: {', '.join(assumed)} (give them with --trainer-config)"
    return gb / K * gens, how


def _keep_evidence(series: dict, steps, d: Dialect, found: dict, raw: dict) -> None:
    """Put each of ``d.evidence``'s series in ``raw`` on ``steps`` (NaN where not logged): the name under the same
    prefix as the first name a rule read (``env/all/correct`` beside ``env/all/by_group/frac_all_good``, not the
    test set's ``test/env/all/correct``)."""
    anchor = next(((r.pattern, n) for r, n in found.items() if n), None)
    if anchor is None or not d.evidence:
        return
    m = re.match(rf"^(.*?/)?(?:{anchor[0]})$", anchor[1])
    prefix = (m.group(1) or "") if m else ""
    for pat in d.evidence:
        rx = re.compile(re.escape(prefix) + f"(?:{pat})")
        for n in sorted(x for x in series if rx.fullmatch(x) and x not in raw):  # every match (one per reward function)
            _evidence_column(series[n], steps, raw, n)


def _evidence_column(series_n, steps, raw: dict, n: str) -> None:
    """``raw[n]``: the logged series on ``steps``, NaN where it was not logged."""
    s, v = np.asarray(series_n[0]), np.asarray(series_n[1], float)
    on = np.isin(s, steps)
    col = np.full(len(steps), np.nan)
    col[np.searchsorted(steps, s[on])] = v[on]
    raw[n] = col


def _flag(config: dict, key: str) -> bool:
    """Whether a flattened config sets ``key`` (its last dotted part) true (True, 1, "true")."""
    for k, v in config.items():
        if k == key or k.endswith("." + key):
            return v is True or (isinstance(v, (int, float)) and v == 1) or str(v).strip().lower() == "true"
    return False


def _tinker_trained_only(cols: dict, read: dict, raw: dict, config: dict, K, batch, notes: list) -> None:
    """tinker-cookbook with ``remove_constant_reward_groups`` on: its logged shares are over the groups that trained.

    Since tinker-cookbook #163 (900bc33f, 2025-12-12; ``rl/train.py`` at 0.6.1 too) the loop drops every group whose
    total rewards are all the same before ``prepare_minibatch`` computes the step's metrics, so ``by_group/*`` and
    ``reward/total`` are over the kept groups (all mixed; if every group was constant one is kept, logged as
    all-good or all-bad) and ``total_episodes`` counts the kept trajectories. The share of **all** groups that
    were mixed is then kept / drawn = ``total_episodes`` / (K ``groups_per_batch``), 0 on a keep-one row, and
    the zero-std share 1 minus that; the all-pass / all-fail split and the mean reward of all groups are not in
    the log, so those columns are dropped. Where the log shows a row with some but not all groups unanimous,
    the flag did not act (before #163 it filtered each group alone, #155) and the shares are read as they are.
    Changes ``cols``, ``read`` and ``notes`` in place."""
    if not _flag(config, "remove_constant_reward_groups") or not ("frac_all_pass" in cols and "frac_all_fail" in cols):
        return
    tied = cols["frac_all_pass"] + cols["frac_all_fail"]
    ok = np.isfinite(tied)
    if np.any(ok & (tied > 1e-9) & (tied < 1 - 1e-9)):
        notes.append("remove_constant_reward_groups is on in the config, but some logged rows have a share of tied "
                     "groups strictly between 0 and 1: the filter did not act (tinker-cookbook before #163, "
                     "2025-12-12), so the shares are over every group, read as logged")
        return
    how = ("remove_constant_reward_groups is on: tinker-cookbook computes the logged by_group shares and the mean "
           "reward over the groups that trained only (every one mixed)")
    for col in ("frac_all_pass", "frac_all_fail", "reward_mean"):
        cols.pop(col, None)
        read.pop(col, None)
    episodes = next((n for n in raw if n.endswith("env/all/total_episodes")), None)
    if episodes is None or not K or batch is None:
        lack = [w for w, missing in (("env/all/total_episodes", episodes is None), ("K (--num-generations)", not K),
                                     ("groups_per_batch", batch is None)) if missing]
        notes.append(f"{how}; the share of all groups needs {', '.join(lack)}: this log holds no share of the groups "
                     "drawn")
        return
    kept = raw[episodes] / K
    cols["frac_reward_zero_std"] = np.where(tied >= 1 - 1e-9, 1.0, 1.0 - kept / batch)
    read["frac_reward_zero_std"] = f"1 - {episodes} / (K {K} x groups_per_batch {batch:g})"
    cols["groups_per_step"] = np.full(len(kept), float(batch))  # the groups drawn (total_episodes counts the kept)
    read["groups_per_step"] = "config groups_per_batch (the groups drawn; total_episodes counts the kept ones)"
    notes.append(f"{how}: the zero-std share of all groups drawn is 1 - {episodes} / (K groups_per_batch) (1 on a "
                 "row where every group tied and one was kept); the all-pass / all-fail split and the mean reward of "
                 "all groups are not in this log")


def map_run(series: dict, config: dict, d: Dialect, num_generations: int | None):
    """Apply dialect ``d`` to a run's ``series`` ({name: (steps, values)}).

    Returns ``(steps, columns, raw, read, missing, notes, K)``: ``columns`` the standard columns that were
    found, ``raw`` the series read on the same steps, ``read`` {column: metric name}, ``missing`` the standard
    columns not found, ``notes`` the conversions made. InputError when no rule of ``d`` finds its series.
    """
    names = list(series)
    found = {r: _find(r.pattern, names) for r in d.rules}
    used = sorted({n for n in found.values() if n})
    if not used:
        raise InputError(f"none of {d.label}'s metric names ({', '.join(r.pattern for r in d.rules) or 'none mapped'}) "
                         f"is in this run")
    # a sparse trainer's counts are absent where zero: every step the run logged anything is a step
    steps = np.unique(np.concatenate([series[n][0] for n in (names if d.sparse else used)]))
    raw = {}
    for n in used:
        s, v = series[n]
        col = np.full(len(steps), np.nan)
        col[np.searchsorted(steps, s)] = v
        raw[n] = col
    _keep_evidence(series, steps, d, found, raw)
    notes: list[str] = []
    K = num_generations or config_value(config, d.k_keys)
    if K is not None:
        K = int(K)
        if not num_generations:
            notes.append(f"K = {K} from the run's config")
    batch = config_value(config, d.batch_keys)
    if batch is None and d.trainer == "trl":
        batch, how = trl_groups_per_log(config, K)
        if batch is not None:
            notes.append(how)
    cols: dict[str, np.ndarray] = {}
    read: dict[str, str] = {}
    if d.sparse:
        for n in used:
            raw[n] = np.nan_to_num(raw[n], nan=0.0)
    surplus = _find(r"training/filter_groups/discarded_surplus_samples", names)
    for r, n in found.items():
        if not n:
            continue
        x = raw[n]
        if r.how == "share":
            val = x
        elif r.how == "count":
            if batch is None:
                notes.append(f"{r.column}: {n} is a count of groups and the config gives no groups per step "
                             f"({' / '.join(d.batch_keys)})")
                continue
            val = x / batch
            cols.setdefault("groups_per_step", np.full(len(steps), batch))
            read.setdefault("groups_per_step", f"config {' / '.join(d.batch_keys)}")
        elif r.how == "rollouts_per_group_percent":
            if K is None:
                notes.append(f"{r.column}: {n} is rollouts per prompt x 100 and K is unknown (--num-generations)")
                continue
            val = 1.0 - x / (100.0 * K)
            notes.append(f"{r.column} = 1 - {n} / (100 K): the rate counts rollouts (OpenRLHF #1282)")
        elif r.how == "batches":
            if batch is None:
                notes.append(f"{r.column}: {n} counts generation batches and the config gives no prompts per "
                             f"batch ({' / '.join(d.batch_keys)})")
                continue
            val = x * batch
        elif r.how in ("v1_zero_std", "v1_groups"):
            if batch is None:
                notes.append(f"{r.column}: needs data.train_batch_size from the config")
                continue
            extra = np.zeros(len(steps))
            if surplus:
                s, v = series[surplus]
                extra[np.searchsorted(steps, s[np.isin(s, steps)])] = v[np.isin(s, steps)]
                raw[surplus] = extra
            drawn = x + batch + extra
            val = x / drawn if r.how == "v1_zero_std" else drawn
        elif r.how == "episodes":
            if K is None:
                notes.append(f"{r.column}: {n} counts trajectories and K is unknown (--num-generations)")
                continue
            val = x / K
        elif r.how == "miles_groups":
            share_name = _find(r"zero_std/all_one_percentage", names)
            if share_name is None:
                continue
            share = raw[share_name]
            with np.errstate(divide="ignore", invalid="ignore"):
                val = np.where(share > 0, x / share, np.nan)
            val = np.round(val)
        else:  # pragma: no cover - a row names a conversion that does not exist
            raise AssertionError(r.how)
        cols[r.column] = np.asarray(val, float)
        read.setdefault(r.column, n)
    if ("groups_per_step" not in cols and batch is not None
            and not any(r.how in ("batches", "v1_zero_std", "v1_groups") for r in d.rules)):
        cols["groups_per_step"] = np.full(len(steps), batch)
        read["groups_per_step"] = (f"config {' / '.join(d.batch_keys)}" if d.batch_keys else
                                   "config generation_batch_size / num_generations")
    if d.trainer == "tinker-cookbook":
        _tinker_trained_only(cols, read, raw, config, K, batch, notes)
    if "frac_reward_zero_std" not in cols and "frac_all_pass" in cols and "frac_all_fail" in cols:
        cols["frac_reward_zero_std"] = cols["frac_all_pass"] + cols["frac_all_fail"]
        read["frac_reward_zero_std"] = f"{read['frac_all_pass']} + {read['frac_all_fail']}"
        notes.append(f"frac_reward_zero_std = all-pass + all-fail, exact whatever the rewards: {d.ties_split}"
                     if d.ties_split else "frac_reward_zero_std = all-pass + all-fail (binary rewards: a group "
                     "tied at another value is in neither)")
    for col in ("frac_all_pass", "frac_all_fail", "frac_reward_zero_std"):
        if col in cols:
            v = cols[col]
            bad = np.isfinite(v) & ((v < -1e-9) | (v > 1 + 1e-9))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(f"{read[col]} reads {v[i]:g} at step {int(steps[i])}, not a share in [0, 1]; "
                                 f"is this run from {d.label}? (--trainer, --num-generations)")
    missing = [c for c in ("frac_all_pass", "frac_all_fail", "frac_reward_zero_std", "reward_mean", "groups_per_step",
                           "rounds") if c not in cols]
    return steps, cols, raw, read, missing, notes, K


def markdown_table() -> str:
    """The dialect table as docs/ingest.md shows it ("Tracker scalars"; a test keeps the two equal)."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| trainer | source read | metric -> column (conversion) | what it counts | over what | known mistakes "
             "| K, groups from config |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for d in DIALECTS:
        rules = "; ".join(f"`{r.pattern.replace(chr(92), '')}` -> {r.column}" + ("" if r.how == "share" else f" ({r.how})")
                          for r in d.rules) or "none mapped"
        config = ", ".join(f"`{k}`" for k in d.k_keys) + ("; " + ", ".join(f"`{k}`" for k in d.batch_keys)
                                                          if d.batch_keys else "")
        lines.append(f"| {cell(d.label)} (`{d.trainer}`) | {d.repo} `{cell(d.source)}` @ {cell(d.version)} | "
                     f"{cell(rules)} | {cell(d.counts)} | {cell(d.scope) or '-'} | {cell(d.mistakes) or '-'} | "
                     f"{config or '-'} |")
    return "\n".join(lines) + "\n"
