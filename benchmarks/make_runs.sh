#!/bin/sh
# Regenerate what runs/ ships of the study (resumable: run it again after an interruption):
# - runs/warmstarts: the warm starts every shipped run and the study start from (benchmarks/make_warmstarts.py;
#   only when asked, WARMSTARTS=1: every record below changes with them);
# - a few records of the first full study (preset full-v1) whole, for the Replay tab (lab/replay/catalog.py:
#   FEATURED, PAIRS), retrained cell by cell from the shipped warm start (`grpo-lab study --cells`, their rates
#   from the shipped runs/study-full-v1/figures.json) and copied unchanged (the study removes a run's checkpoint
#   once it is finished). runs/study-full-v1 itself (tables and figures of the 134 runs of that design, from the
#   warm start computed on the machine that ran it) is not remade: hours on 2 cores;
# - runs/study-reduced/figures.json and tables.md: the reduced preset (18 runs, about 13 CPU minutes).
# The full preset (`grpo-lab study --preset full`) is not run here (many hours on 2 cores).
set -e
cd "$(dirname "$0")/.."
if [ -n "$WARMSTARTS" ]; then python benchmarks/make_warmstarts.py; fi
V1=${V1:-runs-local/study-full-v1}
mkdir -p "$V1"
cp runs/study-full-v1/figures.json "$V1/"
CELLS="broad-g4-dr_grpo-lr0.0008-s1 broad-g4-sign-lr0.0004-s1 broad-g4-tasa-lr0.0016-s1 broad-g4-dr_grpo-ds-lr0.0008-s1
       weak-g4-dr_grpo-lr0.0004-s1 weak-g4-sign-lr0.0004-s1 weak-g4-dr_grpo-ds-lr0.0004-s1
       weak-g4-dr_grpo-ds-retire2-lr0.0004-s1"
# shellcheck disable=SC2086
grpo-lab study --preset full-v1 --out "$V1" --cells $CELLS --jobs "${JOBS:-2}"
for run in $CELLS; do
  rm -rf "runs/$run"
  cp -r "$V1/runs/$run" "runs/$run"
done
REDUCED=${REDUCED:-runs-local/study-reduced}
grpo-lab study --preset reduced --out "$REDUCED" --jobs "${JOBS:-2}"
grpo-lab study --preset reduced --out "$REDUCED" --tables-only > /dev/null
mkdir -p runs/study-reduced
cp "$REDUCED/figures.json" "$REDUCED/tables.md" runs/study-reduced/
chmod 644 runs/study-reduced/* runs/*-s1/* runs/warmstarts/*
