/* grpo-lab exported page: glue only, no arithmetic.
 *
 * The grid's own CustomJS (lab/grid.py) recolours cells and rewrites readouts with
 * grpoKernel.evaluate. This file adds what a server would otherwise do:
 *   play(m)      animate training progress up to 1 (a requestAnimationFrame loop);
 *   nextDraw(m)  swap in the next population embedded in the page state, then repaint;
 *   describe(m)  name the view shown: seed, draw, and the `grpo-lab population` command
 *                whose --json output equals the readouts;
 *   ready(m)     run once when the Bokeh document is ready.
 * m holds the Bokeh models (sliders, checkbox, sources, the grid's repaint callback).
 */
(function () {
  "use strict";
  var STATE_ID = "grpo-export-state";
  var SWEEP_SECONDS = 8;  /* a full 0 -> 1 sweep of training progress */
  var state = null, drawIndex = 0, decoded = {}, raf = 0;

  function getState() {
    if (!state) state = JSON.parse(document.getElementById(STATE_ID).textContent);
    return state;
  }

  function bytes(b64) {
    var s = atob(b64), out = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
    return out.buffer;
  }

  function draw(i, m) {
    if (decoded[i]) return decoded[i];
    var d = getState().draws[i];
    if (i === 0) {  /* draw 0 is the grid's own data, saved before the first swap */
      decoded[0] = {p0: m.source.data.p0, x: m.source.data.x, y: m.source.data.y, u: m.uniforms.data.u};
    } else {
      decoded[i] = {p0: new Float64Array(bytes(d.p0)), u: new Float32Array(bytes(d.u)),
                    x: Float64Array.from(d.x), y: Float64Array.from(d.y)};
    }
    return decoded[i];
  }

  function seedShown() { return getState().draws[drawIndex].seed; }

  function setText(id, text) {
    var el = document.getElementById(id);
    if (el) el.textContent = text;
  }

  function describe(m) {
    var s = getState(), pop = s.population, n = s.draws.length;
    var args = ["grpo-lab population", "--n-prompts " + pop.n_prompts, "--a " + pop.a, "--b " + pop.b,
                "--seed " + seedShown(), "--progress " + m.progress.value, "--K " + m.K.value];
    if (m.filter.active) args.push("--filter " + m.band.value[0] + " " + m.band.value[1]);
    args.push("--json");
    setText("gx-view-cmd", args.join(" "));
    setText("gx-seed", String(seedShown()));
    setText("gx-draw-index", String(drawIndex + 1));
    m.draw_label.text = "seed " + seedShown() + " (draw " + (drawIndex + 1) + " of " + n + ")";
  }

  function nextDraw(m) {
    var n = getState().draws.length;
    draw(0, m);
    drawIndex = (drawIndex + 1) % n;
    var d = draw(drawIndex, m), data = m.source.data;
    data.p0 = d.p0; data.x = d.x; data.y = d.y;
    m.uniforms.data.u = d.u;
    m.repaint.execute(m.progress);  /* the grid's kernel callback, which emits the change */
    describe(m);
  }

  function play(m) {
    if (raf) { cancelAnimationFrame(raf); raf = 0; }
    if (!m.play.active) return;
    if (m.progress.value >= 1) m.progress.value = 0;
    var t0 = m.progress.value, start = null;
    function step(now) {
      if (!m.play.active) { raf = 0; return; }
      if (start === null) start = now;
      var t = Math.min(1, t0 + (now - start) / 1000 / SWEEP_SECONDS);
      m.progress.value = Math.round(t * 1000) / 1000;  /* the slider's step */
      if (t >= 1) { raf = 0; m.play.active = false; return; }
      raf = requestAnimationFrame(step);
    }
    raf = requestAnimationFrame(step);
  }

  function ready(m) {
    describe(m);
    var root = document.getElementById("grpo-export");
    if (root) root.setAttribute("data-ready", "true");
  }

  window.grpoExport = {ready: ready, describe: describe, nextDraw: nextDraw, play: play,
                       drawShown: function () { return {index: drawIndex, seed: seedShown()}; }};
})();
