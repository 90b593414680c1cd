"""Serve a Panel app on a free localhost port and wait until it answers (tests and the benchmark)."""

from __future__ import annotations

import socket
import time
import urllib.request

__all__ = ["serve_local"]


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
