/* grpo-lab exported page: glue only, no arithmetic.
 *
 * The grid, its controls, readouts and hover are the lab's grid view (grpoGridView,
 * lab/static/gridview.js, over the kernel and the cell painter). This file adds what a
 * server would otherwise do:
 *   play      the button of the view's play (grpoGridView's, in the browser);
 *   new draw  show the next population embedded in the page state;
 *   describe  name the view shown: seed, draw, and the `grpo-lab population` command
 *             whose --json output equals the readouts;
 *   embed     the page's URL options ?title=false, ?footer=false (hide them) and ?caption=TEXT (shown as
 *             text, cleaned and cut as lab/embed.py's clean_caption does), and, inside a frame, the page's
 *             height posted to the parent as {type: "grpo-lab:height", height} whenever it changes
 *             (lab/embed.py; the host's snippet is in docs/export.md). The page listens to no message.
 *   plots     the decay curve and P(useful) over the histogram by outcome, drawn by the served lab's plot code
 *             (lab/static/live_plots.js's grpoPlots) after every paint of the grid
 * window.grpoExport exposes drawShown(), playing() and readyAt for tests and scripting; the main element's
 * __grpoPlots is the plots (their data: what is drawn now).
 */
(function () {
  "use strict";
  var STATE_ID = "grpo-export-state";
  var state, view, drawIndex = 0, play;

  function $(id) { return document.getElementById(id); }

  function setText(node, text) { if (node && node.textContent !== text) node.textContent = text; }

  function describe() {
    var pop = state.population, seed = state.draws[drawIndex].seed, n = state.draws.length, v = view.values;
    var f = state.flags;  // each control's command-line option, from the spec (grpo_lab.grid.spec.cli_flag)
    var value = Object.assign({}, pop, v, {seed: seed});  // the population's and the controls' values by name
    var args = ["grpo-lab population"].concat(state.options.map(function (name) { return f[name] + " " + value[name]; }));
    if (v.filter) args.push(f.filter + " " + v.band_lo + " " + v.band_hi);
    args.push("--json");
    setText($("gx-view-cmd"), args.join(" "));
    setText($("gx-seed"), String(seed));
    setText($("gx-draw-index"), String(drawIndex + 1));
    setText($("gx-draw-label"), "seed " + seed + " (draw " + (drawIndex + 1) + " of " + n + ")");
  }

  function repaint() { view.paint(); describe(); }

  /* a caption as shown (twin of lab/embed.py's clean_caption): separators -> spaces, controls dropped,
     spaces collapsed, trimmed, cut to max code points with an ellipsis */
  function caption(raw, max) {
    var t = raw.replace(/[\t\n\v\f\r\p{Z}]/gu, " ").replace(/\p{C}/gu, "").replace(/ +/g, " ").trim();
    var chars = Array.from(t);
    return chars.length <= max ? t : chars.slice(0, max - 1).join("").replace(/ +$/, "") + "\u2026";
  }

  function applyUrlOptions(settings) {
    var q = new URLSearchParams(location.search);
    function off(name) { var v = q.get(name); return v !== null && settings.off.indexOf(v.trim().toLowerCase()) >= 0; }
    var parts = {title: document.querySelector(".gx-head"), footer: document.querySelector(".gx-foot")};
    for (var name in parts) if (parts[name] && off(name)) parts[name].hidden = true;
    var node = $("gx-embed-caption");
    if (node && q.has("caption")) {
      node.textContent = caption(q.get("caption"), settings.max_caption);  /* text, never markup */
      node.hidden = node.textContent === "";
    }
  }

  /* inside a frame: post the page's height to the parent whenever it changes (one number; target "*") */
  function postHeight(settings) {
    if (window.parent === window) return;
    var last = -1, queued = false;
    function post() {
      queued = false;
      var h = Math.ceil(document.documentElement.getBoundingClientRect().height);
      if (h > 0 && h !== last) { last = h; window.parent.postMessage({type: settings.message, height: h}, "*"); }
    }
    function queue() { if (!queued) { queued = true; requestAnimationFrame(post); } }
    if (window.ResizeObserver) new ResizeObserver(queue).observe(document.documentElement);
    window.addEventListener("resize", queue);
    window.addEventListener("load", queue);
    queue();
  }

  function playing() { return play.getAttribute("aria-pressed") === "true"; }

  /* the view plays (grpoGridView's play); the page keeps its button and provenance line in step */
  function setPlaying(on) {
    play.setAttribute("aria-pressed", on ? "true" : "false");
    view.play(on, state.play_seconds, {frame: describe, stop: function () { play.setAttribute("aria-pressed", "false"); }});
  }

  function start() {
    state = JSON.parse($(STATE_ID).textContent);
    applyUrlOptions(state.embed);
    view = window.grpoGridView($("grpo-export"));
    /* the two plots beside the grid, drawn by the served lab's own code (lab/static/live_plots.js) from the kernel,
       in the same event as the grid */
    var plots = window.grpoPlots($("grpo-export"));
    if (plots) { plots.follow(view); $("grpo-export").__grpoPlots = plots; }
    play = $("gx-play");
    view.setData(state.draws[0]);
    view.onInput(function () { repaint(); });  /* grabbing the progress slider also pauses play (the view's) */
    play.addEventListener("click", function () { setPlaying(!playing()); });
    $("gx-new-draw").addEventListener("click", function () {
      drawIndex = (drawIndex + 1) % state.draws.length;
      view.setData(state.draws[drawIndex]);
      repaint();
    });
    repaint();
    postHeight(state.embed);
    window.grpoExport.readyAt = performance.now();
    $("grpo-export").setAttribute("data-ready", "true");
  }

  window.grpoExport = {drawShown: function () { return {index: drawIndex, seed: state.draws[drawIndex].seed}; },
                       playing: function () { return playing(); }};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
