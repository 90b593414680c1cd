/* grpo-lab LiveGrid component (lab/grid/component.py): the served lab's grid view, synced with Python.
 *
 * Prepended by Python with kernel.js, cells.js and gridview.js. The view repaints in the browser
 * as a reader moves its controls (grpoGridView over the kernel) and sends the new values to
 * Python, which redraws the plots and the URL once the controls pause. Python sets the values
 * (URL, play, step, reset), the population (`data`) and, when rho > 0 (which the kernel does not
 * cover), the view it computed (`view`): the browser then shows Python's view instead (and always
 * with `server_paints`, the benchmark's round-trip baseline).
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
  model.on("data", function () { view.setData(model.data); paint(); });
  model.on("view", function () { if (serverPaints() && model.view) view.show(model.view); });
  model.on("rho", paint);
  box.setAttribute("data-ready", "true");
}
