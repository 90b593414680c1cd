"""Regenerate the shipped warm starts (``runs/warmstarts``: one .npz per (regime, sft_seed) and manifest.json).

    python benchmarks/make_warmstarts.py [--only broad-sft0 ...]

Each start is computed as :class:`grpo_lab.train.loop.Run` computes it without a shipped one (one torch
thread, CPU), saved as float32 arrays (:func:`grpo_lab.train.warmstart.npz_bytes`) and listed in the manifest
with its settings and SHA-256. Files are written atomically; the manifest last. Prints one line per start
with its CPU seconds and the machine's load. The run records that start from these files change with them:
regenerate them after (docs/trainer.md, "Reproducing a cell").
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch

from grpo_lab.sims.record import atomic_write_bytes
from grpo_lab.train import warmstart
from grpo_lab.train.config import GRPOConfig
from grpo_lab.train.model import TinyGPT
from grpo_lab.train.sft import warm_start
from grpo_lab.train.task import BLOCK_SIZE, VOCAB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="names like broad-sft0 (default: all of SHIPPED)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    where = warmstart.folder()
    where.mkdir(parents=True, exist_ok=True)
    files = dict(warmstart.read_manifest(where))
    for regime, seed in warmstart.SHIPPED:
        name = warmstart.file_name(regime, seed)
        if args.only is not None and name[:-4] not in args.only:
            continue
        cfg = GRPOConfig.for_start(regime, sft_seed=seed).validate()
        t0 = time.process_time()
        torch.manual_seed(cfg.warm_start_seed)
        model = TinyGPT(len(VOCAB), BLOCK_SIZE, cfg.n_layer, cfg.n_head, cfg.n_embd)
        warm_start(model, cfg.sft_steps, cfg.sft_batch_size, cfg.sft_learning_rate, cfg.warm_start_seed,
                   torch.device("cpu"), cfg.sft_digit_weights)
        data = warmstart.npz_bytes(warmstart.state_arrays(model))
        atomic_write_bytes(where / name, data)
        files[name] = {"regime": regime, "sft_seed": seed, "settings": warmstart.settings(cfg),
                       "sha256": warmstart.sha256(where / name), "bytes": len(data),
                       "made_with": {"torch": torch.__version__, "threads": 1, "device": "cpu"}}
        atomic_write_bytes(where / warmstart.MANIFEST, (json.dumps(
            {"format": warmstart.FORMAT, "files": dict(sorted(files.items()))}, indent=1, sort_keys=True) + "\n").encode())
        print(f"{name}: {len(data) / 1e6:.2f} MB, {time.process_time() - t0:.0f} s CPU (load {os.getloadavg()[0]:.1f})",
              flush=True)


if __name__ == "__main__":
    main()
