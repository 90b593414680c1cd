"""The formulas beside the simulation, typeset as MathML (rendered by the browser itself: no CDN, no font).

Panel's LaTeX pane loads KaTeX or MathJax from a CDN, so it is not used.
"""

from __future__ import annotations

from html import escape

import panel as pn

from grpo_lab.sims.formatting import fixed
from grpo_lab.sims.outcomes import betabinom_scale

__all__ = ["formulas_pane", "FORMULAS", "share_formula_html"]


def _m(body: str) -> str:
    return f'<math display="block">{body}</math>'


_P = "<mi>p</mi>"
_K = "<mi>K</mi>"
_POW_P = f"<msup>{_P}{_K}</msup>"
_POW_Q = f"<msup><mrow><mo>(</mo><mn>1</mn><mo>\u2212</mo>{_P}<mo>)</mo></mrow>{_K}</msup>"

#: the product over the group's rollouts i = 0 .. K - 1 (the beta-binomial's P(all pass) and P(all fail))
_PROD = ("<munderover><mo>\u220f</mo><mrow><mi>i</mi><mo>=</mo><mn>0</mn></mrow><mrow><mi>K</mi><mo>\u2212</mo>"
         "<mn>1</mn></mrow></munderover>")

#: (caption, MathML) pairs, in reading order
FORMULAS = (
    ("A group of K rollouts is unanimous (no gradient) with probability",
     _m(f"<mi>D</mi><mo>(</mo>{_P}<mo>,</mo>{_K}<mo>)</mo><mo>=</mo>{_POW_P}<mo>+</mo>{_POW_Q}")),
    ("and carries a gradient with probability",
     _m(f"<mi>P</mi><mo>(</mo><mtext>useful</mtext><mo>)</mo><mo>=</mo><mn>1</mn><mo>\u2212</mo>{_POW_P}"
        f"<mo>\u2212</mo>{_POW_Q}")),
    ("With correlated rollouts (rho > 0, the lab's rho control) the passes in a group are beta-binomial, with "
     "s = 1/\u03c1 \u2212 1 (\u03c1 = 0 gives p<sup>K</sup> and (1 \u2212 p)<sup>K</sup> again):",
     _m("<mi>P</mi><mo>(</mo><mtext>all pass</mtext><mo>)</mo><mo>=</mo>" + _PROD
        + "<mfrac><mrow><mi>p</mi><mi>s</mi><mo>+</mo><mi>i</mi></mrow><mrow><mi>s</mi><mo>+</mo><mi>i</mi></mrow></mfrac>")
     + _m("<mi>P</mi><mo>(</mo><mtext>all fail</mtext><mo>)</mo><mo>=</mo>" + _PROD
          + "<mfrac><mrow><mo>(</mo><mn>1</mn><mo>\u2212</mo><mi>p</mi><mo>)</mo><mi>s</mi><mo>+</mo><mi>i</mi></mrow>"
          "<mrow><mi>s</mi><mo>+</mo><mi>i</mi></mrow></mfrac>")),
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


def share_formula_html(rho: float) -> str:
    """The share of groups with a gradient as one line of HTML, for the rollouts' correlation ``rho``: the
    independent form 1 - p^K - (1 - p)^K at rho = 0, else the beta-binomial products with s = 1/rho - 1
    (``sims.outcomes``: the formula and ``betabinom_scale``; this only writes them)."""
    if not rho:
        return ("share = mean over the prompts of 1 \u2212 p<sup>K</sup> \u2212 (1 \u2212 p)<sup>K</sup> "
                "(independent rollouts, rho = 0)")
    s = float(betabinom_scale(rho))
    prod = "\u220f<sub><i>i</i> = 0..K\u22121</sub> "
    return (f"share = mean over the prompts of 1 \u2212 P(all pass) \u2212 P(all fail), with correlated rollouts "
            f"(rho = {rho:g}, beta-binomial): P(all pass) = {prod}(p s + i)/(s + i) and P(all fail) = {prod}"
            f"((1 \u2212 p) s + i)/(s + i), s = 1/rho \u2212 1 = {fixed(s, 2)} (at rho = 0 these are p<sup>K</sup> "
            "and (1 \u2212 p)<sup>K</sup>)")


def formulas_pane(heading: str = "") -> pn.pane.HTML:
    """All formulas, each with its caption, under ``heading`` (a fourth-level heading; none when empty)."""
    html = "".join(f"<p style='margin:8px 0 0'>{cap}</p>{math}" for cap, math in FORMULAS)
    top = f"<h2 style='margin:8px 0 4px;font-size:16px'>{escape(heading)}</h2>" if heading else ""  # under the page's h1
    return pn.pane.HTML(f"{top}<div class='formulas' style='font-size:14px'>{html}</div>", sizing_mode="stretch_width")
