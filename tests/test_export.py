"""``grpo-lab export``: the page works offline, its readouts equal the core's, and bad options fail cleanly."""

from __future__ import annotations

import base64
import json
import os
import shlex

import numpy as np
import pytest

from grpo_lab import export as ex
from grpo_lab.testing.cli import run_cli
from grpo_lab.testing.lab_server import READ_HOOKS_JS, SET_CONTROLS_JS, block_outside, grid_tip
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.formatting import percent
from grpo_lab.sims.population import DEFAULT_SEED, draw_population

HOOKS = ["readout-useful", "readout-mean-pass", "readout-kept"]
KEYS = {"readout-useful": "useful_share_realised", "readout-mean-pass": "mean_pass_rate",
        "readout-kept": "kept_share"}


def state_of(text: str) -> dict:
    """The page state embedded in a rendered page (its JSON <script>)."""
    from grpo_lab.export_page import STATE_ID

    start = text.index(f'id="{STATE_ID}">') + len(f'id="{STATE_ID}">')
    return json.loads(text[start:text.index("</script>", start)])


def core_readouts(**kw) -> dict:
    """What `grpo-lab population ... --json` says, formatted as the page displays it."""
    args = ["population", "--json"]
    for key, flag in (("n_prompts", "--n-prompts"), ("a", "--a"), ("b", "--b"), ("seed", "--seed"),
                      ("progress", "--progress"), ("K", "--K")):
        if key in kw:
            args += [flag, str(kw[key])]
    if kw.get("band"):
        args += ["--filter", str(kw["band"][0]), str(kw["band"][1])]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    return {hook: percent(summary[key]) for hook, key in KEYS.items()}


def export_file(tmp_path_factory, name: str, *args: str):
    out = tmp_path_factory.mktemp("export") / name
    proc = run_cli("export", "--out", str(out), *args)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def default_page_file(tmp_path_factory):
    return export_file(tmp_path_factory, "decay.html", "--draws", "2")


@pytest.fixture(scope="module")
def custom_page_file(tmp_path_factory):
    return export_file(tmp_path_factory, "custom.html", "--n-prompts", "300", "--a", "0.5", "--b", "0.5",
                       "--seed", "7", "--progress", "0.6", "--K", "12", "--filter", "0.1", "0.9", "--draws", "2")


def open_offline(page, path):
    """Open the file with every other request aborted; return the list of attempted other requests."""
    url = path.as_uri()
    attempted = block_outside(page, lambda u: u == url)
    page.goto(url)
    page.wait_for_selector("#grpo-export[data-ready=true]", state="attached", timeout=20_000)
    return attempted


def read(page) -> dict:
    return page.evaluate(READ_HOOKS_JS, HOOKS)


def settle(page, expected: dict | None = None) -> dict:
    """Wait for callbacks to run (and, if given, for the expected readouts), then read the readouts."""
    if expected is not None:
        try:
            page.wait_for_function(f"(exp) => {{ const got = ({READ_HOOKS_JS})(Object.keys(exp));"
                                   " return Object.keys(exp).every(k => got[k] === exp[k]); }",
                                   arg=expected, timeout=5_000)
        except Exception:  # noqa: BLE001 - the assertion below reports the difference
            pass
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    return read(page)


def view_command(page) -> str:
    return page.evaluate("() => document.getElementById('gx-view-cmd').textContent")


# --- parity: page readouts == core, exactly as displayed -------------------------------------------

SETTINGS = [
    dict(progress=1.0, K=8),
    dict(progress=0.37, K=4),
    dict(progress=1.0, K=8, band=(0.2, 0.8)),
    dict(progress=0.8, K=64, band=(0.05, 0.95)),
    dict(progress=0.25, K=16, band=(0.9, 1.0)),
    dict(progress=0.5, K=1),
]


