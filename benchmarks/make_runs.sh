#!/bin/sh
# Regenerate what runs/ ships of the full study (`grpo-lab study --preset full`, resumable; hours on 2 cores):
# - runs/study-full/figures.json and tables.md: every run's figures, config and array hashes, and the tables
#   (`grpo-lab study --preset full --tables-only --out runs/study-full` rewrites the same tables from them alone);
# - a few of its records whole, for the Replay tab (lab/replay/catalog.py: FEATURED, PAIRS), copied unchanged
#   (the study removes a run's checkpoint once it is finished), so their hashes are the ones figures.json lists.
set -e
cd "$(dirname "$0")/.."
STUDY=${STUDY:-runs-local/study-full}
grpo-lab study --preset full --out "$STUDY" --jobs "${JOBS:-2}"
grpo-lab study --preset full --out "$STUDY" --tables-only > /dev/null  # figures.json of every finished run
mkdir -p runs/study-full
cp "$STUDY/figures.json" "$STUDY/tables.md" runs/study-full/
for run in broad-g4-dr_grpo-lr0.0008-s1 broad-g4-sign-lr0.0004-s1 broad-g4-tasa-lr0.0016-s1 \
           broad-g4-dr_grpo-ds-lr0.0008-s1 weak-g4-dr_grpo-lr0.0004-s1 weak-g4-sign-lr0.0004-s1 \
           weak-g4-dr_grpo-ds-lr0.0004-s1 weak-g4-dr_grpo-ds-retire2-lr0.0004-s1; do
  rm -rf "runs/$run"
  cp -r "$STUDY/runs/$run" "runs/$run"
done
# the reduced preset's tables and figures too (about 10 minutes more)
REDUCED=${REDUCED:-runs-local/study-reduced}
grpo-lab study --preset reduced --out "$REDUCED" --jobs "${JOBS:-2}"
grpo-lab study --preset reduced --out "$REDUCED" --tables-only > /dev/null
mkdir -p runs/study-reduced
cp "$REDUCED/figures.json" "$REDUCED/tables.md" runs/study-reduced/
chmod 644 runs/study-full/* runs/study-reduced/* runs/*-s1/*
