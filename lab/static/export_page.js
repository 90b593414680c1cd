/* grpo-lab exported page: glue only, no arithmetic.
 *
 * The grid, its controls, readouts and hover are the lab's grid view (grpoGridView,
 * lab/static/gridview.js, over the kernel and the cell painter). This file adds what a
 * server would otherwise do:
 *   play      animate training progress up to 1 (a requestAnimationFrame loop);
 *   new draw  show the next population embedded in the page state;
 *   describe  name the view shown: seed, draw, and the `grpo-lab population` command
 *             whose --json output equals the readouts.
 * window.grpoExport exposes drawShown(), playing() and readyAt for tests and scripting.
 */
(function () {
  "use strict";
  var STATE_ID = "grpo-export-state";
  var SWEEP_SECONDS = 8;  /* a full sweep of training progress, min to max */
  var state, view, drawIndex = 0, raf = 0, play;

  function $(id) { return document.getElementById(id); }

  function setText(node, text) { if (node && node.textContent !== text) node.textContent = text; }

  function describe() {
    var pop = state.population, seed = state.draws[drawIndex].seed, n = state.draws.length, v = view.values;
    var args = ["grpo-lab population", "--n-prompts " + pop.n_prompts, "--a " + pop.a, "--b " + pop.b,
                "--seed " + seed, "--progress " + v.progress, "--K " + v.K];
    if (v.filter) args.push("--filter " + v.band_lo + " " + v.band_hi);
    args.push("--json");
    setText($("gx-view-cmd"), args.join(" "));
    setText($("gx-seed"), String(seed));
    setText($("gx-draw-index"), String(drawIndex + 1));
    setText($("gx-draw-label"), "seed " + seed + " (draw " + (drawIndex + 1) + " of " + n + ")");
  }

  function repaint() { view.paint(); describe(); }

  function playing() { return play.getAttribute("aria-pressed") === "true"; }

  function setPlaying(on) {
    play.setAttribute("aria-pressed", on ? "true" : "false");
    if (raf) { cancelAnimationFrame(raf); raf = 0; }
    if (!on) return;
    var c = view.spec.controls.progress;  /* its bounds and step */
    if (view.values.progress >= c.max) { view.set({progress: c.min}); repaint(); }
    var t0 = view.values.progress, start = null;
    function step(now) {
      if (!playing()) { raf = 0; return; }
      if (start === null) start = now;
      var t = Math.min(c.max, t0 + (c.max - c.min) * (now - start) / 1000 / SWEEP_SECONDS);
      view.set({progress: Number((Math.round(t / c.step) * c.step).toFixed(c.digits))});  /* on the slider's step */
      repaint();
      if (t >= c.max) { raf = 0; play.setAttribute("aria-pressed", "false"); return; }
      raf = requestAnimationFrame(step);
    }
    raf = requestAnimationFrame(step);
  }

  function start() {
    state = JSON.parse($(STATE_ID).textContent);
    view = window.grpoGridView($("grpo-export"));
    play = $("gx-play");
    view.setData(state.draws[0]);
    view.onInput(function (changed) {
      if ("progress" in changed && playing()) setPlaying(false);  /* grabbing the slider pauses */
      repaint();
    });
    play.addEventListener("click", function () { setPlaying(!playing()); });
    $("gx-new-draw").addEventListener("click", function () {
      drawIndex = (drawIndex + 1) % state.draws.length;
      view.setData(state.draws[drawIndex]);
      repaint();
    });
    repaint();
    window.grpoExport.readyAt = performance.now();
    $("grpo-export").setAttribute("data-ready", "true");
  }

  window.grpoExport = {drawShown: function () { return {index: drawIndex, seed: state.draws[drawIndex].seed}; },
                       playing: function () { return playing(); }};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
