"""What lies below the fold is built when the visitor first gets to it: :class:`InView`, a placeholder the browser reports.

A session's plots are most of its server cost (four Bokeh figures, about 200 models to build and send, against
about 60 for the whole first screen). A visitor who opens the lab and moves a slider never sees them on a
1400x1000 screen, nor on a phone or a projector, without scrolling. :class:`InView` stands where they will go:
in the browser an ``IntersectionObserver`` watches it, and the first time it comes within :data:`MARGIN_PX` of
the viewport (scrolled to, or on the first screen of a tall window) the browser sets ``seen`` once; Python then
builds what it stands for. Outside a browser (a script, a test building the view directly) nothing sets it.
"""

from __future__ import annotations

import param
from panel.custom import JSComponent

__all__ = ["InView", "MARGIN_PX"]

#: the placeholder reports itself this far before it scrolls into view, so a scrolling visitor finds the plots drawn
MARGIN_PX = 100


class InView(JSComponent):
    """A placeholder showing ``text``; ``seen`` becomes true (once, from the browser) when it nears the viewport."""

    seen = param.Boolean(default=False, doc="Set by the browser, once, when the placeholder comes within margin_px of the viewport.")
    margin_px = param.Integer(default=MARGIN_PX, bounds=(0, None), doc="How far outside the viewport it already counts as seen.")
    text = param.String(default="", doc="The placeholder's text (shown as text, never as markup).")

    _esm = """
export function render({ model, el }) {
  const note = document.createElement("p");
  note.className = "in-view-text";
  note.style.cssText = "margin:4px 0;font-size:13px;color:#555";
  note.textContent = model.text;
  el.appendChild(note);
  if (model.seen) {
    return;
  }
  if (typeof IntersectionObserver === "undefined") {
    model.seen = true;
    return;
  }
  const m = `${model.margin_px}px`;
  const watch = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) {
      watch.disconnect();
      model.seen = true;
    }
  }, { rootMargin: `${m} 0px ${m} 0px` });
  watch.observe(el);
  model.on("remove", () => watch.disconnect());
}
"""
