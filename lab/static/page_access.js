/* grpo-lab PageAccess (lab/access.py): keyboard and screen-reader fixes for Panel's and Bokeh's own widgets.
 *
 * Panel draws every pane in a shadow root, and some Bokeh widgets leave gaps a keyboard or a screen
 * reader falls into. This component (placed once on the page, drawing nothing) walks the document and
 * every shadow root, and again when elements are added, and:
 *   - adopts the page's focus and contrast stylesheet (model.css) into each root (a visible focus ring);
 *   - gives a page with no visible title (model.heading: the embed) a visually hidden h1 with that text;
 *   - makes Bokeh tabs a tablist: role tab, aria-selected, Enter / Space to open one, Left / Right / Home /
 *     End to move between them, and the tab headers first in the Tab order (Bokeh puts them after the tab's
 *     content);
 *   - names sliders (noUiSlider handles) after their title, with the value in words;
 *   - names the buttons and the slider of Panel's Player (the replay's step control);
 *   - names the spin buttons of number inputs and takes them out of the Tab order (the input's own
 *     ArrowUp / ArrowDown do the same), names a file input, and takes the plots' event layers (no
 *     keyboard function) out of the Tab order.
 *   - keeps the focus on a Bokeh button that re-renders after a press (the Play toggle, whose label changes to
 *     Pause and back, gets a new <button>): the focus fell to the page's body, and Space then scrolled the page;
 *     it now goes to the button that took the old one's place, so Enter and Space toggle it again.
 * It never runs on a slider's or a readout's text change (they add no elements), so moving a control
 * costs nothing extra.
 */
