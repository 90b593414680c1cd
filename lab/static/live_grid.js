/* grpo-lab LiveGrid component (lab/grid/component.py): the served lab's grid view, synced with Python.
 *
 * Prepended by Python with kernel.js, cells.js and gridview.js. The view repaints in the browser
 * as a reader moves its controls (grpoGridView over the kernel) and sends the new values to
 * Python, which redraws the plots and the URL once the controls pause. Play runs here too (the view's
 * play loop; Python hears the progress every `play_sync_ms`). Python sets the values
 * (URL, step, reset), `playing`, the population (`data`) and, when rho > 0 (which the kernel does not
 * cover), the view it computed (`view`): the browser then shows Python's view instead (and always
 * with `server_paints`, the benchmark's round-trip baseline).
 *
 * Linked views: hovering a cell moves the plots' hover markers (Bokeh models named in `markers`, found in
 * this session's document) in the browser, without telling the server (setv with sync: false), at most
 * once per animation frame. Pin and compare: the Pin button sends the values shown, then a click
 * (`pin_clicks`); Python answers with the pinned view (`ghost`, painted beside the grid) and the
 * comparison (`compare`, its HTML).
 */
var SYNC_MS = 150;

export function render({ model, el, view: esmView }) {
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

  view.set(fromModel());
  view.setData(model.data);
  paint();
  /* Python hears of a move once the control rests for SYNC_MS (it redraws the plots and the URL only
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

  /* the plots' hover markers: found by name once the plots exist (they are built after the page loads) */
  var marks = null, nextHover = null, hoverFrame = 0;
  function markerModels() {
    if (marks) return marks;
    var doc = esmView && esmView.model && esmView.model.document, m = {};
    if (!doc) return null;
    for (var key in model.markers) {
      m[key] = doc.get_model_by_name(model.markers[key]);
      if (!m[key]) return null;
    }
    return (marks = m);
  }
  function moveMarkers() {
    hoverFrame = 0;
    var m = markerModels(), h = nextHover, on = !!h, dot = on && isFinite(h.pu);
    if (!m) return;
    var quiet = {sync: false};  /* the browser's own: the server never hears of a hover */
    m.curve.setv({location: on ? h.p : 0, visible: on}, quiet);
    m.hist.setv({location: on ? h.p : 0, visible: on}, quiet);
    m.dot.setv({data: {p: dot ? [h.p] : [], u: dot ? [h.pu] : []}}, quiet);
  }
  view.onHover(function (h) {
    nextHover = h;
    if (!hoverFrame) hoverFrame = requestAnimationFrame(moveMarkers);
  });

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
    model.on("ghost", showPin);
    model.on("compare", showPin);
    showPin();
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
