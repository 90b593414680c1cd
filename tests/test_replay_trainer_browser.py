"""In real Chromium: a tracker log in the runs folder (tinker-cookbook's metrics.jsonl, which carries no trainer
settings) opened in the Replay shows the doctor's expiry and no stall risk; the trainer loop set in the Replay's
controls gives the doctor's stall risk under it, equal to the core's for those settings; the address bar follows
those settings (the ones off their defaults), so the copied URL opened in a fresh page shows the same settings and the
same stall risk, and the tab's link reopens it too."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlencode

import pytest

from grpo_lab.replay.trackers import PREFIX
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.trainer_config import read_trainer_config
from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.testing.lab_server import TEXTS_OF_CLASS, free_port, open_local, serve

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FIXTURES = Path(__file__).parent / "fixtures" / "trackers"
LINE = f"() => (({TEXTS_OF_CLASS})('replay-live-forecast')[0] || '')"
SETTINGS = {"K": 8, "gen_batch": 64, "train_batch": 32, "cap": 2}


def test_the_replay_gives_the_doctors_stall_risk_under_the_loop_set_in_it(tmp_path, page, browser):
    shutil.copytree(FIXTURES / "jsonl", tmp_path / "exp")
    label = f"{PREFIX}exp/metrics.jsonl (jsonl)"
    record = read_scalars(str(tmp_path / "exp" / "metrics.jsonl"), fmt="jsonl")
    want = diagnose(record, num_generations=SETTINGS["K"], trainer_config=read_trainer_config(
        gen_batch_size=SETTINGS["gen_batch"], train_batch_size=SETTINGS["train_batch"],
        max_num_gen_batches=SETTINGS["cap"]))
    st = want["when"]["stall"]
    risk = (f"first stall near step {st['step']:.0f}, {100 * st['level']:.0f}% interval [{st['interval'][0]:.0f}, "
            f"{st['interval'][1]:.0f}]; "
            f"P(stall within the next 3 steps) {100 * want['tracker']['grpo_lab/p_stall_next']:.0f}%")
    port = free_port()
    cmd = [sys.executable, "-m", "grpo_lab.cli", "serve", "--runs", str(tmp_path), "--port", str(port),
           "--num-procs", "1"]
    with serve(cmd=cmd, port=port) as url:
        outside = open_local(page, url + "?" + urlencode({"tab": "replay", "run": label}),
                             f"({LINE})().includes(\"(the doctor's)\")", timeout=300_000)
        before = page.evaluate(LINE)
        assert "choose the trainer loop below for the stall risk" in before and risk not in before
        page.locator(".replay-loop select").select_option("DAPO")
        for name, value in SETTINGS.items():
            box = page.locator(f".replay-{name} input")
            box.fill(str(value))
            box.press("Enter")
        page.wait_for_function(f"(risk) => ({LINE})().includes(risk)", arg=risk, timeout=300_000)
        shown = page.evaluate(LINE)
        # the address bar follows (after the controls pause): the settings off their defaults (K 8, cap 2 are)
        page.wait_for_function("() => new URLSearchParams(location.search).get('replay_train_batch') === '32'",
                               timeout=30_000)
        search = page.evaluate("() => window.location.search")
        q = {k: v[-1] for k, v in parse_qs(search.lstrip("?")).items()}
        assert {k: q.get("replay_" + k) for k in SETTINGS} == {"K": None, "gen_batch": "64", "train_batch": "32",
                                                               "cap": None}
        assert q["replay_loop"] == "DAPO" and q["tab"] == "replay" and q["run"] == label
        fresh = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        fresh_errors = []
        fresh.on("pageerror", lambda exc: fresh_errors.append(str(exc)))
        outside += open_local(fresh, url + search, f"({LINE})().includes({json.dumps(risk)})", timeout=300_000)
        assert fresh.evaluate(LINE) == shown  # the same stall figure, under the same settings
        assert fresh.locator(".replay-loop select").input_value() == "DAPO"
        assert {k: int(fresh.locator(f".replay-{k} input").input_value()) for k in SETTINGS} == SETTINGS
        assert fresh_errors == []
        fresh.context.close()
        link = page.locator(".replay-trainer-link a")
        assert "replay_cap=2" in link.get_attribute("href")
        link.click()  # the link reopens the run under the same loop
        page.wait_for_function(f"(risk) => ({LINE})().includes(risk)", arg=risk, timeout=300_000)
        assert page.locator(".replay-loop select").input_value() == "DAPO"
        assert outside == [] and page.console_errors == []
