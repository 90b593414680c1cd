"""The grid's controls are declared once (grpo_lab.grid.spec): every host reads its bounds from there.

* no bound, step or default of the spec is typed in the browser code (the static files are read);
* the inputs' attributes are the spec's (parsed from the markup, and read in Chromium from the
  served lab and from an exported page);
* changing one bound in the spec changes the URL sanitiser, the export's validation, the page's
  input and what the browser lets a reader choose (K's maximum lowered to 32, read in Chromium).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from grpo_lab import export as ex
from grpo_lab.grid.component import LiveGrid
from grpo_lab.grid.markup import controls_html
from grpo_lab.grid.spec import (DEFAULT_BAND, K_MAX, LINKED, RHO_MAX, VIEW_CONTROLS, GridControls, control_spec,
                                ordered_band)
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.formatting import percent
from grpo_lab.sims.population import UNIFORM_BLOCK
from grpo_lab.sims.scenario import Scenario, evaluate
from grpo_lab.state import LabState, sanitize

STATIC = Path(__file__).resolve().parents[1] / "lab" / "static"
VIEW_JS = ("gridview.js", "live_grid.js", "export_page.js")


class _Inputs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.inputs = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and a.get("name"):
            self.inputs[a["name"]] = a


def inputs_of(markup: str) -> dict:
    p = _Inputs()
    p.feed(markup)
    return p.inputs


def _code(js: str) -> str:
    """JavaScript without its comments and strings."""
    js = re.sub(r"/\*.*?\*/", " ", js, flags=re.S)
    js = re.sub(r"//[^\n]*", " ", js)
    return re.sub(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'", '""', js)


def test_the_core_sets_the_spec_and_every_host_shares_its_parameters():
    assert K_MAX == UNIFORM_BLOCK
    assert GridControls.param.K.bounds == (1, K_MAX) and GridControls.param.rho.bounds == (0.0, RHO_MAX)
    default = Scenario()
    assert (GridControls.param.progress.default, GridControls.param.K.default, GridControls.param.rho.default) == (
        default.progress, default.K, default.rho)
    assert (GridControls.param.band_lo.default, GridControls.param.band_hi.default) == DEFAULT_BAND
    for name in LINKED:  # one Parameter object, not copies
        assert LabState.param[name] is GridControls.param[name] is LiveGrid.param[name]
    assert ordered_band(0.7, 0.3) == (0.3, 0.7) and ordered_band(0.3, 0.7) == (0.3, 0.7)


@pytest.mark.parametrize("name", VIEW_JS)
def test_browser_code_types_no_bound_step_or_default(name):
    code = _code((STATIC / name).read_text(encoding="utf-8"))
    literals = {float(m) for m in re.findall(r"(?<![\w.])(\d+\.?\d*|\.\d+)(?![\w.])", code)}
    spec = control_spec()["controls"]
    values = {GridControls.param.rho.bounds[1], GridControls.param.rho.step, 0.001}
    for c in spec.values():  # bounds and steps, and the defaults that are not small counts (K's 8 is a common number)
        values.update(v for k, v in c.items() if k in ("min", "max", "step") or (k == "default" and c["kind"] == "number"))
    typed = {v for v in values if v not in (0, 1)} & literals  # 0 and 1 are everywhere (indices, booleans)
    assert not typed, f"{name} types {sorted(typed)}: read them from view.spec instead"
    assert not re.search(r"\"(progress|K|filter|band_lo|band_hi)\"\s*[,\]]", (STATIC / name).read_text()), \
        f"{name} lists the controls' names: read view.names"


@pytest.mark.parametrize("step", [0.01, 0.001])
def test_inputs_carry_the_spec(step):
    values = {"progress": 0.37, "K": 12, "filter": True, "band_lo": 0.25, "band_hi": 0.75}
    got = inputs_of(controls_html(values, control_spec(step)))
    assert set(got) == set(VIEW_CONTROLS)
    for name in ("progress", "K", "band_lo", "band_hi"):
        p = GridControls.param[name]
        assert float(got[name]["min"]) == p.bounds[0] and float(got[name]["max"]) == p.bounds[1]
        assert float(got[name]["step"]) == (step if name == "progress" else p.step)
        assert float(got[name]["value"]) == values[name]
    assert "checked" in got["filter"]


@pytest.fixture
def narrow_K(monkeypatch):
    """K's maximum lowered to 32 in the spec, and nowhere else."""
    monkeypatch.setattr(GridControls.param.K, "bounds", (1, 32))
    return 32


def test_a_changed_bound_reaches_the_sanitiser_and_the_export(narrow_K):
    assert sanitize({"K": "40"})[0]["K"] == narrow_K
    with pytest.raises(InputError, match=r"--K: K=40 is outside \[1, 32\]"):
        ex.validate(ex.make_spec(K=40))
    page = ex.render(ex.make_spec(K=20, draws=1))
    assert inputs_of(page)["K"]["max"] == "32"


@pytest.mark.browser
def test_a_changed_bound_is_what_the_page_lets_a_reader_choose(page, tmp_path, narrow_K):
    out = tmp_path / "narrow.html"
    ex.export(ex.make_spec(K=20, progress=0.5, draws=1), out)
    page.goto(out.as_uri())
    page.wait_for_selector("#grpo-export[data-ready=true]")
    k = page.locator("#gx-K")
    k.focus()
    k.press("End")
    page.wait_for_function("() => document.getElementById('gx-K-out').textContent === '32'")
    s = evaluate(Scenario(K=32, progress=0.5)).summary
    assert page.locator(".readout-useful").text_content().strip() == percent(s["useful_share_realised"])
    spec = page.evaluate("() => JSON.parse(document.querySelector('.gx-controls').dataset.spec)")
    assert spec["controls"]["K"]["max"] == 32 and spec["names"] == list(VIEW_CONTROLS)


@pytest.mark.browser
def test_the_served_labs_inputs_are_the_spec(page, lab_url):
    page.goto(lab_url + "?K=9")
    page.wait_for_selector(".gx-view[data-ready=true]", timeout=60_000)
    got = {name: page.locator(f"#gx-{name.replace('_', '-')}").evaluate(
        "el => ({min: el.min, max: el.max, step: el.step, value: el.value})") for name in VIEW_CONTROLS
        if name != "filter"}
    spec = control_spec()["controls"]
    for name, attrs in got.items():
        assert (float(attrs["min"]), float(attrs["max"]), float(attrs["step"])) == (
            spec[name]["min"], spec[name]["max"], spec[name]["step"])
    assert got["K"]["value"] == "9"
