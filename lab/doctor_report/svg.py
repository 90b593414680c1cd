r"""Inline SVG plots for the doctor's page: no script, every label escaped."""

from __future__ import annotations

import html

import numpy as np

__all__ = ["svg", "COLORS", "nice_ticks", "predictive_band"]

_W, _H, _PAD = 640, 260, 44  #: plot size and margin in px
LEGEND_PX = 12  #: the in-plot legend's type size
LEGEND_INK = "#222"  #: the legend's text: 15.9:1 on the plot's white (the series' own colours were 1.9-3.3:1)
COLORS = {"obs": "#444", "pass": "#2a7ab0", "fail": "#c0392b", "fit": "#e67e22", "proj": "#8e44ad",
          "back": "#16a085", "thr": "#999"}


def _scale(v, lo, hi, a, b):
    return a + (np.asarray(v, float) - lo) / ((hi - lo) or 1.0) * (b - a)


def nice_ticks(lo: float, hi: float, n: int = 5) -> np.ndarray:
    """Ticks at round numbers (1, 2 or 5 times a power of ten apart) inside [lo, hi], about ``n`` of them."""
    span = hi - lo
    if not np.isfinite(span) or span <= 0:
        return np.array([lo])
    raw = span / max(n - 1, 1)
    mag = 10.0 ** np.floor(np.log10(raw))
    step = mag * min((m for m in (1, 2, 5, 10) if m * mag >= raw), default=10)
    return np.arange(np.ceil(lo / step) * step, hi + step * 1e-9, step)


def svg(title: str, series: list[dict], xlim, ylim=(0.0, 1.0), xlabel="step", ylabel="share",
         hline=None, xlog2=False) -> str:
    """An inline SVG plot: ``series`` items have name, x, y, color, kind ('line', 'points' or 'band': the area
    between lo and hi, y unused but for its finite points), and optionally lo/hi (vertical interval bars)."""
    x0, x1 = xlim
    tx = (lambda v: np.log2(v)) if xlog2 else (lambda v: np.asarray(v, float))
    X = lambda v: _scale(tx(v), tx(x0), tx(x1), _PAD, _W - 10)  # noqa: E731
    Y = lambda v: _scale(v, ylim[0], ylim[1], _H - 30, 10)  # noqa: E731
    out = [f'<figure><figcaption>{html.escape(title)}</figcaption>'
           f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" '
           f'role="img" aria-label="{html.escape(title)}">',
           f'<rect x="{_PAD}" y="10" width="{_W - 10 - _PAD}" height="{_H - 40}" fill="#fff" stroke="#ccc"/>']
    for yv in nice_ticks(*ylim, n=6):
        out.append(f'<text x="{_PAD - 4}" y="{Y(yv) + 4:.1f}" text-anchor="end" font-size="10">{yv + 0.0:.4g}</text>')
    ticks = [k for k in (4, 8, 16, 32, 64) if x0 <= k <= x1] if xlog2 else nice_ticks(x0, x1)
    for xv in ticks:
        out.append(f'<text x="{X(xv):.1f}" y="{_H - 16}" text-anchor="middle" font-size="10">{xv + 0.0:.4g}</text>')
    out.append(f'<text x="{(_W + _PAD) / 2}" y="{_H - 2}" text-anchor="middle" font-size="11">'
               f'{html.escape(xlabel)}</text>')
    out.append(f'<text x="10" y="{_H / 2}" transform="rotate(-90 10 {_H / 2})" text-anchor="middle" '
               f'font-size="11">{html.escape(ylabel)}</text>')
    if hline is not None:
        out.append(f'<line x1="{_PAD}" x2="{_W - 10}" y1="{Y(hline):.1f}" y2="{Y(hline):.1f}" '
                   f'stroke="{COLORS["thr"]}" stroke-dasharray="4 3"/>')
    legend_x, legend_y = _PAD + 8, 26
    for s in series:
        x, y = np.asarray(s["x"], float), np.asarray(s["y"], float)
        ok = np.isfinite(x) & np.isfinite(y)
        color = s["color"]
        if s.get("kind") == "band":  # a shaded band between lo and hi
            lo, hi = np.asarray(s["lo"], float)[ok], np.asarray(s["hi"], float)[ok]
            pts = " ".join(f"{X(a):.1f},{Y(b):.1f}" for a, b in zip(np.concatenate([x[ok], x[ok][::-1]]),
                                                                   np.concatenate([hi, lo[::-1]])))
            out.append(f'<polygon points="{pts}" fill="{color}" fill-opacity="0.2" stroke="none"/>')
            if s.get("name"):
                out.append(f'<text x="{legend_x}" y="24" font-size="10" fill="{color}">{html.escape(s["name"])}</text>')
                legend_x += 7 * len(s["name"]) + 18
            continue
        if "lo" in s:
            for xi, lo, hi in zip(x[ok], np.asarray(s["lo"])[ok], np.asarray(s["hi"])[ok]):
                out.append(f'<line x1="{X(xi):.1f}" x2="{X(xi):.1f}" y1="{Y(lo):.1f}" y2="{Y(hi):.1f}" '
                           f'stroke="{color}" stroke-width="1"/>')
        if s.get("kind") == "points":
            out.extend(f'<circle cx="{X(a):.1f}" cy="{Y(b):.1f}" r="2.2" fill="{color}"/>' for a, b in zip(x[ok], y[ok]))
        else:
            pts = " ".join(f"{X(a):.1f},{Y(b):.1f}" for a, b in zip(x[ok], y[ok]))
            dash = ' stroke-dasharray="5 3"' if s.get("dashed") else ""
            out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.6"{dash}/>')
        if s["name"]:  # a swatch in the series' colour and its name in dark ink; a second row when the first is full
            width = 22 + 7 * len(s["name"])
            if legend_x + width > _W - 14 and legend_x > _PAD + 8:
                legend_x, legend_y = _PAD + 8, legend_y + LEGEND_PX + 4
            swatch = (f'<circle cx="{legend_x + 7}" cy="{legend_y - 4}" r="3.5" fill="{color}"/>'
                      if s.get("kind") == "points" else
                      f'<line x1="{legend_x}" x2="{legend_x + 14}" y1="{legend_y - 4}" y2="{legend_y - 4}" stroke="{color}" '
                      f'stroke-width="2.5"{dash}/>')
            out.append(f'{swatch}<text x="{legend_x + 18}" y="{legend_y}" font-size="{LEGEND_PX}" fill="{LEGEND_INK}">'
                       f'{html.escape(s["name"])}</text>')
            legend_x += width + 14
    out.append("</svg></figure>")
    return "".join(out)


def predictive_band(projection: dict) -> list[dict]:
    """The projection's predictive band (``projection['predictive']``) as a shaded ``band`` series, named with its
    level; none where the projection has no band."""
    pr = projection.get("predictive")
    if not pr:
        return []
    return [{"name": f"{100 * pr['level']:.0f}% predictive band", "x": projection["step"], "y": pr["lo"],
             "lo": pr["lo"], "hi": pr["hi"], "kind": "band", "color": COLORS["proj"]}]
