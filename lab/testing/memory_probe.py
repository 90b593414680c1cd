"""A ``--plugins`` module for tests/test_server_memory.py: ``GET /memory-probe`` reports, from inside a served lab,
which sessions, documents, lab views and uploads are still reachable (after a full garbage collection) and how many
releases ``grpo_lab.memory`` has run. Test-only: the lab never serves it."""

from __future__ import annotations

import gc
import json

from tornado import web


class MemoryProbe(web.RequestHandler):
    def get(self) -> None:
        from bokeh.document import Document
        from bokeh.server.session import ServerSession
        from panel.io.state import state

        from grpo_lab import memory
        from grpo_lab.replay.upload_job import UploadJob
        from grpo_lab.replay.upload_pool import Read
        from grpo_lab.sims.record import RunRecord
        from grpo_lab.views.live import LiveLab

        gc.collect()
        objects = gc.get_objects()
        contexts = self.application._applications.values()
        self.write(json.dumps({
            "releases": memory.releases(),
            "alive": sum(memory.alive_sessions(c.server_context) for c in contexts),
            "server_sessions": sum(isinstance(o, ServerSession) for o in objects),
            "cached_sessions": len(state._sessions),
            # a Document that Bokeh destroyed (roots and models let go: no ``_roots`` left) can stay referenced a
            # while by a context variable's value in the server thread's context (Panel's current document, until
            # the next session replaces it); it holds nothing, so only documents not destroyed are counted here
            "documents": sum(isinstance(o, Document) and hasattr(o, "_roots") for o in objects),
            "lab_views": sum(isinstance(o, LiveLab) for o in objects),
            # what an upload makes: its job, its read (whose future holds the packed result) and the record
            "uploads": sum(isinstance(o, (UploadJob, Read, RunRecord)) for o in objects),
            "shown_views": len(state._views),
            "frozen": gc.get_freeze_count(),
        }))


ROUTES = [("/memory-probe", MemoryProbe)]


def probe(base: str) -> dict:
    """What ``GET /memory-probe`` reports from the server at ``base`` (``http://host:port``)."""
    import urllib.request

    with urllib.request.urlopen(base + "/memory-probe", timeout=60) as r:
        return json.loads(r.read())
