#!/bin/sh
# Regenerate the shipped runs under runs/ (15 records: G = 4, four estimators and dr_grpo with
# dynamic sampling, seeds 0 1 2), two at a time, then drop the checkpoints (resume state, not shipped).
set -e
cd "$(dirname "$0")/.."
for seed in 0 1 2; do
  for est in dr_grpo grpo sign tasa; do
    echo "grpo-lab train --estimator $est --num-generations 4 --steps 200 --seed $seed --device cpu --threads 1 --no-progress --out runs/g4-$est-s$seed"
  done
  echo "grpo-lab train --estimator dr_grpo --dynamic-sampling --num-generations 4 --steps 200 --seed $seed --device cpu --threads 1 --no-progress --out runs/g4-dr_grpo-ds-s$seed"
done | xargs -P "${JOBS:-2}" -I CMD sh -c CMD
rm -f runs/*/checkpoint.pt
