#!/bin/sh
# Regenerate the shipped runs under runs/: representative runs of the reduced study
# (`grpo-lab study --preset reduced`, resumable; about 20 minutes on 2 idle cores), seed 1 of each
# cell: dr_grpo and sign from the same start in both regimes, and dr_grpo with DAPO dynamic sampling.
# The study folder keeps every run; runs/ gets copies named without the learning rate, checkpoints
# never shipped (the study removes them when a run is finished).
set -e
cd "$(dirname "$0")/.."
STUDY=${STUDY:-runs-local/study-reduced}
grpo-lab study --preset reduced --out "$STUDY" --jobs "${JOBS:-2}"
for cell in broad-g4-dr_grpo broad-g4-sign broad-g4-dr_grpo-ds weak-g4-dr_grpo weak-g4-sign weak-g4-dr_grpo-ds; do
  src="$STUDY/runs/$cell-lr0.0002-s1"
  rm -rf "runs/$cell-s1"
  python -c "import sys; from grpo_lab.sims.record import read_record, write_record
rec = read_record(sys.argv[1]); rec.meta['name'] = sys.argv[2].rsplit('/', 1)[-1]; write_record(sys.argv[2], rec)" \
    "$src" "runs/$cell-s1"
done
