"""Panel's ``/components/<module>/...`` route serves only the lab's own components (grpo_lab.components).

Before, the route imported whatever module a visitor named: ``this`` printed the Zen of Python into the server's
log, ``torch`` loaded 160 MB of libraries, a ``..`` name raised a traceback (HTTP 500). Now any name outside the
lab's imported modules is a 404, with nothing imported (checked in the log and in the libraries the serving
processes have mapped, read from /proc) and no traceback; a real page, on every tab and mode, still gets every
component and resource it asks for, and a component file Panel lists (a template's CSS) is still served.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

from grpo_lab.testing.lab_server import PAGE_TEXT, wait_readout
from grpo_lab.testing.logged_server import logged_server

#: (module named in the URL, what importing it leaves behind: a line in the log or a library mapped)
HOSTILE = ["/components/this/x/__css__/a.css", "/components/torch/Tensor/__css__/a.css",
           "/components/os/path/__css__/a.css", "/components/../x/__css__/a.css",
           "/components/grpo_lab.trainer/x/__css__/a.css", "/components/antigravity/x/__css__/a.css"]
#: a component file Panel lists (BootstrapTemplate._css), which the route must keep serving
LISTED = "/components/panel.template.bootstrap/BootstrapTemplate/_css/bootstrap.css"


def status(url: str) -> int:
    req = urllib.request.Request(url)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def mapped(pid: int) -> str:
    with open(f"/proc/{pid}/maps") as f:
        return f.read()


def raw_get(origin: str, path: str) -> int:
    """GET ``path`` as written (``..`` kept: urllib would keep it too, but say so), the status code."""
    import http.client

    parts = urlsplit(origin)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    conn.request("GET", path)
    code = conn.getresponse().status
    conn.close()
    return code


@pytest.mark.slow
def test_other_modules_are_404_and_never_imported():
    with logged_server(num_procs=2) as (url, log):
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
        for pid in log.pids():
            assert "libtorch" not in mapped(pid)
        for path in HOSTILE:
            for _ in range(2):  # both processes, most likely
                assert raw_get(origin, path) == 404, path
        assert status(origin + LISTED) == 200  # the route itself still works for what Panel lists
        text = log()
        assert "The Zen of Python" not in text and "Beautiful is better than ugly" not in text
        assert "Traceback" not in text and "500 GET" not in text
        for pid in log.pids():
            assert "libtorch" not in mapped(pid), pid  # torch was not imported


@pytest.mark.browser
@pytest.mark.slow
def test_a_real_page_gets_every_component_it_asks_for(browser):
    with logged_server(num_procs=2) as (url, log):
        asked, failed = [], []
        for query in ("", "?embed=true", "?present=true", "?replay=sign-vs-dr_grpo", "?tour=1"):
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            page.on("request", lambda r: asked.append(r.url) if "/components/" in r.url else None)
            page.on("requestfailed", lambda r: failed.append(r.url))
            page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
            page.goto(url + query)
            if "replay" in query:
                page.wait_for_function(f"({PAGE_TEXT})().includes('Replay a run')", timeout=30_000)
            else:
                wait_readout(page)
                assert page.locator("#gx-grid").count() == 1  # the grid rendered
            if not query:
                for tab, words in (("Advantages", "Advantage explorer"), ("Replay", "Replay a run")):
                    page.get_by_text(tab, exact=True).click()
                    page.wait_for_function(f"({PAGE_TEXT})().includes({words!r})", timeout=30_000)
            page.wait_for_timeout(500)
            context.close()
        assert failed == []
        assert all(status(u) == 200 for u in set(asked))
        assert "Traceback" not in log()
