"""The prompt grid, one browser view for the live lab, the exported page and the replay.

- :mod:`grpo_lab.grid.spec`      the controls (bounds, defaults, steps) and readout rows, declared once
- :mod:`grpo_lab.grid.cells`     the near-square layout and the cell tiles
- :mod:`grpo_lab.grid.readouts`  the readout templates and Python's filling of them
- :mod:`grpo_lab.grid.hover`     the hover's advantage table and the names of the plots' hover markers
- :mod:`grpo_lab.grid.pin`       pin and compare: the pinned view's URL value and the ghost's markup
- :mod:`grpo_lab.grid.markup`    the view's HTML (controls from the spec, readouts, canvas, legend) and data
- :mod:`grpo_lab.grid.component` :class:`LiveGrid`, the served lab's Panel component over the view

The browser side is ``lab/static/gridview.js`` over ``kernel.js`` (the only browser-side arithmetic)
and ``cells.js`` (the painter); the Replay tab's component over the view's frames mode is
:class:`grpo_lab.replay.grid.ReplayGrid`.
"""
