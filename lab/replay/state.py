"""The replay tab's state: one ``param.Parameterized`` per session, testable without a browser.

``run`` and ``compare`` name entries of ``choices`` (the shipped runs plus this session's
uploads, which live only here: nothing a visitor uploads reaches another session).
"""

from __future__ import annotations

import copy

import param

from grpo_lab.sims.ingest import UPLOAD_FORMATS
from grpo_lab.state import LabState

__all__ = ["ReplayState", "NONE", "VIEWS", "UPLOAD_PREFIX", "TRAINER", "URL_PREFIX", "trainer_query"]

NONE = "(none)"
VIEWS = ("group outcome at this step", "pass rate at the nearest evaluation")
UPLOAD_PREFIX = "upload: "
#: the trainer loop's controls the doctor's stall risk is computed under: the Live lab's own parameters (their
#: names, labels, bounds and defaults declared once, on grpo_lab.state.LabState), with docs that speak of the run
TRAINER = ("loop", "K", "gen_batch", "train_batch", "cap")
URL_PREFIX = "replay_"  #: the URL names them replay_loop, replay_K, ... (the Live lab's own names are its own)
_DOCS = {"loop": "The trainer loop the run trains with, for the doctor's stall risk on a log that does not carry its "
                 "trainer's settings (a tracker log): DAPO (rounds of the generation batch until the train batch of "
                 "mixed groups is full, at most the cap) or plain GRPO (no resampling: the doctor says it never "
                 "raises); none: the record's own settings, if any.",
         "K": "Rollouts per prompt (the doctor's --num-generations), with the loop."}


def _lab(name: str):
    """The Live lab's parameter ``name`` (a copy: this class owns it), its doc said of the run."""
    par = copy.copy(LabState.param[name])
    if name in _DOCS:
        par.doc = _DOCS[name]
    return par


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
        "its rows, a .zip of an output folder whose only log it is), or an HF Trainer's console log (a .log, .out, .txt "
        "or .err holding the metric dicts TRL printed), is read as grpo-lab ingest reads it whatever the format "
        "chosen)."))
    tolerance = param.Number(0.0, bounds=(0.0, None), doc=(
        "Reward tolerance for uploads: a group counts as degenerate (no gradient) when max - min of its rewards "
        "is at most this. 0 for binary rewards."))
    choices = param.Dict(default={}, doc=(
        "label -> run directory (str), a live tracker log (grpo_lab.replay.trackers.TrackerSource) or an uploaded "
        "RunRecord"))
    notice = param.String("", doc="What the current run lacks and therefore cannot be shown.")
    loop = _lab("loop")
    K = _lab("K")
    gen_batch = _lab("gen_batch")
    train_batch = _lab("train_batch")
    cap = _lab("cap")

    def trainer(self) -> tuple:
        """``(loop, K, gen_batch, train_batch, cap)``: the trainer loop's controls."""
        return tuple(getattr(self, name) for name in TRAINER)
    error = param.String("", doc="The last error (a bad upload or an unreadable record), shown on the page.")


def trainer_query(query: dict) -> tuple[dict, list[str]]:
    """The trainer loop's values of a URL query (``replay_loop``, ``replay_K``, ...), checked against the parameters'
    own kinds and bounds: ``(values, notices)``; a value that is not of the kind or out of bounds is left out and
    said in a notice."""
    values, notices = {}, []
    for name in TRAINER:
        raw = query.get(URL_PREFIX + name)
        if raw is None:
            continue
        par = ReplayState.param[name]
        try:
            value = raw if isinstance(par, param.Selector) else int(str(raw))
            par._validate(value)
        except (ValueError, TypeError) as exc:
            notices.append(f"{URL_PREFIX}{name}={str(raw)[:40]!r} ignored ({str(exc).split(',')[0][:120]})")
            continue
        values[name] = value
    return values, notices
