"""Two visitors on one lab server: does one visitor's heavy work slow the other's page?

Two figures, each beside its idle baseline measured in the same run (headless Chromium, the lab
served as ``grpo-lab serve`` serves it, ``python -m grpo_lab.server``):

* **play**: visitor B's round trip (B at ``?rho=0.3``, where the server paints the grid: a press of
  the progress slider goes to Python and the readout changes when the evaluated view comes back;
  timed from the key press to the new readout, in Python) while the server is idle, then while
  visitor A plays training progress at the heaviest settings (``?n_prompts=20000&K=64&rho=0.9``
  + Play), then after A's tab is closed mid-play. The goal: B's median while A plays at most twice
  its idle median, and back to idle once A has left.
* **upload**: how long visitor B's page takes to load (goto to the first readout) while idle, then
  while visitor A's upload at the server's budget (about 60 MB of JSONL in a zip) is being read.

Timings on a shared machine move with its load: compare figures within one run only.
Usage: python benchmarks/bench_fairness.py [--presses 15] [--only play|upload] [-- extra server flags]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from lab_server import READ_CLASS, free_port, serve, wait_readout  # noqa: E402

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-renderer-backgrounding",
                 "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows"]
HEAVY = "?n_prompts=20000&K=64&rho=0.9"
LIGHT = "?rho=0.3"


def round_trips(page, n: int) -> list[float]:
    """Seconds from an ArrowRight on the progress slider to the server-painted readout changing, n times."""
    handle = page.locator("#gx-progress")
    out = []
    for i in range(n):
        before = page.evaluate(READ_CLASS, "readout-useful")
        handle.focus()
        t0 = time.perf_counter()
        handle.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        page.wait_for_function(f"({READ_CLASS})('readout-useful') !== {before!r}", timeout=120_000)
        out.append(time.perf_counter() - t0)
        page.wait_for_timeout(150)
    return out


def median_ms(xs: list[float]) -> str:
    return f"median {1000 * statistics.median(xs):7.0f} ms, max {1000 * max(xs):7.0f} ms ({len(xs)} presses)"


def bench_play(browser, url: str, presses: int) -> None:
    b_ctx, a_ctx = browser.new_context(), browser.new_context()
    b = b_ctx.new_page()
    b.goto(url + LIGHT)
    wait_readout(b)
    b.wait_for_timeout(1500)
    idle = round_trips(b, presses)
    a = a_ctx.new_page()
    a.goto(url + HEAVY, timeout=120_000)
    wait_readout(a, timeout=120_000)
    a.wait_for_timeout(3000)  # the heavy page's plots are built after load
    a.get_by_role("button", name="\u25b6 Play").click()
    a.wait_for_timeout(2000)
    start = a.evaluate(READ_CLASS, "readout-useful")
    playing = round_trips(b, presses)
    now = a.evaluate(READ_CLASS, "readout-useful")
    print(f"play   A's useful share moved from {start} to {now} while B measured (A still playing: "
          f"{a.get_by_role('button', name=chr(0x275a) * 2 + ' Pause').count() == 1})")
    a_ctx.close()  # A leaves mid-play
    b.wait_for_timeout(5000)
    after = round_trips(b, presses)
    b_ctx.close()
    print(f"play   B idle:                     {median_ms(idle)}")
    print(f"play   B while A plays (heavy):    {median_ms(playing)}   ratio of medians "
          f"{statistics.median(playing) / statistics.median(idle):.2f}")
    print(f"play   B 5 s after A's tab closed: {median_ms(after)}")


def bench_upload(browser, url: str) -> None:
    from test_upload_browser import STATUS, budget_sized_zip, open_replay

    from grpo_lab.replay.upload import UPLOAD_LIMITS

    def load_time() -> float:
        ctx = browser.new_context()
        page = ctx.new_page()
        t0 = time.perf_counter()
        page.goto(url)
        wait_readout(page)
        dt = time.perf_counter() - t0
        ctx.close()
        return dt

    idle = [load_time() for _ in range(3)]
    data, n = budget_sized_zip(UPLOAD_LIMITS.decompressed_bytes - (1 << 20))
    a_ctx = browser.new_context()
    a = a_ctx.new_page()
    upload = open_replay(a, url)
    upload.set_input_files(files=[{"name": "big.zip", "mimeType": "application/zip", "buffer": data}])
    a.wait_for_function(f"({STATUS})().startsWith('Reading big.zip')", timeout=60_000)
    a.wait_for_timeout(3000)
    busy = []
    while a.evaluate(STATUS).startswith("Reading") and len(busy) < 3:
        busy.append(load_time())
    a_ctx.close()
    print(f"upload B page load idle:              median {statistics.median(idle):.2f} s ({len(idle)} loads)")
    print(f"upload B page load during A's upload: median {statistics.median(busy):.2f} s, max {max(busy):.2f} s "
          f"({len(busy)} loads; {n:,} lines, {len(data) / 2**20:.1f} MB zip)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--presses", type=int, default=15)
    parser.add_argument("--only", choices=("play", "upload"))
    parser.add_argument("server_flags", nargs="*", help="extra flags for the server (after --)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from grpo_lab.commands.serve import serve_command

    port = free_port()
    with serve(cmd=[*serve_command(port=port), *args.server_flags], port=port) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        if args.only in (None, "play"):
            bench_play(browser, url, args.presses)
        if args.only in (None, "upload"):
            bench_upload(browser, url)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
