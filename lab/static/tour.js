/* grpo-lab guided tour, the browser's part (lab/views/tour.py's TourDriver).
 *
 * Each time a step is shown (`nonce` changes) it finds the step's subject: the first of `targets` (CSS
 * selectors) that matches an element with a size, searched in the document and every shadow root, so
 * the subject is found wherever the layout puts it. While none is on the page it scrolls to the first
 * of `reveal` (parts built when the visitor gets to them) and looks again. It then scrolls the window
 * so the subject, with the controls the step's text names (`controls`: lists of selectors, e.g. Play and the
 * progress slider for "press Play"), sits below the tour's sticky box (centred in the room left when it fits), and
 * outlines it: the class `highlight` and an outline and halo set on the element itself (its stylesheet
 * may live in a shadow root the page's CSS does not reach). The previous subject loses both.
 *
 * With `drain` it then moves the grid's progress slider (#gx-progress) from its minimum to its maximum
 * over `drain_seconds`, one input event per animation frame, exactly as a reader's drag would: the grid
 * view repaints the cells, readouts and plots on each, and Python hears the end. A reader who grabs the
 * slider stops it; with prefers-reduced-motion the slider goes to its end in one step.
 *
 * In presentation mode (`present`) nothing scrolls: the box docks where it hides nothing and the page's layout leaves
 * it that room. On a wide window (at least 3:2, with room for the lab's two columns beside it) it is a column at the
 * right, the full window's height (`--present-tour-w`: the page's right padding); otherwise, or when the step's text
 * does not fit that column, a band at the top (`--present-tour-h`: taken from the grid's height). Both are measured
 * here from the box's own size, again whenever it changes (a new step's text) or the window does, and read by
 * lab.views.layout.PRESENT_CSS, so the grid, the readouts, the plots and the controls stay whole beside or under it.
 */
var STYLE = {outline: "3px solid #0b5cad", outlineOffset: "3px", boxShadow: "0 0 0 7px rgba(11, 92, 173, 0.25)"};
var WAIT_MS = 20000;  /* how long a step looks for its subject (the plots are built once scrolled to) */
/* presentation mode's right-hand column: its width (a share of the window's, within bounds: at most 480 px, so at
   1920x1080 the grid keeps 31% of the screen beside it, and step 7's K-cost table still fits), the least width the lab
   keeps beside it (its two-column layout needs an 880 px container, plus margins), the least window shape (3:2); the
   most of the window's height a band at the top may take (else the column scrolls, on a window too small for both) */
var DOCK = {share: 0.3, min: 340, max: 480, lab: 900, aspect: 1.5, band: 0.45};

function roots() {
  var out = [document];
  for (var i = 0; i < out.length; i++) {
    var all = out[i].querySelectorAll("*");
    for (var j = 0; j < all.length; j++) if (all[j].shadowRoot) out.push(all[j].shadowRoot);
  }
  return out;
}

function shown(el) {
  var r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
}

/* the first element matching one of `selectors` (in order) that has a size, through shadow roots */
function find(selectors) {
  var all = roots();
  for (var s = 0; s < selectors.length; s++) {
    for (var i = 0; i < all.length; i++) {
      var found;
      try { found = all[i].querySelectorAll(selectors[s]); } catch (e) { break; }  /* a selector this browser lacks */
      for (var j = 0; j < found.length; j++) if (shown(found[j])) return found[j];
    }
  }
  return null;
}

function reducedMotion() {
  return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
}

/* the tour's box: the element of class "tour" that holds `el`, across shadow roots */
function tourBox(el) {
  for (var host = el; host; host = host.parentNode || host.host) {
    if (host.classList && host.classList.contains("tour")) return host;
  }
  return null;
}

function setVar(name, px) { document.documentElement.style.setProperty(name, Math.ceil(px) + "px"); }

