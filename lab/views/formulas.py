"""The formulas beside the simulation, typeset as MathML (rendered by the browser itself: no CDN, no font).

Panel's LaTeX pane loads KaTeX or MathJax from a CDN, so it is not used.
"""

from __future__ import annotations

from html import escape

import panel as pn

__all__ = ["formulas_pane", "FORMULAS"]


def _m(body: str) -> str:
    return f'<math display="block">{body}</math>'


_P = "<mi>p</mi>"
_K = "<mi>K</mi>"
_POW_P = f"<msup>{_P}{_K}</msup>"
_POW_Q = f"<msup><mrow><mo>(</mo><mn>1</mn><mo>\u2212</mo>{_P}<mo>)</mo></mrow>{_K}</msup>"

#: (caption, MathML) pairs, in reading order
FORMULAS = (
    ("A group of K rollouts is unanimous (no gradient) with probability",
     _m(f"<mi>D</mi><mo>(</mo>{_P}<mo>,</mo>{_K}<mo>)</mo><mo>=</mo>{_POW_P}<mo>+</mo>{_POW_Q}")),
    ("and carries a gradient with probability",
     _m(f"<mi>P</mi><mo>(</mo><mtext>useful</mtext><mo>)</mo><mo>=</mo><mn>1</mn><mo>\u2212</mo>{_POW_P}"
        f"<mo>\u2212</mo>{_POW_Q}")),
    ("Each prompt's pass rate rises with training progress t (gain g = 7.84):",
     _m("<msub><mi>p</mi><mi>t</mi></msub><mo>=</mo><msubsup><mi>p</mi><mn>0</mn><mrow><mn>1</mn><mo>/</mo>"
        "<mo>(</mo><mn>1</mn><mo>+</mo><mi>g</mi><mi>t</mi><mo>)</mo></mrow></msubsup>")),
    ("Over a population of prompts x (Jensen: the mean pass rate understates the waste):",
     _m("<msub><mi>D</mi><mtext>real</mtext></msub><mo>=</mo><msub><mi>\U0001d53c</mi><mi>x</mi></msub>"
        "<mo>[</mo><mi>D</mi><mo>(</mo><msub><mi>p</mi><mi>x</mi></msub><mo>,</mo><mi>K</mi><mo>)</mo><mo>]</mo>"
        "<mo>\u2265</mo><msub><mi>D</mi><mtext>iid</mtext></msub><mo>=</mo><mi>D</mi><mo>(</mo>"
        "<msub><mi>\U0001d53c</mi><mi>x</mi></msub><mo>[</mo><msub><mi>p</mi><mi>x</mi></msub><mo>]</mo>"
        "<mo>,</mo><mi>K</mi><mo>)</mo>")),
    ("Rollouts generated per useful group, and DAPO's rollout amplification:",
     _m(f"<mfrac>{_K}<mrow><mn>1</mn><mo>\u2212</mo><mi>D</mi></mrow></mfrac><mspace width='2em'/>"
        "<mfrac><mn>1</mn><mrow><mn>1</mn><mo>\u2212</mo><mi>D</mi></mrow></mfrac>")),
    ("GRPO's advantage of rollout i (TRL: unbiased std, \u03b5 = 10\u207b\u2074); zero for a unanimous group:",
     _m("<msub><mi>A</mi><mi>i</mi></msub><mo>=</mo><mfrac><mrow><msub><mi>r</mi><mi>i</mi></msub><mo>\u2212</mo>"
        "<mover><mi>r</mi><mo>\u00af</mo></mover></mrow><mrow><mtext>std</mtext><mo>(</mo><mi>r</mi><mo>)</mo>"
        "<mo>+</mo><mi>\u03b5</mi></mrow></mfrac>")),
)


def formulas_pane(heading: str = "") -> pn.pane.HTML:
    """All formulas, each with its caption, under ``heading`` (a fourth-level heading; none when empty)."""
    html = "".join(f"<p style='margin:8px 0 0'>{cap}</p>{math}" for cap, math in FORMULAS)
    top = f"<h2 style='margin:8px 0 4px;font-size:16px'>{escape(heading)}</h2>" if heading else ""  # under the page's h1
    return pn.pane.HTML(f"{top}<div class='formulas' style='font-size:14px'>{html}</div>", sizing_mode="stretch_width")
