#!/usr/bin/env bash
# The CPU comparison shipped in runs/lm/: SmolLM2-135M-Instruct + LoRA in TRL, G = 4, sign vs dr_grpo,
# preset "cpu" (10 steps of 2 prompts x 4 rollouts, 10 prompts in 5 tiers, evaluations of 4 samples).
# The two arms run side by side, one thread each.
set -euo pipefail
cd "$(dirname "$0")/../.."
export HF_HUB_OFFLINE=1
pids=()
for est in sign dr_grpo; do
  python -m grpo_lab.cli train-lm --preset cpu --estimator "$est" --num-generations 4 --threads 1 \
    --out "runs/lm/cpu-g4-$est" > "runs/lm/cpu-g4-$est.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
