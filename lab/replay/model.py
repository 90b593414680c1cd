"""What the replay tab sends to the browser for one run: arrays indexed by step, computed once.

Every number comes from :mod:`grpo_lab.sims.replay` (``step_series``, ``grid_states``,
``step_histograms``, ``eval_index``) on the record; this module only reshapes them into
the flat tables the browser indexes while scrubbing (no arithmetic happens there).

:class:`RunView` fields
    ``steps``      (S,) optimizer steps with data
    ``codes``      (S, N) int8 cell codes: the group outcome (``sims.scenario`` MIXED / ALL_PASS /
                   ALL_FAIL) or :data:`NOT_SAMPLED_CODE` (drawn like the live lab's filtered cells)
    ``eval_rates`` (E, N) float32 per-prompt pass rates at each evaluation; ``ev_row`` (S,) the
                   evaluation each step uses (-1 without evaluations)
    ``series``     :data:`SERIES` columns, one value per step (see :func:`series_columns`)
    ``hist_edges``, ``hist``  (S, bins, 4) pass-rate histogram at each step split by group state
    ``x``, ``y``   cell positions (easiest prompt at the first evaluation top-left)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from grpo_lab.sims.record import RunRecord
from grpo_lab.sims.replay import (NOT_SAMPLED, GroupFacts, eval_index, grid_states, group_facts, group_size,
                                  scalar_step_series, step_histograms, step_series)

from ..grid.cells import FILTERED, cell_positions

__all__ = ["RunView", "SERIES", "READOUT_KEYS", "NOT_SAMPLED_CODE", "HIST_BINS", "rows_for", "union_steps",
           "series_columns"]

NOT_SAMPLED_CODE = FILTERED  #: a prompt with no group at a step is drawn as the live lab draws filtered prompts
HIST_BINS = 10
ROLLING_WINDOW = 10

#: series column -> (key of sims.replay.step_series, or "1-<key>" for the rate a D prediction expects)
SERIES = {
    "eff": "effective_group_rate",
    "eff_roll": "effective_group_rate_rolling",
    "pred_real": "1-predicted_d_real",
    "pred_iid": "1-predicted_d_iid",
    "all_pass": "all_pass_share",
    "all_fail": "all_fail_share",
    "reward": "reward_mean",
    "eval_pass": "eval_pass_rate",
    "gen_cum": "rollouts_generated_cum",
    "useful_cum": "rollouts_useful_cum",
}
#: readout values the browser writes at a step: the step itself and every SERIES column
READOUT_KEYS = ("step", *SERIES)


def series_columns(series: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The SERIES columns (float64) from a ``step_series`` dict; "1-<key>" is the predicted effective rate."""
    out = {}
    for col, key in SERIES.items():
        out[col] = 1.0 - series[key[2:]] if key.startswith("1-") else np.asarray(series[key], dtype=float)
    return out


def union_steps(*views: "RunView | None") -> np.ndarray:
    """Sorted union of the steps of the given runs (the shared time axis)."""
    arrays = [v.steps for v in views if v is not None and len(v.steps)]
    return np.unique(np.concatenate(arrays)) if arrays else np.zeros(0, np.int64)


def rows_for(view: "RunView | None", steps: np.ndarray) -> np.ndarray:
    """For each step on the shared axis, the run's row: its latest step at or before it; -1 before its first."""
    if view is None or len(view.steps) == 0:
        return np.full(len(steps), -1, np.int32)
    return (np.searchsorted(view.steps, steps, side="right") - 1).astype(np.int32)


