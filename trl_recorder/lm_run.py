r"""A real language-model GRPO run: SmolLM2-135M-Instruct + LoRA in TRL's GRPOTrainer, recorded live.

One run = one arm of the comparison: group size ``num_generations`` (G) and the advantage
estimator (``dr_grpo``: TRL's own, ``scale_rewards="none"``; ``sign`` / ``tasa`` / ``grpo``:
the core's, through :func:`~grpo_lab.trl_recorder.advantages.fixed_reference_trainer`). Every arm
uses TRL's ``loss_type="dr_grpo"`` (a constant normaliser, so the estimators differ only in
their advantages), ``beta = 0`` (no reference model), LoRA on the attention and MLP projections.

The task is :mod:`grpo_lab.trl_recorder.arithmetic` (binary exact-answer reward, tiers as the
prompt tag). Before training and after it, every prompt is evaluated with ``eval_samples``
sampled answers at the training temperature; the record's ``evals`` table holds those
pass rates (so the replay can compare D_real and D_iid with the groups it saw).

TRL 1.16 has no dynamic sampling (DAPO-style refilling of zero-variance groups); with
``dynamic_sampling`` the trainer is wrapped in
:func:`~grpo_lab.trl_recorder.dynamic_sampling.dynamic_sampling_trainer` (the project's, outermost),
and a step it cannot fill ends the run there (the record's ``end_reason``; the final evaluation
still runs).

:data:`PRESETS` ``smoke`` (2 steps, for the tests), ``cpu`` (10 steps by default; runs/lm/run_cpu.sh's
eight runs of it, two at a time with one thread each, took 23 minutes of wall time on the shared 2-core
machine at load average 9 to 18, see docs/trl.md) and ``gpu`` (the full comparison, one arm per run; not
yet run).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from grpo_lab.sims.advantages import ESTIMATORS
from grpo_lab.sims.errors import InputError
from .arithmetic import TIERS, check_answer, make_prompts, reward_exact

__all__ = ["LMRunConfig", "PRESETS", "run_lm", "evaluate_pass_rates", "ESTIMATOR_CHOICES"]

ESTIMATOR_CHOICES = tuple(ESTIMATORS)  #: the core's estimators, by name


@dataclass(frozen=True)
class LMRunConfig:
    """One arm. ``prompts_per_step`` prompts x ``num_generations`` rollouts per optimizer step."""

    estimator: str = "sign"
    num_generations: int = 4
    prompts_per_step: int = 4
    max_steps: int = 20
    per_tier: int = 4
    tiers: tuple = tuple(TIERS)
    max_completion_length: int = 12
    learning_rate: float = 1e-3
    lora_r: int = 8
    lora_alpha: int = 16
    temperature: float = 0.7
    eval_samples: int = 8
    seed: int = 0
    device: str = "cpu"
    dynamic_sampling: bool = False
    max_num_gen_batches: int = 0  #: most sampling rounds per step with dynamic sampling (0: no cap)

    def check(self) -> "LMRunConfig":
        if self.estimator not in ESTIMATOR_CHOICES:
            raise InputError(f"estimator must be one of {', '.join(ESTIMATOR_CHOICES)}, got {self.estimator!r}")
        for name in ("num_generations", "prompts_per_step", "max_steps", "per_tier", "max_completion_length",
                     "lora_r", "eval_samples"):
            if int(getattr(self, name)) < (2 if name == "num_generations" else 1):
                raise InputError(f"{name} must be at least {2 if name == 'num_generations' else 1}")
        if int(self.max_num_gen_batches) < 0:
            raise InputError("max_num_gen_batches must be 0 (no cap) or more")
        if self.device not in ("cpu", "cuda"):
            raise InputError(f"device must be cpu or cuda, got {self.device!r}")
        return self


PRESETS = {
    "smoke": LMRunConfig(max_steps=2, per_tier=1, prompts_per_step=2, num_generations=4, eval_samples=1,
                         max_completion_length=4),
    "cpu": LMRunConfig(max_steps=10, per_tier=2, prompts_per_step=2, num_generations=4, eval_samples=4,
                       max_completion_length=10),
    "gpu": LMRunConfig(max_steps=80, per_tier=16, prompts_per_step=16, num_generations=8, eval_samples=16,
                       learning_rate=5e-4, device="cuda"),
}


def _prompt_texts(tok, rows) -> list[str]:
    return [tok.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=False) for r in rows]


def evaluate_pass_rates(model, tok, rows, samples: int, max_new_tokens: int, temperature: float,
                        batch_prompts: int = 16) -> np.ndarray:
    """Each prompt's share of ``samples`` sampled answers that :func:`check_answer` accepts."""
    import torch

    rates = np.zeros(len(rows))
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        for lo in range(0, len(rows), batch_prompts):
            chunk = rows[lo:lo + batch_prompts]
            enc = tok(_prompt_texts(tok, chunk), return_tensors="pt", padding=True, add_special_tokens=False)
            enc = {k: v.to(device) for k, v in enc.items()}
            with torch.no_grad():
                out = model.generate(**enc, do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                                     max_new_tokens=max_new_tokens, num_return_sequences=samples,
                                     pad_token_id=tok.pad_token_id)
            texts = tok.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
            for i, row in enumerate(chunk):
                got = texts[i * samples:(i + 1) * samples]
                rates[lo + i] = np.mean([check_answer(t, row["answer"]) for t in got])
    finally:
        model.train(was_training)
    return rates


