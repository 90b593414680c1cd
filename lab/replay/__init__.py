"""The lab's replay tab: scrub through a recorded GRPO run (ours, ingested, or uploaded).

- :mod:`grpo_lab.replay.catalog`   the shipped runs (record directories under ``runs/``)
- :mod:`grpo_lab.replay.follow`    :class:`RecordFollower`: polls a record still being written
- :mod:`grpo_lab.replay.trackers`  tracker logs in the runs folders (TensorBoard, W&B offline, metrics.jsonl), followed
- :mod:`grpo_lab.replay.state`     :class:`ReplayState`, the tab's per-session state
- :mod:`grpo_lab.replay.model`     :class:`RunView`: one record as the step-indexed arrays the browser scrubs
- :mod:`grpo_lab.replay.plots`     Bokeh grid / histogram / readouts per run, time plots of both runs
- :mod:`grpo_lab.replay.grid`      :class:`ReplayGrid`: grid, step slider, Play, hover and readouts in the browser
- :mod:`grpo_lab.replay.upload`    a visitor's file -> run record (via ``sims.ingest``), errors as messages
- :mod:`grpo_lab.replay.view`      :class:`ReplayView`, the tab itself
"""