@dataclass
class RunView:
    """One run, ready to replay (see the module docstring)."""

    label: str
    record: RunRecord
    steps: np.ndarray = field(init=False)
    codes: np.ndarray = field(init=False)
    eval_rates: np.ndarray = field(init=False)
    ev_row: np.ndarray = field(init=False)
    series: dict = field(init=False)
    hist_edges: np.ndarray = field(init=False)
    hist: np.ndarray = field(init=False)
    x: np.ndarray = field(init=False)
    y: np.ndarray = field(init=False)
    facts: GroupFacts | None = field(init=False, repr=False)  # computed once; None for a scalars-only record

    def __post_init__(self):
        rec = self.record
        self.scalars_only = len(rec.groups["step"]) == 0
        n = rec.n_prompts
        self.facts = None
        if self.scalars_only:
            raw = scalar_step_series(rec, ROLLING_WINDOW)
            self.steps = np.asarray(raw["step"], np.int64)
            self.codes = np.full((len(self.steps), n), NOT_SAMPLED_CODE, np.int8)
            self.hist_edges = np.linspace(0, 1, HIST_BINS + 1)
            self.hist = np.zeros((len(self.steps), HIST_BINS, 4), np.int64)
        else:
            self.facts = group_facts(rec)  # the group outcomes, computed once for every figure below
            raw = step_series(rec, ROLLING_WINDOW, self.facts)
            steps, states = grid_states(rec, self.facts)
            self.steps = np.asarray(steps, np.int64)
            self.codes = np.where(states == NOT_SAMPLED, NOT_SAMPLED_CODE, states).astype(np.int8)
            self.hist_edges, self.hist = step_histograms(rec, HIST_BINS, self.facts)
        self.series = series_columns(raw)
        self.series["step"] = self.steps.astype(float)
        rates = rec.evals.get("pass_rate")
        self.has_evals = rates is not None and len(rates) > 0
        self.eval_rates = (np.asarray(rates, np.float32) if self.has_evals else np.full((1, n), np.nan, np.float32))
        self.ev_row = eval_index(rec, self.steps).astype(np.int32) if self.has_evals else np.zeros(len(self.steps), np.int32)
        first = self.eval_rates[0].astype(float)
        self.x, self.y = cell_positions(np.where(np.isfinite(first), first, -1.0))

    @property
    def n_prompts(self) -> int:
        return self.record.n_prompts

    @property
    def prompt_labels(self) -> list[str]:
        labels = self.record.meta.get("prompt_labels")
        if isinstance(labels, list) and len(labels) == self.n_prompts:
            return [str(v) for v in labels]
        return [str(i) for i in range(self.n_prompts)]

    @property
    def group_size(self) -> int:
        """K, the rollouts per group (:func:`grpo_lab.sims.replay.group_size`); 0 for a scalars-only record."""
        return 0 if self.scalars_only and not self.record.meta.get("num_generations") else group_size(self.record)

    @property
    def tolerance(self) -> float:
        return self.record.reward_tolerance

    def missing(self) -> list[str]:
        """What this record lacks, in words, and what the tab therefore cannot show."""
        meta = self.record.meta
        out = []
        if self.scalars_only:
            out.append("per-group rewards (scalars only): no grid, no histogram, no useful-rollout count")
        if not self.has_evals:
            out.append("evaluations: no D_real / D_iid predictions, no evaluation pass rate, no pass-rate view")
        listed = [m for m in meta.get("missing", []) if m not in ("evals", "completions")]
        if listed:
            out.append("also not in the source: " + ", ".join(map(str, listed)))
        # ingested runs: what the reader could not know, and where the source disagreed (sims.ingest)
        out += [str(t) for key in ("warnings", "notes") for t in meta.get(key) or []]
        src = meta.get("source") if isinstance(meta.get("source"), dict) else {}
        if src.get("kind") == "tracker":  # a tracker's scalars (sims.ingest.trackers): its columns not found
            if src.get("missing"):
                out.append(f"not in the {src.get('trainer')} metrics read: " + ", ".join(map(str, src["missing"])))
            out += [str(t) for t in src.get("notes") or []]
        return out

    def summary(self, row: int) -> dict:
        """Readout values at ``row`` (NaN everywhere for -1): exactly what the browser indexes."""
        return {k: (float(self.series[k][row]) if row >= 0 else float("nan")) for k in READOUT_KEYS}
