"""The browser lab: ``panel serve lab/app.py`` (or ``grpo-lab serve``).

The page is built by :func:`build_app`, once per browser session, from fresh state
objects (``lab.state``); nothing at module level is mutable, so visitors never affect
each other. Every number comes from ``sims``; the grid and its main readouts repaint in
the browser through ``lab/static/kernel.js`` (see ``lab.grid``), the plots from Python.

URL query parameters (``progress``, ``K``, ``filter``, ``band_lo``, ``band_hi``, ``rho``,
``n_prompts``, ``a``, ``b``, ``seed``) set and follow the controls; bad values are
clamped or replaced with a visible notice. The Replay's (``replay_loop``, ``replay_K``, ..., ``run``) and the tab
shown (``tab``) follow too once that tab is built (``lab.url_sync``). ``?embed=true`` shows only the grid, the
main controls and the main readouts, with ``caption=TEXT`` above them, and posts its height to the parent
frame (``lab.embed``, ``lab.views.embed``); ``?present=true`` is the presentation mode (``lab.views.layout``);
``?tour=N`` opens step N of the guided tour (``lab.views.tour``).

Tabs: :data:`TABS` lists ``(title, builder)``; a builder takes the session's
:class:`Session` and returns a Panel object. To add a tab (e.g. the replay), add one
line to TABS.
"""

from __future__ import annotations

from dataclasses import dataclass

import panel as pn

from grpo_lab.access import PAGE_CSS, PageAccess
from grpo_lab.memory import release_soon
from grpo_lab.embed import embed_options
from grpo_lab.state import AdvantageState, LabState, PlayState, sanitize
from grpo_lab.url_sync import UrlSync
from grpo_lab.views.advantages import AdvantageExplorer
from grpo_lab.views.embed import embed_page
from grpo_lab.views.layout import PHONE_CSS, PRESENT_CSS, page_template
from grpo_lab.views.live import LiveLab
from grpo_lab.views.tour import KCOST, TourPanel, TourState, tour_step

__all__ = ["Session", "TABS", "build_app", "session_query"]

TITLE = "grpo-lab: watching an environment expire"


@dataclass
class Session:
    """One visitor's state: the live lab's controls, the animation, the advantage explorer."""

    lab: LabState
    play: PlayState
    advantages: AdvantageState
    embed: bool = False
    present: bool = False  #: presentation mode (``?present=true``): larger type, fewer panels
    replay: str | None = None  #: ``?replay=NAME``: open the Replay tab on that side-by-side view (lab.replay.catalog)
    tab: str | None = None  #: ``?tab=replay`` (any tab's title, any case): open on that tab
    live: LiveLab | None = None  #: the Live lab tab, once built
    run: str | None = None  #: ``?run=LABEL``: the run the Replay tab opens on (the Fleet tab's links)
    url: UrlSync | None = None  #: the address bar following the page (in a server session; lab.url_sync)


def _live_tab(s: Session):
    s.live = LiveLab(s.lab, s.play, present=s.present, heading=TITLE)
    return s.live.panel


def _advantages_tab(s: Session):
    return AdvantageExplorer(s.advantages).panel


def _replay_tab(s: Session):
    from grpo_lab.replay.view import ReplayView  # its own per-session state (lab.replay.state)

    view = ReplayView(pair=s.replay, run=s.run)
    if s.url is not None:  # its trainer loop and run in the address bar as they change
        s.url.follow(view.state, view.URL_WATCH, view.url_values, view.URL_KEYS)
    return view


def _fleet_tab(s: Session):
    from grpo_lab.views.fleet import FleetView  # the runs folders ranked (grpo_lab.fleet)

    return FleetView().panel


def _samplers_tab(s: Session):
    from grpo_lab.views.samplers import SamplersView  # imported when the tab is first opened

    return SamplersView(s.lab).panel


#: the page's tabs, in order: (title, builder(Session) -> Panel object)
TABS = [
    ("Live lab", _live_tab),
    ("Advantages", _advantages_tab),
    ("Replay", _replay_tab),
    ("Fleet", _fleet_tab),
    ("Samplers", _samplers_tab),
]


def session_query() -> dict[str, str]:
    """This session's URL query arguments as strings (empty outside a server session)."""
    args = getattr(pn.state, "session_args", None) or {}
    out = {}
    for k, v in args.items():
        v = v[-1] if isinstance(v, (list, tuple)) and v else v
        out[k] = v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
    return out


def _is_true(value: str | None) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes", "on")


