"""Panel's ``/components/<module>/<class>/<attribute>/<file>`` route, answering only for the lab's own components.

Panel (1.9) serves a component's local resource files (a template's CSS, a custom component's bundle) from
``/components/``: its handler (``panel.io.server.ComponentResourceHandler``) *imports the module named in the
URL* before it checks anything, so any visitor could make the server import any module: ``/components/this/...``
printed the Zen of Python into the log, ``/components/torch/...`` added 160 MB to the process, and a ``..`` name
raised a traceback (HTTP 500).

:class:`LabComponents` answers only for a module that is **already imported** in the serving process and lies
in one of :data:`PACKAGES`, the packages the lab's page is made of (Panel, Bokeh and the lab itself); for any
other name it answers 404 at once, importing nothing and logging nothing. Since the server builds one lab page
before it serves (``grpo_lab.server.warm``, before the ``--num-procs`` fork), every module whose component a lab
page can show is imported in every process; what such a module lists as a resource file is then served by
Panel's own checks, unchanged. (Measured in Chromium on all three tabs, ``?embed=true``, ``?present=true``,
``?replay=``, ``?tour=``: the lab's page requests no ``/components/`` URL at all; Panel serves its own CSS
from ``/static/``. The route stays for the components that do list files, e.g. Panel's templates.)
"""

from __future__ import annotations

import re
import sys

from panel.io.server import ComponentResourceHandler
from tornado.web import HTTPError

__all__ = ["PACKAGES", "LabComponents", "allowed", "lab_routes"]

#: the top-level packages whose components a lab page is made of
PACKAGES = ("panel", "bokeh", "grpo_lab")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


def allowed(module: str) -> bool:
    """Whether ``/components/<module>/...`` may be answered: a dotted name already imported, in :data:`PACKAGES`."""
    return bool(_NAME.match(module)) and module.split(".")[0] in PACKAGES and sys.modules.get(module) is not None


class LabComponents(ComponentResourceHandler):
    """Panel's component resource handler for :func:`allowed` modules only; 404 for any other, without import."""

    def parse_url_path(self, path: str) -> str:
        if not allowed(path.split("/", 1)[0]):
            raise HTTPError(404)  # no log message: Tornado logs only the access line
        return super().parse_url_path(path)


def lab_routes(patterns: list) -> list:
    """``patterns`` (Tornado routes) with Panel's component handler replaced by :class:`LabComponents`."""
    return [(p[0], LabComponents, *p[2:]) if p[1] is ComponentResourceHandler else p for p in patterns]
