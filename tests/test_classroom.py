"""The class link's key (grpo_lab.classroom) and a room's admission (grpo_lab.admission.Admission.admit_class).

The key's signature is checked against an HMAC-SHA256 computed here with the standard library; a key changed in
any one character, cut short, signed under another secret or past its expiry admits no one; a room admits N
browsers, two tabs each, N new pages at once; the address's caps do not apply to the room, and the room's do not
to anyone without the key.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac

import pytest

from grpo_lab import classroom as c
from grpo_lab.admission import TOO_MANY_MINE, TOO_MANY_OPEN, Admission, Limits

SECRET = b"a lecturer's secret"
NOW = 1_800_000_000.0


def test_the_signature_is_hmac_sha256_of_room_size_and_expiry():
    key = c.new_key(150, 2.0, SECRET, now=NOW)
    room, size, expires, mac = key.split(".")
    assert size == "150" and int(expires) == NOW + 7200 and len(room) == 8
    digest = hmac.new(SECRET, f"{room}.{size}.{expires}".encode(), hashlib.sha256).digest()[:c.SIGNATURE_BYTES]
    assert base64.urlsafe_b64decode(mac + "=" * (-len(mac) % 4)) == digest
    assert c.verify(key, SECRET, now=NOW) == c.ClassKey(room, 150, int(expires))
    assert c.new_key(150, 2.0, SECRET, now=NOW) != key  # every key names a room of its own


def test_a_tampered_cut_or_foreign_key_admits_no_one():
    key = c.new_key(30, 1.0, SECRET, now=NOW)
    room, size, expires, mac = key.split(".")
    forged = [f"{room}.{int(size) * 10}.{expires}.{mac}",  # a bigger room
              f"{room}.{size}.{int(expires) + 3600}.{mac}",  # a longer life
              key[:-1], key[:-1] + ("A" if key[-1] != "A" else "B"), key + "A", "", "a.b.c", "x" * 500,
              c.new_key(30, 1.0, b"another server", now=NOW)]
    for text in forged:
        with pytest.raises(c.KeyRefused) as refused:
            c.verify(text, SECRET, now=NOW)
        assert refused.value.status == 403 and str(refused.value) == c.INVALID
    for i in range(len(key)):  # every single character changed
        changed = key[:i] + ("0" if key[i] != "0" else "1") + key[i + 1:]
        with pytest.raises(c.KeyRefused):
            c.verify(changed, SECRET, now=NOW)


def test_an_expired_key_says_when_it_expired():
    key = c.new_key(30, 1.0, SECRET, now=NOW)
    assert c.verify(key, SECRET, now=NOW + 3599)
    with pytest.raises(c.KeyRefused) as refused:
        c.verify(key, SECRET, now=NOW + 3600)
    assert refused.value.status == 410
    assert str(refused.value).startswith("This class link expired at 2027-01-15 09:00 UTC")


def test_bad_sizes_and_lifetimes_are_refused():
    for size in (0, -1, c.MAX_CLASS + 1, True, 2.5):
        with pytest.raises(ValueError):
            c.new_key(size, 1.0, SECRET)
    for hours in (0, -1, 24 * 367):
        with pytest.raises(ValueError):
            c.new_key(10, hours, SECRET)


def test_the_secret_comes_from_the_environment_or_is_random():
    assert c.class_secret({c.SECRET_ENV: "kept"}) == b"kept"
    a, b = c.class_secret({}), c.class_secret({})
    assert len(a) == 32 and a != b


def _admission(size: int, per_address: int = 3):
    t = [0.0]
    adm = Admission(Limits(per_address=per_address, per_visitor=2, new_per_second=0.01, burst=2), clock=lambda: t[0],
                    secret=SECRET, wall=lambda: NOW)
    return adm, adm.class_key(c.new_key(size, 1.0, SECRET, now=NOW)), t


def test_a_room_admits_n_browsers_from_one_address_past_the_address_caps():
    adm, key, t = _admission(5)
    room = adm.room(key)
    for i in range(5):  # five browsers, all from "school", more than its cap of 3 open and its burst of 2
        assert adm.admit_class(key, f"v{i}", "page") is None
        assert adm.admit_class(key, f"v{i}", "build") is None
        adm.opened("school", f"v{i}", room)
    assert room.open == 5 and adm.open_by_address == {}  # counted in the room, not against the address
    assert adm.admit_page("school", "stranger") is None  # the address's own visitors keep their caps
    # a sixth browser: the room is full (403), and nothing is held for it
    reason = adm.admit_class(key, "v5", "page")
    assert reason == c.FULL.format(n=5) and c.refusal_status(reason) == 403 and not room.holds("v5")
    # a place is kept for the key's life: a browser of the room comes back after its tab closed
    adm.closed("school", "v0", room)
    assert room.open == 4


def test_a_room_s_tabs_and_new_pages_are_bounded():
    adm, key, t = _admission(3)
    room = adm.room(key)
    assert [adm.admit_class(key, "v0", "page") for _ in range(7)] == [None] * 6 + [c.BUSY]  # 2N at once
    assert c.refusal_status(c.BUSY) == 429
    t[0] = c.REFILL_S / 3 + 0.01  # one more N/minute later
    assert adm.admit_class(key, "v0", "page") is None
    for i in range(3):
        adm.opened("school", f"v{i}", room)
        adm.opened("school", f"v{i}", room)
    assert adm.admit_class(key, "v1", None) == c.FULL_TABS.format(n=6)  # 2 tabs a place
    adm.closed("school", "v1", room)
    assert adm.admit_class(key, "v1", None) is None  # a tab closed makes room
    # the browser's own cap (per_visitor = 2 here, v0 has 2 open) still holds inside the room
    assert adm.admit_class(key, "v0", None) == TOO_MANY_MINE


def test_without_a_secret_no_key_is_valid_and_a_stranger_keeps_the_address_caps():
    adm = Admission(Limits(per_address=1))
    with pytest.raises(c.KeyRefused):
        adm.class_key(c.new_key(5, 1.0, SECRET))
    adm.opened("a", None)
    assert adm.admit_page("a", None) == TOO_MANY_OPEN


def test_expired_rooms_are_forgotten():
    adm, key, t = _admission(2)
    adm.room(key)
    adm.wall = lambda: NOW + 7200
    other = adm.class_key(c.new_key(2, 1.0, SECRET, now=NOW + 7200))
    adm.room(other)
    assert list(adm.rooms) == [other.room]


def _in_children(n: int, work, while_held=None) -> list:
    """``work(i)`` in ``n`` processes forked from this one and released together; what each returned (JSON). With
    ``while_held``, ``while_held(results)`` runs here while the children still live (they wait to be let go), so
    what they hold can be seen before they exit."""
    import json
    import os

    go_read, go_write = os.pipe()
    end_read, end_write = os.pipe()
    children = []
    for i in range(n):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                os.close(read)
                os.read(go_read, 1)
                os.write(write, json.dumps(work(i)).encode())
                os.close(write)
                if while_held is not None:
                    os.read(end_read, 1)
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        children.append((pid, read))
    os.write(go_write, b"x" * n)
    out = []
    for pid, read in children:
        chunks = []
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
        os.close(read)
        out.append(json.loads(b"".join(chunks)))
    try:
        if while_held is not None:
            while_held(out)
    finally:
        os.write(end_write, b"x" * n)
        statuses = [os.waitpid(pid, 0)[1] for pid, _ in children]
        for fd in (go_read, go_write, end_read, end_write):
            os.close(fd)
    assert statuses == [0] * n
    return out


def test_a_room_is_counted_once_by_processes_forked_after_it():
    """The ledger is made with the admission, before a fork (``--num-procs``): two processes each asked for a
    room of 5 by 5 browsers of their own admit 5 in all; the pages they open and close, and the tokens they take,
    are the room's, seen by the process that forked them while they live. Once they have exited their pages are
    gone with them; their places stay (a place lasts the key's life)."""
    adm, key, t = _admission(5, per_address=100)
    room = adm.room(key)
    assert room.places == 0

    def arrive(child: int) -> tuple[list, int]:
        admitted = []
        for i in range(5):
            visitor = f"c{child}v{i}"
            if adm.admit_class(key, visitor, "page") is None:
                adm.opened("school", visitor, adm.room(key))
                admitted.append(visitor)
        if len(admitted) > 1:  # a session ended in this process: its page freed for every process
            adm.closed("school", admitted[0], adm.room(key))
        return admitted, int(len(admitted) > 1)

    def seen(out) -> None:
        admitted, closed = [v for a, _ in out for v in a], sum(n for _, n in out)
        assert len(admitted) == 5 and room.places == 5 and room.open == 5 - closed and closed >= 1
        assert all(room.holds(v) for v in admitted) and not room.holds("c0v9")
        assert adm.admit_class(key, "late", "page") == c.FULL.format(n=5)  # the parent sees the room full too

    out = _in_children(2, arrive, while_held=seen)
    admitted = [v for a, _ in out for v in a]
    assert room.open == 0 and room.places == 5 and adm.admit_class(key, "late", "page") == c.FULL.format(n=5)
    # the room's page bucket: 2N = 10 at once, 5 taken by the arrivals; two processes asking 10 each get 5 in all
    took = _in_children(2, lambda _: sum(adm.admit_class(key, admitted[0], "page") is None for _ in range(10)))
    assert sum(took) == 5
    assert adm.admit_class(key, admitted[0], "page") == c.BUSY


def test_the_pages_of_a_killed_server_process_are_freed_for_the_room():
    """A server process (a real fork) holds five of the six pages a room of 3 opens (2 a place), this one the
    sixth: the room is full. The other is killed (SIGKILL, no clean-up of its own): as soon as it is dead, before
    its parent reaps it (a zombie), its five pages are free and the room admits its 3 places' 2N pages again; this
    process's live page is never freed."""
    import os
    import signal

    adm, key, t = _admission(3, per_address=100)
    room = adm.room(key)
    assert adm.admit_class(key, "v0", "page") is None
    adm.opened("school", "v0", room)
    ready_read, ready_write = os.pipe()
    hold_read, hold_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: opens its pages, says so, waits to be killed; never returns into pytest
        try:
            for v in ("v1", "v2"):
                assert adm.admit_class(key, v, "page") is None
            for v in ("v0", "v1", "v1", "v2", "v2"):
                assert adm.admit_class(key, v, None) is None
                adm.opened("school", v, adm.room(key))
            os.write(ready_write, b"x")
            os.read(hold_read, 1)
        finally:
            os._exit(1)
    try:
        assert os.read(ready_read, 1) == b"x"
        assert room.open == 6 and room.places == 3
        assert adm.admit_class(key, "v1", None) == c.FULL_TABS.format(n=6)
        assert adm.admit_class(key, "v9", "page") == c.FULL.format(n=3)
        os.kill(pid, signal.SIGKILL)
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped: a zombie
        assert adm.admit_class(key, "v1", None) is None  # the killed process's pages are free
        assert room.open == 1  # this process's page is kept
        for v in ("v1", "v1", "v2", "v2", "v0"):  # the room's three places open their pages again, 2N in all
            assert adm.admit_class(key, v, None) is None
            adm.opened("school", v, room)
        assert room.open == 6 and adm.admit_class(key, "v2", None) == c.FULL_TABS.format(n=6)
        assert adm.admit_class(key, "v9", "page") == c.FULL.format(n=3)  # places still last the key's life
        adm.closed("school", "v0", room)
        assert room.open == 5
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        for fd in (ready_read, ready_write, hold_read, hold_write):
            os.close(fd)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def test_a_room_past_the_ledger_s_slots_counts_in_its_process_alone():
    adm, key, t = _admission(2)
    adm.ledger = c.Ledger(slots=1, wall=lambda: NOW)
    first = adm.room(key)
    other = adm.class_key(c.new_key(2, 1.0, SECRET, now=NOW))
    second = adm.room(other)
    assert first.ledger is adm.ledger and second.ledger is not adm.ledger  # the one slot is the first room's
    for room_key in (key, other):
        assert [adm.admit_class(room_key, f"v{i}", "page") for i in range(3)] == [None, None, c.FULL.format(n=2)]
