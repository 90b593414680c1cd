r"""The doctor's report: :func:`grpo_lab.sims.doctor.diagnose`'s dict as text, HTML and SVG.

The core (``grpo_lab.sims.doctor``) computes numbers and JSON-able dicts only; this package renders them:

- :mod:`.text`     the command line's plain-text report
- :mod:`.page`     the self-contained HTML page and the fragment the lab's Replay tab embeds
- :mod:`.svg`      inline SVG plots;  :mod:`.markup` escaped HTML tables
- :mod:`.audit`, :mod:`.honesty`, :mod:`.samplers`, :mod:`.stall`, :mod:`.cost`  one section each
- :mod:`.scalars`  the report of a scalars-only record, and the scalars fit beside a group record's fit
"""

from .page import html_fragment, html_report
from .text import text_report

__all__ = ["text_report", "html_report", "html_fragment"]
