r"""The keys of a trainer's config that decide a dynamic-sampling step, read into one settings dict.

``read_trainer_config(path, **flags)`` returns ``{trainer, gen_batch, train_batch, cap, pool, K, enable,
scheme, inflight, note, source}`` for :mod:`.stall`, :mod:`.samplers` and :mod:`.cost` (prompts per generation
round, mixed groups a step needs, most rounds with 0 = none, prompts drawn without replacement within a step or
None, rollouts per prompt or None = the record's K, whether dynamic sampling is on, the trainer's loop
(``rounds``, ``replace`` or ``verl-v1``, :mod:`.cost`), verl V1's ``max_inflight_gen_batches``, what the reading
could not model). Flags (``gen_batch_size``, ``train_batch_size``, ``max_num_gen_batches``) override the file's
values, or stand alone without a file; :func:`step_settings` resolves the one dict every section uses.

Recognised files (JSON by ``.json``; YAML by ``.yaml`` / ``.yml``, read with PyYAML, imported only then; TOML by
``.toml`` with the standard library's ``tomllib``; a launch command's arguments by ``.sh`` / ``.args``,
split with ``shlex``, never run; at most :data:`MAX_BYTES`). One module per trainer in :mod:`.configs`, each
citing its source and version:

* **verl** (:mod:`.configs.verl`): the DAPO recipe (rounds of ``data.gen_batch_size``, cap
  ``algorithm.filter_groups.max_num_gen_batches``) and the V1 trainer (``trainer.use_v1``;
  ``max_inflight_gen_batches``, no cap). The recipe's loop is ``recipe/dapo/dapo_ray_trainer.py``
  (``num_gen_batches`` counts rounds; when the kept prompts are still fewer than ``train_batch_size`` and
  ``num_gen_batches >= max_num_gen_batches`` it raises).
* **SkyRL** (:mod:`.configs.skyrl`): ``trainer.train_batch_size``, ``generator.n_samples_per_prompt``,
  ``trainer.algorithm.dynamic_sampling.{type, max_sample_batches}``.
* **OpenRLHF** (:mod:`.configs.openrlhf`): the launch command's ``--rollout.batch_size``,
  ``--rollout.n_samples_per_prompt``, ``--algo.dynamic_filtering_enable``, ``--algo.dynamic_filtering_range``.
* **prime-rl** (:mod:`.configs.prime_rl`): the orchestrator's ``batch_size``, ``group_size``, admission gates,
  difficulty pools and ``filter_zero_advantages`` (TOML).
* **NeMo-RL** (:mod:`.configs.nemo_rl`): ``grpo.{num_prompts_per_step, num_generations_per_prompt,
  use_dynamic_sampling, dynamic_sampling_max_gen_batches, batch_multiplier}``.
* **TRL** (``GRPOConfig`` keys, ``trl/trainer/grpo_config.py``): ``num_generations`` (K),
  ``generation_batch_size`` (completions per generation batch) or ``per_device_train_batch_size`` x
  ``num_processes`` (default 1) x ``steps_per_generation`` (default ``gradient_accumulation_steps``, 1);
  B = T = generation_batch_size / num_generations prompts. TRL's ``GRPOTrainer`` does not resample (a
  unanimous group just carries no gradient), so its figures are what DAPO-style resampling would need to
  fill the same batch with mixed groups; no cap.
* **ROLL** (:mod:`.configs.roll`): ``rollout_batch_size``, ``num_return_sequences_in_group``, each domain's
  ``query_filter_config.type`` and ``generate_opt_level`` (told from slime's by those keys; read as slime's before).
* **slime** (``slime/utils/arguments.py``; keys with ``_`` or ``-``): ``rollout_batch_size`` (T),
  ``over_sampling_batch_size`` (B, default T), ``n_samples_per_prompt`` (K); dynamic sampling is on when
  ``dynamic_sampling_filter_path`` is set (if the key is present). slime submits a new round of B prompts
  whenever the pending groups that could still be kept fall below T
  (``slime/rollout/sglang_rollout.py``), so its round count has the same distribution as verl's; no cap.
* **grpo-lab** (a record's ``run.json`` or its ``config``): ``prompts_per_step`` (B = T),
  ``max_num_gen_batches``, ``dynamic_sampling``, ``num_generations`` (K) and ``n_prompts`` (the pool,
  drawn without replacement within a step).

Refused with :class:`~grpo_lab.sims.errors.InputError` (one line): an unknown extension, an unreadable,
oversized or malformed file, a file that is not a mapping or matches none of the above, a missing batch size, and
batch sizes, caps or K that are not non-negative integers (batch sizes and K must be positive; a
negative verl ``max_num_gen_batches`` means no cap, as in verl).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError
from .configs import nemo_rl, openrlhf, prime_rl, roll, skyrl, tinker, verl
from .configs._keys import as_int as _int

__all__ = ["read_trainer_config", "settings_from_mapping", "settings_from_record", "settings_at_ingest", "step_settings",
           "resolve_settings", "load_file"]

FLAGS = ("gen_batch_size", "train_batch_size", "max_num_gen_batches")


def _undot(d: dict) -> dict:
    """Expand dotted keys ('data.train_batch_size': 512) into nested mappings."""
    out: dict = {}
    for key, value in d.items():
        parts = str(key).lstrip("+").split(".")
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise InputError(f"trainer config: key {key!r} clashes with a value")
        if isinstance(value, dict) and isinstance(node.get(parts[-1]), dict):
            node[parts[-1]].update(_undot(value))
        else:
            node[parts[-1]] = _undot(value) if isinstance(value, dict) else value
    return out


def _trl(d: dict) -> dict:
    if "num_generations" not in d:
        raise InputError("trainer config (TRL): num_generations is missing")
    K = _int(d["num_generations"], "num_generations", 2)
    taken = []  # factors of the generation batch the config does not hold, taken as 1
    if d.get("generation_batch_size") is not None:
        rows = _int(d["generation_batch_size"], "generation_batch_size")
    elif d.get("per_device_train_batch_size") is not None:
        spg = d.get("steps_per_generation")
        if spg is None and d.get("gradient_accumulation_steps") is None:
            taken.append("steps_per_generation / gradient_accumulation_steps")
        spg = d.get("gradient_accumulation_steps", 1) if spg is None else spg
        if d.get("num_processes") is None:
            taken.append("num_processes")
        rows = (_int(d["per_device_train_batch_size"], "per_device_train_batch_size")
                * _int(d.get("num_processes", 1), "num_processes") * _int(spg, "steps_per_generation"))
    else:
        raise InputError("trainer config (TRL): generation_batch_size or per_device_train_batch_size is missing")
    if rows % K:  # TRL itself refuses such a batch: the run had settings this config does not hold
        fix = (f" ({' and '.join(taken)} not in the config, taken as 1: add the run's to the config, or its "
               f"generation_batch_size)" if taken else " (give the run's own batch sizes)")
        raise InputError(f"trainer config (TRL): the generation batch ({rows} completions) is not a multiple of "
                         f"num_generations ({K}){fix}; or pass --gen-batch-size and --train-batch-size instead of "
                         f"--trainer-config")
    return {"trainer": "trl", "train_batch": rows // K, "gen_batch": rows // K, "cap": 0, "pool": None, "K": K,
            "enable": True, "scheme": "rounds"}


def _slime(d: dict) -> dict:
    d = {str(k).replace("-", "_").lstrip("_"): v for k, v in d.items()}
    if d.get("rollout_batch_size") is None:
        raise InputError("trainer config (slime): rollout_batch_size is missing")
    T = _int(d["rollout_batch_size"], "rollout_batch_size")
    B = T if d.get("over_sampling_batch_size") is None else _int(d["over_sampling_batch_size"],
                                                                  "over_sampling_batch_size")
    K = d.get("n_samples_per_prompt")
    enable = d.get("dynamic_sampling_filter_path") is not None if "dynamic_sampling_filter_path" in d else True
    return {"trainer": "slime", "train_batch": T, "gen_batch": B, "cap": 0, "pool": None,
            "K": None if K is None else _int(K, "n_samples_per_prompt", 2), "enable": enable, "scheme": "rounds"}


def _grpo_lab(d: dict) -> dict:
    B = _int(d["prompts_per_step"], "prompts_per_step")
    return {"trainer": "grpo-lab", "train_batch": B, "gen_batch": B,
            "cap": _int(d.get("max_num_gen_batches", 0), "max_num_gen_batches", 0),
            "pool": _int(d["n_prompts"], "n_prompts") if d.get("n_prompts") is not None else None,
            "K": _int(d["num_generations"], "num_generations", 2) if d.get("num_generations") else None,
            "enable": bool(d.get("dynamic_sampling", False)), "scheme": "rounds",
            "note": ("the run retires prompts or draws from a hard buffer (retire_after / hard_buffer_frac): "
                     "the pool it draws from changes, which the forecast does not model")
            if (d.get("retire_after") or d.get("hard_buffer_frac")) else None}


def settings_from_mapping(d) -> dict:
    """Settings from a parsed config mapping (see the module docstring); hydra's override list (``key=value``
    items, as in ``.hydra/overrides.yaml`` or a verl launch) is read as the mapping it sets."""
    if isinstance(d, list) and d and all(isinstance(x, str) for x in d):
        from ..ingest.trackers.common import overrides_mapping

        d = overrides_mapping(d, "trainer config")
    if not isinstance(d, dict):
        raise InputError(f"trainer config: expected a mapping of keys, got {type(d).__name__}")
    if isinstance(d.get("config"), dict) and "prompts_per_step" in d["config"]:
        d = d["config"]
    if "prompts_per_step" in d:
        return _grpo_lab(d)
    nested = _undot(d)
    if nemo_rl.looks_like(nested):
        return nemo_rl.read(nested)
    if skyrl.looks_like(nested):
        return skyrl.read(nested)
    if verl.looks_like(nested):
        return verl.read(nested)
    if prime_rl.looks_like(nested):
        return prime_rl.read(nested)
    if tinker.looks_like(nested):
        return tinker.read(nested)
    if roll.looks_like(nested):  # before slime's: both name rollout_batch_size
        return roll.read(nested)
    flat = {str(k).replace("-", "_").lstrip("_") for k in d}
    if flat & {"rollout_batch_size", "over_sampling_batch_size", "n_samples_per_prompt"}:
        return _slime(d)
    if flat & {"num_generations", "generation_batch_size", "per_device_train_batch_size", "steps_per_generation"}:
        return _trl(d)
    raise InputError("trainer config: no verl, TRL, slime or grpo-lab batch keys found, nor SkyRL, NeMo-RL, "
                     "prime-rl or tinker-cookbook ones (e.g. data.train_batch_size, trainer.train_batch_size, "
                     "grpo.num_prompts_per_step, orchestrator.batch_size, dataset_builder.groups_per_batch, "
                     "num_generations, rollout_batch_size, prompts_per_step)")


ARG_SUFFIXES = (".sh", ".args")  #: a launch command's arguments (OpenRLHF)
MAX_BYTES = 4 << 20  #: a trainer config larger than this is refused


def _load(path: Path):
    """The parsed file: a mapping (JSON, YAML, TOML) or, for a launch command, {"--name": value} (OpenRLHF)."""
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml", ".toml", *ARG_SUFFIXES):
        raise InputError(f"trainer config {str(path)!r}: unknown format {suffix or '(no extension)'!r}; "
                         f"use .json, .yaml, .yml, .toml, or .sh / .args for command-line arguments")
    try:
        if path.stat().st_size > MAX_BYTES:
            raise InputError(f"trainer config {str(path)!r} is larger than {MAX_BYTES >> 20} MB")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read trainer config {str(path)!r}: {getattr(exc, 'strerror', None) or exc}") from None
    if suffix in ARG_SUFFIXES:
        args = openrlhf.parse_args(text)
        if not openrlhf.looks_like(args):
            raise InputError(f"trainer config {str(path)!r}: no OpenRLHF arguments (--rollout.* / --algo.*) found")
        return args
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"trainer config {str(path)!r} is not valid JSON: {exc.msg} (line {exc.lineno})") from None
    if suffix == ".toml":
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"trainer config {str(path)!r} is not valid TOML: {str(exc).splitlines()[0]}") from None
    try:
        import yaml
    except ImportError:
        raise InputError("reading a YAML trainer config needs PyYAML (pip install 'grpo-lab[ingest]' or pyyaml); "
                         "or pass a .json file") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"trainer config {str(path)!r} is not valid YAML: {str(exc).splitlines()[0]}") from None


load_file = _load  #: the parsed config file (public: the tracker readers' --trainer-config reads it too)


def read_trainer_config(path=None, *, gen_batch_size=None, train_batch_size=None, max_num_gen_batches=None) -> dict | None:
    """Settings from a config file and/or flags; None when neither is given. Raises InputError."""
    flags = {"gen_batch_size": gen_batch_size, "train_batch_size": train_batch_size,
             "max_num_gen_batches": max_num_gen_batches}
    given = {k: v for k, v in flags.items() if v is not None}
    for k, v in given.items():
        _int(v, f"--{k.replace('_', '-')}", 0 if k == "max_num_gen_batches" else 1)
    if path is None and not given:
        return None
    if path is None:  # flags alone: each overrides one value of the sizes the record keeps (resolve_settings)
        if "train_batch_size" not in given:
            return {"trainer": "flags", "source": "flags", "flags": given, "partial": True}
        settings = {"trainer": "flags", "train_batch": given["train_batch_size"], "gen_batch":
                    given["train_batch_size"], "cap": 0, "pool": None, "K": None, "enable": True, "source": "flags",
                    "scheme": "rounds", "flags": given}
        return _with_flags(settings, given, False)
    loaded = _load(Path(path))
    is_args = Path(path).suffix.lower() in ARG_SUFFIXES
    settings = openrlhf.read_args(loaded) if is_args else settings_from_mapping(loaded)
    settings["source"] = str(path)
    return _with_flags(settings, given, True)


def _with_flags(settings: dict, given: dict, over_sizes: bool) -> dict:
    """``settings`` with each flag in ``given`` replacing its one value (``over_sizes``: the settings came from a
    file or the record, so ``source`` says "+ flags" and a generation batch or cap flag sets the flags' own loop)."""
    settings = dict(settings)
    if "train_batch_size" in given and "gen_batch_size" not in given and settings.get("gen_per_train"):
        # the file's generation batch was derived from its train batch (e.g. verl's ${data.train_batch_size}):
        # it follows the flag's
        settings["gen_batch"] = max(1, int(given["train_batch_size"] * settings["gen_per_train"]))
    settings.update({"gen_batch": given.get("gen_batch_size", settings["gen_batch"]),
                     "train_batch": given.get("train_batch_size", settings["train_batch"]),
                     "cap": given.get("max_num_gen_batches", settings["cap"])})
    if given and over_sizes:
        settings["source"] += " + flags"
        if "max_num_gen_batches" in given or "gen_batch_size" in given:
            # rounds of gen_batch_size with a cap: the flags' own loop, dynamic sampling on (the flags ask for it,
            # over a config or record that had it off)
            settings.update(scheme="rounds", enable=True)
    settings.setdefault("scheme", "rounds")
    settings.setdefault("inflight", None)
    settings.setdefault("note", None)
    settings.pop("gen_per_train", None)
    return settings


#: TRL's and slime's size keys (GRPOConfig's, slime's arguments'), kept as read like verl's and tinker's
TRL_SIZE_KEYS = ("num_generations", "generation_batch_size", "per_device_train_batch_size",
                 "gradient_accumulation_steps", "steps_per_generation", "num_processes")
SLIME_SIZE_KEYS = ("rollout_batch_size", "over_sampling_batch_size", "n_samples_per_prompt",
                   "dynamic_sampling_filter_path")
SIZE_KEYS = (*verl.SIZE_KEYS, *tinker.SIZE_KEYS, *TRL_SIZE_KEYS, *SLIME_SIZE_KEYS)  #: what a kept record lists
#: TRL's generation batch per step rests on one of these; an HF trainer state holds none of them (its per-device
#: batch and logging steps only), so sizes from it alone would rest on defaults the log does not state
TRL_BATCH_KEYS = ("generation_batch_size", "steps_per_generation", "gradient_accumulation_steps")
NO_SIZES = ("give --trainer-config FILE, or --gen-batch-size and --train-batch-size, at diagnose / watch / fleet")


def settings_at_ingest(config: dict, K: int | None = None, groups_per_row: dict | None = None
                       ) -> tuple[dict | None, str | None]:
    """``(settings, note)`` that ingest keeps in a tracker log's record as ``meta['trainer_settings']`` (the run's
    config as the reader holds it, flattened: verl's hydra ``.hydra/config.yaml`` or override list beside the log,
    tinker-cookbook's ``config.json`` beside it, a W&B run's config, an HF trainer state's own keys, or ingest's
    ``--trainer-config`` laid over them), so that ``diagnose``, ``watch`` and ``fleet`` on the record need no
    ``--trainer-config`` again (:func:`settings_from_record`): :func:`settings_from_mapping`'s dict with ``source``
    and ``keys``, the size keys the config holds as written (:data:`SIZE_KEYS`). ``K``: the rollouts per prompt the
    reader settled (the config's or ``--num-generations``), given to a TRL config that does not name it.

    Not kept, with a note naming what is missing and the flags to give at ``diagnose``: a config whose size keys do
    not give the sizes (e.g. verl without ``data.train_batch_size``, TRL without ``num_generations``); a TRL config
    that states none of :data:`TRL_BATCH_KEYS` (an HF trainer state alone: its generation batch would rest on
    gradient accumulation 1 and one process, which the log does not say); a config whose groups per logged row the
    logged shares refute (``groups_per_row["agree"]`` False, :func:`grpo_lab.sims.ingest.trackers.groups_per_row`).
    A config with no size key, or a grpo-lab config (its record keeps its own): (None, None)."""
    if not config:
        return None, None
    keys = {k: config[k] for k in SIZE_KEYS if k in config and not isinstance(config[k], (dict, list))}
    if not keys:
        return None, None
    mapping = dict(config)
    if K and "num_generations" not in mapping and ("per_device_train_batch_size" in mapping
                                                   or "generation_batch_size" in mapping):
        mapping["num_generations"] = K  # TRL's K from the reader (a trainer state does not hold it)
    trl_unstated = ("batch sizes not kept in the record: TRL's generation batch needs generation_batch_size, "
                    "steps_per_generation or gradient_accumulation_steps, which the run's config as read does not "
                    f"hold (an HF trainer state holds none of them): {NO_SIZES}") \
        if not any(config.get(k) is not None for k in TRL_BATCH_KEYS) else None
    try:
        settings = settings_from_mapping(mapping)
    except InputError as exc:
        if trl_unstated and "per_device_train_batch_size" in config and "TRL" in str(exc):
            return None, trl_unstated
        return None, f"batch sizes not kept in the record ({exc}): {NO_SIZES}"
    if settings.get("trainer") == "grpo-lab":
        return None, None
    if settings.get("trainer") == "trl" and trl_unstated:
        return None, trl_unstated
    if groups_per_row and groups_per_row.get("agree") is False:
        return None, (f"batch sizes not kept in the record: the logged shares refute the config's groups per row "
                      f"({groups_per_row.get('config')} against {groups_per_row.get('value')}): {NO_SIZES}")
    return {**settings, "source": "the config read at ingest", "keys": keys}, None


def settings_from_record(meta: dict) -> dict | None:
    """The settings a record holds: those kept at ingest (``meta['trainer_settings']``, :func:`settings_at_ingest`),
    else a grpo-lab trainer record's with dynamic sampling (``meta['config']``), else None."""
    kept = meta.get("trainer_settings") if isinstance(meta, dict) else None
    if isinstance(kept, dict) and kept.get("train_batch") and kept.get("gen_batch"):
        return {**kept, "source": "the record (its config read at ingest)"}
    cfg = meta.get("config") if isinstance(meta, dict) else None
    if not (isinstance(cfg, dict) and cfg.get("dynamic_sampling") and "prompts_per_step" in cfg):
        return None
    try:
        return {**_grpo_lab(cfg), "source": "the record's own config"}
    except InputError:
        return None


def step_settings(meta: dict, settings: dict | None, K: int) -> dict | None:
    """The dynamic-sampling settings every section of the doctor uses: ``settings`` (a trainer config and/or
    flags, :func:`read_trainer_config`), else the record's own grpo-lab dynamic-sampling config
    (:func:`settings_from_record`), else None; ``K`` set to the config's (or the record's ``K`` where the config
    has none). :func:`grpo_lab.sims.doctor.diagnose.diagnose` computes them here once and hands the same dict to
    the stall forecast (``train_batch``, ``gen_batch``, ``cap``, ``pool``, ``K``) and to the samplers section
    (the DAPO row's batch, generation batch and cap, and the K of every row)."""
    chosen = resolve_settings(meta, settings)
    return None if chosen is None else {**chosen, "K": int(chosen.get("K") or K)}


def resolve_settings(meta: dict, settings: dict | None) -> dict | None:
    """The settings a run is diagnosed under, each value from the first that gives it: a flag, then
    ``--trainer-config``, then the sizes the record keeps (:func:`settings_from_record`). ``settings``:
    :func:`read_trainer_config`'s dict or None. A file replaces the record's sizes (flags already applied on it);
    flags without a file override one value each of the record's sizes where it keeps them, and stand alone where
    it keeps none (InputError, one line, where they do not give ``--train-batch-size``)."""
    if settings is None:
        return settings_from_record(meta)
    given = settings.get("flags")
    if not given or settings.get("source") != "flags":
        return settings
    stored = settings_from_record(meta)
    if stored is None:
        if settings.get("partial"):
            raise InputError(f"{', '.join('--' + k.replace('_', '-') for k in given)} overrides one value of the "
                             "batch sizes, but the record keeps none: give --trainer-config FILE, or "
                             "--train-batch-size (and --gen-batch-size)")
        return {k: v for k, v in settings.items() if k != "flags"}
    return _with_flags(stored, given, True)
