/* grpo-lab grid view: one prompt grid with its controls, readouts and hover tip, in the browser.
 *
 * Shared by the served lab (the LiveGrid component, lab/grid/component.py) and the exported page
 * (lab/static/export_page.js). The markup comes from Python (lab/grid/markup.py), and with it the
 * control spec (lab/grid/spec.py: names, bounds, steps, digits; the controls' data-spec): no bound
 * or default is typed here. This file does no arithmetic: grpoKernel.evaluate computes a view,
 * grpoKernel.fill writes the readouts' values, grpoCells.canvas paints the cells, and hover looks
 * advantages up in Python's table.
 *
 *   view = grpoGridView(root)   root: the element (or shadow root) holding the markup
 *   view.spec                   the control spec (grpo_lab.grid.spec.control_spec)
 *   view.names                  the names of the controls' values, in order (view.spec.names)
 *   view.setData(data)          a population as grpo_lab.grid.markup.grid_data packs it: p0 and u
 *                               (base64), stride, gain, x, y (base64 int32), geometry, tiles (base64), template,
 *                               filtered_code, words, filtered_label
 *   view.advantages             the hover's advantage table (grpo_lab.grid.hover.hover_advantages: base64
 *                               columns, and `why`: the line a unanimous cell's tip adds), or null
 *   view.values                 the controls' values {progress, K, filter, band_lo, band_hi}: the
 *                               values painted, exactly (an input shows the nearest step)
 *   view.set(values)            change some values (the inputs follow; no input event)
 *   view.paint()                evaluate the values with the kernel and show the result
 *   view.show(server)           show a view computed by Python instead (grpo_lab.grid.component.server_view:
 *                               K, base64 outcome, kept, p_now, k, and the summary; rho > 0, which
 *                               the kernel does not cover)
 *   view.onInput(fn)            fn(changed) after a reader moved a control; changed: {name: value}
 *   view.onDraw(fn)             fn(result, K, d) after each paint or show: the evaluated view on screen (pass_rate,
 *                               outcome, kept, summary), its K and the decoded population (the served lab's
 *                               plots, lab/static/live_plots.js, repaint from it in the same event)
 *   keyboard                    the canvas takes the focus: the arrow keys (Home / End, Page Up / Page Down) move a
 *                               cursor from cell to cell, whose tip is shown and read out (#gx-cell-said, a polite
 *                               live region); a click puts the cursor on the clicked cell; Escape hides the tip
 *   view.onHover(fn)            fn(h) when the hovered cell or its view changes: h = {prompt, p (pass rate now),
 *                               pu (its expected P(useful) at K, NaN when rho > 0), K}, or null when the
 *                               pointer leaves; the served lab moves the plots' markers with it
 *   view.ghost(server)          paint a pinned view (server_view's form; null hides it) on the ghost's canvas
 *                               (.gx-ghost-canvas, in the served lab's markup only), with the same cells
 *   view.play(on, seconds, hooks)  play (or pause) training progress in the browser: from here to its
 *                               maximum, a whole sweep taking `seconds`, on the slider's step, one paint
 *                               per animation frame (from the maximum it restarts at the minimum);
 *                               hooks.paint() instead of view.paint() for each frame (the served lab with
 *                               rho > 0: Python paints), hooks.frame() after each paint, hooks.stop() when
 *                               it stops (at the end, paused, or because a reader grabbed the progress slider)
 *   view.playing()              whether it plays
 *
 * Frames mode (the Replay tab, lab/replay/grid.py): a sequence of recorded frames instead of the kernel.
 *
 *   f = grpoGridView.frames(root)  root holds grpo_lab.grid.markup.frames_html: a step slider (#gx-step), a
 *                               Play button (#gx-play) and one block per run (.gx-run[data-run=a|b]) with its
 *                               caption, readouts, canvas and tip
 *   f.setFrames(frames)         the runs on one step axis (grpo_lab.replay.grid.frames_data): steps, and per
 *                               run its sampled cells per step (sparse: offsets per step, then per cell its
 *                               prompt, code, k and K; uint8 counts, or int16 when counts = "i2"; every
 *                               other cell is "not sampled"), pass rates per evaluation,
 *                               readout series per step and the row each axis position shows (-1: before it)
 *   f.setRates(on)              colour cells by pass rate at the nearest evaluation instead of the outcome
 *   f.go(pos)                   show axis position pos (the slider follows; no input event)
 *   f.pos                       the position shown
 *   f.onInput(fn)               fn(pos) after a reader moved the slider (or play advanced it)
 *   f.play(on, ms, hooks)       play (or pause) in the browser, one position per `ms` (the same loop as
 *                               view.play: one requestAnimationFrame loop, playLoop); from the last
 *                               position it restarts at the first; hooks.stop() when it stops
 */
