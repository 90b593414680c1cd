/* grpo-lab LiveGrid component (lab/grid/component.py): the served lab's grid view, synced with Python.
 *
 * Prepended by Python with kernel.js, cells.js and gridview.js. The view repaints in the browser
 * as a reader moves its controls (grpoGridView over the kernel) and sends the new values to
 * Python, which redraws the secondary plots, the caption and the URL once the controls pause. Play runs here too (the view's
 * play loop; Python hears the progress every `play_sync_ms`). Python sets the values
 * (URL, step, reset), `playing`, the population (`data`) and, when rho > 0 (which the kernel does not
 * cover), the view it computed (`view`): the browser then shows Python's view instead (and always
 * with `server_paints`, the benchmark's round-trip baseline).
 *
 * The plots beside the grid (lab/static/live_plots.js) repaint with it, in the same event; hovering a cell
 * marks the prompt on them (at most once per animation frame, the server never hears of it). Pin and compare: the Pin button sends the values shown, then a click
 * (`pin_clicks`); Python answers with the pinned view (`ghost`, painted beside the grid) and the
 * comparison (`compare`, its HTML).
 */
var SYNC_MS = 150;

export function render({ model, el }) {
  var box = document.createElement("div");
  box.className = "gx-view";
  box.innerHTML = model.markup;
  el.appendChild(box);
  var view = window.grpoGridView(box), NAMES = view.names;
  view.advantages = model.advantages;

  function fromModel() {
    var v = {};
    NAMES.forEach(function (n) { v[n] = model[n]; });
    return v;
  }
  function serverPaints() { return model.rho > 0 || model.server_paints; }
  function paint() {
    if (serverPaints()) { if (model.view) view.show(model.view); }
    else view.paint();
  }

  /* the plots beside the grid (lab/static/live_plots.js): repainted from the view just drawn, in the same
     event as the grid (a control's input, a Play frame, Python's view while rho > 0); with rho > 0 the
     curves are Python's (`curves`). Hovering a cell marks its pass rate and P(useful) on them. */
  var plots = window.grpoPlots(box);
  box.__grpoPlots = plots;  /* for tests and benchmarks: plots.data is what is drawn */
  if (plots) {
    plots.follow(view, function () { return {rho: serverPaints() ? model.rho : 0, curves: model.curves}; });
    model.on("curves", function () { plots.redraw(model.curves); pinCurve(); });
    plots.loop(model.loop);  /* the stall overlay's loop: the kernel draws it at rho = 0, in the grid's event */
    model.on("loop", function () { plots.loop(model.loop); });
    model.on("plot_text", function () {
      var t = model.plot_text || {};
      [["#gx-decay", t.decay], ["#gx-outcome", t.outcome]].forEach(function (e) {
        var svg = box.querySelector(e[0]);
        if (svg && e[1] && svg.getAttribute("aria-label") !== e[1]) svg.setAttribute("aria-label", e[1]);
      });
    });
    var nextHover = null, hoverFrame = 0;
    view.onHover(function (h) {
      nextHover = h;
      if (!hoverFrame) hoverFrame = requestAnimationFrame(function () { hoverFrame = 0; plots.hover(nextHover); });
    });
  }
  view.set(fromModel());
  view.setData(model.data);
  paint();
  /* Python hears of a move once the control rests for SYNC_MS (it redraws the secondary plots and the URL only
     after a pause anyway), so a drag costs the browser no message per step; while Python paints
     (rho > 0) it hears at once. */
  var pending = {}, timer = 0;
  function sync() {
    timer = 0;
    for (var n in pending) model[n] = pending[n];
    pending = {};
  }
  view.onInput(function (changed) {
    for (var n in changed) pending[n] = changed[n];
    if (serverPaints()) { sync(); return; }  /* Python answers with its view */
    view.paint();
    clearTimeout(timer);
    timer = setTimeout(sync, SYNC_MS);
  });
  NAMES.forEach(function (n) {
    model.on(n, function () {
      if (view.values[n] === model[n] || n in pending) return;  /* an echo, or overtaken by the reader */
      var c = {};
      c[n] = model[n];
      view.set(c);
      paint();
    });
  });
  model.on("data", function () { view.setData(model.data); paint(); view.ghost(model.ghost && model.ghost.view); });
  model.on("view", function () { if (serverPaints() && model.view) view.show(model.view); });
  model.on("rho", paint);

  function pinCurve() {
    if (!plots) return;
    var g = model.ghost && model.ghost.view;
    plots.pin(g ? {K: g.K, rho: g.rho || 0, useful: g.rho ? (model.curves && model.curves.pinned) || null : null}
                : null);
  }

  /* pin and compare (present when the markup has the Pin button) */
  var pinButton = box.querySelector("#gx-pin"), compareBox = box.querySelector("#gx-compare");
  var hint = box.querySelector(".gx-pin-hint"), title = box.querySelector("#gx-ghost-title");
  function showPin() {
    view.ghost(model.ghost && model.ghost.view);
    var canvas = box.querySelector(".gx-ghost-canvas");
    if (canvas && model.ghost) canvas.setAttribute("aria-label", model.ghost.label);
    if (title && model.ghost) title.textContent = model.ghost.title;
    if (hint) hint.hidden = !!model.ghost;  /* pinned: the ghost's title says what is pinned */
    if (compareBox && compareBox.innerHTML !== model.compare) compareBox.innerHTML = model.compare;  /* Python's */
    if (pinButton) pinButton.textContent = model.ghost ? "Unpin" : "Pin this view";
  }
  if (pinButton) {
    pinButton.addEventListener("click", function () {
      clearTimeout(timer);
      sync();  /* Python pins the values shown */
      model.pin_clicks = model.pin_clicks + 1;
    });
    model.on("ghost", function () { showPin(); pinCurve(); });
    model.on("compare", showPin);
    showPin();
    pinCurve();
  }
  /* Play runs here, in the grid view's play loop (every frame painted in the browser; with rho > 0 the
     frames Python paints are shown as they come). Python hears the progress every play_sync_ms, through the
     same property a slider drag sets, and once more when play stops, so the plots, tables and captions
     follow the animation; `playing` is the Play button's state, both ways. */
  var playTimer = 0;
  function pushProgress() {
    playTimer = 0;
    if (model.progress !== view.values.progress) model.progress = view.values.progress;
  }
  function startPlay() {
    view.play(true, model.play_seconds, {
      paint: function () { if (!serverPaints()) view.paint(); },
      frame: function () { if (!playTimer) playTimer = setTimeout(pushProgress, model.play_sync_ms); },
      stop: function () {
        clearTimeout(playTimer);
        /* after the rest of Python's message: a Reset stops play and sets the progress in one */
        playTimer = setTimeout(function () {
          pushProgress();
          if (model.playing) model.playing = false;
        }, 0);
      }
    });
  }
  model.on("playing", function () {
    if (model.playing && !view.playing()) startPlay();
    else if (!model.playing && view.playing()) view.play(false);
  });
  if (model.playing) startPlay();
  box.setAttribute("data-ready", "true");
}
