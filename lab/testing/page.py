"""Reading the served page in Chromium: elements through shadow roots, axe-core's WCAG checks, colour contrast.

axe-core is the copy the ``axe-playwright-python`` package ships (test extra), loaded into the page with
``page.add_script_tag``: no download at test time. Rules run: WCAG 2.0 / 2.1 / 2.2, levels A and AA, and on request
axe's best-practice rules.
"""

from __future__ import annotations

from pathlib import Path

WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]

#: JavaScript: the first element matching a selector, through shadow roots
FIND = """sel => { function find(root) { const el = root.querySelector(sel); if (el) return el;
  for (const n of root.querySelectorAll('*')) if (n.shadowRoot) { const f = find(n.shadowRoot); if (f) return f; }
  return null; } return find(document); }"""


#: axe-core's best-practice rules (landmarks, one main, a heading one, heading order, empty table headers, ...)
BEST_PRACTICE = ["best-practice"]


def axe_violations(page, best_practice: bool = False) -> list[dict]:
    """axe-core's violations of WCAG 2.x A/AA on ``page`` (``best_practice``: and of its best-practice rules)."""
    import axe_playwright_python

    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(Path(axe_playwright_python.__file__).with_name("axe.min.js")))
    return page.evaluate("""async tags => {
      const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
      return r.violations.map(v => ({id: v.id, help: v.help, nodes: v.nodes.map(n => n.target.join(' > '))}));
    }""", WCAG_AA + (BEST_PRACTICE if best_practice else []))


def luminance(rgb) -> float:
    def channel(c):
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
