"""Pin and compare: a pinned view as the URL writes it, and the markup of its ghost.

A pin freezes the grid's controls (training progress, K, the filter and its band, rho) of the view on
screen; the population stays the page's (``seed``, ``n_prompts``, ``a``, ``b``), so the pinned view is a
pure function of the URL like every other view. The URL carries it as one value, ``pin``:

    K8_t0.68               K = 8 at t = 0.68, no filter, rho = 0
    K8_t1.0_lo0.2_hi0.8    the same with the filter on, band [0.2, 0.8]
    K8_t0.5_rho0.3         correlated rollouts

Fields are ``_``-separated, each a letter code and a number (floats as Python's ``repr``, so the value
round-trips exactly); ``lo`` and ``hi`` come together or not at all. :func:`pin_text` writes it,
:func:`parse_pin` splits it into raw field values (``grpo_lab.state`` cleans them against the controls'
bounds), :func:`pin_values` reads a clean one back as control values. :func:`pin_html` is the Pin button
and the ghost's box, which ``lab/static/gridview.js`` (the ghost's cells) and ``live_grid.js`` (the
button) fill.
"""

from __future__ import annotations

import re

import param

from .spec import DEFAULT_BAND, GridControls, ordered_band

__all__ = ["PIN_FIELDS", "pin_text", "parse_pin", "pin_values", "pin_label", "pin_html"]

#: the pin's field codes and the control each one holds, in the order they are written (a new numeric control of
#: the grid needs only its code here: its type and default are its parameter's)
PIN_FIELDS = {"K": "K", "t": "progress", "lo": "band_lo", "hi": "band_hi", "rho": "rho"}
_REQUIRED = ("K", "progress")  #: always written; the band's ends only with the filter on; any other only off its default
_BAND = ("band_lo", "band_hi")
_FIELD = re.compile(rf"^({'|'.join(sorted(PIN_FIELDS, key=len, reverse=True))})([0-9eE.+-]+)$")


def _number(name: str, value):
    """A control's value as its parameter's type (an Integer's as int, a Number's as float)."""
    return int(value) if isinstance(GridControls.param[name], param.Integer) else float(value)


def pin_text(values: dict) -> str:
    """The ``pin`` URL value of control values {progress, K, filter, band_lo, band_hi, rho}."""
    clean = {name: _number(name, values.get(name, GridControls.param[name].default)) for name in PIN_FIELDS.values()}
    if values.get("filter"):
        clean["band_lo"], clean["band_hi"] = ordered_band(clean["band_lo"], clean["band_hi"])
    written = [(code, name) for code, name in PIN_FIELDS.items()
               if name in _REQUIRED or (values.get("filter") if name in _BAND else
                                        clean[name] != GridControls.param[name].default)]
    return "_".join(f"{code}{clean[name]!r}" for code, name in written)


def parse_pin(text: str) -> dict[str, str]:
    """The raw values of a ``pin`` URL value, by control name (strings, not yet checked against any bound).

    Raises ValueError when it is not a pin: an unknown or repeated field, K or t missing, or only one
    end of the band.
    """
    out: dict[str, str] = {}
    for part in str(text).strip().split("_"):
        m = _FIELD.match(part)
        if not m or PIN_FIELDS[m.group(1)] in out:
            raise ValueError(f"not a pin field: {part!r}")
        out[PIN_FIELDS[m.group(1)]] = m.group(2)
    if "K" not in out or "progress" not in out or ("band_lo" in out) != ("band_hi" in out):
        raise ValueError("a pin needs K and t, and both ends of a band or neither")
    return out


def pin_values(text: str) -> dict:
    """Control values {progress, K, filter, band_lo, band_hi, rho} of a clean pin (one :func:`pin_text` wrote)."""
    raw = parse_pin(text)
    out = {name: _number(name, raw[name]) if name in raw else GridControls.param[name].default
           for name in PIN_FIELDS.values()}
    if "band_lo" not in raw:
        out["band_lo"], out["band_hi"] = DEFAULT_BAND
    return {**out, "filter": "band_lo" in raw}


def pin_label(values: dict) -> str:
    """A view's controls in words, as the ghost and the comparison name it: "K = 8, t = 0.68, filter 0.2-0.8"."""
    words = [f"K = {int(values['K'])}", f"t = {float(values['progress']):g}"]
    if values.get("filter"):
        words.append(f"filter {float(values['band_lo']):g}\u2013{float(values['band_hi']):g}")
    if float(values.get("rho", 0.0)):
        words.append(f"rho = {float(values['rho']):g}")
    return ", ".join(words)


def pin_html() -> str:
    """The Pin button and the ghost's box (hidden until a view is pinned): the pinned grid's canvas and the
    comparison, which Python fills (``grpo_lab.views.compare``)."""
    return """<div class="gx-row gx-pin-row">
  <button type="button" class="gx-button gx-pin" id="gx-pin">Pin this view</button>
  <span class="gx-pin-hint">then change K or t: the pinned view stays beside the grid, compared at the same
  rollout budget</span>
</div>
<section class="gx-ghost" id="gx-ghost" aria-labelledby="gx-ghost-title" hidden>
  <h2 class="gx-ghost-title" id="gx-ghost-title">Pinned view</h2>
  <div class="gx-ghost-body">
    <div class="gx-ghost-grid"><canvas class="gx-ghost-canvas" width="1" height="1" role="img"
      aria-label="The pinned view's prompts"></canvas></div>
    <div class="gx-compare" id="gx-compare"></div>
  </div>
</section>"""
