#!/usr/bin/env bash
# The full comparison on one GPU (prepared, NOT yet run: no GPU was available when it was written).
# SmolLM2-135M-Instruct + LoRA in TRL's GRPOTrainer, preset "gpu" (80 steps of 16 prompts, 80 prompts in
# 5 tiers, evaluations of 16 samples before and after), G = 4 and 8, sign vs dr_grpo: four runs side by side
# on the one device (each uses well under 10 GB). Expected well within 10 minutes on an H100/H200-class GPU.
#   runs/lm/run_gpu.sh [OUT_DIR]     (default runs/lm)
set -euo pipefail
cd "$(dirname "$0")/../.."
export HF_HUB_OFFLINE=1
out="${1:-runs/lm}"
mkdir -p "$out"
start=$(date +%s)
pids=()
for g in 4 8; do
  for est in sign dr_grpo; do
    python -m grpo_lab.cli train-lm --preset gpu --device cuda --estimator "$est" --num-generations "$g" \
      --out "$out/gpu-g$g-$est" --no-progress > "$out/gpu-g$g-$est.log" 2>&1 &
    pids+=($!)
  done
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
echo "all four runs finished in $(( $(date +%s) - start )) s (status $status)"
for d in "$out"/gpu-g*-*/; do python -m grpo_lab.cli inspect "$d" 2>/dev/null | head -n 20 || true; done
exit $status
