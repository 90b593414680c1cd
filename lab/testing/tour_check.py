"""Checking a guided tour step's numbers in Chromium: each number its text quotes is on the page as the step says.

A figure the step computes (a key of :func:`grpo_lab.views.tour.tour_figures`) is shown, exactly as written, by the
element the step outlines: while the step is on screen (``Step.shows``; a drain step at the drain's end), at the drain's
start (``Step.shows_first``: recorded by :data:`SAMPLER`, installed before the page loads) or after the move the text
asks for (``Step.move``, made here as a reader's drag would: the input's value set, an input event sent). Every other
number of the text (a setting: K = 32, t = 0.4, the band 0.2 to 0.8) is shown by the outlined element or by one of the
controls the step names, in one of those states. A percentage must appear whole (8.7% is not found in 88.7%); a plain
number is compared by value (the slider's 1.00 shows t = 1).
"""

from __future__ import annotations

import re

from .page import FIND

__all__ = ["SAMPLER", "TEXT_AND_LABELS", "numbers", "shown", "check_step_numbers"]

#: JavaScript: the text of the first element matching a selector and every aria-label inside it, through shadow roots
TEXT_AND_LABELS = f"""sel => {{ const e = ({FIND})(sel); if (!e) return '';
  const out = [];
  const walk = n => {{ if (n.nodeType === 3) {{ out.push(n.textContent); return; }}
    if (n.nodeType !== 1 && n.nodeType !== 11) return;
    if (n.nodeName === 'STYLE' || n.nodeName === 'SCRIPT') return;
    if (n.nodeType === 1 && n.hasAttribute('aria-label')) out.push(n.getAttribute('aria-label'));
    if (n.shadowRoot) walk(n.shadowRoot);
    for (const c of n.childNodes) walk(c); }};
  walk(e); return out.join(' '); }}"""

#: JavaScript for ``page.add_init_script``: from the page's load, each animation frame, record the training progress
#: slider's value and the readouts' text whenever either changes (``window.__tourSeen``: the drain's frames)
SAMPLER = f"""(() => {{ const find = ({FIND}); window.__tourSeen = [];
  const frame = () => {{ const out = find('#gx-progress-out'), r = find('.gx-readouts');
    if (out && r) {{ const seen = window.__tourSeen, last = seen[seen.length - 1], now = [out.textContent, r.textContent];
      if (!last || last[0] !== now[0] || last[1] !== now[1]) seen.push(now); }}
    if (window.__tourSeen.length < 5000) requestAnimationFrame(frame); }};
  requestAnimationFrame(frame); }})()"""

_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?%?|\.\d+")


def numbers(text: str) -> list[str]:
    """The numbers in ``text`` as written (``1,000``, ``8.7%``, ``0.4``)."""
    return _NUMBER.findall(text)


def shown(number: str, text: str) -> bool:
    """Whether ``text`` shows ``number``: a plain number by value, anything else (``8.7%``, ``6.8 percentage
    points``) as written and whole (not inside a longer number)."""
    if not re.fullmatch(r"[\d,.]+", number):
        return re.search(r"(?<![\d.,])" + re.escape(number), text) is not None
    value = float(number.replace(",", ""))
    return any(float(n.rstrip("%").replace(",", "")) == value for n in numbers(text))


def _wait_shows(page, sel: str, figure: str, timeout: float) -> None:
    page.wait_for_function(f"([sel, want]) => {{ const t = ({TEXT_AND_LABELS})(sel);"
                           " return new RegExp('(?<![\\\\d.,])' + want.replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&')).test(t); }",
                           arg=[sel, figure], timeout=timeout)


def check_step_numbers(page, step, text: str, figures: dict, highlight: str, timeout: float = 60_000) -> dict:
    """Check every number of step ``step``'s ``text`` (its figures filled in) on ``page``, where the step is on screen
    and its drain, if any, has ended (with :data:`SAMPLER` installed for a drain step). ``figures``:
    :func:`tour_figures`; ``highlight``: the outlined element's class. Returns the texts read, by state."""
    outlined = "." + highlight
    controls = [[s for s in sels if page.evaluate(TEXT_AND_LABELS, s)][:1] for sels in step.controls]

    def state() -> str:
        return " | ".join([page.evaluate(TEXT_AND_LABELS, outlined)] + [page.evaluate(TEXT_AND_LABELS, c[0])
                                                                         for c in controls if c])

    for key in step.shows:
        _wait_shows(page, outlined, figures[key], timeout)
    texts = {"on screen": state()}
    for key in step.shows:
        assert shown(figures[key], page.evaluate(TEXT_AND_LABELS, outlined)), (key, figures[key])
    if step.shows_first:
        seen = page.evaluate("() => window.__tourSeen")
        first = [f"{out} | {r}" for out, r in seen if float(out) == 0.0]  # the slider's value, the readouts
        assert first and float(seen[-1][0]) == 1.0, (seen[:3], seen[-1:])
        for key in step.shows_first:
            assert shown(figures[key], first[-1]), (key, figures[key], first[-1])
        texts["drain start"] = first[-1]
    if step.move is not None:
        page.evaluate(f"([sel, v]) => {{ const e = ({FIND})(sel); e.value = String(v);"
                      " e.dispatchEvent(new Event('input', {bubbles: true}));"
                      " e.dispatchEvent(new Event('change', {bubbles: true})); }",
                      [step.move.control, step.move.value])
        for key in step.move.shows:
            _wait_shows(page, outlined, figures[key], timeout)
        texts["after the move"] = state()
    everything = " | ".join(texts.values())
    missing = [n for n in numbers(text) if not shown(n, everything)]
    assert not missing, (missing, texts)
    return texts
