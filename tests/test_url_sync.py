"""The address bar follows the page (lab.url_sync): the Live lab's controls always, the Replay's trainer loop and
run once its tab is built (only values off their defaults), keys no part owns kept, a bad value repaired; the URL
written reads back (lab.replay.state.trainer_query) as the state that wrote it."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import parse_qsl

from grpo_lab.replay.state import TRAINER, URL_PREFIX, ReplayState, trainer_query
from grpo_lab.replay.view import ReplayView
from grpo_lab.state import LabState
from grpo_lab.url_sync import UrlSync

FIXTURES = Path(__file__).parent / "fixtures" / "trackers"


class Location:
    """The part of Panel's Location the sync uses; counts its writes."""

    def __init__(self, search: str = ""):
        self.search, self.writes = search, 0

    def __setattr__(self, name, value):
        if name == "search" and hasattr(self, "writes"):
            self.writes += 1
        super().__setattr__(name, value)


def _query(loc: Location) -> dict[str, str]:
    return dict(parse_qsl(loc.search.lstrip("?")))


def _two_runs(tmp_path) -> Path:
    for name in ("a", "b"):
        shutil.copytree(FIXTURES / "jsonl", tmp_path / name)
    return tmp_path


def test_the_replays_settings_follow_in_the_url_and_read_back_as_the_same_state(tmp_path):
    query = {"embed": "false", "tab": "replay", "replay_K": "16", "replay_cap": "abc", "K": "12"}
    sync = UrlSync(LabState(K=12), query)
    loc = Location("?" + "&".join(f"{k}={v}" for k, v in query.items()))
    sync.start(location=loc)  # outside a server (no document): each change is written at once
    q = _query(loc)
    # the Replay is not built yet: its keys are kept as typed; keys no part owns too
    assert q["replay_K"] == "16" and q["replay_cap"] == "abc" and q["embed"] == "false" and q["K"] == "12"

    view = ReplayView(runs_root=_two_runs(tmp_path), query=query)
    sync.follow(view.state, view.URL_WATCH, view.url_values, view.URL_KEYS)
    q = _query(loc)
    assert q["replay_K"] == "16" and "replay_cap" not in q  # the bad value left with the notice it gave
    assert "URL parameters were not used" in view.state.error
    assert not {URL_PREFIX + n for n in TRAINER if n != "K"} & set(q)  # defaults are not written
    assert "run" not in q  # the run the tab opens on

    view.state.param.update(loop="DAPO", gen_batch=64, train_batch=32, cap=3)
    view.run_select.value = list(view.state.choices)[1]
    q = _query(loc)
    assert {k: q[URL_PREFIX + k] for k in TRAINER} == {"loop": "DAPO", "K": "16", "gen_batch": "64",
                                                       "train_batch": "32", "cap": "3"}
    assert q["run"] == view.state.run and q["embed"] == "false" and q["tab"] == "replay"

    # the URL reopens the same state: what the Replay reads of it, and the run it opens on
    values, notices = trainer_query(q)
    again = ReplayView(runs_root=tmp_path, query=q, run=q["run"])
    assert notices == [] and again.state.trainer() == view.state.trainer() == tuple(values[n] for n in TRAINER)
    assert again.state.run == view.state.run and again.url_values() == view.url_values()

    view.state.K = ReplayState.param["K"].default  # back at its default: the key leaves the URL
    assert "replay_K" not in _query(loc) and _query(loc)["replay_loop"] == "DAPO"
    writes = loc.writes
    view.state.K = ReplayState.param["K"].default  # nothing changed: nothing written
    sync.write()
    assert loc.writes == writes


def test_nothing_is_written_before_the_page_is_connected(tmp_path):
    sync = UrlSync(LabState(), {})
    view = ReplayView(runs_root=_two_runs(tmp_path), query={})
    sync.follow(view.state, view.URL_WATCH, view.url_values, view.URL_KEYS)  # a tab built before onload
    view.state.loop = "GRPO"
    assert sync.location is None
    loc = Location()
    sync.start(location=loc)
    assert _query(loc)["replay_loop"] == "GRPO" and _query(loc)["K"] == str(LabState().K)
