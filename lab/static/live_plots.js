/* grpo-lab live plots: the decay curve and the P(useful) curve over the pass-rate histogram (split by outcome),
 * drawn as SVG in the LiveGrid component beside the grid and repainted in the same event as the grid.
 *
 * Prepended by Python (lab/grid/component.py) after kernel.js; this file does no arithmetic of the model:
 * grpoKernel.shareCurve, usefulCurve and histogram compute the plots' data (tests/test_kernel_plots_parity.py
 * proves them equal to sims), and this file only maps numbers to pixels. With rho > 0 (which the kernel does
 * not cover) Python sends the curves (`curves`: decay columns, P(useful) and the pinned view's curve) and the
 * histogram is counted from the view Python painted.
 *
 *   plots = grpoPlots(root)      root holds grpo_lab.grid.plots.plots_html (#gx-decay, #gx-outcome and their keys)
 *   plots.setData(d)             the decoded population (grpoGridView's: p0, u, stride, gain)
 *   plots.draw(view, values, curves)  view: the evaluated view on screen (pass_rate, outcome, kept, summary),
 *                                values: the controls' values {progress, K, filter, band_lo, band_hi, rho},
 *                                curves: Python's curves while rho > 0 (else null)
 *   plots.hover(h)               the hovered prompt ({p, pu}) marked on both panels, or null
 *   plots.pin(pin)               the pinned view's P(useful) curve: {K, useful (Float64Array) or null}, or null
 *   plots.follow(view, server)   repaint after each of the grid view's paints (view.onDraw), in the same event: the
 *                                served lab and the exported page both call this; server() -> {rho, curves} while
 *                                Python paints (the served lab with rho > 0), omitted or {rho: 0, curves: null} else
 *   plots.data                   what is drawn now, for tests: {t, K, decay: {...}, useful, hist, mean, stall}
 *   plots.pinned                 the pinned view's curve drawn now ({K, rho, useful}), or null
 *   reading the curve            pointing at the outcome plot, or the arrow keys on its reading (.gx-curve-read, a
 *                                slider: +-0.01, Page Up / Down +-0.1, Home / End), mark a pass rate p (to 0.01) on
 *                                the curve and write "At pass rate p = ..: P(gradient) = ..% at K = .." from the
 *                                curve drawn (`useful`, point round(400 p)), as the reading's text and aria-valuetext;
 *                                the plot marks the point with a dot and writes its value beside it (.gx-probe-value:
 *                                presentation mode reads the reading out without drawing it, lab.views.layout)
 *
 *   plots.loop(loop)             the stall overlay's trainer loop (grpo_lab.views.decay.loop_data), or null
 *
 * With a trainer loop chosen, its stall overlay ({t, p, first_t, label}) is drawn over the decay curve: the loop's
 * P(stall) at each progress (a dashed line, class gx-stall), the first t where it passes the core's STALL_LEVEL (a
 * dotted vertical line, gx-stall-at, data-t its t) and its words (gx-stall-key: the loop's `stalls` and the first t
 * to two decimals, or its `none`). At rho = 0 it is the kernel's (grpoKernel.loopStall, from the decay curve's
 * shares), computed in the same event as the grid and the decay curve and again only when K, the filter, its band or
 * the loop change; with rho > 0, which the kernel does not cover, it is Python's `curves.stall`
 * (grpo_lab.views.decay.stall_columns), drawn as it comes. One or the other, never both.
 */
