"""Tabs built the first time they are shown, whose unopened tabs share one placeholder model.

A visit's first render holds the tab it opens on and, for each other tab, only its ``TabPanel``: every unopened
tab's child is the same empty Bokeh ``Spacer`` (one model however many tabs wait), so a tab costs the first render
one model until it is opened. Opening a tab builds it (``builders[i]()``) and puts it in the tab's place.
"""

from __future__ import annotations

from typing import Callable, Sequence

import panel as pn
from bokeh.models import Spacer as BkSpacer

__all__ = ["LazyTabs", "lazy_tabs"]


class _Unopened(pn.Spacer):
    """The Python side of a tab not yet opened (rendered as the tabs' one shared placeholder)."""


class LazyTabs(pn.Tabs):
    """``pn.Tabs`` whose :class:`_Unopened` tabs all show one shared empty model per root."""

    def _get_objects(self, model, old_objects, doc, root, comm=None):
        new_models, old_models = super()._get_objects(model, old_objects, doc, root, comm)
        shared = self.__dict__.setdefault("_shared_placeholders", {})
        for pane, panel in zip(self.objects, new_models):
            if isinstance(pane, _Unopened):
                ref = root.ref["id"]
                if ref not in shared:
                    shared[ref] = BkSpacer(width=0, height=0, tags=["unopened"])
                panel.child = shared[ref]
        return new_models, old_models


def lazy_tabs(titles: Sequence[str], builders: Sequence[Callable[[], object]], first: int = 0,
              **kwargs) -> LazyTabs:
    """Tabs named ``titles``; tab ``i`` is ``builders[i]()``, built when first shown (``first`` at once)."""
    built = {first}
    tabs = LazyTabs(*[(title, builders[i]() if i == first else _Unopened()) for i, title in enumerate(titles)],
                    active=first, **kwargs)

    def show(index: int) -> None:
        if index not in built:
            built.add(index)
            tabs[index] = (titles[index], builders[index]())

    tabs.param.watch(lambda event: show(event.new), "active")
    return tabs