@pytest.mark.parametrize("kw", SETTINGS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_page_readouts_equal_core_after_moving_controls(page, default_page_file, kw):
    assert open_offline(page, default_page_file) == []
    controls = {"progress": kw["progress"], "K": kw["K"]}
    if "band" in kw:
        controls.update(band=list(kw["band"]), filter=True)
    page.evaluate(SET_CONTROLS_JS, controls)
    expected = core_readouts(seed=DEFAULT_SEED, **kw)
    assert settle(page, expected) == expected
    assert page.console_errors == []


def test_footer_command_reproduces_view(page, default_page_file):
    open_offline(page, default_page_file)
    page.evaluate(SET_CONTROLS_JS, {"progress": 0.73, "K": 24, "band": [0.15, 0.85], "filter": True})
    shown = settle(page)
    cmd = shlex.split(view_command(page))
    assert cmd[:2] == ["grpo-lab", "population"] and "--json" in cmd
    assert cmd[cmd.index("--seed") + 1] == str(DEFAULT_SEED)
    assert cmd[cmd.index("--filter") + 1:cmd.index("--filter") + 3] == ["0.15", "0.85"]
    proc = run_cli(*cmd[1:])
    summary = json.loads(proc.stdout)
    assert shown == {hook: percent(summary[key]) for hook, key in KEYS.items()}


def test_custom_export_and_its_second_draw_equal_core(page, custom_page_file):
    """A non-default population, its starting view (painted from Python), then draw 2 (kernel in the browser)."""
    pop = dict(n_prompts=300, a=0.5, b=0.5, progress=0.6, K=12, band=(0.1, 0.9))
    assert open_offline(page, custom_page_file) == []
    expected = core_readouts(seed=7, **pop)
    assert settle(page, expected) == expected
    page.get_by_role("button", name="New draw").click()
    page.wait_for_function("() => window.grpoExport.drawShown().seed === 8", timeout=5_000)
    expected = core_readouts(seed=8, **pop)
    assert settle(page, expected) == expected
    assert page.evaluate("() => document.getElementById('gx-seed').textContent") == "8"
    assert "--seed 8 " in view_command(page)
    # moving a control on the second draw still computes for seed 8
    page.evaluate(SET_CONTROLS_JS, {"progress": 0.2, "K": 5})
    expected = core_readouts(seed=8, **{**pop, "progress": 0.2, "K": 5})
    assert settle(page, expected) == expected
    assert page.console_errors == []


PAINTED_JS = """() => {
  const c = document.getElementById("gx-grid");
  return {w: c.width, h: c.height, px: Array.from(c.__grpoPixels)};
}"""


def test_grid_is_the_cores_picture_and_hover_names_the_cell(page, custom_page_file):
    """On both draws the image the page puts on its canvas is lab.grid.cell_image of the core's view,
    pixel for pixel (filtered prompts grey), and hovering a cell names that prompt as the core sees it."""
    from grpo_lab.testing.grid_twins import cell_image
    from grpo_lab.grid.cells import FILTERED, cell_positions, cell_tiles
    from grpo_lab.grid.markup import geometry as grid_geometry
    from grpo_lab.sims.scenario import Scenario, evaluate

    geometry = grid_geometry(300)
    cols, rows, P = geometry["cols"], geometry["rows"], geometry["P"]
    open_offline(page, custom_page_file)
    for seed, t, K in ((7, 0.6, 12), (8, 0.9, 6)):
        if seed == 8:
            page.get_by_role("button", name="New draw").click()
            page.evaluate(SET_CONTROLS_JS, {"progress": t, "K": K})
        scenario = Scenario(n_prompts=300, a=0.5, b=0.5, seed=seed, progress=t, K=K, band=(0.1, 0.9))
        pop = scenario.population()
        view = evaluate(scenario, pop)
        settle(page, core_readouts(seed=seed, n_prompts=300, a=0.5, b=0.5, progress=t, K=K, band=(0.1, 0.9)))
        x, y = cell_positions(pop.pass_rates)
        code = np.where(view.kept, view.outcome, FILTERED)
        assert (code == FILTERED).any() and (code != FILTERED).any()
        want = cell_image(code, x, y, cell_tiles(P), cols, rows)
        js = page.evaluate(PAINTED_JS)
        assert (js["h"], js["w"]) == want.shape
        assert js["px"] == want.ravel().tolist(), seed
        for i in (0, 123, 299):
            text = grid_tip(page, x[i], y[i], cols, rows)
            assert text.startswith(f"prompt {i} \u00b7 "), text
            assert f"pass rate now {percent(view.pass_rate[i])}" in text
            assert f"successes {view.successes[i]} of {K}" in text
            assert ("removed by the filter" in text) == (not view.kept[i])
        page.mouse.move(0, 0)
        assert page.locator("#gx-tip").is_hidden()
    assert page.console_errors == []


def test_embedded_draws_are_the_cores_populations(custom_page_file):
    """Every population in the file is exactly draw_population(seed) and its uniforms."""
    state = state_of(custom_page_file.read_text(encoding="utf-8"))
    assert [d["seed"] for d in state["draws"]] == [7, 8]
    for d in state["draws"][1:]:
        pop = draw_population(300, 0.5, 0.5, d["seed"])
        p0 = np.frombuffer(base64.b64decode(d["p0"]), dtype="<f8")
        u = np.frombuffer(base64.b64decode(d["u"]), dtype="<f4")
        assert np.array_equal(p0, pop.pass_rates)
        assert np.array_equal(u, pop.uniforms(64).ravel())


# --- offline, interaction, layout ------------------------------------------------------------------

def test_offline_no_request_and_no_console_error(page, default_page_file):
    attempted = open_offline(page, default_page_file)
    page.locator("#gx-progress").focus()
    page.keyboard.press("End")
    page.get_by_role("button", name="New draw").click()
    page.wait_for_function("() => window.grpoExport.drawShown().index === 1", timeout=5_000)
    settle(page)
    assert attempted == []
    assert page.console_errors == []
    assert all(v.endswith("%") for v in read(page).values())


def test_keyboard_progress_and_K_move_readouts_the_expected_way(page, default_page_file):
    open_offline(page, default_page_file)
    start = settle(page)
    page.locator("#gx-progress").focus()
    page.keyboard.press("End")  # progress -> 1
    late = settle(page)
    as_num = lambda s: float(s.rstrip("%"))  # noqa: E731
    assert as_num(late["readout-useful"]) < as_num(start["readout-useful"]) - 20  # ~89% -> ~58%
    assert as_num(late["readout-mean-pass"]) > as_num(start["readout-mean-pass"]) + 40
    assert late == core_readouts(seed=DEFAULT_SEED, progress=1.0, K=8)
    page.locator("#gx-K").focus()
    for _ in range(8):
        page.keyboard.press("ArrowRight")  # K 8 -> 16
    bigger_k = settle(page)
    assert as_num(bigger_k["readout-useful"]) > as_num(late["readout-useful"]) + 10
    assert bigger_k["readout-mean-pass"] == late["readout-mean-pass"]  # K does not move pass rates
    assert bigger_k == core_readouts(seed=DEFAULT_SEED, progress=1.0, K=16)


def test_play_advances_progress_and_pause_stops_it(page, default_page_file):
    open_offline(page, default_page_file)
    start = read(page)
    play = page.get_by_role("button", name="Play / pause")
    play.click()
    progress = "() => Number(document.getElementById('gx-progress').value)"
    page.wait_for_function(f"({progress})() > 0.1", timeout=60_000)
    if page.evaluate("() => window.grpoExport.playing()"):
        play.click(timeout=60_000)  # pause (unless a slow machine already finished the sweep)
    page.wait_for_function("() => !window.grpoExport.playing()", timeout=60_000)
    paused = page.evaluate(progress)
    page.wait_for_timeout(300)
    settle(page)
    assert page.evaluate(progress) == paused
    assert page.locator("#gx-progress-out").text_content() == f"{paused:.3f}"
    assert read(page)["readout-mean-pass"] != start["readout-mean-pass"]
    assert read(page) == core_readouts(seed=DEFAULT_SEED, progress=paused, K=8)
    assert page.console_errors == []


def test_fits_a_360px_column(browser, default_page_file):
    context = browser.new_context(viewport={"width": 360, "height": 740})
    pg = context.new_page()
    try:
        open_offline(pg, default_page_file)
        settle(pg)
        assert pg.evaluate("() => document.documentElement.scrollWidth") <= 360
        box = pg.locator(".gx-app").bounding_box()
        assert box["width"] <= 360 and box["height"] > 300
        assert all(v.endswith("%") for v in read(pg).values())
        # turning the phone (or resizing the window) re-measures the readouts: nothing is clipped
        clipped = "() => { const r = document.getElementById('gx-readouts'); return r.scrollHeight - r.clientHeight; }"
        for width in (800, 300, 360):
            pg.set_viewport_size({"width": width, "height": 740})
            pg.evaluate(SET_CONTROLS_JS, {"progress": 0.5})
            settle(pg)
            assert pg.evaluate(clipped) <= 1, width
    finally:
        context.close()


# --- the file and the command line ----------------------------------------------------------------

def test_default_export_fits_the_size_budget_and_names_its_provenance(tmp_path):
    out = tmp_path / "decay.html"
    proc = run_cli("export", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text(encoding="utf-8")
    assert len(text.encode()) <= ex.SIZE_BUDGET
    state = state_of(text)
    assert len(state["draws"]) >= 2
    from grpo_lab.sims import __version__
    assert f"grpo-lab {__version__}" in text
    assert state["command"].startswith(f"grpo-lab export --out decay.html --n-prompts 600")
    assert f"--seed {DEFAULT_SEED}" in state["command"]
    assert [p.name for p in tmp_path.iterdir()] == ["decay.html"]


@pytest.mark.parametrize("args, words", [
    (["--K", "0"], "--K"),
    (["--K", "65"], "--K"),
    (["--filter", "0.5", "1.2"], "high end"),
    (["--filter", "-0.1", "0.5"], "low end"),
    (["--filter", "0.8", "0.2"], "LO <= HI"),
    (["--progress", "1.5"], "--progress"),
    (["--progress", "0.12345"], "three decimals"),
    (["--filter", "0.125", "0.8"], "two decimals"),
    (["--n-prompts", "0"], "--n-prompts"),
    (["--draws", "0"], "--draws"),
    (["--a", "-1"], "--a"),
    (["--caption", "x" * 281], "--caption"),
    (["--title", " \n "], "--title"),
])
def test_bad_options_one_line_exit_2_no_file(tmp_path, args, words):
    out = tmp_path / "x.html"
    proc = run_cli("export", "--out", str(out), *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grpo-lab export: error:") and words in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_embed_options_leave_parts_out_escape_the_caption_and_are_in_the_command(tmp_path):
    """--no-title, --no-footer and --caption: the page leaves the heading and footer out, the caption is escaped
    text (cleaned as lab.embed.clean_caption says), and the reproduce command carries all three."""
    from grpo_lab.embed import MAX_CAPTION_CHARS, clean_caption

    caption = 'K = 8 <script>alert("x")</script>\n&\tmore\u200b'
    out = tmp_path / "bare.html"
    proc = run_cli("export", "--out", str(out), "--draws", "1", "--no-title", "--no-footer", "--title", "Mine",
                   "--caption", caption)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text(encoding="utf-8")
    assert 'class="gx-head"' not in text and 'class="gx-foot"' not in text and "<title>Mine</title>" in text
    shown = 'K = 8 &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more'
    assert f'<p class="embed-caption" id="gx-embed-caption">{shown}</p>' in text
    assert clean_caption(caption) == 'K = 8 <script>alert("x")</script> & more'
    command = state_of(text)["command"]
    assert all(part in command for part in ("--no-title", "--no-footer", "--title Mine", "--caption 'K = 8 <script>"))
    again = shlex.split(command)
    again[again.index("--out") + 1] = str(tmp_path / "again.html")
    proc = run_cli(*again[1:])
    assert proc.returncode == 0, proc.stderr
    # the same page, byte for byte, but for the file name in its own command
    assert (tmp_path / "again.html").read_text(encoding="utf-8") == text.replace("--out bare.html", "--out again.html")
    # a caption at the limit is kept whole; the URL's longer ones are cut to the limit with an ellipsis
    assert clean_caption("y" * MAX_CAPTION_CHARS) == "y" * MAX_CAPTION_CHARS
    assert clean_caption("y" * (MAX_CAPTION_CHARS + 5)) == "y" * (MAX_CAPTION_CHARS - 1) + "\u2026"
    # default: heading, footer and an empty, hidden caption that the URL may fill
    plain = ex.render(ex.make_spec(draws=1, n_prompts=50))
    assert 'class="gx-head"' in plain and 'class="gx-foot"' in plain
    assert '<p class="embed-caption" id="gx-embed-caption" hidden></p>' in plain


@pytest.mark.parametrize("where", ["missing-dir", "parent-is-file", "is-dir"])
def test_unwritable_out_one_line_exit_2(tmp_path, where):
    (tmp_path / "file.txt").write_text("x")
    out = {"missing-dir": tmp_path / "nope" / "x.html", "parent-is-file": tmp_path / "file.txt" / "x.html",
           "is-dir": tmp_path}[where]
    proc = run_cli("export", "--out", str(out))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and ("cannot write" in lines[0] or "is a directory" in lines[0]), proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


@pytest.mark.parametrize("exc", [KeyboardInterrupt, OSError(28, "No space left on device")])
def test_interrupted_write_leaves_old_file_and_no_partial(tmp_path, monkeypatch, exc):
    target = tmp_path / "decay.html"
    target.write_text("old page")

    def boom(fd):
        raise exc

    monkeypatch.setattr(ex.os, "fsync", boom)
    expected = KeyboardInterrupt if exc is KeyboardInterrupt else InputError
    with pytest.raises(expected):
        ex.write_atomic(target, "<html>new page</html>" * 1000)
    assert target.read_text() == "old page"
    assert [p.name for p in tmp_path.iterdir()] == ["decay.html"]


def test_failed_render_writes_nothing(tmp_path, monkeypatch):
    """A failure while building the page (before any byte is written) leaves the directory untouched."""
    def broken(*a, **k):
        raise RuntimeError("render failed")

    monkeypatch.setattr(ex, "_render", broken)
    with pytest.raises(RuntimeError):
        ex.export(ex.make_spec(draws=1), tmp_path / "decay.html")
    assert list(tmp_path.iterdir()) == []
    assert os.listdir(tmp_path) == []


def rgb(css: str) -> tuple[int, int, int]:
    """'rgb(r, g, b)' or 'rgba(r, g, b, a)' as a tuple of three ints."""
    return tuple(int(float(v)) for v in css[css.index("(") + 1:css.index(")")].split(",")[:3])


def test_pressed_play_reads_at_4_5_to_1_and_shows_its_focus(page, default_page_file):
    from grpo_lab.testing.page import contrast

    open_offline(page, default_page_file)
    play = page.get_by_role("button", name="Play / pause")
    play.focus()
    page.keyboard.press("Space")  # pressed by keyboard: focused, and aria-pressed
    page.wait_for_function("() => document.getElementById('gx-play').getAttribute('aria-pressed') === 'true'")
    style = page.evaluate("""() => { const s = getComputedStyle(document.getElementById('gx-play'));
      return {bg: s.backgroundColor, fg: s.color, outline: s.outlineStyle, width: parseFloat(s.outlineWidth),
              ring: s.outlineColor, page: getComputedStyle(document.body).backgroundColor}; }""")
    assert contrast(rgb(style["fg"]), rgb(style["bg"])) >= 4.5, style
    assert style["outline"] != "none" and style["width"] >= 2, style  # a visible focus ring
    assert contrast(rgb(style["ring"]), rgb(style["page"])) >= 3, style
    page.keyboard.press("Space")
    page.wait_for_function("() => !window.grpoExport.playing()", timeout=60_000)
    assert page.console_errors == []


def test_exported_page_grid_and_curve_answer_the_keyboard(page, default_page_file):
    """The exported page has the served lab's keyboard reading (issue 41): the grid's cells by the arrow keys, read
    out, and the P(gradient) curve's reading, both equal to the core."""
    from grpo_lab.sims.outcomes import outcome_probabilities
    from grpo_lab.sims.scenario import Scenario, evaluate

    open_offline(page, default_page_file)
    view = evaluate(Scenario())
    page.locator("#gx-grid").focus()
    page.keyboard.press("ArrowRight")
    said = page.evaluate("() => document.getElementById('gx-cell-said').textContent")
    i = int(said.split(" ")[1])
    assert said == page.locator("#gx-tip").text_content() and f"pass rate now {percent(view.pass_rate[i])}" in said
    # at desktop width (this page's 1400 px) the plots are beside the grid, with no switch (lab/static/export.css; a
    # blog's frame shows them by its switch: tests/test_lab_embed_frame_browser.py)
    assert page.locator(".gx-show").is_hidden() and page.locator("#gx-grid").is_visible()
    page.wait_for_function("() => document.querySelector('#gx-outcome').getBoundingClientRect().height > 0"
                           " && document.querySelectorAll('#gx-outcome path').length >= 2", timeout=15_000)
    page.locator(".gx-curve-read").focus()
    page.keyboard.press("Home")
    page.keyboard.press("PageUp")
    assert page.locator(".gx-curve-read").text_content() == (
        f"At pass rate p = 0.10: P(gradient) = {percent(outcome_probabilities(0.1, 8)['p_useful'])} at K = 8")
