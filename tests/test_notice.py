"""Visitor text in notices stays text (grpo_lab.notice), URL values are quoted short, and no server path shows."""

from __future__ import annotations

import html

from grpo_lab.notice import TextNotice, plain_html
from grpo_lab.replay.view import ReplayView
from grpo_lab.state import NOTICE_VALUE_CHARS, sanitize

PAYLOAD = '<img src=x onerror="alert(1)">[x](http://evil.example) & \'quoted\''


def test_plain_html_shows_the_characters_and_nothing_else():
    out = plain_html(PAYLOAD + "\nsecond line")
    assert "<" not in out.replace("<br>", "") and ">" not in out.replace("<br>", "")
    assert html.unescape(out.replace("<br>", "\n")) == PAYLOAD + "\nsecond line"


def test_text_notice_escapes_and_hides_when_empty():
    notice = TextNotice(PAYLOAD, "danger")
    assert notice.visible and notice.object == plain_html(PAYLOAD) and notice.text == PAYLOAD
    notice.show("")
    assert not notice.visible and notice.object == ""


def test_url_values_are_quoted_short():
    _values, notices = sanitize({"K": "9" * 500 + "<b>"})
    (note,) = notices
    quoted = note.split("=", 1)[1].split(" is ", 1)[0]
    assert len(quoted) == NOTICE_VALUE_CHARS and quoted.endswith("\u2026") and "<b>" not in note


def test_a_missing_runs_folder_is_not_named_to_visitors(tmp_path):
    missing = tmp_path / "no-such-runs-folder"
    view = ReplayView(runs_root=missing)
    assert view.missing_pane.visible and "No run to replay yet" in view.missing_pane.text
    assert str(tmp_path) not in view.missing_pane.text and "no-such-runs-folder" not in view.missing_pane.object


def test_the_exported_page_escapes_its_title_and_file_name():
    """The export's text comes from its command line; it is still escaped (title, provenance, embedded JSON)."""
    from grpo_lab.export import make_spec, render

    page = render(make_spec(title="<script>alert(1)</script>", n_prompts=50), "x</script><script>alert(2)</script>.html")
    assert "<script>alert(1)" not in page and "alert(2)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
