r"""OpenRLHF: ``--algo.dynamic_filtering_enable``, each filtered prompt replaced by a new one, no cap.

OpenRLHF takes its settings as command-line arguments (``python -m openrlhf.cli.train_ppo_ray ...``), so its
"config" is the launch command, e.g. ``examples/scripts/train_dapo_ray_hybrid_engine.sh``: read from a file of
those arguments (``.sh`` or ``.args``; split as a shell would, never run). Source: OpenRLHF/OpenRLHF at
3c3be62 (2026-08-13, version 0.11.0): ``openrlhf/cli/train_ppo_ray.py`` (the arguments and their checks) and
``openrlhf/trainer/ppo_utils/samples_generator.py`` ``_generate_vllm`` (a group whose mean reward is not strictly
inside the range is dropped and one new prompt dispatched in its place, until the batch's prompts are all kept or
the dataloader ends; ``dynamic_filtering_pass_rate`` = kept / consumed x 100).

====================================  =======================================================================
argument                              read as
====================================  =======================================================================
``--rollout.batch_size``              T (default 1024)
``--rollout.vllm_generate_batch_size``  prompts dispatched at once (default T; larger only with async)
``--rollout.n_samples_per_prompt``    K (default 1; dynamic filtering asserts > 1)
``--algo.dynamic_filtering_enable``   on (a flag)
``--algo.dynamic_filtering_range``    (lo, hi), a group kept when lo < mean reward < hi (default 0 1: with
                                      binary rewards exactly the mixed groups)
====================================  =======================================================================

Scheme ``replace`` (:mod:`..cost`): E[prompts per step] = T / u, no cap; B = the first dispatch (the generate
batch, default T), the unit the stall section counts rounds in. A range other than (0, 1) keeps a band of pass counts, not every mixed group:
said in ``note`` (the doctor's sections count mixed groups). Names of OpenRLHF before the ``--algo.`` /
``--rollout.`` groups (``--dynamic_filtering``, ``--rollout_batch_size``) are refused with a line saying which
version is read.
"""

from __future__ import annotations

import shlex

from ...errors import InputError
from ._keys import as_float, as_int

__all__ = ["read_args", "parse_args", "looks_like"]

OLD_NAMES = ("--dynamic_filtering", "--dynamic_filtering_reward_range", "--rollout_batch_size", "--n_samples_per_prompt")


def parse_args(text: str) -> dict:
    """{"--name": value or True} from the text of a launch command (continuations, comments and ``set -x`` lines
    ignored; a name followed by several values keeps them as a list). Raises InputError on unbalanced quotes."""
    lines = [ln.split(" #")[0] for ln in text.replace("\\\n", " ").splitlines() if not ln.lstrip().startswith("#")]
    try:
        tokens = shlex.split(" ".join(lines))
    except ValueError as exc:
        raise InputError(f"trainer config (OpenRLHF arguments): cannot split the command line: {exc}") from None
    out, name = {}, None
    for tok in tokens:
        if tok.startswith("--"):
            name = tok.split("=", 1)[0]
            out[name] = tok.split("=", 1)[1] if "=" in tok else True
        elif name is not None:
            prev = out[name]
            out[name] = tok if prev is True else (prev + [tok] if isinstance(prev, list) else [prev, tok])
    return out


def looks_like(args: dict) -> bool:
    return any(k.startswith(("--algo.", "--rollout.")) for k in args) or any(k in args for k in OLD_NAMES)


def _number(args, name, default, kind=int):
    v = args.get(name, default)
    try:
        return kind(v) if isinstance(v, str) else v
    except ValueError:
        raise InputError(f"trainer config (OpenRLHF): {name} must be a number, got {v!r}") from None


def read_args(args: dict) -> dict:
    """The settings of an OpenRLHF launch command's arguments (module docstring). Raises InputError."""
    old = [k for k in OLD_NAMES if k in args]
    if old:
        raise InputError(f"trainer config (OpenRLHF): {old[0]} is an argument of OpenRLHF before 0.9; this reader "
                         f"follows 0.11.0 (--algo.dynamic_filtering_enable, --rollout.batch_size)")
    T = as_int(_number(args, "--rollout.batch_size", 1024), "--rollout.batch_size")
    K = as_int(_number(args, "--rollout.n_samples_per_prompt", 1), "--rollout.n_samples_per_prompt")
    on = args.get("--algo.dynamic_filtering_enable", False) is True
    rng = args.get("--algo.dynamic_filtering_range", ["0", "1"])
    if not (isinstance(rng, list) and len(rng) == 2):
        raise InputError(f"trainer config (OpenRLHF): --algo.dynamic_filtering_range takes two numbers, got {rng!r}")
    lo, hi = (as_float(_number({"x": x}, "x", 0, float), "--algo.dynamic_filtering_range") for x in rng)
    if on and not lo < hi:
        raise InputError(f"trainer config (OpenRLHF): --algo.dynamic_filtering_range must have lo < hi, got {lo:g} {hi:g}")
    if on and K < 2:
        raise InputError("trainer config (OpenRLHF): dynamic filtering needs --rollout.n_samples_per_prompt > 1")
    note = None
    if on and (lo, hi) != (0.0, 1.0):
        note = (f"dynamic_filtering_range ({lo:g}, {hi:g}) keeps groups whose mean reward lies strictly inside it, "
                f"not every mixed group; the doctor counts mixed groups")
    G = as_int(_number(args, "--rollout.vllm_generate_batch_size", T) or T, "--rollout.vllm_generate_batch_size")
    return {"trainer": "openrlhf", "train_batch": T, "gen_batch": G, "cap": 0, "pool": None, "K": K if K > 1 else None,
            "enable": on, "scheme": "replace", "inflight": None, "note": note, "keep_range": [lo, hi],
            "gen_per_train": 1.0 if "--rollout.vllm_generate_batch_size" not in args else None}
