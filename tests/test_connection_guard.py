"""grpo_lab.connection_guard's parts, without a lab server: the connection caps derived from the open-file limit,
the limit raised to the hard one, and an accept out of files pausing instead of failing at every pass of the loop."""

from __future__ import annotations

import asyncio
import errno
import resource
import socket
import subprocess
import sys

from grpo_lab import connection_guard as g
from grpo_lab.socket_guard import ClientLog
from grpo_lab.testing.run_async import run_async


def test_connections_are_capped_in_all_and_per_address_below_the_open_file_limit():
    counts = g.ConnectionCounts(1024)
    assert counts.total == 1024 - g.RESERVED_FILES and counts.per_address == int(counts.total * g.ADDRESS_SHARE)
    for _ in range(counts.per_address):
        assert counts.admit("flood") is None
    assert "from this address" in counts.admit("flood")
    for _ in range(counts.total - counts.per_address):  # another address finds the rest
        assert counts.admit("other") is None
    assert "as many as this process allows" in counts.admit("third")
    assert "as many as this process allows" in counts.admit(None)  # behind a proxy: the total alone
    counts.release("flood")
    assert counts.admit(None) is None and counts.by_address["flood"] == counts.per_address - 1
    assert g.ConnectionCounts(100_000).total == 100_000 - 100_000 // 8  # an eighth kept on a large limit


def test_the_soft_open_file_limit_is_raised_to_the_hard_one():
    code = "from grpo_lab.connection_guard import raise_open_files; print(*raise_open_files())"

    def limited():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 700))

    out = subprocess.run([sys.executable, "-c", code], preexec_fn=limited, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["700", "700"]


def test_an_accept_out_of_files_pauses_accepting_with_a_line_per_pause():
    said = []

    class Sink:
        def log(self, level, fmt, *args):
            said.append(fmt % args)

    async def main():
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)

        class OutOfFiles:  # the listening socket, whose first three accepts fail for want of files
            fails, calls = 3, 0

            def fileno(self):
                return listener.fileno()

            def accept(self):
                self.calls += 1
                if self.fails:
                    self.fails -= 1
                    raise OSError(errno.EMFILE, "Too many open files")
                return listener.accept()

        sock, accepted = OutOfFiles(), []
        remove = g._accept_handler(sock, lambda conn, addr: accepted.append(conn))
        client = socket.create_connection(listener.getsockname())
        for _ in range(400):
            if accepted:
                break
            await asyncio.sleep(0.05)
        remove()
        for conn in [*accepted, client, listener]:
            conn.close()
        return len(accepted), sock.calls

    saved = g.CONNECTION_LOG
    g.CONNECTION_LOG = ClientLog(logger=Sink())
    try:
        accepted, calls = run_async(main())  # its own loop, in a thread: a browser test may hold this one
    finally:
        g.CONNECTION_LOG = saved
    assert accepted == 1  # the connection is taken once files are back
    assert calls <= 3 + 2  # three failures, each a pause: not an accept at every pass of the loop
    assert len(said) == 3 and all("accepting paused for" in line and "Too many open files" in line for line in said)
