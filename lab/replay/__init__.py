"""The lab's replay tab: scrub through a recorded GRPO run (ours, ingested, or uploaded).

- :mod:`lab.replay.catalog`   the shipped runs (record directories under ``runs/``)
- :mod:`lab.replay.state`     :class:`ReplayState`, the tab's per-session state
- :mod:`lab.replay.model`     :class:`RunView`: one record as the step-indexed arrays the browser scrubs
- :mod:`lab.replay.plots`     Bokeh grid / histogram / readouts per run, time plots of both runs
- :mod:`lab.replay.scrub`     the CustomJS that repaints while scrubbing (indexing only)
- :mod:`lab.replay.upload`    a visitor's file -> run record (via ``sims.ingest``), errors as messages
- :mod:`lab.replay.view`      :class:`ReplayView`, the tab itself
- :mod:`lab.replay.synthetic` a made-up record for tests and the benchmark
"""