(function (root) {
  "use strict";
  var G = root.grpoKernel, TS = [], BINS = 25, POINTS = 401;
  /* the decay curve's progresses, as the core's numpy.linspace(0, 1, 41) (grpo_lab.views.decay.DECAY_POINTS):
     i * (1 / 40) */
  for (var i = 0; i <= 40; i++) TS.push(i * (1 / 40));

  function esc(s) { return String(s).replace(/[&<>"]/g, function (c) { return "&#" + c.charCodeAt(0) + ";"; }); }
  function fmt(v) { return v === 0 || v === 1 ? String(v) : String(v).replace(/^0\./, "."); }

  /* a polyline path through finite points (NaN breaks the line) */
  function linePath(xs, ys, X, Y) {
    var d = "", pen = false;
    for (var i = 0; i < xs.length; i++) {
      if (!isFinite(ys[i])) { pen = false; continue; }
      d += (pen ? "L" : "M") + X(xs[i]).toFixed(1) + " " + Y(ys[i]).toFixed(1);
      pen = true;
    }
    return d;
  }

  function grpoPlots(host) {
    var q = function (sel) { return host.querySelector(sel); };
    var box = q(".gx-plots");
    if (!box) return null;
    var colors = JSON.parse(box.getAttribute("data-colors"));
    var svgDecay = q("#gx-decay"), svgOut = q("#gx-outcome"), pinKey = q("#gx-pin-key");
    var d = null, curveKey = null, decay = null, useful = null, usefulK = null, counts = new Int32Array(BINS * 4);
    var last = null, hovered = null, pinned = null, loop = null, stallKey = null, stallCurve = null;
    var reader = q(".gx-curve-read"), probe = null, outGeom = null;
    var plots = {data: null, pinned: null};

    /* each plot's size in pixels and its font size, measured once and again when the plots' box resizes (a
       measure in every frame would make the browser lay the page out in the middle of a control's event) */
    var sizes = {};
    function size(svg) {
      if (sizes[svg.id]) return sizes[svg.id];
      var w = Math.max(200, Math.round(svg.getBoundingClientRect().width || svg.parentNode.clientWidth || 300));
      var h = Math.round(parseFloat(getComputedStyle(svg).height) || 180);
      var fs = parseFloat(getComputedStyle(svg).fontSize) || 11;
      svg.setAttribute("viewBox", "0 0 " + w + " " + h);
      return (sizes[svg.id] = {w: w, h: h, fs: fs});
    }

    function frame(s, top, bottom, yTicks, yFmt, xTicks, xLabel) {
      var ml = 3.1 * s.fs, mr = 8;
      var X = function (v) { return ml + v * (s.w - ml - mr); };
      var Y = function (v) { return bottom - v * (bottom - top); };
      var out = '<rect x="' + ml + '" y="' + top + '" width="' + (s.w - ml - mr) + '" height="' + (bottom - top) +
                '" fill="none" stroke="#bbb"/>';
      var low = bottom - top < 1.25 * s.fs;  /* a panel shorter than its two end ticks: the "0" tick goes unlabelled */
      yTicks.forEach(function (v) {
        if (!(low && v === 0)) out += '<text x="' + (ml - 4) + '" y="' + (Y(v) + s.fs * 0.35) + '" text-anchor="end">' +
                                      yFmt(v) + "</text>";
        if (v > 0 && v < 1) out += '<line x1="' + ml + '" x2="' + (s.w - mr) + '" y1="' + Y(v) + '" y2="' + Y(v) +
                                    '" stroke="#eee"/>';
      });
      if (xTicks) {
        [0, 0.25, 0.5, 0.75, 1].forEach(function (v) {  /* "0" starts at the origin, clear of the y axis's "0" */
          out += '<text x="' + X(v) + '" y="' + (bottom + s.fs * 1.15) + '" text-anchor="' + (v === 0 ? "start" : "middle") +
                 '">' + fmt(v) + "</text>";
        });
        out += '<text x="' + (ml + (s.w - ml - mr) / 2) + '" y="' + (bottom + s.fs * 2.35) +
               '" text-anchor="middle" fill="#444">' + esc(xLabel) + "</text>";
      }
      return {svg: out, X: X, Y: Y, ml: ml, mr: mr};
    }

    /* the decay plot's curves are redrawn when they or the size change; a new progress moves its marker alone */
    var decayDrawn = {curves: null, stall: null, size: null, X: null, marker: null};
    function drawDecay(values, c, stall) {
      var s = size(svgDecay);
      if (decayDrawn.curves === c && decayDrawn.stall === stall && decayDrawn.size === s) {
        var mx = decayDrawn.X(values.progress).toFixed(1), m = decayDrawn.marker;
        m.setAttribute("x1", mx); m.setAttribute("x2", mx); m.setAttribute("data-t", values.progress);
        return;
      }
      var bottom = s.h - 2.7 * s.fs, f = frame(s, 6, bottom, [0, 0.5, 1], fmt, true, "training progress t");
      var X = f.X, Y = f.Y, out = f.svg;
      out += '<path d="' + linePath(c.t, c.exp, X, Y) + '" fill="none" stroke="' + colors.mixed + '" stroke-width="2.5"/>';
      out += '<path d="' + linePath(c.t, c.exp_f, X, Y) + '" fill="none" stroke="' + colors.all_pass +
             '" stroke-width="2.5" stroke-dasharray="6 4"/>';
      for (var i = 0; i < c.t.length; i += 2) {
        if (isFinite(c.real[i])) out += '<circle cx="' + X(c.t[i]).toFixed(1) + '" cy="' + Y(c.real[i]).toFixed(1) +
                                        '" r="2.6" fill="' + colors.mixed + '"/>';
        if (isFinite(c.real_f[i])) out += '<rect x="' + (X(c.t[i]) - 2.4).toFixed(1) + '" y="' +
                                          (Y(c.real_f[i]) - 2.4).toFixed(1) + '" width="4.8" height="4.8" fill="' +
                                          colors.all_pass + '"/>';
      }
      if (stall) {
        out += '<path class="gx-stall" d="' + linePath(stall.t, stall.p, X, Y) + '" fill="none" stroke="#c0392b"' +
               ' stroke-width="2" stroke-dasharray="3 3"/>';
        if (stall.first_t !== null) {
          var sx = X(stall.first_t).toFixed(1);
          out += '<line class="gx-stall-at" data-t="' + stall.first_t + '" x1="' + sx + '" x2="' + sx + '" y1="6" ' +
                 'y2="' + bottom + '" stroke="#c0392b" stroke-width="1.5" stroke-dasharray="1 3"/>';
        }
        out += '<text class="gx-stall-key" x="' + (f.ml + 4) + '" y="' + (6 + s.fs * 1.1) + '" fill="#c0392b">' +
               esc(stall.label) + "</text>";
      }
      var x = X(values.progress).toFixed(1);
      out += '<line class="gx-marker" data-t="' + values.progress + '" x1="' + x + '" x2="' + x + '" y1="6" y2="' +
             bottom + '" stroke="#222" stroke-width="2"/>';
      svgDecay.innerHTML = out;
      decayDrawn = {curves: c, stall: stall, size: s, X: X, marker: svgDecay.querySelector(".gx-marker")};
    }

    function drawOutcome(view, values) {
      var s = size(svgOut), bottom = s.h - 2.7 * s.fs;
      var gap = Math.max(6, 0.65 * s.fs);  /* the two panels' end ticks ("0" above, the count below) never touch */
      var head = 6 + 1.3 * s.fs;  /* the upper panel's label sits above its frame, where no curve runs */
      /* the upper panel takes 40% of the two panels' height, and never less than 1.25 lines (nor more than half) so
         its end ticks ("1", "0") stand apart in a short plot (present mode's tour at 1024x768) */
      var inner = bottom - head - 2 * gap;
      var split = Math.round(head + Math.max(0.4 * inner, Math.min(1.25 * s.fs, inner / 2)) + gap);
      var top = frame(s, head, split - gap, [0, 1], fmt, false);
      var max = 0;
      for (var b = 0; b < BINS; b++) max = Math.max(max, counts[b * 4] + counts[b * 4 + 1] + counts[b * 4 + 2] + counts[b * 4 + 3]);
      var ymax = Math.max(5, Math.ceil(max / 5) * 5);
      var low = frame(s, split + gap, bottom, [0, 1], function (v) { return String(Math.round(v * ymax)); }, true,
                      "pass rate p now");
      var X = top.X, out = top.svg + low.svg;
      var P = [];
      for (var i = 0; i < POINTS; i++) P.push(i / (POINTS - 1));
      if (pinned && pinned.useful) {
        out += '<path d="' + linePath(P, pinned.useful, X, top.Y) + '" fill="none" stroke="#767676" stroke-width="2"' +
               ' stroke-dasharray="8 3 2 3"/>';
      }
      out += '<path d="' + linePath(P, useful, X, top.Y) + '" fill="none" stroke="' + colors.mixed + '" stroke-width="2.5"/>';
      var names = ["mixed", "all_pass", "all_fail", "filtered"], bw = (X(1) - X(0)) / BINS;
      for (var c = 0; c < 4; c++) {
        var dPath = "", hatch = "";
        for (b = 0; b < BINS; b++) {
          var below = 0;
          for (var j = 0; j < c; j++) below += counts[b * 4 + j];
          var n = counts[b * 4 + c];
          if (!n) continue;
          var y0 = low.Y(below / ymax), y1 = low.Y((below + n) / ymax);
          dPath += "M" + (X(b / BINS) + 1).toFixed(1) + " " + y1.toFixed(1) + "h" + (bw - 2).toFixed(1) + "V" +
                   y0.toFixed(1) + "h" + (-(bw - 2)).toFixed(1) + "Z";
        }
        if (!dPath) continue;
        out += '<path d="' + dPath + '" fill="' + colors[names[c]] + '"/>';
        if (c === 1 || c === 2) out += '<path d="' + dPath + '" fill="url(#gx-hatch-' + c + ')"/>';
      }
      var mean = view.summary.mean_pass_rate;
      if (isFinite(mean)) {
        var mx = X(mean).toFixed(1);
        out += '<line x1="' + mx + '" x2="' + mx + '" y1="' + head + '" y2="' + (split - gap) + '" stroke="#555" stroke-dasharray="4 3"/>';
      }
      outGeom = {ml: top.ml, mr: top.mr, w: s.w, h: s.h};
      if (probe !== null && useful && isFinite(useful[Math.round(probe * (POINTS - 1))])) {
        /* the point read: a dashed line down from the label's row, a dot on the curve, and its value beside the dot
           (on the side away from the nearer edge), so the plot says it too where the reading is not drawn */
        var pu = useful[Math.round(probe * (POINTS - 1))], px = X(probe), py = top.Y(pu), west = probe > 0.5;
        out += '<line class="gx-probe-line" x1="' + px.toFixed(1) + '" x2="' + px.toFixed(1) + '" y1="' + head + '" y2="' +
               (split - gap) + '" stroke="#000" stroke-dasharray="2 2"/><circle class="gx-probe-dot" cx="' +
               px.toFixed(1) + '" cy="' + py.toFixed(1) + '" r="5" fill="' + colors.mixed + '" stroke="#000" stroke-width="2"/>' +
               '<text class="gx-probe-value" x="' + (px + (west ? -10 : 10)).toFixed(1) + '" y="' + (py + 0.35 * s.fs).toFixed(1) +
               '" text-anchor="' + (west ? "end" : "start") + '" font-weight="600" fill="#000" stroke="#fff" ' +
               'stroke-width="4" paint-order="stroke">' + G.percent(pu) + "</text>";
      }
      if (hovered) {
        var hx = X(hovered.p).toFixed(1);
        out += '<line class="gx-hover-line" data-p="' + hovered.p + '" x1="' + hx + '" x2="' + hx + '" y1="' + head + '" y2="' + bottom +
               '" stroke="#000" stroke-width="2"/>';
        if (isFinite(hovered.pu)) out += '<circle class="gx-hover-dot" data-p="' + hovered.p + '" data-pu="' +
                                         hovered.pu + '" cx="' + hx + '" cy="' + top.Y(hovered.pu).toFixed(1) +
                                         '" r="5" fill="#fff" stroke="#000" stroke-width="2"/>';
      }
      out += '<text class="gx-curve-label" x="' + top.ml + '" y="' + (2 + s.fs) + '" fill="#444">P(gradient), K = ' +
             values.K + "</text>";
      svgOut.innerHTML = '<defs><pattern id="gx-hatch-1" width="6" height="6" patternUnits="userSpaceOnUse">' +
        '<path d="M0 6L6 0" stroke="#000" stroke-opacity=".45"/></pattern><pattern id="gx-hatch-2" width="6" ' +
        'height="6" patternUnits="userSpaceOnUse"><path d="M0 6L6 0M0 0L6 6" stroke="#000" stroke-opacity=".45"/>' +
        "</pattern></defs>" + out;
    }

    plots.setData = function (decoded) { d = decoded; curveKey = null; };

    plots.follow = function (view, server) {
      view.onDraw(function (result, K, decoded) {
        if (d !== decoded) plots.setData(decoded);
        var v = view.values, s = server ? server() : null;
        plots.draw(result, {progress: v.progress, K: K, filter: v.filter, band_lo: v.band_lo, band_hi: v.band_hi,
                            rho: s ? s.rho : 0}, s ? s.curves : null);
      });
    };

    plots.draw = function (view, values, curves) {
      if (!view) return;
      last = {view: view, values: values, curves: curves};
      var server = values.rho > 0 && curves;
      var key = [values.K, values.band_lo, values.band_hi, values.rho].join();
      if (server) { decay = curves.decay; useful = curves.useful; curveKey = null; }
      else if (d && values.rho === 0 && key !== curveKey) {
        decay = G.shareCurve(d, {K: values.K, band_lo: values.band_lo, band_hi: values.band_hi}, TS);
        useful = G.usefulCurve(values.K, POINTS, useful);
        curveKey = key;
      }
      if (!decay || !useful) return;  /* rho > 0 and Python's curves not here yet */
      G.histogram(view, BINS, counts);
      var stall = server ? curves.stall || null : kernelStall(values);
      drawDecay(values, decay, stall);
      drawOutcome(view, values);
      plots.data = {t: values.progress, K: values.K, decay: decay, useful: useful, hist: Array.from(counts),
                    mean: view.summary.mean_pass_rate, stall: stall};
      if (probe !== null) writeReading();
    };

    /* the loop's stall overlay at rho = 0 (the kernel's, from the decay curve's shares), computed anew only when
       the decay curve, the filter or the loop changed: the same object otherwise, so a new progress moves the marker
       alone */
    function kernelStall(values) {
      if (!loop || !d || values.rho !== 0) return null;
      if (stallKey && stallKey.decay === decay && stallKey.filter === !!values.filter && stallKey.loop === loop) {
        return stallCurve;
      }
      var c = G.loopStall(d, {K: values.K, filter: !!values.filter, band_lo: values.band_lo, band_hi: values.band_hi},
                          TS, loop, decay);
      stallKey = {decay: decay, filter: !!values.filter, loop: loop};
      stallCurve = {t: c.t, p: c.p, u: c.u, first_t: c.first_t, loop: loop.loop,
                    label: c.first_t !== null ? loop.stalls + G.fixed(c.first_t, 2) : loop.none};
      return stallCurve;
    }

    /* the curve's reading at the probe's pass rate, from the curve drawn */
    function writeReading() {
      if (!reader || probe === null || !useful || !last) return;
      var pu = useful[Math.round(probe * (POINTS - 1))];
      var text = "At pass rate p = " + probe.toFixed(2) + ": P(gradient) = " + G.percent(pu) + " at K = " + last.values.K +
                 (last.values.rho ? ", rho = " + last.values.rho : "");
      if (reader.textContent !== text) {
        reader.textContent = text;
        reader.setAttribute("aria-valuenow", String(probe));
        reader.setAttribute("aria-valuetext", text);
      }
    }
    function readAt(p) {
      if (!last || !useful || !isFinite(p)) return;
      var next = Math.max(0, Math.min(100, Math.round(p * 100))) / 100;  /* to 0.01: a point of the curve (400 = 4 x 100) */
      if (next === probe) return;  /* the pointer moved within the same hundredth: nothing to redraw */
      probe = next;
      writeReading();
      drawOutcome(last.view, last.values);
    }
    if (reader) {
      svgOut.addEventListener("pointermove", function (e) {
        if (!outGeom) return;
        var r = svgOut.getBoundingClientRect(), x = (e.clientX - r.left) * outGeom.w / r.width;
        var p = (x - outGeom.ml) / (outGeom.w - outGeom.ml - outGeom.mr);
        if (p >= 0 && p <= 1) readAt(p);
      });
      svgOut.addEventListener("pointerleave", function () {
        if (reader.getRootNode().activeElement === reader || probe === null) return;  /* the reading stays; the mark goes */
        probe = null;
        if (last) drawOutcome(last.view, last.values);
      });
      reader.addEventListener("focus", function () {
        readAt(probe !== null ? probe : (last && isFinite(last.view.summary.mean_pass_rate) ? last.view.summary.mean_pass_rate : 0.5));
      });
      reader.addEventListener("blur", function () { probe = null; if (last) drawOutcome(last.view, last.values); });
      reader.addEventListener("keydown", function (e) {
        var p = probe !== null ? probe : 0.5, step = {ArrowLeft: -0.01, ArrowDown: -0.01, ArrowRight: 0.01, ArrowUp: 0.01,
                                                      PageDown: -0.1, PageUp: 0.1}[e.key];
        if (step !== undefined) p += step;
        else if (e.key === "Home") p = 0;
        else if (e.key === "End") p = 1;
        else return;
        e.preventDefault();
        readAt(p);
      });
    }

    /* the last view again: resized, or with Python's new curves (`curves`; undefined: the same) */
    plots.redraw = function (curves) {
      if (last) plots.draw(last.view, last.values, curves === undefined ? last.curves : curves);
    };

    plots.loop = function (l) {
      loop = l || null;
      plots.redraw();
    };

    plots.hover = function (h) {
      hovered = h;
      if (last) drawOutcome(last.view, last.values);
    };

    plots.pin = function (pin) {
      pinned = plots.pinned = pin;
      if (pinKey) {
        pinKey.hidden = !pin;
        if (pin) pinKey.lastChild.textContent = "pinned view: K = " + pin.K + (pin.rho ? ", rho = " + pin.rho : "");
      }
      if (pin && !pin.useful && !pin.rho) pin.useful = G.usefulCurve(pin.K, POINTS);
      if (last) drawOutcome(last.view, last.values);
    };

    if (typeof ResizeObserver !== "undefined") {
      var width = 0, ro = new ResizeObserver(function () {
        var w = Math.round(box.getBoundingClientRect().width), h = Math.round(box.getBoundingClientRect().height);
        if (w + "x" + h !== width) { width = w + "x" + h; sizes = {}; plots.redraw(); }
      });
      ro.observe(box);
    }
    return plots;
  }

  root.grpoPlots = grpoPlots;
})(typeof window !== "undefined" ? window : globalThis);
