"""Putting the lab inside someone else's page: embed options and the height message.

Two embeds share these (``docs/export.md``): the exported file (:mod:`grpo_lab.export`) and the
served lab's ``?embed=true``.

* **Options**: ``title`` and ``footer`` (``false`` hides them; the exported page's command line says
  ``--no-title`` / ``--no-footer``) and ``caption`` (a line of plain text above the grid). A caption is
  text a visitor or a link supplied: it is always shown as text (escaped in HTML, ``textContent`` in the
  browser), never as markup. :func:`clean_caption` is its one rule: whitespace runs become one space,
  control characters are dropped, and it is cut to :data:`MAX_CAPTION_CHARS` (an ellipsis marks the cut).
* **Height**: the page posts ``{type: HEIGHT_MESSAGE, height: <CSS px>}`` to its parent frame whenever
  its height changes (``window.parent.postMessage``, target ``"*"``: the message carries nothing but a
  number). A few lines on the host page (the snippet in ``docs/export.md``) check the message's source,
  origin and shape and set the iframe's height. The embedded page listens to no message at all.

:class:`grpo_lab.views.embed.EmbedHeight` is the served lab's side of the height message; the exported
page's glue (``lab/static/export_page.js``) does the same. This module needs no Panel.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass
from typing import Mapping

__all__ = ["HEIGHT_MESSAGE", "MAX_CAPTION_CHARS", "OFF_WORDS", "EmbedOptions", "caption_text", "clean_caption",
           "embed_options", "caption_html", "page_settings"]

HEIGHT_MESSAGE = "grpo-lab:height"  #: the ``type`` of the message an embedded page posts to its parent
MAX_CAPTION_CHARS = 280  #: a caption is one or two lines of text; longer ones are cut (URL) or refused (export)
OFF_WORDS = ("false", "0", "no", "off")  #: the URL values that hide the title or the footer
CAPTION_CLASS = "embed-caption"  #: the caption's CSS class, in the exported page and the served lab

_BREAKS = "\t\n\v\f\r"  #: with Unicode's separators (Z*), the characters a caption turns into spaces
_SPACES = re.compile(" +")


def caption_text(raw: object) -> str:
    """A caption's text before any cut: tabs, line breaks and Unicode separators (Z*) -> spaces, other control
    and format characters (C*) dropped, space runs -> one space, trimmed. ``None`` gives ``""``."""
    if raw is None:
        return ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    kept = (" " if ch in _BREAKS or unicodedata.category(ch)[0] == "Z" else ch for ch in text)
    return _SPACES.sub(" ", "".join(ch for ch in kept if unicodedata.category(ch)[0] != "C")).strip()


def clean_caption(raw: object) -> str:
    """A caption as shown: :func:`caption_text`, cut to :data:`MAX_CAPTION_CHARS` code points (the last one an
    ellipsis when cut).

    The result is still *text*: show it escaped (:func:`caption_html`) or as ``textContent``. Twin of
    ``caption()`` in ``lab/static/export_page.js`` (which counts code points too).
    """
    chars = list(caption_text(raw))
    if len(chars) <= MAX_CAPTION_CHARS:
        return "".join(chars)
    return "".join(chars[:MAX_CAPTION_CHARS - 1]).rstrip() + "\u2026"


def _is_off(value: object) -> bool:
    return str(value).strip().lower() in OFF_WORDS


def _last(value):
    if isinstance(value, (list, tuple)):
        value = value[-1] if value else ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


@dataclass(frozen=True)
class EmbedOptions:
    """What an embedded page leaves out or adds: its title, its footer, a caption (plain text)."""

    title: bool = True
    footer: bool = True
    caption: str = ""


def embed_options(query: Mapping[str, object]) -> EmbedOptions:
    """The options in a URL query (``title=false``, ``footer=false``, ``caption=TEXT``); others are ignored."""
    return EmbedOptions(title=not _is_off(_last(query.get("title", ""))),
                        footer=not _is_off(_last(query.get("footer", ""))),
                        caption=clean_caption(_last(query.get("caption"))))


def caption_html(caption: str, element_id: str | None = None) -> str:
    """The caption paragraph: the text escaped; ``hidden`` while empty (a page may fill it from its URL)."""
    ident = f' id="{html.escape(element_id, quote=True)}"' if element_id else ""
    hidden = "" if caption else " hidden"
    return f'<p class="{CAPTION_CLASS}"{ident}{hidden}>{html.escape(caption)}</p>'


def page_settings() -> dict:
    """What a page's script needs to apply the URL options and post its height (JSON-ready)."""
    return {"message": HEIGHT_MESSAGE, "max_caption": MAX_CAPTION_CHARS, "off": list(OFF_WORDS)}
