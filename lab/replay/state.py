"""The replay tab's state: one ``param.Parameterized`` per session, testable without a browser.

``run`` and ``compare`` name entries of ``choices`` (the shipped runs plus this session's
uploads, which live only here: nothing a visitor uploads reaches another session).
"""

from __future__ import annotations

import param

from grpo_lab.sims.ingest import UPLOAD_FORMATS

__all__ = ["ReplayState", "NONE", "VIEWS", "UPLOAD_PREFIX"]

NONE = "(none)"
VIEWS = ("group outcome at this step", "pass rate at the nearest evaluation")
UPLOAD_PREFIX = "upload: "


class ReplayState(param.Parameterized):
    """What the replay tab shows."""

    run = param.String("", doc="The run replayed (a shipped run, or a file uploaded in this session).")
    compare = param.String(NONE, doc="A second run drawn on the same time axis (side by side), or (none).")
    pair = param.String(NONE, doc=(
        "A named side-by-side view (two shipped runs from one start; the URL's ?replay=NAME), or (none)."))
    view = param.Selector(objects=list(VIEWS), default=VIEWS[0], doc=(
        "Colour each prompt by its group's outcome at this step, or by its pass rate at the nearest evaluation."))
    upload_format = param.Selector(objects=list(UPLOAD_FORMATS), default="jsonl", doc=(
        "Format of an uploaded file: jsonl (one group per line), verl (rollout dump JSONL), trl (completions "
        "parquet or trainer_state.json), tracker (a TensorBoard event file, a W&B .wandb log or history export, "
        "a trackio .db, a metrics.jsonl, or a .zip of a TensorBoard, W&B or MLflow run folder; a single tracker "
        "file, or an HF Trainer state told by its content (a .json with log_history under any name, a bare list of "
        "its rows, a .zip of an output folder whose only log it is), is read as grpo-lab ingest reads it whatever "
        "the format chosen)."))
    tolerance = param.Number(0.0, bounds=(0.0, None), doc=(
        "Reward tolerance for uploads: a group counts as degenerate (no gradient) when max - min of its rewards "
        "is at most this. 0 for binary rewards."))
    choices = param.Dict(default={}, doc=(
        "label -> run directory (str), a live tracker log (grpo_lab.replay.trackers.TrackerSource) or an uploaded "
        "RunRecord"))
    notice = param.String("", doc="What the current run lacks and therefore cannot be shown.")
    error = param.String("", doc="The last error (a bad upload or an unreadable record), shown on the page.")
