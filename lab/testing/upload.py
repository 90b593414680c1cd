"""Uploads in the Replay tab, for the upload and fairness tests: open the tab, read its status, make a file of a size."""

from __future__ import annotations

import io
import zipfile

from grpo_lab.replay.upload import UPLOAD_LIMITS
from grpo_lab.testing.lab_server import READ_CLASS, wait_readout

#: JavaScript: the upload component's status line (inside its shadow root)
STATUS = f"() => ({READ_CLASS})('upload-status') || ''"


def open_replay(page, url: str):
    page.goto(url)
    wait_readout(page)
    page.get_by_text("Replay", exact=True).click()
    upload = page.locator(".replay-upload input[type=file]")
    upload.wait_for(state="attached", timeout=30_000)
    return upload


def budget_sized_zip(target_bytes: int) -> tuple[bytes, int]:
    """A zip of one plain-JSONL file of about ``target_bytes`` (under the row budget too); (zip, lines)."""
    line = '{"step": %d, "prompt_id": "p%05d", "rewards": [1, 0, 1, 1, 0, 0, 1, %d]}\n'
    per_line = len(line % (0, 0, 0)) + 2
    n = min(target_bytes // per_line, UPLOAD_LIMITS.rows - 1)
    text = "".join(line % (i // 5000, i % 5000, i % 2) for i in range(n)).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("run/groups.jsonl", text)
    return buf.getvalue(), n
