"""The run doctor's renderers: the diagnosis (:mod:`grpo_lab.sims.doctor`, numbers and JSON-able dicts only) as text
for the command line and as one self-contained HTML page or fragment for ``--html`` and the lab.

- :mod:`grpo_lab.doctor_report.report`    ``text_report``, ``html_report``, ``html_fragment``; the inline SVG plots
- :mod:`grpo_lab.doctor_report.stall`     the stall forecast and the per-prompt transitions
- :mod:`grpo_lab.doctor_report.audit`     the audit of the logged metrics
- :mod:`grpo_lab.doctor_report.samplers`  the samplers side by side (also the lab's Samplers tab)
- :mod:`grpo_lab.doctor_report.honesty`   the fit's 95% intervals

Every text taken from a record is escaped with :func:`html.escape` in the HTML.
"""