/* presentation mode: dock the box (a right-hand column of width w, or a band at the top when w is 0) */
function place(box, w) {
  var s = box.style, imp = "important";
  s.setProperty("position", w ? "fixed" : "relative", imp);
  s.setProperty("top", "0", imp);
  s.setProperty("right", w ? "0" : "auto", imp);
  s.setProperty("width", w ? w + "px" : "auto", imp);
  s.setProperty("height", w ? "100vh" : "auto", imp);
  s.setProperty("max-height", "none", imp);
  s.setProperty("overflow", w ? "auto" : "visible", imp);
  box.setAttribute("data-dock", w ? "right" : "top");
  s.setProperty("--tour-figure-lead", w ? "block" : "none");  /* a figure's lead line: in the column, not in a band */
  s.setProperty("--tour-figure-cell", w ? "table-cell" : "none");  /* a table's last column: likewise */
  setVar("--present-tour-w", w);
  setVar("--present-tour-h", w ? 0 : box.getBoundingClientRect().height + 6);
  document.documentElement.style.setProperty("--present-tour-link", "none");  /* the tour's link, while it runs */
}

/* whether the box holds its content: nothing taller than it, and no part of it (a figure's table) scrolled sideways */
function fits(box) {
  if (box.scrollHeight > box.clientHeight + 1) return false;
  var all = [box.shadowRoot || box];
  for (var i = 0; i < all.length; i++) {
    var els = all[i].querySelectorAll("*");
    for (var j = 0; j < els.length; j++) {
      if (els[j].shadowRoot) all.push(els[j].shadowRoot);
      if (els[j].scrollWidth > els[j].clientWidth + 1 && /auto|scroll|hidden/.test(getComputedStyle(els[j]).overflowX)) return false;
    }
  }
  return true;
}

/* what the page's first screen overflows the window by (the grid's key may take a line more beside a narrower grid) */
function overflow() {
  return Math.max(0, document.documentElement.scrollHeight - window.innerHeight);
}

function dock(box) {
  if (!box.getBoundingClientRect().height) { undock(box); return; }  /* the tour ended */
  var W = window.innerWidth, H = window.innerHeight;
  var w = Math.floor(Math.min(DOCK.max, Math.max(DOCK.min, DOCK.share * W), W - DOCK.lab));
  var right = W / H >= DOCK.aspect && w >= DOCK.min;
  if (right) {
    place(box, w);
    if (!fits(box)) {  /* the step's text or figure does not fit the column: a band at the top */
      place(box, 0);
      right = box.getBoundingClientRect().height > DOCK.band * H;  /* unless that takes too much of the grid's room */
      if (right) place(box, w);
    }
  } else {
    place(box, 0);
  }
  /* whatever the first screen still overflows the window by is taken from the grid's height too */
  var taken = right ? 0 : box.getBoundingClientRect().height + 6;
  for (var i = 0; i < 4; i++) {
    var over = overflow();
    if (!over) break;
    taken += over;
    setVar("--present-tour-h", taken);
  }
}

function undock(box) {
  box.removeAttribute("data-dock");
  setVar("--present-tour-w", 0);
  setVar("--present-tour-h", 0);
  document.documentElement.style.removeProperty("--present-tour-link");
}

