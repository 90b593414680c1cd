"""Notices that show text from visitors (URL values, file names, ingest messages) as plain text.

A notice's text is never interpreted: it is HTML-escaped and placed in an HTML pane, so
``<img src=x onerror=...>`` shows as those characters and ``[x](http://evil.example)`` stays
brackets and parentheses (a Markdown pane, such as ``pn.pane.Alert``, would turn it into a link).
Line breaks in the text become ``<br>``; nothing else is markup.

``TextNotice(kind, css_classes)`` is a Panel pane; ``notice.show(text)`` sets or (with ``""``)
hides it. ``NoticeLines(["lab-notice", "lab-busy"])`` is several such notices in one pane (one Bokeh model
for all: a first render pays for each model), each line in a ``<div>`` of its own class, shown only while it
has text; ``lines.show("lab-busy", text)`` sets one. :func:`plain_html` is the escaping, for callers that build a little HTML around
visitor text themselves (``plain_html(label)`` inside ``<b>...</b>``).
"""

from __future__ import annotations

import html

import panel as pn

__all__ = ["TextNotice", "NoticeLines", "plain_html", "NOTICE_STYLES"]

#: colours of a notice by kind (those of Bootstrap's alerts, which Panel's Alert pane uses)
NOTICE_STYLES = {
    "warning": {"background": "#fff3cd", "color": "#664d03", "border": "1px solid #ffecb5"},
    "danger": {"background": "#f8d7da", "color": "#842029", "border": "1px solid #f5c2c7"},
}
_BOX = {"border-radius": "4px", "padding": "8px 12px", "overflow-wrap": "anywhere"}


def plain_html(text: object) -> str:
    """``text`` as HTML that shows exactly those characters: ``&<>"'`` escaped, newlines as ``<br>``."""
    return html.escape(str(text), quote=True).replace("\n", "<br>")


class TextNotice(pn.pane.HTML):
    """A warning/danger box whose text is shown verbatim; hidden while empty (see the module docstring)."""

    def __init__(self, text: str = "", kind: str = "warning", **params):
        params.setdefault("sizing_mode", "stretch_width")
        super().__init__(plain_html(text), visible=bool(text), styles={**NOTICE_STYLES[kind], **_BOX},
                         **params)
        self.text = text

    def show(self, text: str) -> None:
        """Show ``text`` (escaped); an empty text hides the notice."""
        self.text = text or ""
        self.param.update(object=plain_html(self.text), visible=bool(self.text))


class NoticeLines(pn.pane.HTML):
    """Several notices in one warning box, each named by the CSS class of its line (see the module docstring); the box
    is hidden while every line is empty."""

    def __init__(self, names: list[str], kind: str = "warning", **params):
        params.setdefault("sizing_mode", "stretch_width")
        self.lines = dict.fromkeys(names, "")
        super().__init__("", visible=False, styles={**NOTICE_STYLES[kind], **_BOX}, **params)

    def show(self, name: str, text: str) -> None:
        """Show ``text`` (escaped) on line ``name``; an empty text removes that line."""
        self.lines[name] = text or ""
        shown = [f'<div class="{cls}">{plain_html(t)}</div>' for cls, t in self.lines.items() if t]
        self.param.update(object="".join(shown), visible=bool(shown))
