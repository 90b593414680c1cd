/* grpo-lab ReplayGrid component (lab/replay/grid.py): the Replay tab's grid view in frames mode.
 *
 * Prepended by Python with kernel.js, cells.js and gridview.js. Scrubbing and Play repaint in the
 * browser; Python hears the position once the slider rests for SYNC_MS (and every SYNC_PLAY_MS
 * while playing), to move the plots' step markers and histograms. Python sets the frames (a new
 * choice of runs), the position (a run still being written pins it to its last step) and the colouring.
 */
var SYNC_MS = 150, SYNC_PLAY_MS = 600;

export function render({ model, el }) {
  var box = document.createElement("div");
  box.className = "gx-view";
  box.innerHTML = model.markup;
  el.appendChild(box);
  var f = window.grpoGridView.frames(box), play = box.querySelector("#gx-play");
  f.setFrames(model.frames);
  f.setRates(model.rates);
  f.go(model.value);

  var timer = 0, lastSync = 0;
  function sync() {
    timer = 0; lastSync = Date.now();
    if (model.value !== f.pos) model.value = f.pos;
    box.setAttribute("data-synced", String(f.pos));  /* the position Python has been sent (tests wait on it) */
  }
  f.onInput(function () {
    clearTimeout(timer);
    if (f.playing() && Date.now() - lastSync > SYNC_PLAY_MS) sync();
    else timer = setTimeout(sync, SYNC_MS);
  });
  play.addEventListener("click", function () {
    f.play(!f.playing(), model.play_ms, {stop: function () { clearTimeout(timer); sync(); }});
  });
  model.on("frames", function () {  /* new runs: a position still waiting to be sent belongs to the old ones */
    clearTimeout(timer); timer = 0;
    f.setFrames(model.frames); f.go(model.value);
  });
  model.on("value", function () { if (!timer && model.value !== f.pos) f.go(model.value); });
  model.on("rates", function () { f.setRates(model.rates); });
  box.setAttribute("data-ready", "true");
}
