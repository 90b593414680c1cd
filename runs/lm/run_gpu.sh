#!/usr/bin/env bash
# The full comparison on one GPU (prepared, NOT yet run: no GPU was lent to this work, so neither its time
# nor its records exist yet). SmolLM2-135M-Instruct + LoRA in TRL's GRPOTrainer, preset "gpu" (80 steps of
# 16 prompts, 80 prompts in 5 tiers, evaluations of 16 samples before and after): G = 4 and 8, sign vs
# dr_grpo, plain and with dynamic sampling (grpo_lab.sims.trl.dynamic_sampling_trainer; TRL has none):
# eight runs side by side on the one device (each holds one 135M model in float32 plus LoRA: a few GB),
# two torch CPU threads each (loading dequantises the GGUF on the CPU; eight runs x torch's default of one
# thread per core would oversubscribe the host). Generation is TRL's own (transformers generate; no vLLM).
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
    for ds in "" "-ds"; do
      name="gpu-g$g-$est$ds"
      python -m grpo_lab.cli train-lm --preset gpu --device cuda --threads 2 --estimator "$est" --num-generations "$g" \
        ${ds:+--dynamic-sampling} --out "$out/$name" --no-progress > "$out/$name.log" 2>&1 &
      pids+=($!)
    done
  done
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
echo "all eight runs finished in $(( $(date +%s) - start )) s (status $status)"
for d in "$out"/gpu-g*-*/; do python -m grpo_lab.cli inspect "$d" 2>/dev/null | head -n 20 || true; done
exit $status