def _progress_callback(total: int, enabled: bool):
    from tqdm.auto import tqdm
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        bar = None

        def on_train_begin(self, args, state, control, **kw):
            self.bar = tqdm(total=total, desc="train-lm", unit="step", disable=not enabled)

        def on_log(self, args, state, control, logs=None, **kw):
            if self.bar is not None and logs and "reward" in logs:
                self.bar.set_postfix(reward=f"{logs['reward']:.2f}",
                                     eff=f"{logs.get('lab/effective_group_rate', float('nan')):.2f}")

        def on_step_end(self, args, state, control, **kw):
            if self.bar is not None:
                self.bar.update(1)

        def on_train_end(self, args, state, control, **kw):
            if self.bar is not None:
                self.bar.close()

    return Progress()


def _stop_callback(stop: dict):
    """Ends training after the current optimizer step once ``stop["signal"]`` is set."""
    from transformers import TrainerCallback

    class StopOnSignal(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if stop.get("signal"):
                control.should_training_stop = True

    return StopOnSignal()


def run_lm(cfg: LMRunConfig, out, progress: bool = True, command: str | None = None, model_cache: bool = True) -> Path:
    """Train one arm and write its record to ``out`` (live, after every step). Returns ``out``.

    SIGTERM or SIGINT (Ctrl-C) ends the run after the optimizer step in progress: the final evaluation
    still runs and the record is completed with ``end_reason`` saying so (a second signal acts as usual)."""
    cfg = cfg.check()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from .recorder import GroupRecorder

    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    from .advantages import fixed_reference_trainer
    from .dynamic_sampling import BatchNotFilled, dynamic_sampling_trainer
    from .smollm import MODEL_NAME, load_smollm2

    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA device is visible to torch")
    out = Path(out)
    t0 = time.perf_counter()
    torch.manual_seed(cfg.seed)
    model, tok = load_smollm2(cfg.device, cache=model_cache)
    load_s = time.perf_counter() - t0
    rows = make_prompts(cfg.per_tier, cfg.seed, cfg.tiers)
    dataset = Dataset.from_list(rows)
    G = cfg.num_generations
    args = GRPOConfig(
        output_dir=str(out / "trl-output"), num_generations=G, per_device_train_batch_size=cfg.prompts_per_step * G,
        max_steps=cfg.max_steps, max_completion_length=cfg.max_completion_length, learning_rate=cfg.learning_rate,
        beta=0.0, loss_type="dr_grpo", scale_rewards="none" if cfg.estimator == "dr_grpo" else "group",
        temperature=cfg.temperature, top_k=0, top_p=1.0, logging_steps=1, report_to="none", save_strategy="no",
        use_cpu=cfg.device == "cpu", seed=cfg.seed, disable_tqdm=True, bf16=False, fp16=False,
        # transformers 5 renamed gradient_checkpointing (a deprecated alias now, which TRL's configs set to True by
        # default, so every GRPOConfig warned): the new name, set, is the same switch without the warning
        activation_checkpointing=False,
    )
    lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0, task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    cls = GRPOTrainer if cfg.estimator == "dr_grpo" else fixed_reference_trainer(cfg.estimator)
    if cfg.dynamic_sampling:
        cls = dynamic_sampling_trainer(base=cls, max_num_gen_batches=cfg.max_num_gen_batches)
    trainer = cls(model=model, reward_funcs=[reward_exact], args=args, train_dataset=dataset,
                  processing_class=tok, peft_config=lora)
    meta = {
        "model": MODEL_NAME,
        "task": "arithmetic in tiers (" + "; ".join(f"t{t}: {TIERS[t][0]}" for t in cfg.tiers)
                + "), binary exact-answer reward",
        "lm_config": asdict(cfg),
        "estimator": cfg.estimator,
        "dynamic_sampling": ("DAPO, grpo_lab.trl_recorder.dynamic_sampling_trainer (TRL 1.16 has none)"
                             if cfg.dynamic_sampling else "none (TRL 1.16 has no dynamic sampling)"),
        "source": {"kind": "grpo-lab-train-lm", "trainer": "GRPOTrainer", "command": command},
        "model_load_s": load_s,
    }
    recorder = GroupRecorder(out, tag_column="tier", meta=meta, complete_on_train_end=False)  # final eval first
    recorder.attach(trainer)
    recorder.appender.meta["config"].update(estimator=cfg.estimator)  # what `grpo-lab inspect` shows
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # TRL's log dicts on stdout; the progress bar shows reward and eff
    trainer.add_callback(_progress_callback(cfg.max_steps, progress))
    stop = {}
    trainer.add_callback(_stop_callback(stop))
    recorder.appender.meta["source"]["trl"] = recorder.trl.__version__

    def _on_signal(signum, frame):
        stop["signal"] = signal.Signals(signum).name
        for sig in old:  # a second signal acts as usual
            signal.signal(sig, old[sig])

    old = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        recorder.add_eval(0, evaluate_pass_rates(trainer.model, tok, rows, cfg.eval_samples,
                                                 cfg.max_completion_length, cfg.temperature), cfg.eval_samples)
        trainer.train()
    except BatchNotFilled as exc:  # dynamic sampling could not fill a batch: the run ends after the last full step
        recorder.appender.meta["end_reason"] = str(exc)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    step = trainer.state.global_step
    if stop.get("signal") and step < cfg.max_steps:
        recorder.appender.meta["end_reason"] = f"stopped by {stop['signal']} after step {step} of {cfg.max_steps}"
    recorder.add_eval(step, evaluate_pass_rates(trainer.model, tok, rows, cfg.eval_samples,
                                                cfg.max_completion_length, cfg.temperature), cfg.eval_samples)
    recorder.finish(step)
    try:
        (out / "trl-output").rmdir()  # TRL's output_dir: empty with save_strategy="no"
    except OSError:
        pass
    return out


def preset(name: str, **overrides) -> LMRunConfig:
    """A preset with fields replaced (None values ignored)."""
    if name not in PRESETS:
        raise InputError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
    return replace(PRESETS[name], **{k: v for k, v in overrides.items() if v is not None}).check()
