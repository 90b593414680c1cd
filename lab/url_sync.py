"""The page's address bar follows its state: copying the URL reproduces the view.

One :class:`UrlSync` per session (``lab/app.py`` makes it). It always writes the Live lab's controls
(``grpo_lab.state.query_values``) and the tour's step; a tab, once built, adds its own part with
:meth:`UrlSync.follow` (the Replay: its trainer loop's settings and its run, ``lab.replay.view``), and the
tabs add the active one. A part names the query keys it owns: those are written from its values only (a key
it leaves out, e.g. a setting back at its default, leaves the URL), so a value typed in the URL is replaced
once the part that reads it is built, and kept until then. Keys no part owns (``embed``, ``present``) are kept.

Writing the URL costs a server message, a history entry and a browser -> server echo, so while a control
moves the write waits until it has been still for :data:`URL_DELAY_MS` (like the plots' redraw); dragging
then costs the browser nothing extra. Nothing is written before :meth:`UrlSync.start` (the page connected,
``location`` holding the browser's URL); outside a server nothing is written at all.
"""

from __future__ import annotations

from typing import Callable, Iterable
from urllib.parse import urlencode

import panel as pn
import param

from grpo_lab.debounce import Debounce
from grpo_lab.state import URL_PARAMS, LabState, query_values

__all__ = ["URL_DELAY_MS", "UrlSync"]

#: the URL follows the controls this long after they stop moving (one history entry per pause, not per step)
URL_DELAY_MS = 300


class UrlSync:
    """Keep the URL's query string in step with ``lab``, ``tour`` (a TourState or None) and the followed parts.

    ``query`` is the page's query at open (its strings). ``location`` and ``doc`` default to the session's
    (``pn.state.location``, ``pn.state.curdoc``); tests pass their own.
    """

    def __init__(self, lab: LabState, query: dict[str, str], tour=None):
        self.lab, self.query, self.tour = lab, dict(query), tour
        self._parts: list[tuple[Callable[[], dict[str, str]], frozenset[str]]] = []
        self.location = self.doc = None
        self._later = Debounce(self.write, URL_DELAY_MS)

    def start(self, location=None, doc=None) -> None:
        """The page is connected: write now (corrected values replace bad ones; a bare URL gets the full state),
        then after each pause in the controls."""
        self.location = location if location is not None else getattr(pn.state, "location", None)
        self.doc = doc if doc is not None else getattr(pn.state, "curdoc", None)
        if self.location is None:
            return
        self.write()
        self.lab.param.watch(self._changed, list(URL_PARAMS))
        if self.tour is not None:
            self.tour.param.watch(self._changed, "step")

    def follow(self, obj: param.Parameterized, names: Iterable[str], values: Callable[[], dict[str, str]],
               owns: Iterable[str]) -> None:
        """Add a part: ``values()`` (query key -> string) is written, replacing every key in ``owns``, whenever one
        of ``obj``'s parameters ``names`` changes (and now, if the page is connected)."""
        self._parts.append((values, frozenset(owns)))
        obj.param.watch(self._changed, list(names))
        if self.location is not None:
            self._changed()

    def query_now(self) -> dict[str, str]:
        """The query string's arguments the page's state gives now."""
        owned = set(URL_PARAMS) | {"tour"}.union(*(keys for _, keys in self._parts))
        out = {k: v for k, v in self.query.items() if k not in owned}
        if self.tour is not None and self.tour.step:
            out["tour"] = str(self.tour.step)
        out.update(query_values(self.lab))
        for values, keys in self._parts:
            out.update({k: v for k, v in values().items() if k in keys})
        return out

    def write(self) -> None:
        """Write :meth:`query_now` to the address bar (nothing when it is already there)."""
        if self.location is None:
            return
        search = "?" + urlencode(self.query_now())
        if self.location.search != search:
            self.location.search = search

    def _changed(self, *_events) -> None:
        if self.location is not None:
            self._later.trigger(self.doc)
