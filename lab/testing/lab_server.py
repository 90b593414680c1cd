"""Helpers for the lab's browser tests: serve ``lab/app.py`` on a free port, read text through shadow roots."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app.py"  #: the lab's app (grpo_lab/app.py)


def block_outside(page, allowed) -> list[str]:
    """Route every request of ``page``: continue those ``allowed(url)`` accepts, abort and record the others.

    Returns the list the aborted URLs are appended to (the offline checks assert it stays empty).
    """
    attempted: list[str] = []

    def route(r):
        if allowed(r.request.url):
            r.continue_()
        else:
            attempted.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return attempted


def open_local(page, url: str, ready: str, timeout: float = 30_000) -> list[str]:
    """Open ``url`` (a locally served page) with every request to another host aborted and recorded
    (:func:`block_outside`), and wait until the JavaScript expression ``ready`` is true. Returns the
    list of aborted URLs (the offline checks assert it stays empty)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    outside = block_outside(page, lambda u: u.startswith(origin) or u.startswith(origin.replace("http", "ws", 1)))
    page.goto(url)
    page.wait_for_function(f"() => {ready}", timeout=timeout)
    return outside

#: JavaScript: the text of the first element with a CSS class, searched through every shadow root
READ_CLASS = """cls => {
  function find(root) {
    const el = root.querySelector('.' + cls);
    if (el) return el;
    for (const n of root.querySelectorAll('*')) if (n.shadowRoot) { const f = find(n.shadowRoot); if (f) return f; }
    return null;
  }
  const e = find(document);
  return e ? e.textContent.trim() : null;
}"""

#: JavaScript: the visible text (into shadow roots, without <style>/<script>) of every element with a CSS class, trimmed
TEXTS_OF_CLASS = """(cls) => {
  const text = (node) => {  // visible text, descending into shadow roots, skipping <style>
    if (node.nodeType === 3) return node.textContent;
    if (node.tagName === 'STYLE' || node.tagName === 'SCRIPT') return '';
    let t = '';
    if (node.shadowRoot) for (const c of node.shadowRoot.childNodes) t += text(c);
    for (const c of node.childNodes) t += text(c);
    return t;
  };
  const out = [];
  const walk = (root) => root.querySelectorAll('*').forEach((el) => {
    if (el.tagName !== 'STYLE' && el.classList && el.classList.contains(cls)) out.push(text(el).trim());
    if (el.shadowRoot) walk(el.shadowRoot);
  });
  walk(document);
  return out;
}"""

#: JavaScript: the visible text of the whole page, through shadow roots, without <style>/<script>
PAGE_TEXT = """() => {
  const out = [];
  function walk(node) {
    if (node.nodeType === 3) { out.push(node.textContent); return; }
    if (node.nodeType !== 1 && node.nodeType !== 11) return;
    if (node.nodeName === 'STYLE' || node.nodeName === 'SCRIPT') return;
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const c of node.childNodes) walk(c);
  }
  walk(document.body);
  return out.join(' ');
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.time() > deadline:
            raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")
        time.sleep(0.3)


@contextlib.contextmanager
def serve(cmd: list[str] | None = None, port: int | None = None, env: dict | None = None, path: str = "/app",
          cwd: str | Path | None = None):
    """Run a lab server (``panel serve lab/app.py`` by default) until the block ends; yields its base URL."""
    port = port or free_port()
    cmd = cmd or [sys.executable, "-m", "panel", "serve", str(APP), "--port", str(port), "--address", "127.0.0.1",
                  "--allow-websocket-origin", f"127.0.0.1:{port}", "--num-procs", "1"]
    log = open(os.devnull, "wb")
    # a session of its own: with --num-procs N the server forks workers, which a signal to the parent alone leaves
    # running after the test; the whole group is stopped at the end
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, cwd=cwd,
                            start_new_session=True)

    def signal_all(sig: int) -> None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass

    try:
        url = f"http://127.0.0.1:{port}{path}"
        wait_http(url)
        yield url
    finally:
        signal_all(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            signal_all(signal.SIGKILL)
            proc.wait()
        log.close()


def wait_readout(page, cls: str = "readout-useful", timeout: float = 30_000) -> str:
    page.wait_for_function(f"({READ_CLASS})('{cls}') !== null && ({READ_CLASS})('{cls}') !== ''", timeout=timeout)
    return page.evaluate(READ_CLASS, cls)


def show_plots(page, timeout: float = 60_000) -> None:
    """Scroll to the live lab's plots (built when the visitor first gets to them: grpo_lab.views.in_view), wait until
    they are drawn (``lab-plots-ready``), then scroll back to the top of the page."""
    page.locator(".lab-plots").first.scroll_into_view_if_needed(timeout=timeout)
    page.locator(".lab-plots-ready").first.wait_for(state="attached", timeout=timeout)
    page.evaluate("() => window.scrollTo(0, 0)")


def grid_tip(page, x: float, y: float, cols: int, rows: int) -> str:
    """Point at the grid view's cell (x, y) (row 0 at the bottom) and return the hover tip's text."""
    box = page.locator("#gx-grid").bounding_box()
    page.mouse.move(box["x"] + (x + 0.5) / cols * box["width"], box["y"] + (rows - 1 - y + 0.5) / rows * box["height"])
    tip = page.locator("#gx-tip")
    tip.wait_for(state="visible", timeout=5_000)
    return tip.text_content()


#: JavaScript (for tests, the benchmark and people scripting the page): the text of every element with
#: one of the given CSS classes, looking inside shadow roots too (the served lab's Bokeh views have them).
#: Call with an array of class names.
READ_HOOKS_JS = """(classes) => {
  const found = {};
  const visit = (root) => {
    for (const el of root.querySelectorAll("*")) {
      for (const c of classes) if (el.classList.contains(c) && !(c in found)) found[c] = el.textContent.trim();
      if (el.shadowRoot) visit(el.shadowRoot);
    }
  };
  visit(document);
  return found;
}"""

#: JavaScript: set the exported page's controls by name, e.g. {progress: 1, K: 16, filter: true,
#: band: [0.2, 0.8]}, in that order, as a reader's input would (each fires the control's own event).
SET_CONTROLS_JS = """(values) => {
  const set = (id, v) => {
    const el = document.getElementById(id);
    if (el.type === "checkbox") el.checked = !!v; else el.value = String(v);
    el.dispatchEvent(new Event(el.type === "checkbox" ? "change" : "input", {bubbles: true}));
  };
  for (const [name, v] of Object.entries(values)) {
    if (name === "band") { set("gx-band-lo", v[0]); set("gx-band-hi", v[1]); } else set("gx-" + name, v);
  }
}"""


def serve_local(app, tries: int = 300):
    """``(server, url)``: ``app`` (a function building one session's page) served threaded on 127.0.0.1."""
    import panel as pn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = pn.serve(app, port=port, address="127.0.0.1", threaded=True, show=False,
                   websocket_origin=[f"127.0.0.1:{port}"])
    url = f"http://127.0.0.1:{port}/"
    for _ in range(tries):
        try:
            urllib.request.urlopen(url, timeout=2)
            break
        except OSError:
            time.sleep(0.1)
    return srv, url
