"""Text from a visitor never becomes markup: injection payloads in every URL parameter and in an upload's name.

Real Chromium against ``panel serve lab/app.py`` (no Content-Security-Policy here, so these tests check the
escaping itself; tests/test_server_headers.py checks the policy). Each payload tries to run script (it would
set ``window.__pwned`` or open a dialog) or to make a link; the checks are that no script ran, no dialog
opened, no element carries the payload's attributes or a link to its host, and the payload's characters are
shown as text.
"""

from __future__ import annotations

import pytest

from grpo_lab.testing.lab_server import PAGE_TEXT, READ_CLASS, wait_readout
from grpo_lab.state import NOTICE_VALUE_CHARS, URL_PARAMS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: payloads: script tags, event-handler attributes, Markdown links, javascript: URLs, a very long value
PAYLOADS = [
    "<img src=x onerror=window.__pwned=1;alert(1)>",
    "<script>window.__pwned=2;alert(2)</script>",
    "[Click to re-login](http://evil.example/login)",
    "[x](javascript:window.__pwned=4)",
    '"><svg onload=window.__pwned=5>',
    "javascript:window.__pwned=6",
    "A" * 3000 + "<img src=y onerror=window.__pwned=7>",
]

#: JavaScript: evidence that a payload became markup (a handler, a link or an image made from it, a script
#: element holding it, or the script having run), searched through every shadow root. Attribute values that
#: merely hold the text (a <select> option's value) are not markup.
EVIDENCE = """() => {
  const out = [];
  const visit = (root) => {
    for (const el of root.querySelectorAll('*')) {
      for (const a of el.attributes)  // an event handler, or a URL, made from a payload
        if ((a.name.startsWith('on') || a.name === 'href' || a.name === 'src') &&
            /__pwned|evil\\.example|^javascript:|^[xy]$/i.test(a.value.trim()))
          out.push(el.tagName + ' ' + a.name + '=' + a.value.slice(0, 80));
      if (el.tagName === 'SCRIPT' && el.textContent.includes('__pwned')) out.push('SCRIPT element');
      if (el.shadowRoot) visit(el.shadowRoot);
    }
  };
  visit(document);
  if (window.__pwned !== undefined) out.push('script ran: __pwned=' + window.__pwned);
  return out;
}"""


def watch_dialogs(page) -> list[str]:
    seen: list[str] = []

    def on_dialog(dialog):
        seen.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    return seen


def rotated_query(shift: int, embed: bool) -> dict[str, str]:
    """Every URL parameter set to a payload; shift s gives parameter j payload (j + s) mod len(PAYLOADS)."""
    query = {name: PAYLOADS[(j + shift) % len(PAYLOADS)] for j, name in enumerate(URL_PARAMS)}
    return {**query, "embed": "true"} if embed else query


@pytest.mark.parametrize("embed", [False, True], ids=["page", "embed"])
def test_url_payloads_are_shown_as_text(page, lab_url, embed):
    """Over len(PAYLOADS) loads every payload reaches every parameter (one page load per rotation)."""
    from urllib.parse import urlencode

    dialogs = watch_dialogs(page)
    for shift in range(len(PAYLOADS)):
        query = rotated_query(shift, embed)
        page.goto(f"{lab_url}?{urlencode(query)}")
        wait_readout(page)
        page.wait_for_function(f"({READ_CLASS})('lab-notice') !== null", timeout=15_000)
        page.wait_for_function(f"({PAGE_TEXT})().includes('URL parameters were corrected')", timeout=15_000)
        page.wait_for_timeout(300)  # an onerror/onload would fire right after the notice is inserted
        assert page.evaluate(EVIDENCE) == [], query
        text = page.evaluate(PAGE_TEXT)
        for name in URL_PARAMS:  # the value is quoted verbatim (the long one cut to NOTICE_VALUE_CHARS)
            if name == "filter":
                continue  # a boolean: its notice is "not true/false", quoted the same way
            raw = query[name]
            shown = raw if len(raw) <= NOTICE_VALUE_CHARS else raw[:NOTICE_VALUE_CHARS - 1] + "\u2026"
            assert f"{name}={shown}" in text, (name, raw)
    assert dialogs == []


def test_upload_names_are_shown_as_text(page, lab_url):
    """A file named like markup: its error notice, its run label and its tolerance line show the name as text."""
    dialogs = watch_dialogs(page)
    page.goto(lab_url)
    wait_readout(page)
    page.get_by_text("Replay", exact=True).click()
    upload = page.locator(".replay-upload input[type=file]")
    upload.wait_for(state="attached", timeout=30_000)
    bad_name = "<img src=x onerror=window.__pwned=1;alert(1)>[x](javascript:alert(2)).jsonl"  # no '/' in a name
    upload.set_input_files(files=[{"name": bad_name, "mimeType": "application/json",
                                   "buffer": b'{"step": 1, "prompt_id": "p1", "rewards": [1, 0]}\n{"step": \n'}])
    page.wait_for_function(f"({PAGE_TEXT})().includes('line 2')", timeout=30_000)
    page.wait_for_timeout(300)
    assert page.evaluate(EVIDENCE) == []
    assert bad_name in page.evaluate(PAGE_TEXT)  # the error notice quotes the name
    good_name = "<script>window.__pwned=3</script><svg onload=window.__pwned=4>.jsonl"
    rows = "".join(f'{{"step": {s}, "prompt_id": "p{i}", "rewards": [1, 0, {i % 2}]}}\n'
                   for s in range(3) for i in range(4))
    upload.set_input_files(files=[{"name": good_name, "mimeType": "application/json", "buffer": rows.encode()}])
    page.wait_for_function(f"({PAGE_TEXT})().includes('reward tolerance in force')", timeout=30_000)
    page.wait_for_timeout(300)
    assert page.evaluate(EVIDENCE) == []
    assert good_name in page.evaluate(PAGE_TEXT)  # the tolerance line names the run, as text
    assert dialogs == []
