"""``train-lm``: a real language model (SmolLM2-135M-Instruct + LoRA) in TRL's GRPOTrainer, recorded live.

Needs the ``trl`` extra and the model wheel (docs/trl.md). The record in ``--out`` is
readable after every step (``grpo-lab inspect``, the Replay tab).
"""

from __future__ import annotations

import importlib.util
import shlex
import sys

from grpo_lab.sims.errors import InputError

# option -> (type, help); unset options keep the preset's value
_OPTIONS = {
    "estimator": (str, "advantage estimator: sign, dr_grpo (TRL's own), tasa, grpo"),
    "num_generations": (int, "G, completions per prompt"),
    "prompts_per_step": (int, "prompts per optimizer step"),
    "steps": (int, "optimizer steps"),
    "per_tier": (int, "prompts per difficulty tier (5 tiers)"),
    "max_completion_length": (int, "tokens a completion may use"),
    "learning_rate": (float, "learning rate of the LoRA weights"),
    "eval_samples": (int, "sampled answers per prompt in the evaluations before and after training"),
    "seed": (int, "seed of the prompt set, sampling and LoRA initialisation"),
    "max_num_gen_batches": (int, "with --dynamic-sampling: most sampling rounds per step (0: no cap)"),
}


def register(sub) -> None:
    p = sub.add_parser("train-lm", help="GRPO on SmolLM2-135M with TRL + LoRA, recorded live (needs the trl extra)",
                       description="Train SmolLM2-135M-Instruct (LoRA) with TRL's GRPOTrainer on arithmetic in tiers "
                                   "of difficulty; writes a grpo-lab run record to --out after every step.")
    p.add_argument("--out", required=True, help="run directory to write")
    p.add_argument("--preset", default="cpu", help="smoke (2 steps), cpu (default) or gpu")
    p.add_argument("--device", default=None, help="cpu or cuda (default: the preset's)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-cache", action="store_true",
                   help="convert the model from its GGUF file (minutes) instead of loading the copy kept in the "
                        "user's cache (seconds; about 540 MB, under $GRPO_LAB_CACHE or ~/.cache/grpo-lab/smollm2)")
    p.add_argument("--dynamic-sampling", action="store_true",
                   help="DAPO dynamic sampling (drop groups without reward spread, refill with fresh prompts; "
                        "TRL has none, the project's subclass does it)")
    for name, (kind, text) in _OPTIONS.items():
        p.add_argument("--" + name.replace("_", "-"), type=kind, default=None, help=text)
    p.set_defaults(func=_run)


#: the top-level modules of the ``trl`` extra (and torch, which it brings) that train-lm imports
EXTRA_MODULES = ("torch", "trl", "transformers", "peft", "accelerate", "datasets")
MISSING_EXTRA = "grpo-lab: train-lm needs the trl extra: pip install 'grpo-lab[trl]'"


def missing_extra() -> str | None:
    """The first module of :data:`EXTRA_MODULES` that cannot be found (without importing it), else None."""
    for name in EXTRA_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


def _run(args) -> int:
    if missing_extra() is not None:
        print(MISSING_EXTRA, file=sys.stderr)
        return 2
    try:
        return _train(args)
    except ModuleNotFoundError as exc:  # a module of the extra that is found but cannot be imported
        if (exc.name or "").split(".")[0] not in EXTRA_MODULES:
            raise
        print(MISSING_EXTRA, file=sys.stderr)
        return 2


def _train(args) -> int:
    from grpo_lab.trl_recorder.lm_run import preset, run_lm

    overrides = {name: getattr(args, name) for name in _OPTIONS if name != "steps"}
    cfg = preset(args.preset, max_steps=args.steps, device=args.device,
                 dynamic_sampling=True if args.dynamic_sampling else None, **overrides)
    if args.threads is not None:
        if args.threads < 1:
            raise InputError("--threads must be at least 1")
        import torch
        torch.set_num_threads(args.threads)
    command = "grpo-lab " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    out = run_lm(cfg, args.out, progress=not args.no_progress, command=command, model_cache=not args.no_cache)
    print(f"wrote {out}")
    return 0
