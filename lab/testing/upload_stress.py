"""Rounds of uploads whose tabs close at random moments, for the upload stress test and benchmark (issue #35).

:func:`stress_round` has ``n`` visitors (each a browser context of its own, with the lab's visitor cookie) upload
the same file in the Replay tab at once; each tab is closed at a random moment (``close_p`` of them, between 0 and
``close_within_s`` after its upload was sent) or kept until its read ends. Each upload's outcome: ``"closed"``,
``"read"`` (the page said "Read ... in ... s"), ``"error: ..."`` (the page's message), or ``"stuck"``: still
"Reading" after ``stuck_s``. :func:`readers` lists a server's reading processes (spawned by the upload lanes,
``grpo_lab.replay.upload_pool``; the resource tracker is not one). Bounded: every wait has a timeout, loopback only.
"""

from __future__ import annotations

import random
import time

from grpo_lab.testing.lab_server import TEXTS_OF_CLASS
from grpo_lab.testing.upload import STATUS, open_replay
from grpo_lab.testing.visitors import visitor

__all__ = ["stress_round", "readers"]


def readers(pids: list[int]) -> list[int]:
    """The reading processes under the server processes ``pids`` (multiprocessing's ``spawn`` children)."""
    import psutil

    out = []
    for pid in pids:
        try:
            kids = psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for kid in kids:
            try:
                cmd = " ".join(kid.cmdline())
            except psutil.Error:
                continue
            if "spawn_main" in cmd and "resource_tracker" not in cmd:
                out.append(kid.pid)
    return sorted(set(out))  # a forked worker shares its parent's command line: both may be listed


def stress_round(browser, url: str, data: bytes, n: int = 4, rng: random.Random | None = None, close_p: float = 0.5,
                 close_within_s: float = 3.0, stuck_s: float = 180.0, tag: str = "s") -> list[str]:
    """One round (see the module docstring); the outcome of each upload, in order."""
    rng = rng or random.Random(0)
    visits = []
    for i in range(n):
        ctx = visitor(browser, url, f"stress-{tag}-{i}")
        page = ctx.new_page()
        upload = open_replay(page, url)
        visits.append((ctx, page, upload))
    plan = [rng.uniform(0, close_within_s) if rng.random() < close_p else None for _ in range(n)]
    sent = time.monotonic()
    for _, _, upload in visits:
        upload.set_input_files(files=[{"name": "big.zip", "mimeType": "application/zip", "buffer": data}])
    outcome = [""] * n
    deadline = sent + stuck_s
    while not all(outcome) and time.monotonic() < deadline:
        now = time.monotonic() - sent
        for i, (ctx, page, _) in enumerate(visits):
            if outcome[i]:
                continue
            if plan[i] is not None and now >= plan[i]:
                ctx.close()
                outcome[i] = "closed"
                continue
            status = page.evaluate(STATUS)
            errors = [t for t in page.evaluate(TEXTS_OF_CLASS, "replay-error") if t]
            if status.startswith("Read big.zip in"):
                outcome[i] = "read"
            elif errors:
                outcome[i] = "error: " + errors[0][:120]
        time.sleep(0.25)
    for i, (ctx, _, _) in enumerate(visits):
        if not outcome[i]:
            outcome[i] = "stuck"
        if outcome[i] != "closed":
            ctx.close()
    return outcome