export function render({ model, el }) {
  el.style.display = "none";
  var sheet = null;
  try {
    sheet = new CSSStyleSheet();
    sheet.replaceSync(model.css);
  } catch (e) { sheet = null; }
  var roots = new WeakSet(), queued = false;
  var observer = new MutationObserver(function (records) {
    for (var i = 0; i < records.length; i++) {
      if (records[i].addedNodes.length && !quiet(records[i].target)) { queue(); return; }
    }
  });

  /* text written into outputs, readouts and the hover tip adds nodes but never a control */
  function quiet(node) {
    return node.nodeType !== 1 || node.nodeName === "OUTPUT" || node.nodeName === "SPAN" ||
      (node.closest && node.closest(".gx-readouts, .gx-tip, .noUi-tooltip")) != null;
  }

  function queue() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(function () { queued = false; visit(document); });
  }

  function visit(root) {
    if (!roots.has(root)) {
      roots.add(root);
      if (sheet && root !== document && root.adoptedStyleSheets) root.adoptedStyleSheets = root.adoptedStyleSheets.concat([sheet]);
      if (sheet && root === document) document.adoptedStyleSheets = document.adoptedStyleSheets.concat([sheet]);
      observer.observe(root, { childList: true, subtree: true });
    }
    patch(root);
    var all = root.querySelectorAll("*");
    for (var i = 0; i < all.length; i++) if (all[i].shadowRoot) visit(all[i].shadowRoot);
  }

  function text(node) { return node ? node.textContent.replace(/\s+/g, " ").trim() : ""; }

  function patch(root) {
    /* the page's content is its main landmark (one per page: the lab's outermost column) */
    if (root === document) {
      var top = document.querySelector(".grpo-lab");
      if (top && !top.hasAttribute("role")) top.setAttribute("role", "main");
      heading();
    }
    tabs(root);
    sliders(root);
    spinners(root);
    players(root);
    root.querySelectorAll(".bk-layer.bk-events[tabindex]").forEach(function (n) { n.setAttribute("tabindex", "-1"); });
    root.querySelectorAll("input[type=file]:not([aria-label])").forEach(function (n) {
      n.setAttribute("aria-label", "Choose a run record file to upload");
    });
  }

  /* a page that shows no title (the embed) gets its name as a visually hidden h1, first in the main landmark (the
     lab's root, whose children are drawn in its shadow root: the h1 goes there, and back if a redraw drops it) */
  function heading() {
    var top = document.querySelector(".grpo-lab");
    var where = top && top.shadowRoot ? top.shadowRoot : document.body;
    if (!model.heading || where.querySelector("h1.page-access-heading")) return;
    var h = document.createElement("h1");
    h.className = "page-access-heading";
    h.textContent = model.heading;
    h.style.cssText = "position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;" +
      "clip-path:inset(50%);white-space:nowrap;border:0";
    var first = Array.prototype.find.call(where.childNodes, function (n) { return n.nodeType === 1 && n.nodeName !== "STYLE"; });
    where.insertBefore(h, first || null);
  }

  function tabs(root) {
    var header = Array.prototype.find.call(root.children || [], function (c) { return c.classList.contains("bk-header"); });
    if (!header) return;
    var wrapper = header.querySelector(".bk-headers-wrapper") || header;
    var list = Array.prototype.slice.call(wrapper.querySelectorAll(".bk-tab"));
    if (!list.length) return;
    /* the headers first in the Tab order: Bokeh appends them after the tab's content */
    if (root.firstElementChild !== header && header.parentNode === root) {
      var firstChild = Array.prototype.find.call(root.children, function (c) { return c.nodeName !== "STYLE" && c.nodeName !== "LINK"; });
      if (firstChild && firstChild !== header) root.insertBefore(header, firstChild);
    }
    wrapper.setAttribute("role", "tablist");
    list.forEach(function (tab, i) {
      tab.setAttribute("role", "tab");
      tab.setAttribute("aria-selected", tab.classList.contains("bk-active") ? "true" : "false");
      if (tab.__grpoKeys) return;
      tab.__grpoKeys = true;
      tab.addEventListener("keydown", function (e) {
        var tabsNow = Array.prototype.slice.call(wrapper.querySelectorAll(".bk-tab"));
        var at = tabsNow.indexOf(tab), to = -1;
        if (e.key === "Enter" || e.key === " ") to = at;
        else if (e.key === "ArrowRight") to = (at + 1) % tabsNow.length;
        else if (e.key === "ArrowLeft") to = (at - 1 + tabsNow.length) % tabsNow.length;
        else if (e.key === "Home") to = 0;
        else if (e.key === "End") to = tabsNow.length - 1;
        if (to < 0) return;
        e.preventDefault();
        tabsNow[to].focus();
        tabsNow[to].click();
      });
      tab.addEventListener("click", function () {
        requestAnimationFrame(function () {
          wrapper.querySelectorAll(".bk-tab").forEach(function (t) {
            t.setAttribute("aria-selected", t.classList.contains("bk-active") ? "true" : "false");
          });
        });
      });
    });
  }

  function sliders(root) {
    root.querySelectorAll(".noUi-handle").forEach(function (handle) {
      var title = root.querySelector(".bk-slider-title");
      var name = text(title).replace(/:.*$/, "");
      if (name && handle.getAttribute("aria-label") !== name) handle.setAttribute("aria-label", name);
      if (!handle.__grpoValue) {
        handle.__grpoValue = true;
        var value = function () {
          var now = handle.getAttribute("aria-valuenow");
          if (now !== null && handle.getAttribute("aria-valuetext") !== now) handle.setAttribute("aria-valuetext", now);
        };
        value();
        new MutationObserver(value).observe(handle, { attributes: true, attributeFilter: ["aria-valuenow"] });
      }
    });
  }

  /* Panel's Player (the replay's step control): icon-only buttons and an unlabelled range input */
  var PLAYER = {first: "First step", previous: "Previous step", reverse: "Play backwards", pause: "Pause",
                play: "Play", next: "Next step", last: "Last step", slower: "Slower", faster: "Faster"};
  function players(root) {
    if (!root.querySelector("button.play") || !root.querySelector("button.pause")) return;
    Object.keys(PLAYER).forEach(function (cls) {
      root.querySelectorAll("button." + cls + ":not([aria-label])").forEach(function (b) {
        b.setAttribute("aria-label", PLAYER[cls]);
        b.setAttribute("title", PLAYER[cls]);
      });
    });
    root.querySelectorAll("input[type=range]:not([aria-label])").forEach(function (n) { n.setAttribute("aria-label", "Step"); });
  }

  function spinners(root) {
    root.querySelectorAll(".bk-spin-btn").forEach(function (b) {
      if (b.hasAttribute("aria-label")) return;
      var input = b.closest(".bk-input-group") || root;
      var label = text(input.querySelector("label")) || "the value";
      b.setAttribute("aria-label", (b.classList.contains("bk-spin-btn-up") ? "Increase " : "Decrease ") + label);
      b.setAttribute("tabindex", "-1");
    });
  }

  /* the button pressed last (by Enter, Space or a click), its shadow root, and until when its focus is kept */
  var pressed = null;
  function deepActive() {
    var a = document.activeElement;
    while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
    return a;
  }
  function keepFocus() {
    if (!pressed) return;
    var a = deepActive();
    if (performance.now() > pressed.until || (a && a !== document.body && a !== pressed.button)) { pressed = null; return; }
    if (!pressed.button.isConnected && (!a || a === document.body)) {
      var b = pressed.root.querySelector("button.bk-btn");
      if (b) { b.focus(); pressed.button = b; }
    }
    requestAnimationFrame(keepFocus);
  }
  function remember(e) {
    if (e.type === "keydown" && e.key !== "Enter" && e.key !== " ") return;
    var t = e.composedPath()[0];
    if (!t || t.nodeName !== "BUTTON" || !t.classList.contains("bk-btn") || t.getRootNode() === document) return;
    var watching = pressed !== null;
    pressed = {button: t, root: t.getRootNode(), until: performance.now() + 5000};  /* the server's answer re-renders it */
    if (!watching) requestAnimationFrame(keepFocus);
  }
  document.addEventListener("keydown", remember, true);
  document.addEventListener("click", remember, true);

  visit(document);
  /* elements Panel adds later (a tab opened for the first time) are seen by the observers; these
     catch roots created before this component rendered */
  setTimeout(queue, 300);
  setTimeout(queue, 1500);
}