(function (root) {
  "use strict";
  var G = root.grpoKernel, cells = root.grpoCells;

  function bytes(b64) {
    var s = atob(b64), buf = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) buf[i] = s.charCodeAt(i);
    return buf.buffer;
  }

  /* base64 arrays to typed arrays, and the cell -> prompt lookup of the hover; kept on the object */
  function decode(data) {
    if (data.__decoded) return data.__decoded;
    var g = data.geometry, x = new Int32Array(bytes(data.x)), y = new Int32Array(bytes(data.y)), n = x.length;
    var slot = new Int32Array(g.cols * g.rows).fill(-1);
    for (var p = 0; p < n; p++) slot[y[p] * g.cols + x[p]] = p;
    data.__decoded = {p0: new Float64Array(bytes(data.p0)), u: new Float32Array(bytes(data.u)),
                      stride: data.stride, gain: data.gain, x: x, y: y, slot: slot,
                      tiles: new Uint32Array(bytes(data.tiles))};
    return data.__decoded;
  }

  /* the prompt under the pointer at `at` (client coordinates) on a grid canvas, or -1; row 0 at the bottom */
  function cellAt(canvas, g, slot, at) {
    var box = canvas.getBoundingClientRect();
    var cx = Math.floor((at.x - box.left) / box.width * g.cols);
    var cy = g.rows - 1 - Math.floor((at.y - box.top) / box.height * g.rows);
    return (cx >= 0 && cx < g.cols && cy >= 0 && cy < g.rows) ? slot[cy * g.cols + cx] : -1;
  }

  /* the hover's marks on a grid canvas: an outline around the hovered cell and, in the tip, one dot per
     rollout (filled: passed); both created here, so every host of the view has them */
  function hoverMarks(canvas, tipEl) {
    var outline = document.createElement("div");
    outline.className = "gx-outline";
    outline.hidden = true;
    canvas.parentNode.appendChild(outline);
    var dots = document.createElement("span");
    dots.className = "gx-dots";
    dots.setAttribute("aria-hidden", "true");  /* the tip says "successes k of K" in words */
    return {outline: outline, dots: dots, tip: tipEl, canvas: canvas, key: null};
  }

  /* outline cell (x, y) (row 0 at the bottom) of a grid with geometry g */
  function outlineCell(marks, g, x, y) {
    var box = marks.canvas.getBoundingClientRect(), host = marks.canvas.parentNode.getBoundingClientRect();
    var w = box.width / g.cols, h = box.height / g.rows, o = marks.outline.style;
    o.left = (box.left - host.left + x * w) + "px";
    o.top = (box.top - host.top + (g.rows - 1 - y) * h) + "px";
    o.width = w + "px";
    o.height = h + "px";
    marks.outline.hidden = false;
  }

  /* the tip's row of rollout dots: pass[i] = 1 for a passed rollout (rebuilt only when it changes) */
  function rolloutDots(marks, pass, K, key) {
    if (marks.key !== key) {
      marks.key = key;
      var html = "";
      for (var i = 0; i < K; i++) html += pass[i] ? '<i class="gx-dot gx-pass"></i>' : '<i class="gx-dot"></i>';
      marks.dots.innerHTML = html;
    }
    return marks.dots;
  }

  function hideMarks(marks) {
    marks.tip.hidden = true;
    marks.tip.__at = null;
    marks.outline.hidden = true;
  }

  /* show `lines` in the tip beside the pointer, kept inside the grid's box */
  function placeTip(tipEl, canvas, at, lines, extra) {
    tipEl.textContent = lines.join(" \u00b7 ");
    if (extra) tipEl.appendChild(extra);
    tipEl.__at = at;
    tipEl.hidden = false;
    var hostBox = canvas.parentNode.getBoundingClientRect(), w = tipEl.offsetWidth;
    tipEl.style.left = Math.max(0, Math.min(at.x - hostBox.left + 12, hostBox.width - w)) + "px";
    tipEl.style.top = (at.y - hostBox.top + 14) + "px";
  }

  /* a filled readout template into box: the whole table the first time (holder.slots null), then only
     the texts of its data-v spans, so the browser restyles nothing */
  function writeReadouts(box, holder, filled) {
    if (!holder.slots) {
      box.innerHTML = filled.html;
      holder.slots = Array.prototype.map.call(box.querySelectorAll("[data-v]"), function (s) {
        return s.firstChild || s.appendChild(document.createTextNode(""));
      });
      return false;
    }
    var slots = holder.slots, values = filled.values;
    for (var i = 0; i < slots.length; i++) if (slots[i].data !== values[i]) slots[i].data = values[i];
    return true;
  }

  /* The one play loop of every mode: a requestAnimationFrame loop calling step(ms since play began) once per
     frame until it returns false; each mode supplies its step (the grid: training progress over a sweep's
     seconds; frames: one position per ms). start(step, stop) replaces a loop already running; stop() ends it;
     the `stop` callback runs once whenever it ends, at the end or stopped. */
  function playLoop() {
    var raf = 0, onStop = null;
    function end() {
      var fn = onStop;
      raf = 0;
      onStop = null;
      if (fn) fn();
    }
    var loop = {
      running: function () { return raf !== 0; },
      stop: function () { if (raf) { cancelAnimationFrame(raf); end(); } },
      start: function (step, stop) {
        loop.stop();
        onStop = stop || null;
        var begin = null;
        function frame(now) {
          if (begin === null) begin = now;
          if (step(now - begin) === false) { end(); return; }
          raf = requestAnimationFrame(frame);
        }
        raf = requestAnimationFrame(frame);
      }
    };
    return loop;
  }

  function grpoGridView(host) {
    var q = function (sel) { return host.querySelector(sel); };
    var spec = JSON.parse(q(".gx-controls").getAttribute("data-spec")), NAMES = spec.names, C = spec.controls;
    var el = {band: q(".gx-band"), grid: q("#gx-grid"), tip: q("#gx-tip"), readouts: q("#gx-readouts")};
    NAMES.forEach(function (name) { el[name] = q("#gx-" + name.replace("_", "-")); });
    var out = {progress: q("#gx-progress-out"), K: q("#gx-K-out"), band: q("#gx-band-out")};
    var view = {values: {}, advantages: null, spec: spec, names: NAMES};
    var data = null, d = null, shown = null, code = null, held = {slots: null}, listeners = [], hoverFns = [];
    var marks = hoverMarks(el.grid, el.tip), hovered = null, pass = null, drawFns = [];

    function setText(node, text) { if (node && node.textContent !== text) node.textContent = text; }

    function labels() {
      var v = view.values;
      setText(out.progress, v.progress.toFixed(C.progress.digits));
      setText(out.K, String(v.K));
      setText(out.band, v.band_lo.toFixed(C.band_lo.digits) + " \u2013 " + v.band_hi.toFixed(C.band_hi.digits));
      if (el.band) el.band.classList.toggle("gx-off", !v.filter);
    }

    view.set = function (values) {
      for (var i = 0; i < NAMES.length; i++) {
        var name = NAMES[i];
        if (!(name in values)) continue;
        var bool = C[name].kind === "boolean", v = bool ? !!values[name] : Number(values[name]);
        view.values[name] = v;
        if (bool) el[name].checked = v;
        else if (Number(el[name].value) !== v) el[name].value = String(v);
      }
      labels();
    };

    function readouts(summary) {
      if (writeReadouts(el.readouts, held, G.fill(data.template, summary))) fix(el.readouts);
    }

    /* once shown, a box whose text changes while a control moves gets a fixed height and full
       containment, so rewriting its values lays out nothing outside it */
    function fix(box) {
      if (box.__grpoFixed) return;
      var h = box.offsetHeight;
      if (!h) return;  /* not displayed yet: try on the next paint */
      box.style.height = h + "px";
      box.classList.add("gx-fixed");
      box.__grpoFixed = true;
    }

    function unfix(box) {
      box.__grpoFixed = false;
      box.classList.remove("gx-fixed");
      box.style.height = "";
    }

    function draw(result, K) {
      var n = d.p0.length, oc = result.outcome, kept = result.kept;
      if (!code || code.length !== n) code = new Int8Array(n);
      for (var x = 0; x < n; x++) code[x] = kept[x] ? oc[x] : data.filtered_code;
      shown = {result: result, K: K};
      cells.canvas(el.grid, data.geometry, code, d.x, d.y, d.tiles);
      readouts(result.summary);
      labels();
      if (!el.tip.hidden) tip(el.tip.__at);
      for (var i = 0; i < drawFns.length; i++) drawFns[i](result, K, d);
    }

    view.setData = function (next) {
      if (data && next.template !== data.template) {
        held.slots = null;
        unfix(el.readouts);
      }
      data = next;
      d = decode(next);
      shown = null;
    };

    var result = {};
    view.paint = function () {
      if (!d) return;
      var v = view.values;
      result = G.evaluate(d, {progress: v.progress, K: v.K, filter: v.filter, band_lo: v.band_lo,
                              band_hi: v.band_hi}, result);
      draw(result, v.K);
    };

    view.show = function (server) {
      if (!d) return;
      var r = {outcome: new Int8Array(bytes(server.outcome)), kept: new Uint8Array(bytes(server.kept)),
               pass_rate: new Float64Array(bytes(server.p_now)), successes: new Int32Array(bytes(server.k)),
               summary: {}, rho: server.rho || 0};
      r.shared_rate = server.q ? new Float64Array(bytes(server.q)) : r.pass_rate;  /* rollouts pass iff u < q */
      if (r.outcome.length !== d.p0.length) return;  /* a view of another population */
      for (var key in server.summary) r.summary[key] = server.summary[key] === null ? NaN : server.summary[key];
      draw(r, server.K);
    };

    view.onInput = function (fn) { listeners.push(fn); };
    view.onHover = function (fn) { hoverFns.push(fn); };
    view.onDraw = function (fn) { drawFns.push(fn); };

    var ghostCanvas = q(".gx-ghost-canvas"), ghostCode = null;
    view.ghost = function (server) {
      var box = q(".gx-ghost");
      if (!box) return;
      var oc = server && d ? new Int8Array(bytes(server.outcome)) : null;
      if (!oc || oc.length !== d.p0.length) { box.hidden = true; return; }  /* none, or another population's */
      var kept = new Uint8Array(bytes(server.kept)), n = oc.length;
      if (!ghostCode || ghostCode.length !== n) ghostCode = new Int8Array(n);
      for (var x = 0; x < n; x++) ghostCode[x] = kept[x] ? oc[x] : data.filtered_code;
      box.hidden = false;
      cells.canvas(ghostCanvas, data.geometry, ghostCode, d.x, d.y, d.tiles);
    };

    var loop = playLoop();
    view.playing = loop.running;
    function stopPlay() { loop.stop(); }

    view.play = function (on, seconds, playHooks) {
      loop.stop();
      if (!on) return;
      var hooks = playHooks || {}, c = C.progress, paint = hooks.paint || view.paint;
      if (view.values.progress >= c.max) { view.set({progress: c.min}); paint(); }
      var t0 = view.values.progress;
      loop.start(function (elapsed) {  /* the grid's step: progress over the sweep, on the slider's step */
        var t = Math.min(c.max, t0 + (c.max - c.min) * elapsed / 1000 / seconds);
        view.set({progress: Number((Math.round(t / c.step) * c.step).toFixed(c.digits))});
        paint();
        if (hooks.frame) hooks.frame();
        return t < c.max;
      }, hooks.stop);
    };

    function moved(name, value) {
      if (name === "progress") stopPlay();  /* grabbing the slider pauses */
      var changed = {};
      changed[name] = value;
      /* the band's ends never cross: moving one past the other carries the other along */
      if (name === "band_lo" && value > view.values.band_hi) changed.band_hi = value;
      if (name === "band_hi" && value < view.values.band_lo) changed.band_lo = value;
      view.set(changed);
      for (var i = 0; i < listeners.length; i++) listeners[i](changed);
    }

    NAMES.forEach(function (name) {
      var input = el[name];
      if (C[name].kind === "boolean") input.addEventListener("change", function () { moved(name, input.checked); });
      else input.addEventListener("input", function () { moved(name, Number(input.value)); });
    });

    /* the hover's table, decoded from base64 once (offset int32, the columns float32; NaN: no such rollout) */
    function advantages() {
      var t = view.advantages;
      if (!t) return null;
      if (!t.__decoded) {
        var out = {names: t.names, why: t.why || {}};
        for (var key in t) if (key !== "names" && key !== "why" && key !== "__decoded")
          out[key] = key === "offset" ? new Int32Array(bytes(t[key])) : new Float32Array(bytes(t[key]));
        t.__decoded = out;
      }
      return t.__decoded;
    }

    function signed(a) { return (a >= 0 ? "+" : "") + G.fixed(a, 3); }

    /* tell the hover's listeners about prompt i of the view shown (-1: none), with its P(useful) pu, once per change */
    function hoverChanged(i, pu) {
      var h = i >= 0 ? {prompt: i, p: shown.result.pass_rate[i], K: shown.K, pu: pu} : null;
      var key = h ? h.prompt + "/" + h.p + "/" + h.K + "/" + h.pu : null;
      if (key === hovered) return;
      hovered = key;
      for (var j = 0; j < hoverFns.length; j++) hoverFns[j](h);
    }

    function leave() { hideMarks(marks); hoverChanged(-1); }

    function tip(at) {
      if (!at || !shown) return;
      var i = cellAt(el.grid, data.geometry, d.slot, at);
      if (i < 0) { leave(); return; }
      var r = shown.result, K = shown.K, k = r.successes[i], group = data.words[r.outcome[i]];
      if (!r.kept[i]) group = data.filtered_label + ", " + group;
      var rate = (r.shared_rate || r.pass_rate)[i], pu = r.rho ? NaN : G.usefulProbability(r.pass_rate[i], K);
      pass = G.rollouts(d, i, rate, K, pass);
      var lines = ["prompt " + i, group, "pass rate now " + G.percent(r.pass_rate[i]), "successes " + k + " of " + K];
      if (!isNaN(pu)) lines.push("P(useful) at K = " + K + ": " + G.percent(pu));
      var adv = advantages();
      if (adv) {
        var row = adv.offset[K] + k;
        adv.names.forEach(function (name) {
          var parts = [];
          ["pass", "fail"].forEach(function (side) {
            var a = adv[name + "_" + side][row];
            if (!isNaN(a)) parts.push(side + " " + signed(a));
          });
          lines.push("A " + name + ": " + parts.join(", "));
        });
        var why = k === K ? adv.why.pass : (k === 0 ? adv.why.fail : null);  /* a unanimous group: why zero, or not */
        if (why) lines.push(why);
      }
      placeTip(el.tip, el.grid, at, lines, rolloutDots(marks, pass, K, i + "/" + rate + "/" + K));
      outlineCell(marks, data.geometry, d.x[i], d.y[i]);
      hoverChanged(i, pu);
    }

    /* a new width may wrap the readouts differently: measure their height again (the window resized, or the column
       holding them changed width: presentation mode's tour docks its box beside the lab) */
    function refix() { if (el.readouts.__grpoFixed) { unfix(el.readouts); fix(el.readouts); } }
    window.addEventListener("resize", refix);
    if (typeof ResizeObserver !== "undefined") {
      var readoutsWidth = 0;
      new ResizeObserver(function (entries) {
        var w = Math.round(entries[entries.length - 1].contentRect.width);
        if (w !== readoutsWidth) { var was = readoutsWidth; readoutsWidth = w; if (was) refix(); }
      }).observe(el.readouts);
    }

    el.grid.addEventListener("pointermove", function (e) { tip({x: e.clientX, y: e.clientY}); });
    el.grid.addEventListener("pointerdown", function (e) {
      cursor = cellXY({x: e.clientX, y: e.clientY});  /* the click focuses the grid: the keys go on from this cell */
      tip({x: e.clientX, y: e.clientY});
    });
    el.grid.addEventListener("pointerleave", leave);

    /* the keyboard's cursor: a cell (x, y; row 0 at the bottom) that the arrow keys move, whose tip is shown and
       whose text the live region #gx-cell-said reads out */
    var said = q("#gx-cell-said"), cursor = null;
    function cellXY(at) {
      var g = data.geometry, box = el.grid.getBoundingClientRect();
      return {x: Math.max(0, Math.min(g.cols - 1, Math.floor((at.x - box.left) / box.width * g.cols))),
              y: Math.max(0, Math.min(g.rows - 1, g.rows - 1 - Math.floor((at.y - box.top) / box.height * g.rows)))};
    }
    function sayCell() {
      if (!cursor || !data || !shown) return;
      var g = data.geometry, box = el.grid.getBoundingClientRect();
      var at = {x: box.left + (cursor.x + 0.5) * box.width / g.cols, y: box.top + (g.rows - 0.5 - cursor.y) * box.height / g.rows};
      tip(at);
      var text = el.tip.hidden ? "No prompt in this cell (row " + (g.rows - cursor.y) + ", column " + (cursor.x + 1) + ")."
                               : el.tip.textContent;
      if (said) setText(said, text);
    }
    el.grid.addEventListener("focus", function () {
      if (!data) return;
      if (!cursor) cursor = {x: 0, y: data.geometry.rows - 1};  /* the top left cell */
      sayCell();
    });
    el.grid.addEventListener("blur", function () { leave(); });
    el.grid.addEventListener("keydown", function (e) {
      if (!data) return;
      var g = data.geometry, c = cursor || {x: 0, y: g.rows - 1}, x = c.x, y = c.y;
      switch (e.key) {
        case "ArrowLeft": x--; break;
        case "ArrowRight": x++; break;
        case "ArrowUp": y++; break;
        case "ArrowDown": y--; break;
        case "Home": x = 0; break;
        case "End": x = g.cols - 1; break;
        case "PageUp": y = g.rows - 1; break;
        case "PageDown": y = 0; break;
        case "Escape": leave(); if (said) setText(said, ""); return;
        default: return;
      }
      e.preventDefault();  /* the keys move the cell, not the page */
      cursor = {x: Math.max(0, Math.min(g.cols - 1, x)), y: Math.max(0, Math.min(g.rows - 1, y))};
      sayCell();
    });

    var start = {};
    NAMES.forEach(function (name) { start[name] = C[name].kind === "boolean" ? el[name].checked : Number(el[name].value); });
    view.set(start);
    return view;
  }


  /* Frames mode (see the header): the browser only indexes Python's arrays; it computes nothing. */
  function framesView(host) {
    var q = function (sel) { return host.querySelector(sel); };
    var step = q("#gx-step"), stepOut = q("#gx-step-out"), playBtn = q("#gx-play");
    var f = {pos: 0}, frames = null, runs = [], rates = false, listeners = [];

    function setText(node, text) { if (node && node.textContent !== text) node.textContent = text; }

    function decodeRun(r, block) {
      var x = new Int32Array(bytes(r.x)), y = new Int32Array(bytes(r.y)), g = r.geometry;
      var slot = new Int32Array(g.cols * g.rows).fill(-1), Counts = r.counts === "u1" ? Uint8Array : Int16Array;
      for (var p = 0; p < x.length; p++) slot[y[p] * g.cols + x[p]] = p;
      var series = {};
      for (var key in r.series) series[key] = new Float64Array(bytes(r.series[key]));
      /* the sampled cells (sparse) and, for the step shown (at), every prompt's code, k and K */
      return {raw: r, n: x.length, x: x, y: y, slot: slot, offsets: new Int32Array(bytes(r.offsets)),
              prompt: new (r.index === "u2" ? Uint16Array : Int32Array)(bytes(r.prompt)),
              codes: new Int8Array(bytes(r.codes)), k: new Counts(bytes(r.k)), K: new Counts(bytes(r.K)),
              at: -1, cur: new Int16Array(x.length).fill(r.not_sampled), curk: new Counts(x.length),
              curK: new Counts(x.length), rates: new Float32Array(bytes(r.rates)),
              rcodes: new Int16Array(bytes(r.rate_codes)), ev: new Int32Array(bytes(r.ev_row)),
              rows: new Int32Array(bytes(r.rows)), series: series, tiles: new Uint32Array(bytes(r.tiles)),
              rateTiles: new Uint32Array(bytes(r.rate_tiles)), block: block, code: new Int16Array(x.length),
              canvas: block.querySelector(".gx-canvas"), tip: block.querySelector(".gx-tip"),
              readouts: block.querySelector(".gx-readouts"), slots: null, row: -1};
    }

    function readouts(run, row) {
      var summary = {};
      for (var key in run.series) summary[key] = row >= 0 ? run.series[key][row] : NaN;
      writeReadouts(run.readouts, run, G.fill(run.raw.template, summary));
    }

    /* the run's cells at row (-1: none): the previous row's cells back to "not sampled", then this row's */
    function fillRow(run, row) {
      if (run.at === row) return;
      var o = run.offsets, p = run.prompt, cur = run.cur, k = run.curk, K = run.curK, none = run.raw.not_sampled, j;
      if (run.at >= 0) for (j = o[run.at]; j < o[run.at + 1]; j++) { cur[p[j]] = none; k[p[j]] = K[p[j]] = 0; }
      if (row >= 0) for (j = o[row]; j < o[row + 1]; j++) { cur[p[j]] = run.codes[j]; k[p[j]] = run.k[j]; K[p[j]] = run.K[j]; }
      run.at = row;
    }

    function paintRun(run) {
      var row = run.rows[f.pos], n = run.n, code = run.code, ev = row >= 0 ? run.ev[row] : -1;
      run.row = row;
      fillRow(run, row);
      if (rates) for (var x = 0; x < n; x++) code[x] = ev >= 0 ? run.rcodes[ev * n + x] : run.raw.nan_rate_code;
      else code.set(run.cur);
      cells.canvas(run.canvas, run.raw.geometry, code, run.x, run.y, rates ? run.rateTiles : run.tiles);
      readouts(run, row);
      if (!run.tip.hidden) tip(run, run.tip.__at);
    }

    function paint() {
      var steps = frames ? frames.steps : [];
      setText(stepOut, steps.length ? String(steps[f.pos]) : "\u2013");
      for (var i = 0; i < runs.length; i++) paintRun(runs[i]);
    }

    f.go = function (pos) {
      var last = frames ? Math.max(frames.steps.length - 1, 0) : 0;
      f.pos = Math.min(Math.max(Math.round(Number(pos)) || 0, 0), last);
      if (Number(step.value) !== f.pos) step.value = String(f.pos);
      paint();
    };

    f.setFrames = function (next) {
      frames = next;
      runs = [];
      var blocks = host.querySelectorAll(".gx-run");
      for (var b = 0; b < blocks.length; b++) {
        var r = next.runs[b], block = blocks[b];
        block.hidden = !r;
        if (!r) continue;
        setText(block.querySelector(".gx-caption"), r.caption);
        block.querySelector(".gx-canvas").setAttribute("aria-label", r.canvas_label);
        block.querySelector(".gx-tip").hidden = true;
        runs.push(decodeRun(r, block));
      }
      step.max = String(Math.max(next.steps.length - 1, 0));
      step.disabled = next.steps.length < 2;
      playBtn.disabled = next.steps.length < 2;
      f.go(f.pos);
    };

    f.setRates = function (on) {
      rates = !!on;
      host.querySelector(".gx-frames-view").classList.toggle("gx-rates", rates);
      paint();
    };

    f.onInput = function (fn) { listeners.push(fn); };
    function moved() { for (var i = 0; i < listeners.length; i++) listeners[i](f.pos); }

    var loop = playLoop();
    f.playing = loop.running;
    function stopPlay() { loop.stop(); }
    f.play = function (on, ms, hooks) {
      loop.stop();
      if (!on || !frames) return;
      hooks = hooks || {};
      var last = frames.steps.length - 1;
      if (f.pos >= last) f.go(0);
      var from = f.pos;
      playBtn.textContent = "Pause";
      playBtn.setAttribute("aria-pressed", "true");
      loop.start(function (elapsed) {  /* the frames' step: one position per ms */
        var pos = Math.min(last, from + Math.floor(elapsed / ms));
        if (pos !== f.pos) { f.go(pos); moved(); }
        return f.pos < last;
      }, function () {
        playBtn.textContent = "Play";
        playBtn.setAttribute("aria-pressed", "false");
        if (hooks.stop) hooks.stop();
      });
    };

    step.addEventListener("input", function () { stopPlay(); f.go(step.value); moved(); });

    function tip(run, at) {
      if (!at) return;
      var i = cellAt(run.canvas, run.raw.geometry, run.slot, at);
      if (i < 0) { run.tip.hidden = true; return; }
      var row = run.row, n = run.n, ev = row >= 0 ? run.ev[row] : -1;
      var code = run.cur[i];  /* fillRow(run, run.row) ran in paintRun */
      var rate = ev >= 0 ? run.rates[ev * n + i] : NaN;
      var lines = ["prompt " + run.raw.prompts[i], run.raw.words[code],
                   "pass rate at the nearest evaluation " + (isNaN(rate) ? "none" : G.percent(rate))];
      if (row >= 0 && run.curK[i] > 0) lines.push(run.curk[i] + " of " + run.curK[i] + " rollouts passed");
      placeTip(run.tip, run.canvas, at, lines);
    }

    Array.prototype.forEach.call(host.querySelectorAll(".gx-run"), function (block, b) {
      var canvas = block.querySelector(".gx-canvas"), tipEl = block.querySelector(".gx-tip");
      function at(e) { if (runs[b]) tip(runs[b], {x: e.clientX, y: e.clientY}); }
      canvas.addEventListener("pointermove", at);
      canvas.addEventListener("pointerdown", at);
      canvas.addEventListener("pointerleave", function () { tipEl.hidden = true; tipEl.__at = null; });
    });
    return f;
  }

  grpoGridView.frames = framesView;
  root.grpoGridView = grpoGridView;
})(typeof window !== "undefined" ? window : globalThis);
