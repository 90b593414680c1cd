r"""verl: the DAPO recipe's rounds with a cap, and the V1 trainer's in-flight refills without one.

Read from a nested ``data`` / ``algorithm`` / ``actor_rollout_ref`` / ``trainer`` config (verl's Hydra YAML, or
the same keys dotted as in its command-line overrides). Sources: volcengine/verl (now verl-project/verl) at
1dda039 (2026-08-22, version 0.10.0.dev): ``verl/trainer/config/ppo_trainer.yaml``,
``verl/trainer/config/algorithm.py`` ``FilterGroupsConfig``, ``verl/trainer/ppo/v1/trainer_base.py``
``_build_replay_buffer`` and ``verl/trainer/ppo/v1/replay_buffer.py`` ``ReplayBuffer.sample`` (PR #7082); the DAPO
recipe ``recipe/dapo/dapo_ray_trainer.py`` and ``recipe/dapo/config/dapo_trainer.yaml``.

==============================================  =============================================================
key                                             read as
==============================================  =============================================================
``data.train_batch_size``                       T, mixed groups a step trains (required)
``data.gen_batch_size``                         B, prompts per round (recipe; default T, ``${data.train_batch_size}``)
``actor_rollout_ref.rollout.n``                 K
``algorithm.filter_groups.enable``              dynamic sampling on (default False)
``algorithm.filter_groups.max_num_gen_batches`` the recipe's cap in rounds; <= 0: none (default 0). Ignored by V1
``algorithm.filter_groups.max_inflight_gen_batches``  V1: prompts in flight at most M x T (default 1, >= 1)
``trainer.use_v1``                              the V1 trainer (``ppo_trainer.yaml`` default true at this version)
``trainer.v1.trainer_mode``                     ``sync`` (default), ``colocate_async``, ``separate_async``
==============================================  =============================================================

**Which loop.** The V1 trainer when ``trainer.use_v1`` is true, or when ``max_inflight_gen_batches`` is set and
``use_v1`` is not false (the key exists only for V1); else the DAPO recipe's loop (a config from the recipe
carries neither). V1 sync: scheme ``verl-v1`` (:mod:`..cost`; 2 refills per evicted group, the surplus in
flight drained and discarded), B = T: the step's first dispatch, the unit the stall section counts rounds in
(``_build_replay_buffer`` sets the refill granularity ``gen_batch_size`` to 1 when filtering; the prompts a step
costs are :mod:`..cost`'s), no cap (``max_num_gen_batches`` > 0 is ignored with a warning there, and reported here in ``note``). V1 async
modes: "Evict k; refill k" (``ReplayBuffer`` docstring): scheme ``replace``, staleness not modelled (``note``).
"""

from __future__ import annotations

from ...errors import InputError
from ._keys import as_int, get

__all__ = ["read", "looks_like", "SIZE_KEYS"]

SECTIONS = ("data", "algorithm", "actor_rollout_ref", "trainer")
#: the size keys a record ingested with its verl config keeps as read (``meta["trainer_settings"]["keys"]``)
SIZE_KEYS = ("data.train_batch_size", "data.gen_batch_size", "actor_rollout_ref.rollout.n",
             "algorithm.filter_groups.enable", "algorithm.filter_groups.max_num_gen_batches",
             "algorithm.filter_groups.max_inflight_gen_batches", "actor_rollout_ref.actor.ppo_mini_batch_size",
             "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "trainer.use_v1", "trainer.n_gpus_per_node",
             "trainer.nnodes")


def looks_like(nested: dict) -> bool:
    """A verl config: a ``data`` / ``algorithm`` / ``actor_rollout_ref`` section (after undotting)."""
    return any(isinstance(nested.get(k), dict) for k in SECTIONS[:3])


def read(d: dict) -> dict:
    """The settings of a nested verl config (module docstring). Raises InputError."""
    T = get(d, "data.train_batch_size")
    if T is None:
        raise InputError("trainer config (verl): data.train_batch_size is missing")
    T = as_int(T, "data.train_batch_size")
    B = get(d, "data.gen_batch_size", T)
    B = T if B is None or (isinstance(B, str) and "train_batch_size" in B) else as_int(B, "data.gen_batch_size")
    cap = get(d, "algorithm.filter_groups.max_num_gen_batches", 0)
    if isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap != int(cap):
        raise InputError(f"trainer config: algorithm.filter_groups.max_num_gen_batches must be an integer, got {cap!r}")
    K = get(d, "actor_rollout_ref.rollout.n")
    K = None if K is None else as_int(K, "actor_rollout_ref.rollout.n", 2)
    enable = bool(get(d, "algorithm.filter_groups.enable", False))
    inflight = get(d, "algorithm.filter_groups.max_inflight_gen_batches")
    use_v1 = get(d, "trainer.use_v1")
    v1 = bool(use_v1) if use_v1 is not None else inflight is not None
    if not v1:
        derived = get(d, "data.gen_batch_size") is None or isinstance(get(d, "data.gen_batch_size"), str)
        return {"trainer": "verl", "train_batch": T, "gen_batch": B, "cap": max(int(cap), 0), "pool": None, "K": K,
                "enable": enable, "scheme": "rounds", "inflight": None, "note": None,
                "gen_per_train": 1.0 if derived else None}
    M = as_int(1 if inflight is None else inflight, "algorithm.filter_groups.max_inflight_gen_batches")
    mode = str(get(d, "trainer.v1.trainer_mode", "sync"))
    if mode not in ("sync", "colocate_async", "separate_async"):
        raise InputError(f"trainer config (verl V1): trainer.v1.trainer_mode must be sync, colocate_async or "
                         f"separate_async, got {mode!r}")
    notes = []
    if int(cap) > 0:
        notes.append(f"max_num_gen_batches = {int(cap)} is ignored by verl's V1 trainer (no cap: a step draws until "
                     f"it is full, so a saturating run slows down instead of stopping)")
    if mode != "sync":
        notes.append(f"V1 {mode}: each filtered group is replaced by one prompt; staleness is not modelled")
    return {"trainer": "verl-v1", "train_batch": T, "gen_batch": T, "cap": 0, "pool": None, "K": K, "enable": enable,
            "scheme": "verl-v1" if mode == "sync" else "replace", "inflight": M, "note": "; ".join(notes) or None,
            "gen_per_train": 1.0}
