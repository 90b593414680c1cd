"""A real TRL GRPOTrainer on CPU in a few seconds: a tiny random Llama and a character tokenizer built here.

The tokenizer builder is the ingest fixture's (``tests/fixtures/ingest/make_trl_fixture.py``), imported
from its file. Reward functions write what they return into ``truth`` (the ground truth the tests
compare the record against): one entry per call, ``(name, prompts, values)``.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")

_FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "ingest" / "make_trl_fixture.py"  #: in the checkout
CHARS = "abcdefgh0123456789+="
TARGETS = "abcdefgh0123"


def build_tokenizer(chars: str = CHARS):
    spec = importlib.util.spec_from_file_location("_make_trl_fixture", _FIXTURE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build_tokenizer(chars)


def tiny_model(tokenizer, seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                         pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return LlamaForCausalLM(config)


def dataset(n: int = 8, tags: bool = False):
    from datasets import Dataset

    prompts = [f"{TARGETS[i % len(TARGETS)]}{i}=" for i in range(n)]
    cols = {"prompt": prompts, "target": [p[0] for p in prompts]}
    if tags:
        cols["tag"] = ["easy" if i % 2 else "hard" for i in range(n)]
    return Dataset.from_dict(cols)


def reward_functions(truth: list, none_every: int = 0):
    """``correct`` (target character present) and ``short`` (<= 4 characters); with ``none_every`` k,
    ``short`` returns None for every k-th row it sees and ``correct`` for every (k+1)-th one,
    so some rows have one reward missing and a few have both."""
    counter = {"correct": 0, "short": 0}

    def _maybe_none(name, values, k):
        out = []
        for v in values:
            counter[name] += 1
            out.append(None if k and counter[name] % k == 0 else v)
        return out

    def correct(prompts, completions, target, **kwargs):
        vals = _maybe_none("correct", [1.0 if t in c else 0.0 for c, t in zip(completions, target)],
                           none_every + 1 if none_every else 0)
        truth.append(("correct", list(prompts), vals))
        return vals

    def short(prompts, completions, **kwargs):
        vals = _maybe_none("short", [1.0 if len(c) <= 4 else 0.0 for c in completions], none_every)
        truth.append(("short", list(prompts), vals))
        return vals

    return [correct, short]


def make_trainer(out: Path, truth: list, trainer_cls=None, n_prompts: int = 8, tags: bool = False,
                 none_every: int = 0, funcs: int = 2, **overrides):
    """A GRPOTrainer over the tiny model; ``overrides`` go into GRPOConfig."""
    from trl import GRPOConfig, GRPOTrainer

    tok = build_tokenizer()
    kw = dict(output_dir=str(out / "trl"), num_generations=4, per_device_train_batch_size=8, max_steps=3,
              max_completion_length=4, learning_rate=1e-2, logging_steps=1, report_to="none", save_strategy="no",
              use_cpu=True, seed=0, temperature=1.0, beta=0.0, disable_tqdm=True,
              # TRL's default (on) under transformers 5's name: its old name, TRL's default, warns at every config
              activation_checkpointing=True)
    kw.update(overrides)
    args = GRPOConfig(**kw)
    cls = trainer_cls or GRPOTrainer
    return cls(model=tiny_model(tok), reward_funcs=reward_functions(truth, none_every)[:funcs], args=args,
               train_dataset=dataset(n_prompts, tags), processing_class=tok)
