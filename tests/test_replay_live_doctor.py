"""The Replay's live forecast is the doctor's (lab/replay/live_forecast.py): computed off the server's loop, the
quick trend labelled while the first is pending, the last good one kept while the next is computed; and the Replay's
trainer-loop controls (the Live lab's own parameters) give the doctor's stall risk under them, as the command line's
flags do."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from grpo_lab.fleet_doctor import diagnose_entry
from grpo_lab.replay.live_forecast import PENDING, LiveForecast, doctor_line, trainer_settings
from grpo_lab.replay.state import TRAINER, ReplayState, trainer_query
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.trainer_config import read_trainer_config
from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.state import LabState

FIXTURES = Path(__file__).parent / "fixtures" / "trackers"
LINES = (FIXTURES / "jsonl" / "metrics.jsonl").read_text().splitlines()


class _Doc:
    """A served document's next-tick queue, run by hand."""

    def __init__(self):
        self.queue = []

    def add_next_tick_callback(self, cb):
        self.queue.append(cb)

    def run(self, timeout=300.0):
        deadline = time.monotonic() + timeout
        while not self.queue and time.monotonic() < deadline:
            time.sleep(0.05)
        while self.queue:
            self.queue.pop(0)()


def _log(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "jsonl" / "config.json", folder / "config.json")
    (folder / "metrics.jsonl").write_text("\n".join(LINES[:n]) + "\n")
    return folder / "metrics.jsonl"


def test_the_trainer_controls_are_the_live_labs_and_the_cli_flags():
    for name in TRAINER:  # not declared again: the Live lab's label, bounds and default
        mine, lab = ReplayState.param[name], LabState.param[name]
        assert (mine.label, mine.default, getattr(mine, "bounds", None), getattr(mine, "objects", None)) == \
            (lab.label, lab.default, getattr(lab, "bounds", None), getattr(lab, "objects", None))
    cfg, K = trainer_settings("DAPO", 8, 64, 32, 2)
    flags = read_trainer_config(gen_batch_size=64, train_batch_size=32, max_num_gen_batches=2)
    assert K == 8 and {k: v for k, v in cfg.items() if k != "source"} == \
        {k: v for k, v in flags.items() if k != "source"}
    cfg, _ = trainer_settings("GRPO", 8, 64, 32, 2)
    assert (cfg["gen_batch"], cfg["train_batch"], cfg["cap"]) == (32, 32, 0)
    assert trainer_settings("none", 8, 64, 32, 2) == (None, None)
    values, notices = trainer_query({"replay_loop": "DAPO", "replay_K": "16", "replay_cap": "0", "replay_gen_batch": "x"})
    assert values == {"loop": "DAPO", "K": 16} and len(notices) == 2


def test_the_doctor_is_computed_off_the_loop_and_the_last_good_kept(tmp_path):
    log = _log(tmp_path / "run", 20)
    doc, shown = _Doc(), []
    live = LiveForecast(shown.append, doc=doc)
    first = read_scalars(str(log), fmt="jsonl")
    live.update(first, same_run=False)
    assert shown[-1].startswith(f"Live forecast at step 20 ({PENDING}: trend of the mixed share")
    doc.run()
    assert shown[-1] == doctor_line(diagnose_entry(first, None, 0.5)) and "(the doctor's)" in shown[-1]
    with open(log, "a") as fh:
        fh.write(LINES[20] + "\n")
    grown = read_scalars(str(log), fmt="jsonl")
    live.update(grown)  # the same run, one step more: the last good forecast stays, said to be updating
    assert shown[-1].startswith("Live forecast at step 20 (the doctor's)")
    assert shown[-1].endswith("The run has reached step 21: the doctor is updating.")
    doc.run()
    assert shown[-1] == doctor_line(diagnose_entry(grown, None, 0.5))
    assert shown[-1].startswith("Live forecast at step 21 (the doctor's)")


def test_the_replay_gives_the_doctors_stall_risk_under_its_trainer_loop(tmp_path):
    from grpo_lab.replay.view import ReplayView

    log = _log(tmp_path / "exp", 30)
    view = ReplayView(runs_root=tmp_path)
    assert "choose the trainer loop below" in view.follow_pane.lines["replay-live-forecast"]
    view.state.param.update(loop="DAPO", K=8, gen_batch=64, train_batch=32, cap=2)
    line = view.follow_pane.lines["replay-live-forecast"]
    want = diagnose(read_scalars(str(log), fmt="jsonl"), num_generations=8,
                    trainer_config=read_trainer_config(gen_batch_size=64, train_batch_size=32, max_num_gen_batches=2))
    st = want["when"]["stall"]
    lo, hi = st["interval"]
    assert f"first stall near step {st['step']:.0f}, {100 * st['level']:.0f}% interval [{lo:.0f}, {hi:.0f}]" in line
    p = want["tracker"]["grpo_lab/p_stall_next"]
    assert f"P(stall within the next 3 steps) {100 * p:.0f}%" in line
    assert "replay_loop=DAPO" in view.trainer_link.object and "replay_cap=2" in view.trainer_link.object
    opened = ReplayView(runs_root=tmp_path, query={"replay_loop": "DAPO", "replay_K": "8", "replay_gen_batch": "64",
                                                   "replay_train_batch": "32", "replay_cap": "2"})
    assert opened.follow_pane.lines["replay-live-forecast"] == line  # the link's view: the same forecast


@pytest.mark.parametrize("value", ["0", "-3", "lots"])
def test_a_bad_trainer_value_in_the_url_is_said_and_the_page_goes_on(tmp_path, value):
    from grpo_lab.replay.view import ReplayView

    _log(tmp_path / "exp", 30)
    view = ReplayView(runs_root=tmp_path, query={"replay_loop": "DAPO", "replay_cap": value})
    assert view.state.loop == "DAPO" and view.state.cap == ReplayState.param["cap"].default
    assert "replay_cap" in view.state.error and "not used" in view.state.error
