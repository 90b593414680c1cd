r"""Per-trainer readers of the config keys that decide a dynamic-sampling step (:mod:`..trainer_config` dispatches).

Each module reads one trainer's keys, as its source specifies them, into the settings dict of
:func:`..trainer_config.read_trainer_config` (``trainer``, ``train_batch``, ``gen_batch``, ``cap``, ``pool``,
``K``, ``enable``, ``scheme``, ``inflight``, ``note``); :mod:`..cost` says what each ``scheme`` costs per step.

- :mod:`.verl`      verl's DAPO recipe (rounds, ``max_num_gen_batches``) and its V1 trainer (``max_inflight_gen_batches``)
- :mod:`.skyrl`     SkyRL ``trainer.algorithm.dynamic_sampling``
- :mod:`.openrlhf`  OpenRLHF ``--algo.dynamic_filtering_enable`` / ``--algo.dynamic_filtering_range`` (command-line args)
- :mod:`.prime_rl`  prime-rl's orchestrator TOML: ``batch_size``, ``group_size``, admission gates, difficulty pools
- :mod:`.nemo_rl`   NeMo-RL ``grpo.use_dynamic_sampling`` and its batch settings
- :mod:`.roll`      ROLL's RLVR query filter (``rewards.<domain>.query_filter_config``), rounds or replacement
- :mod:`._keys`     the shared integer / mapping checks (one line each on bad input)
"""
