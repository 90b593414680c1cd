r"""HTML building blocks shared by the doctor's sections: every cell and heading is escaped."""

from __future__ import annotations

import html

__all__ = ["table"]


def table(rows: list[list], head: list[str], cls: str | None = None) -> str:
    """An HTML table of ``rows`` (cells shown with ``str``, escaped) under ``head``; ``cls``: its class."""
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    attr = f' class="{html.escape(cls, quote=True)}"' if cls else ""
    return f"<table{attr}><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"
