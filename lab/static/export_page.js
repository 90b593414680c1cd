/* grpo-lab exported page: glue only, no arithmetic.
 *
 * Reads the page's plain HTML controls, runs the lab's browser kernel (grpoKernel.evaluate,
 * lab/static/kernel.js), paints the grid with the lab's painter (grpoCells.canvas,
 * lab/static/cells.js) and rewrites the readouts' text (grpoKernel.fill). It adds what a
 * server would otherwise do:
 *   play      animate training progress up to 1 (a requestAnimationFrame loop);
 *   new draw  swap in the next population embedded in the page state;
 *   describe  name the view shown: seed, draw, and the `grpo-lab population` command
 *             whose --json output equals the readouts;
 *   hover     the prompt under the pointer: id, its group, pass rate now, k of K.
 * window.grpoExport exposes repaint() and drawShown() for tests and scripting.
 */
(function () {
  "use strict";
  var STATE_ID = "grpo-export-state";
  var SWEEP_SECONDS = 8;  /* a full 0 -> 1 sweep of training progress */
  var G = window.grpoKernel, cells = window.grpoCells;
  var state, tiles, el = {}, slots, decoded = [], drawIndex = 0, out = {}, code = null, shownK = 0, raf = 0;

  function $(id) { return document.getElementById(id); }

  function bytes(b64) {
    var s = atob(b64), buf = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) buf[i] = s.charCodeAt(i);
    return buf.buffer;
  }

  function draw(i) {  /* an embedded population, decoded on first use */
    if (!decoded[i]) {
      var d = state.draws[i], n = d.x.length, slot = new Int32Array(state.geometry.cols * state.geometry.rows);
      slot.fill(-1);
      for (var p = 0; p < n; p++) slot[d.y[p] * state.geometry.cols + d.x[p]] = p;
      decoded[i] = {p0: new Float64Array(bytes(d.p0)), u: new Float32Array(bytes(d.u)), stride: d.stride,
                    gain: d.gain, x: Int32Array.from(d.x), y: Int32Array.from(d.y), slot: slot};
    }
    return decoded[i];
  }

  function controls() {
    return {progress: Number(el.progress.value), K: Number(el.K.value), filter: el.filter.checked,
            band_lo: Number(el.lo.value), band_hi: Number(el.hi.value)};
  }

  function setText(node, text) { if (node && node.textContent !== text) node.textContent = text; }

  function repaint() {
    var d = draw(drawIndex), c = controls();
    out = G.evaluate(d, c, out);
    var n = d.p0.length, oc = out.outcome, kept = out.kept;
    if (!code || code.length !== n) code = new Int8Array(n);
    for (var x = 0; x < n; x++) code[x] = kept[x] ? oc[x] : state.filtered_code;
    shownK = c.K;
    cells.canvas(el.grid, state.geometry, code, d.x, d.y, tiles);
    var values = G.fill(state.template, out.summary).values;
    for (var i = 0; i < slots.length; i++) if (slots[i].data !== values[i]) slots[i].data = values[i];
    setText(el.progressOut, c.progress.toFixed(3));
    setText(el.KOut, String(c.K));
    setText(el.bandOut, c.band_lo.toFixed(2) + " \u2013 " + c.band_hi.toFixed(2));
    el.band.classList.toggle("gx-off", !c.filter);
    describe(c);
    if (!el.tip.hidden) tip(el.tip.__at);
  }

  function describe(c) {
    var pop = state.population, seed = state.draws[drawIndex].seed, n = state.draws.length;
    var args = ["grpo-lab population", "--n-prompts " + pop.n_prompts, "--a " + pop.a, "--b " + pop.b,
                "--seed " + seed, "--progress " + c.progress, "--K " + c.K];
    if (c.filter) args.push("--filter " + c.band_lo + " " + c.band_hi);
    args.push("--json");
    setText($("gx-view-cmd"), args.join(" "));
    setText($("gx-seed"), String(seed));
    setText($("gx-draw-index"), String(drawIndex + 1));
    setText(el.drawLabel, "seed " + seed + " (draw " + (drawIndex + 1) + " of " + n + ")");
  }

  function nextDraw() {
    drawIndex = (drawIndex + 1) % state.draws.length;
    repaint();
  }

  function playing() { return el.play.getAttribute("aria-pressed") === "true"; }

  function setPlaying(on) {
    el.play.setAttribute("aria-pressed", on ? "true" : "false");
    if (raf) { cancelAnimationFrame(raf); raf = 0; }
    if (!on) return;
    if (Number(el.progress.value) >= 1) { el.progress.value = "0"; repaint(); }
    var t0 = Number(el.progress.value), start = null;
    function step(now) {
      if (!playing()) { raf = 0; return; }
      if (start === null) start = now;
      var t = Math.min(1, t0 + (now - start) / 1000 / SWEEP_SECONDS);
      el.progress.value = String(Math.round(t * 1000) / 1000);  /* the slider's step */
      repaint();
      if (t >= 1) { raf = 0; el.play.setAttribute("aria-pressed", "false"); return; }
      raf = requestAnimationFrame(step);
    }
    raf = requestAnimationFrame(step);
  }

  /* the band's ends never cross: moving one past the other carries the other along */
  function band(moved, other, keepBelow) {
    var a = Number(moved.value), b = Number(other.value);
    if (keepBelow ? a > b : a < b) other.value = moved.value;
  }

  function tip(at) {
    if (!at) return;
    var box = el.grid.getBoundingClientRect(), g = state.geometry, d = draw(drawIndex);
    var cx = Math.floor((at.x - box.left) / box.width * g.cols);
    var cy = g.rows - 1 - Math.floor((at.y - box.top) / box.height * g.rows);  /* row 0 at the bottom */
    var i = (cx >= 0 && cx < g.cols && cy >= 0 && cy < g.rows) ? d.slot[cy * g.cols + cx] : -1;
    if (i < 0) { el.tip.hidden = true; return; }
    var group = state.words[out.outcome[i]];
    if (!out.kept[i]) group = state.filtered_label + ", " + group;
    el.tip.textContent = "prompt " + i + " \u00b7 " + group + " \u00b7 pass rate now " +
      G.percent(out.pass_rate[i]) + " \u00b7 successes " + out.successes[i] + " of " + shownK;
    el.tip.__at = at;
    el.tip.hidden = false;
    var host = el.grid.parentNode.getBoundingClientRect(), w = el.tip.offsetWidth;
    el.tip.style.left = Math.max(0, Math.min(at.x - host.left + 12, host.width - w)) + "px";
    el.tip.style.top = (at.y - host.top + 14) + "px";
  }

  function start() {
    state = JSON.parse($(STATE_ID).textContent);
    tiles = new Uint32Array(bytes(state.tiles));
    el = {progress: $("gx-progress"), K: $("gx-K"), filter: $("gx-filter"), lo: $("gx-band-lo"),
          hi: $("gx-band-hi"), band: document.querySelector(".gx-band"), grid: $("gx-grid"), tip: $("gx-tip"),
          play: $("gx-play"), progressOut: $("gx-progress-out"), KOut: $("gx-K-out"), bandOut: $("gx-band-out"),
          drawLabel: $("gx-draw-label")};
    /* the readouts were filled by Python for the starting view; from now on only their text changes */
    slots = Array.prototype.map.call($("gx-readouts").querySelectorAll("[data-v]"), function (s) {
      return s.firstChild || s.appendChild(document.createTextNode(""));
    });
    el.progress.addEventListener("input", function () {
      if (playing()) setPlaying(false);  /* a reader grabbing the slider pauses the animation */
      repaint();
    });
    el.K.addEventListener("input", repaint);
    el.filter.addEventListener("change", repaint);
    el.lo.addEventListener("input", function () { band(el.lo, el.hi, true); repaint(); });
    el.hi.addEventListener("input", function () { band(el.hi, el.lo, false); repaint(); });
    el.play.addEventListener("click", function () { setPlaying(!playing()); });
    $("gx-new-draw").addEventListener("click", nextDraw);
    el.grid.addEventListener("pointermove", function (e) { tip({x: e.clientX, y: e.clientY}); });
    el.grid.addEventListener("pointerdown", function (e) { tip({x: e.clientX, y: e.clientY}); });
    el.grid.addEventListener("pointerleave", function () { el.tip.hidden = true; el.tip.__at = null; });
    repaint();
    window.grpoExport.readyAt = performance.now();
    $("grpo-export").setAttribute("data-ready", "true");
  }

  window.grpoExport = {repaint: function () { repaint(); },
                       drawShown: function () { return {index: drawIndex, seed: state.draws[drawIndex].seed}; },
                       playing: function () { return playing(); }};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
