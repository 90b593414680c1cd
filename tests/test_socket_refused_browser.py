"""The refused-socket notice (lab/static/socket_refused.js) watches the Bokeh document's socket only (issue 41): in real
Chromium against the served lab, once the page's own socket is open the browser's WebSocket constructor is back on the
window, and another socket that the server closes before it opens brings no notice and no reload. (The notice and its
retry on a refused document socket: tests/test_server_floods.py.)"""

from __future__ import annotations

import pytest

from grpo_lab.testing.lab_server import wait_readout
from grpo_lab.testing.logged_server import logged_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: JavaScript: open a socket to this page's host at another path (the server answers it 404: closed before it opens),
#: and resolve once it has closed, with whether it ever opened and the socket's class
OTHER_SOCKET = """async () => { const url = location.origin.replace('http', 'ws') + '/not-the-document/socket';
  const ws = new WebSocket(url); let opened = false;
  ws.addEventListener('open', () => { opened = true; });
  await new Promise(done => ws.addEventListener('close', done));
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  return {opened, native: Object.getPrototypeOf(ws) === WebSocket.prototype && ws instanceof WebSocket,
          notice: !!document.getElementById('lab-socket-notice'), watch: window.__labSocketWatch}; }"""


def test_only_the_documents_socket_is_watched_and_the_constructor_is_given_back(browser):
    with logged_server() as (url, _log):
        context = browser.new_context()
        page = context.new_page()
        try:
            page.goto(url)
            wait_readout(page)
            # the document's socket seen, and with it the browser's own constructor put back (the same step)
            assert page.evaluate("() => window.__labSocketWatch") == "watched"
            got = page.evaluate(OTHER_SOCKET)
            assert got == {"opened": False, "native": True, "notice": False, "watch": "watched"}, got
            assert page.evaluate("() => sessionStorage.getItem('grpo-lab-socket-retries')") is None
        finally:
            context.close()
