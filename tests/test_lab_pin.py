"""Pin and compare without a browser: the pin's URL value, its cleaning, and the comparison's figures."""

from __future__ import annotations

import re

import numpy as np
import pytest

from grpo_lab.grid.pin import parse_pin, pin_text, pin_values
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.scenario import Scenario, evaluate
from grpo_lab.state import LabState, PlayState, query_values, sanitize
from grpo_lab.views.compare import compare_html
from grpo_lab.views.frame import Frame


def test_pin_text_round_trips_exactly():
    rng = np.random.default_rng(1)
    for _ in range(200):
        lo, hi = sorted(rng.random(2))
        v = {"progress": float(rng.random()), "K": int(rng.integers(1, 65)), "filter": bool(rng.integers(2)),
             "band_lo": float(lo), "band_hi": float(hi), "rho": float(rng.random() * 0.9) * int(rng.integers(2))}
        back = pin_values(pin_text(v))
        assert back["K"] == v["K"] and back["progress"] == v["progress"] and back["rho"] == v["rho"]
        assert back["filter"] == v["filter"]
        if v["filter"]:
            assert (back["band_lo"], back["band_hi"]) == (v["band_lo"], v["band_hi"])
        clean, notices = sanitize({"pin": pin_text(v)})
        assert notices == [] and clean["pin"] == pin_text(v)


@pytest.mark.parametrize("raw", ["K8", "t0.5", "K8_t0.5_lo0.2", "K8_K9_t0.5", "x8_t0.5", "K8_t0.5_", "K8__t0.5",
                                 "<script>alert(1)</script>", "K8_t0.5_rho"])
def test_bad_pins_are_dropped_with_a_notice_that_quotes_them(raw):
    with pytest.raises(ValueError):
        parse_pin(raw)
    clean, notices = sanitize({"pin": raw})
    assert clean == {"pin": ""}
    assert len(notices) == 1 and notices[0].startswith(f"pin={raw} is not a pinned view")


def test_out_of_range_pin_fields_are_clamped_like_the_controls():
    clean, notices = sanitize({"pin": "K99_t2_lo0.9_hi0.1_rho0.99"})
    assert clean == {"pin": "K64_t1.0_lo0.1_hi0.9_rho0.95"}
    assert len(notices) == 1 and "K=99 is outside [1, 64]" in notices[0] and notices[0].startswith("in pin=")
    assert sanitize({"pin": "K7.6_t0.25"}) == ({"pin": "K8_t0.25"}, ["in pin=K7.6_t0.25: K=7.6 is not a whole number; rounded"])


def test_url_carries_the_pin_only_while_pinned():
    s = LabState()
    assert "pin" not in query_values(s)
    s.pin = "K8_t0.5"
    assert query_values(s)["pin"] == "K8_t0.5"
    assert sanitize(query_values(s))[0] == s.values()


def useful_per_1000(p, K):
    """Useful groups per 1,000 rollouts, computed here from the definition (not sims.kcost)."""
    return 1000 * np.mean(1 - p ** K - (1 - p) ** K) / K


def test_comparison_is_the_budget_arithmetic_of_both_views():
    pop = Scenario().population()
    pinned_s, now_s = Scenario(progress=0.5, K=8), Scenario(progress=0.5, K=16)
    pinned, now = (Frame(s, pop, evaluate(s, pop)) for s in (pinned_s, now_s))
    text = compare_html(pinned, now)
    p = pop.pass_rates ** (1 / (1 + pinned_s.gain * 0.5))
    a, b = useful_per_1000(p, 8), useful_per_1000(p, 16)
    assert f"<b class='gx-compare-ratio'>{fixed(b / a, 2)}\u00d7</b>" in text
    assert f"{fixed(b, 1)} against {fixed(a, 1)} per 1,000 rollouts" in text
    cell = lambda cls: re.search(f"<td class='{cls}'>([^<]*)</td>", text).group(1)
    assert cell("gx-pin-per_1000") == fixed(a, 1) and cell("gx-now-per_1000") == fixed(b, 1)
    assert cell("gx-pin-per_useful") == fixed(8 / np.mean(1 - p ** 8 - (1 - p) ** 8), 1)
    assert cell("gx-pin-realised") == percent(pinned.view.summary["useful_share_realised"])
    assert b < a  # the same rollouts buy fewer useful groups at K = 16


def test_comparison_with_a_filter_that_keeps_nothing_says_so():
    pop = Scenario().population()
    s = Scenario(progress=0.1, K=8, band=(0.999, 1.0))
    frame = Frame(s, pop, evaluate(s, pop), s.band)
    assert "No comparison" in compare_html(frame, Frame(Scenario(), pop, evaluate(Scenario(), pop)))


def test_pin_button_pins_the_view_and_unpins(monkeypatch):
    from grpo_lab.views.live import LiveLab

    lab = LabState(progress=0.5, K=8)
    live = LiveLab(lab, PlayState())
    assert live.grid.ghost is None and live.grid.compare == ""
    live.grid.pin_clicks += 1  # the Pin button
    assert lab.pin == "K8_t0.5" and live.grid.ghost["view"]["K"] == 8 and "Pinned: K = 8, t = 0.5" in live.grid.compare
    lab.K = 16
    live.refresh(repaint_grid=False)  # the plots' redraw after the pause
    assert live.grid.ghost["view"]["K"] == 8 and "Now: K = 16, t = 0.5" in live.grid.compare
    live.grid.pin_clicks += 1  # Unpin
    assert lab.pin == "" and live.grid.ghost is None and live.grid.compare == ""
