"""What a new visit's first render holds: the server's cost of a visit is mostly its Bokeh models.

A session's document is built here as the server builds it (the app's page in a document of its own, with that
document current), without a browser. Issue #13 asks for at most 200 ms of server CPU per new visit; that cost
grows with the models of the first render (about 1-2 ms each to build and send, measured with
``benchmarks/bench_load.py``), so a change that adds to the first screen shows here first. The two main plots
(the decay curve, P(useful) over the histogram by outcome) are in it as the grid component's own SVG, no Bokeh
model; the secondary plots are not (built once the visitor scrolls to them), nor the other tabs, nor the tour's box.
"""

from __future__ import annotations

import collections

from bokeh.document import Document
from bokeh.models import Plot
from panel.io.state import set_curdoc

from grpo_lab.app import build_app

#: the first render's Bokeh models at the commit that made the side controls one component (55 before it);
#: raise it only with a reason (and the load benchmark's figure beside it). 36 -> 38: the Samplers tab's TabPanel and
#: its empty placeholder Column (every tab costs these two; its content is built only when the tab is opened);
#: the load benchmark was not rerun for these two empty models. 38 -> 39: the heavy-work budget's busy notice
#: (one empty HTML pane, lab.views.play_budget.BUSY_NOTICE). 39 -> 38: the busy line shares the URL notice's pane
#: (grpo_lab.notice.NoticeLines). Each unopened tab still costs its TabPanel and its placeholder (grpo_lab.app._lazy_tabs).
#: 38 -> 36: the tour's (empty, hidden) box only on a tour link, and the formulas pane is its flex item itself
#: (grpo_lab.views.layout._box), not wrapped in a Column. 36 -> 38: the Fleet tab's TabPanel and its empty placeholder
#: Column (issue #40; built when opened; the load benchmark was not rerun for these two empty models). The stall
#: overlay's loop controls are inputs of the side controls' one component: no model of their own
FIRST_RENDER_MODELS = 38


def first_render(query: dict | None = None) -> Document:
    doc = Document()
    with set_curdoc(doc):
        build_app(query or {}).server_doc(doc)
    return doc


def test_the_first_render_is_small_and_holds_no_plot():
    doc = first_render()
    kinds = collections.Counter(type(m).__name__ for m in doc.models)
    assert len(doc.models) <= FIRST_RENDER_MODELS, kinds
    assert not any(isinstance(m, Plot) for m in doc.models), kinds  # the plots wait until scrolled to
    # one component each: the grid with its controls and readouts, the controls beside it, the plots' placeholder
    names = {type(m).__name__.rstrip("0123456789") for m in doc.models}
    assert {"LiveGrid", "SideControls", "InView"} <= names, names
    assert kinds["Spinner"] == kinds["Slider"] == 0, kinds  # no Panel widget for rho or the population
    grid = next(m for m in doc.models if type(m).__name__.startswith("LiveGrid"))
    # the two main plots are in the grid's markup, with their text alternatives, from the first render
    assert 'id="gx-decay"' in grid.markup and 'id="gx-outcome"' in grid.markup
    assert set(grid.plot_text) == {"decay", "outcome"} and all(v.startswith("Chart:") for v in grid.plot_text.values())


def test_presentation_mode_drops_the_secondary_material():
    doc = first_render({"present": "true"})
    names = {type(m).__name__.rstrip("0123456789") for m in doc.models}
    assert "LiveGrid" in names and "InView" not in names, names  # no placeholder for the K-cost table and Jensen
    assert len(doc.models) < len(first_render().models)


def test_a_tour_link_adds_only_its_box():
    plain, tour = len(first_render().models), len(first_render({"tour": "2"}).models)
    assert plain < tour <= plain + 8


#: a replay link's first render (two shipped runs side by side: six figures): 358 models before its figures were made
#: of lean glyphs (grpo_lab.views.glyphs), 236 after
#: +2: the Samplers tab's TabPanel and placeholder; -2: no tour box, Diagnose's notice when used; +2: the Fleet tab's
#: TabPanel and placeholder (issue #40); +20: the Replay's trainer settings (the loop's select, four spinners with their
#: tooltips, their words and row: issue #40)
REPLAY_LINK_MODELS = 262


def test_a_replay_link_first_render_draws_with_lean_glyphs():
    doc = first_render({"replay": "sign-vs-dr_grpo"})
    kinds = collections.Counter(type(m).__name__ for m in doc.models)
    assert len(doc.models) <= REPLAY_LINK_MODELS, kinds
    assert kinds["Stack"] == 0 and kinds["VBar"] == 2, kinds  # each histogram one bar glyph, no stack transforms
    assert kinds["Line"] + kinds["Scatter"] + kinds["VBar"] == kinds["GlyphRenderer"], kinds  # no unseen copies
    assert kinds["BasicTicker"] == kinds["BasicTickFormatter"] == 1, kinds  # one per tab, shared by every axis


def test_presentation_modes_tour_shows_the_k_cost_table_in_its_box_on_its_step_alone():
    """Presentation mode builds no K-cost table on its page; the tour's step on it shows the Live lab's in the tour's
    box (with the core's figures for the step's settings), built on that step only, and gone on the next."""
    import panel as pn

    from grpo_lab.sims.formatting import fixed
    from grpo_lab.sims.kcost import BASELINE_K, k_cost
    from grpo_lab.sims.scenario import Scenario, evaluate
    from grpo_lab.views.tour import KCOST, TOUR

    n = next(i for i, s in enumerate(TOUR, 1) if KCOST[0] in s.targets)

    def tables(page) -> list:
        return [o for o in page.select(pn.pane.HTML) if "kcost" in (o.css_classes or [])]

    for query in ({"present": "true", "tour": str(n - 1)}, {"present": "true"}):
        assert tables(build_app(query)) == [], query
    page = build_app({"present": "true", "tour": str(n)})
    box = next(o for o in page.objects if "tour" in (getattr(o, "css_classes", None) or []))
    assert "tour-with-figure" in box.css_classes
    (table,) = tables(box)
    settings = TOUR[n - 1].settings
    view = evaluate(Scenario(progress=settings["progress"], K=settings["K"]))
    c = k_cost(view.pass_rate[view.kept], [settings["K"]], baseline_K=BASELINE_K)
    assert f"<td>{fixed(c['rollouts_per_useful'][0], 1)}</td>" in table.object
    (next_button,) = [b for b in box.select(pn.widgets.Button) if b.name.startswith("Next")]
    next_button.clicks += 1  # the box's own Next, as a click sends it
    assert tables(box) == [] and "tour-with-figure" not in box.css_classes