def build_app(query: dict[str, str] | None = None):
    """Build one session's page from its URL query (read from the request when not given)."""
    query = session_query() if query is None else query
    session = Session(LabState(), PlayState(), AdvantageState(), embed=_is_true(query.get("embed")),
                      present=_is_true(query.get("present")), replay=query.get("replay"), tab=query.get("tab"),
                      run=query.get("run"))
    values, notices = sanitize(query)
    session.lab.param.update(**values)
    if notices:
        session.lab.notice = "Some URL parameters were corrected: " + "; ".join(notices) + "."
    tour = TourState()
    # presentation mode builds no K-cost table on its page: the tour's step on it shows the Live lab's in its box
    figures = {KCOST[0]: lambda: session.live.kcost_panel() if session.live else None} if session.present else {}
    tour_panel = TourPanel(tour, session.lab, present=session.present, figures=figures)
    if not session.embed:
        tour_panel.go(tour_step(query.get("tour")))  # a linked tour step sets the controls (?tour=N)
    if getattr(pn.state, "curdoc", None) is not None:  # in a server session: once the page is connected
        session.url = UrlSync(session.lab, query, tour)
        pn.state.onload(session.url.start)
        pn.state.on_session_destroyed(release_soon)  # memory back to the system once a room has left (grpo_lab.memory)
    if session.embed:
        return embed_page(LiveLab(session.lab, session.play, embed=True).panel, embed_options(query),
                          PageAccess(heading=TITLE))  # the embed shows no title: its h1 for screen readers
    header = [] if session.present else [pn.pane.HTML(_header_html(), sizing_mode="stretch_width", css_classes=["lab-header"])]
    tabs = _lazy_tabs(session)
    tour_panel.on_step = lambda: setattr(tabs, "active", 0)  # a tour step talks about the Live lab tab
    if figures and tour.step:
        tour_panel.show()  # the Live lab is built now: the step's figure with it
    access = PageAccess(css=PAGE_CSS + PHONE_CSS + (PRESENT_CSS if session.present else ""))
    # the tour's box only where a tour runs: a tour starts from its link (?tour=N), which builds a new page
    touring = [tour_panel.panel] if tour.step else []
    return pn.Column(*header, *touring, tabs, access, sizing_mode="stretch_width", css_classes=["grpo-lab"])


def _header_html() -> str:
    """The page's heading (its one ``h1``) and introduction (in presentation mode the Live lab's Play row carries
    the heading instead: lab.views.layout.present_heading)."""
    return (f"<h1 style='margin:4px 0;font-size:1.5em'>{TITLE}</h1><p style='margin:0 0 6px;font-size:14px'>Each cell is "
            "one prompt's group of K rollouts. Drag training progress and watch the groups that carry a gradient drain "
            "away. Share a view by copying the URL, or take the <a href='?tour=1'>guided tour</a>.</p>")


def _hidden_css(title: str) -> list[str]:
    """The Fleet tab's holder is not displayed while hidden, as its own column (lab.views.fleet.HIDDEN_CSS: its run
    links leave the Tab order while another tab is shown)."""
    if title != "Fleet":
        return []
    from grpo_lab.views.fleet import HIDDEN_CSS

    return [HIDDEN_CSS]


def _lazy_tabs(session: Session) -> pn.Tabs:
    """The tabs of TABS; each is built the first time it is shown, so a visit starts with the first alone (the
    others hold an empty column until then)."""
    want = (session.tab or ("replay" if session.replay else "")).strip().lower()  # ?tab= wins over ?replay=
    first = next((i for i, (title, _) in enumerate(TABS) if title.lower() == want), 0)
    built = {first}
    holders = [TABS[i][1](session) if i == first else pn.Column(sizing_mode="stretch_width", stylesheets=_hidden_css(t))
               for i, (t, _) in enumerate(TABS)]
    tabs = pn.Tabs(*[(title, holder) for (title, _), holder in zip(TABS, holders)], sizing_mode="stretch_width",
                   active=first)

    def show(index: int) -> None:
        if index not in built:
            built.add(index)
            holders[index].objects = [TABS[index][1](session)]

    tabs.param.watch(lambda event: show(event.new), "active")
    if session.url is not None:  # the tab shown, in the address bar (?tab=replay); the first only where ?replay= is
        session.url.follow(tabs, ["active"], lambda: {} if tabs.active == 0 and not session.replay
                           else {"tab": TABS[tabs.active][0].lower()}, ["tab"])
    return tabs


def serve_resources_locally(doc) -> None:
    """Point every stylesheet this session's components create at the lab's own server, never a CDN.

    Panel builds component stylesheets with CDN URLs and rewrites them to the server's ``static/``
    folder in two places: when it renders the session's HTML page (``server_html_page_for_session``
    patches the models and records ``dist_url`` in the document's template variables) and, from then
    on, for each new model (``Reactive._get_properties`` reads ``dist_url``). A session that Bokeh
    rebuilds because its websocket arrived after the session had expired (slow pages in a full room)
    never has its HTML page rendered, so without this every stylesheet of the rebuilt page pointed at
    the CDN. Setting ``dist_url`` before anything is built makes both kinds of session local.
    """
    from panel.io.resources import LOCAL_DIST

    rel = pn.state.rel_path
    doc.template_variables["dist_url"] = f"{rel}/{LOCAL_DIST}" if rel else LOCAL_DIST


if __name__.startswith("bokeh"):
    pn.extension(design="native", notifications=False)
    serve_resources_locally(pn.state.curdoc)
    page_template(pn.state.curdoc)  # <meta name="viewport">: a phone lays the page out at its own width
    build_app().servable(title=TITLE)
