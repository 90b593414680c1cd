"""The lab's panels, one small module per panel or plot.

Each module exposes a builder taking the session's state objects (``lab.state``) and
returning a Panel object that keeps itself up to date by watching that state. Numbers
come from ``sims``; these modules only lay them out.

- :mod:`grpo_lab.views.controls`    the live lab's widgets (with tooltips) and buttons
- :mod:`grpo_lab.views.decay`       the plots' curves the browser kernel cannot compute (rho > 0); the decay
                                    curve and the P(useful) histogram themselves are drawn in the browser
                                    (:mod:`grpo_lab.grid.plots`, ``lab/static/live_plots.js``)
- :mod:`grpo_lab.views.kcost`       the K-cost table
- :mod:`grpo_lab.views.compare`     pin and compare: the pinned view beside the grid, compared at the same budget
- :mod:`grpo_lab.views.jensen`      D_real against D_iid for the current population
- :mod:`grpo_lab.views.advantages`  the advantage explorer
- :mod:`grpo_lab.views.formulas`    the formulas, typeset as MathML (no CDN)
- :mod:`grpo_lab.views.live`        the "Live lab" tab: grid + controls + readouts + its two plots, then the rest
- :mod:`grpo_lab.views.play_budget` the session's frame budget (Play's progress pushes, server painting)
- :mod:`grpo_lab.views.deferred`    the secondary plots' builds after the first render, one at a time per process
- :mod:`grpo_lab.views.glyphs`      lines and dots without unseen copies (fewer models per session)
"""
