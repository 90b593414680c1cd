"""What the tests and the benchmarks share, imported as a package (``grpo_lab.testing``), never through ``sys.path``.

- :mod:`grpo_lab.testing.chromium`         Debian's Chromium and the flags every browser run uses (written once)
- :mod:`grpo_lab.testing.stats`            the one percentile convention of every test and benchmark
- :mod:`grpo_lab.testing.lab_server`       a lab server for a test (``serve``), free ports, reading the page
- :mod:`grpo_lab.testing.logged_server`    ``grpo-lab serve`` with its log kept, for the admission tests
- :mod:`grpo_lab.testing.bokeh_visitor`    a visitor speaking BokehJS's websocket protocol (load and memory checks)
- :mod:`grpo_lab.testing.hostile_client`   raw websockets that talk out of turn; sessions opened as Bokeh's client does
- :mod:`grpo_lab.testing.upload_stress`    rounds of uploads whose tabs close at random moments; a server's readers
- :mod:`grpo_lab.testing.memory_probe`     a route that reports a server process's memory and sessions
- :mod:`grpo_lab.testing.synthetic_record` a small run record written by the core's own writer
- :mod:`grpo_lab.testing.beta_record`      a record of a static Beta population (the doctor's interval checks)
- :mod:`grpo_lab.testing.grid_twins`       what the grid's cells should show, computed from the core
- :mod:`grpo_lab.testing.replay_frames`    decoding the Replay tab's frames
- :mod:`grpo_lab.testing.upload`           the Replay tab's upload input, a file of a given size
- :mod:`grpo_lab.testing.visitors`         a browser context per visitor (its cookie), tabs opened in it
- :mod:`grpo_lab.testing.page`             elements through shadow roots, axe-core's WCAG checks, contrast
- :mod:`grpo_lab.testing.replay_page`      the Replay tab's picture, readouts, slider and hover
- :mod:`grpo_lab.testing.growing_record`   a run record still being written
- :mod:`grpo_lab.testing.inspect_figures`  ``grpo-lab inspect``'s figures recomputed with plain numpy
- :mod:`grpo_lab.testing.trl_tiny`         a tiny TRL GRPOTrainer on CPU (the fixtures' generator)
- :mod:`grpo_lab.testing.cli`              ``grpo-lab`` run in process (``run_cli``): stdout, stderr, exit code
- :mod:`grpo_lab.testing.report_cells`     a cell of the doctor's samplers table read back: value, SE, interval
- :mod:`grpo_lab.testing.no_torch`         Python code that makes ``import torch`` fail (tests of the torch-free parts)
- :mod:`grpo_lab.testing.ingested_truth`   figures recomputed from an ingest fixture's truth.json (fit, transitions, mixed share)
- :mod:`grpo_lab.testing.real_logs`        the real logs of tests/fixtures/real (index, provenance), each read with its config
- :mod:`grpo_lab.testing.run_async`        a coroutine run on a loop of its own thread (beside Playwright's sync loop)
- :mod:`grpo_lab.testing.stall_study`      the stall forecast's simulation study: regimes, one seed of a cell, coverage

Nothing here is imported by the lab or the core; Playwright, psutil and the like are imported where used.
"""