export function render({ model, el }) {
  var current = null, saved = null, poll = 0, settle = 0, anim = 0, run = 0;
  el.setAttribute("aria-hidden", "true");
  var box = null;  /* presentation mode: the tour's box, found once the page holds this element */
  function docked() {
    if (!model.present || box) return box;
    box = tourBox(el);
    if (box) {
      var again = function () { requestAnimationFrame(function () { dock(box); }); };
      if (typeof ResizeObserver !== "undefined") {  /* the box, and its parts: a new step's text resizes them */
        var ro = new ResizeObserver(again);
        ro.observe(box);
        if (box.shadowRoot) Array.prototype.forEach.call(box.shadowRoot.children, function (c) { ro.observe(c); });
      }
      window.addEventListener("resize", again);
    }
    return box;
  }

  function unmark() {
    if (!current) return;
    current.classList.remove(model.highlight);
    for (var k in STYLE) current.style[k] = saved[k];
    current.removeAttribute("data-tour-step");
    current = null;
  }

  function mark(target) {
    unmark();
    current = target;
    saved = {};
    for (var k in STYLE) { saved[k] = target.style[k]; target.style[k] = STYLE[k]; }
    target.classList.add(model.highlight);
    target.setAttribute("data-tour-step", String(model.nonce));
  }

  /* the height the tour's box takes at the top of the window once the page scrolls (it is sticky) */
  function boxHeight() {
    var b = tourBox(el);
    if (!b || getComputedStyle(b).position !== "sticky") return 0;
    return b.getBoundingClientRect().height;
  }

  /* the subject's box, grown to hold the controls the step names (while they fit in the room under the tour's box) */
  function region(target) {
    var r = target.getBoundingClientRect(), out = {top: r.top, bottom: r.bottom, left: r.left, right: r.right};
    var room = window.innerHeight - boxHeight() - 24;
    (model.controls || []).forEach(function (selectors) {
      var c = find(selectors);
      if (!c) return;
      var b = c.getBoundingClientRect(), top = Math.min(out.top, b.top), bottom = Math.max(out.bottom, b.bottom);
      if (bottom - top > room) return;
      out = {top: top, bottom: bottom, left: Math.min(out.left, b.left), right: Math.max(out.right, b.right)};
    });
    out.height = out.bottom - out.top;
    return out;
  }

  function bringIntoView(target, smooth) {
    if (model.present) return;  /* presentation mode: everything is on the screen, nothing scrolls */
    var r = region(target), top = boxHeight() + 12, room = window.innerHeight - top - 12;
    var want = r.height <= room ? top + (room - r.height) / 2 : top;
    var dx = r.left < 0 ? r.left - 12 : (r.right > window.innerWidth ? Math.min(r.left - 12, r.right - window.innerWidth + 12) : 0);
    var dy = r.top - want;
    if (Math.abs(dy) < 2 && dx === 0) return;
    window.scrollBy({top: dy, left: dx, behavior: smooth && !reducedMotion() ? "smooth" : "auto"});
  }

  function stopDrain() { if (anim) { cancelAnimationFrame(anim); anim = 0; } }

  function drain(id) {
    var input = find(["#gx-progress"]);
    if (!input) return false;
    var ready = input.closest("[data-ready]");
    if (ready && ready.getAttribute("data-ready") !== "true") return false;
    var min = Number(input.min), max = Number(input.max), seconds = model.drain_seconds, begin = null;
    function set(v) {
      input.value = String(v);
      input.dispatchEvent(new Event("input", {bubbles: true}));
    }
    function grab() { stopDrain(); }
    input.addEventListener("pointerdown", grab, {once: true});
    input.addEventListener("keydown", grab, {once: true});
    if (reducedMotion()) { set(max); return true; }
    set(min);
    function frame(now) {
      if (id !== run) return;
      if (begin === null) begin = now;
      var f = Math.min(1, (now - begin) / 1000 / seconds);
      set(min + (max - min) * f);
      anim = f < 1 ? requestAnimationFrame(frame) : 0;
    }
    anim = requestAnimationFrame(frame);
    return true;
  }

  /* a part built meanwhile (the plots, the K-cost table) may have moved the subject: bring it back while the
     step is fresh, unless it is already in view */
  function inView(target) {
    var r = region(target);
    return r.top >= boxHeight() && r.bottom <= window.innerHeight && r.left >= 0 && r.right <= window.innerWidth;
  }
  function recheck(id, target, n) {
    if (id !== run || current !== target) return;
    if (!inView(target)) bringIntoView(target, false);
    if (n < 6) settle = setTimeout(function () { recheck(id, target, n + 1); }, 500);
  }

  function start() {
    run += 1;
    var id = run, began = performance.now(), revealed = false, drained = !model.drain;
    clearTimeout(poll);
    clearTimeout(settle);
    stopDrain();
    unmark();
    var targets = model.targets.slice(), reveal = model.reveal.slice();
    requestAnimationFrame(function () { var b = docked(); if (b) { if (targets.length) dock(b); else undock(b); } });
    if (!targets.length) return;
    function look() {
      if (id !== run) return;
      var target = find(targets);
      if (!target) {
        if (!revealed) {
          var r = find(reveal);
          if (r) { r.scrollIntoView({block: "start"}); revealed = true; }
        }
        if (performance.now() - began < WAIT_MS) poll = setTimeout(look, 100);
        return;
      }
      if (!drained) drained = drain(id);
      if (!drained && performance.now() - began < WAIT_MS) { poll = setTimeout(look, 100); return; }
      mark(target);
      bringIntoView(target, true);
      /* once the smooth scroll has ended (and any part built meanwhile has taken its place), make sure */
      settle = setTimeout(function () { recheck(id, target, 0); }, 900);
    }
    requestAnimationFrame(function () { requestAnimationFrame(look); });  /* after this message's layout */
  }

  model.on("nonce", start);
  start();
}
