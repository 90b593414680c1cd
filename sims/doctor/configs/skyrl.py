r"""SkyRL: DAPO-style filtering in rounds of the training batch, with ``max_sample_batches`` as the cap.

Source: NovaSky-AI/SkyRL at a956457 (2026-08-21, ``skyrl`` 0.3.0): ``skyrl/train/config/config.py``
(``DynamicSamplingConfig``, ``TrainerConfig``, ``GeneratorConfig``), ``skyrl/train/trainer.py`` (the check
``sample_batch_count >= max_sample_batches`` raising ``RuntimeError``), ``skyrl/train/utils/trainer_utils.py``
(``handle_filter_sampling``: groups with reward std 0 dropped until ``train_batch_size`` prompts are kept; the
train dataloader's batch is ``trainer.train_batch_size``).

=================================================  ==========================================================
key                                                read as
=================================================  ==========================================================
``trainer.train_batch_size``                       T = B (each round is one dataloader batch; default 1024)
``generator.n_samples_per_prompt``                 K (default 5)
``trainer.algorithm.dynamic_sampling.type``        ``filter`` (DAPO): on; ``replace`` (POLARIS) or null: no
                                                   resampling (``enable`` false)
``trainer.algorithm.dynamic_sampling.max_sample_batches``  the cap in rounds (default 30; <= 0: none)
=================================================  ==========================================================

A SkyRL config is recognised by ``trainer.algorithm.dynamic_sampling`` or ``generator.n_samples_per_prompt``.
"""

from __future__ import annotations

from ...errors import InputError
from ._keys import as_int, get

__all__ = ["read", "looks_like"]

DEFAULT_CAP = 30  #: DynamicSamplingConfig.max_sample_batches
DEFAULT_K = 5  #: GeneratorConfig.n_samples_per_prompt


def looks_like(nested: dict) -> bool:
    return get(nested, "trainer.algorithm.dynamic_sampling") is not None or \
        get(nested, "generator.n_samples_per_prompt") is not None


def read(d: dict) -> dict:
    T = get(d, "trainer.train_batch_size")
    if T is None:
        raise InputError("trainer config (SkyRL): trainer.train_batch_size is missing")
    T = as_int(T, "trainer.train_batch_size")
    K = as_int(get(d, "generator.n_samples_per_prompt", DEFAULT_K), "generator.n_samples_per_prompt", 2)
    kind = get(d, "trainer.algorithm.dynamic_sampling.type")
    if kind not in (None, "filter", "replace"):
        raise InputError(f"trainer config (SkyRL): trainer.algorithm.dynamic_sampling.type must be filter, replace or "
                         f"null, got {kind!r}")
    cap = get(d, "trainer.algorithm.dynamic_sampling.max_sample_batches", DEFAULT_CAP)
    if isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap != int(cap):
        raise InputError(f"trainer config (SkyRL): max_sample_batches must be an integer, got {cap!r}")
    return {"trainer": "skyrl", "train_batch": T, "gen_batch": T, "cap": max(int(cap), 0), "pool": None, "K": K,
            "enable": kind == "filter", "scheme": "rounds", "inflight": None, "gen_per_train": 1.0,
            "note": "dynamic_sampling.type = replace (POLARIS) swaps unanimous groups for copies of mixed ones "
                    "within the batch: no resampling" if kind == "replace" else None}
