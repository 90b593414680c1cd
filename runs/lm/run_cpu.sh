#!/usr/bin/env bash
# The CPU comparison shipped in runs/lm/: SmolLM2-135M-Instruct + LoRA in TRL, sign vs dr_grpo, preset "cpu"
# (2 prompts x G rollouts per step, 10 prompts in 5 tiers, completions of up to 10 tokens, evaluations of
# 4 samples per prompt before and after). Eight runs, two at a time (one torch thread each, one per core):
#   G = 4 plain, 16 steps (32 groups)            cpu-g4-{sign,dr_grpo}
#   G = 8 plain, 16 steps (32 groups)            cpu-g8-{sign,dr_grpo}
#   G = 8 dynamic sampling, 10 steps asked       cpu-g8-{sign,dr_grpo}-ds       (ended at step 5: prompts used up)
#   the same on 20 prompts (--per-tier 4)        cpu-g8-{sign,dr_grpo}-ds-p20   (ended at steps 7 and 9)
#   runs/lm/run_cpu.sh [OUT_DIR]     (default runs/lm; each run's log beside its record)
# Time: see docs/trl.md ("The shipped CPU records": the set's measured wall time and CPU seconds per run).
set -euo pipefail
cd "$(dirname "$0")/../.."
export HF_HUB_OFFLINE=1
out="${1:-runs/lm}"
mkdir -p "$out"
start=$(date +%s)
pair() {  # pair NAME_SUFFIX ARGS...: the sign and dr_grpo arms side by side
  local suffix=$1; shift
  local pids=()
  for est in sign dr_grpo; do
    python -m grpo_lab.cli train-lm --preset cpu --estimator "$est" --threads 1 --no-progress "$@" \
      --out "$out/cpu-$suffix-$est${DS:-}" > "$out/cpu-$suffix-$est${DS:-}.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
}
pair g4 --num-generations 4 --steps 16
pair g8 --num-generations 8 --steps 16
DS=-ds pair g8 --num-generations 8 --steps 10 --dynamic-sampling
DS=-ds-p20 pair g8 --num-generations 8 --steps 10 --dynamic-sampling --per-tier 4
echo "eight runs finished in $(( $(date +%s) - start )) s"
