"""Admission control (grpo_lab.admission) on a served lab, with real HTTP and real Chromium.

* the token bucket (unit): ``burst`` at once, then ``rate`` per second, against a fake clock;
* the visitor cookie ``grpo_lab_visitor`` on a page response of a request without one (HttpOnly, SameSite=Lax,
  Path=/), and not again once the browser has it;
* new pages over the address's bucket: HTTP 429 and the lab's short page, built no session (no Bokeh document
  in the answer);
* open tabs over the cap (per browser, per address): the next page gets HTTP 429 and says why, in Chromium;
  closing a tab makes room again;
* an idle page is released after ``--idle-minutes`` and shows the notice that it can reload;
* a too-long address (100 KB, 1 MB) gets the lab's 414 page in Chromium, not a reset connection.
"""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from grpo_lab.testing.lab_server import PAGE_TEXT, wait_readout
from grpo_lab.testing.logged_server import logged_server
from grpo_lab.admission import (CLOSED_NOTICE, DEFAULT_LIMITS, RETRY_S, TOO_MANY_MINE, TOO_MANY_NEW,
                                TOO_MANY_OPEN, VISITOR_COOKIE, Admission, FairGate, Limits, TokenBucket)


def get(url: str, cookie: str | None = None):
    """(status, headers, body) of a GET."""
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def test_token_bucket_burst_then_rate():
    t = [0.0]
    bucket = TokenBucket(rate=2.0, burst=3, now=t[0])
    assert [bucket.take(t[0]) for _ in range(4)] == [True, True, True, False]
    t[0] = 0.49  # 0.98 of a token refilled
    assert not bucket.take(t[0])
    t[0] = 0.51
    assert bucket.take(t[0]) and not bucket.take(t[0])
    t[0] = 100.0  # never more than the burst
    assert sum(bucket.take(t[0]) for _ in range(10)) == 3


def test_fair_gate_serves_addresses_in_turn():
    """A flood of 20 from one address queued first, then one from another: the other is served after the slots
    under way and one of the flood's, not after the whole flood; within an address, in arrival order."""
    import asyncio

    order, peak = [], [0]

    async def main():
        gate = FairGate(slots=2)
        active = [0]

        async def visit(key, i):
            async with gate.turn(key):
                active[0] += 1
                peak[0] = max(peak[0], active[0])
                order.append((key, i))
                await asyncio.sleep(0.01)
                active[0] -= 1

        tasks = [asyncio.create_task(visit("flood", i)) for i in range(20)]
        await asyncio.sleep(0)
        tasks.append(asyncio.create_task(visit("newcomer", 0)))
        await asyncio.gather(*tasks)
        assert gate.busy == 0 and not gate.queues

    _run_apart(main())

    async def nested():  # a turn inside a turn (a page request building its session) does not wait on itself
        gate = FairGate(slots=1)
        async with gate.turn("a"):
            async with gate.turn("a"):
                pass
        return gate.busy

    assert _run_apart(asyncio.wait_for(nested(), 5)) == 0
    assert peak[0] == 2 and len(order) == 21
    assert order.index(("newcomer", 0)) == 2  # two under way, then the newcomer: it had no turn among the waiting
    assert [i for k, i in order if k == "flood"] == list(range(20))


def test_a_class_room_takes_its_weight_of_turns_in_a_row_and_any_other_address_still_gets_its_turn():
    """Weighted round robin (FairGate's weight): a room of 12 waiting and an address's flood of 12 waiting, queued
    together: the room takes ROOM_TURNS turns for each of the flood's; a newcomer arriving among them waits no more
    than one round of them."""
    import asyncio

    from grpo_lab.admission import ROOM_TURN_PREFIX, ROOM_TURNS, room_turns

    room = ROOM_TURN_PREFIX + "r"
    assert room_turns(room) == ROOM_TURNS > 1 and room_turns("10.0.0.1") == 1
    order = []

    async def main():
        gate = FairGate(slots=1, weight=room_turns)

        async def visit(key, visitor, i):
            async with gate.turn(key, visitor):
                order.append(key)
                await asyncio.sleep(0)

        queued = asyncio.Event()

        async def hold():
            async with gate.turn("holder", "h"):  # holds the slot while the others queue
                await queued.wait()

        first = asyncio.create_task(hold())
        await asyncio.sleep(0)
        tasks = [asyncio.create_task(visit(room, f"student{i}", i)) for i in range(12)]
        tasks += [asyncio.create_task(visit("flood", "f", i)) for i in range(12)]
        await asyncio.sleep(0)
        queued.set()
        await asyncio.gather(first, *tasks)
        assert gate.busy == 0 and not gate.queues

    _run_apart(main())
    served = order
    # the flood queued last, so came first (a newcomer's turn), then the room's 4, the flood's 1, ...
    assert served[:1 + ROOM_TURNS + 1] == ["flood"] + [room] * ROOM_TURNS + ["flood"], served
    rooms_before_last_room = served[:served.index("flood", 1 + ROOM_TURNS)].count(room)
    assert rooms_before_last_room == ROOM_TURNS
    # over the first 15 turns the room took ROOM_TURNS for each of the flood's (12 of the room's first 15)
    assert served[:15].count(room) == 12 and served[:15].count("flood") == 3, served
    order.clear()

    async def newcomer():
        gate = FairGate(slots=1, weight=room_turns)

        async def visit(key, visitor):
            async with gate.turn(key, visitor):
                order.append(key)
                await asyncio.sleep(0)

        tasks = [asyncio.create_task(visit(room, f"s{i}")) for i in range(12)]
        for _ in range(3):  # the room's first turns under way
            await asyncio.sleep(0)
        tasks.append(asyncio.create_task(visit("newcomer", "n")))
        await asyncio.gather(*tasks)

    _run_apart(newcomer())
    assert 0 < order.index("newcomer") <= ROOM_TURNS, order


def _gate_order(passes: int, newcomer_steps: int, newcomer_key: tuple, build_yields: bool = True) -> list:
    """The order of turns: a flood of 10 builds of browser "flood" at address "a" ready at once, and a newcomer
    ``(address, browser)`` reaching the gate ``newcomer_steps`` passes of the loop later (read off the network);
    each build takes one step of its own (``build_yields``) or none (Bokeh's builds never yield)."""
    import asyncio

    order = []

    async def main():
        gate = FairGate(slots=1, passes=passes)

        async def visit(key, visitor, i):
            async with gate.turn(key, visitor):
                order.append((visitor, i))
                if build_yields:
                    await asyncio.sleep(0)

        async def late():
            for _ in range(newcomer_steps):
                await asyncio.sleep(0)
            await visit(*newcomer_key, 0)

        tasks = [asyncio.create_task(visit("a", "flood", i)) for i in range(10)]
        tasks.append(asyncio.create_task(late()))
        await asyncio.gather(*tasks)
        for _ in range(passes + 1):  # the last turn's slot is free again after the passes
            await asyncio.sleep(0)
        assert gate.busy == 0 and not gate.queues

    _run_apart(main())
    assert [i for v, i in order if v == "flood"] == list(range(10))
    return order


def test_fair_gate_turns_by_visitor_and_lets_a_late_request_in():
    """Within one address (a school's NAT), a flooding browser's builds take turns with another browser's; and a
    request that needs a few passes of the event loop to reach the gate (read off the network) gets the next turn
    when the gate waits :data:`PASSES` passes between turns, while without them the flood's builds run back to back."""
    from grpo_lab.admission import PASSES

    assert _gate_order(0, 0, ("a", "other")).index(("other", 0)) == 1  # the first build under way, then the other
    assert _gate_order(PASSES, PASSES - 1, ("b", "newcomer")).index(("newcomer", 0)) == 1
    assert _gate_order(0, PASSES - 1, ("b", "newcomer")).index(("newcomer", 0)) > 1  # no passes: behind the flood


def test_fair_gate_lets_a_late_request_in_between_builds_that_never_yield():
    """A session build holds the event loop from start to end (no await inside): the flood's requests, all ready in
    one pass of the loop, each found the gate free as the previous one released it, so they ran back to back and a
    request read off the network meanwhile (here: a few passes of the loop later) waited for the whole flood (the
    newcomer 15.8 s into a 200-session flood). The gate now stays held for :data:`PASSES` passes after every turn,
    queued or not: the flood's next requests queue, and the newcomer, new to the queue, gets the next turn."""
    from grpo_lab.admission import PASSES

    order = _gate_order(PASSES, PASSES - 1, ("b", "newcomer"), build_yields=False)
    assert order.index(("newcomer", 0)) == 1  # the first build, then the newcomer (was: after all ten)


def test_fair_gate_waits_for_a_newcomers_next_step_while_one_address_floods():
    """A visitor's page, session and document are three turns, each asked for a little after the previous one ended
    (its client's round trip). While one address floods, the slot waits up to FOLLOW_S for that next request, so the
    newcomer's steps run one after the other instead of each behind one of the flood's builds; with a few requests
    waiting (no flood: fewer than BACKLOG) nobody is waited for."""
    import asyncio

    from grpo_lab.admission import BACKLOG, FOLLOW_S, PASSES

    def order(follow_s: float, flood: int) -> list:
        out = []

        async def main():
            gate = FairGate(slots=1, passes=PASSES, follow_s=follow_s)

            async def build(key, i):
                async with gate.turn(key):
                    out.append((key, i))

            async def newcomer():
                await build("newcomer", 0)
                await asyncio.sleep(FOLLOW_S / 15)  # its client reads the page and opens the websocket
                await build("newcomer", 1)

            first = asyncio.create_task(build("flood", 0))
            await asyncio.sleep(0)  # the flood's first build is under way, the rest queue behind it
            tasks = [first, *[asyncio.create_task(build("flood", i)) for i in range(1, flood)],
                     asyncio.create_task(newcomer())]
            await asyncio.gather(*tasks)
            await asyncio.sleep(FOLLOW_S * 2)  # a last wait for a next step that does not come
            for _ in range(PASSES + 1):
                await asyncio.sleep(0)
            assert gate.busy == 0 and not gate.queues and gate.following is None

        _run_apart(main())
        return out

    followed = order(FOLLOW_S, 2 * BACKLOG)
    assert followed.index(("newcomer", 1)) == followed.index(("newcomer", 0)) + 1
    assert [i for k, i in followed if k == "flood"] == list(range(2 * BACKLOG))
    unfollowed = order(0.0, 2 * BACKLOG)  # as before: the flood's next build came first
    assert unfollowed.index(("newcomer", 1)) > unfollowed.index(("newcomer", 0)) + 1
    few = order(FOLLOW_S, BACKLOG // 2)
    assert few.index(("newcomer", 1)) > few.index(("newcomer", 0)) + 1


def test_admission_counts_per_address_and_visitor():
    t = [0.0]
    adm = Admission(Limits(per_address=3, per_visitor=2, new_per_second=1.0, burst=10), clock=lambda: t[0])
    adm.opened("a", "v1")
    adm.opened("a", "v1")
    assert adm.admit_page("a", "v1") == TOO_MANY_MINE
    assert adm.admit_page("a", "v2") is None
    adm.opened("a", "v2")
    assert adm.admit_page("a", "v3") == TOO_MANY_OPEN and adm.admit_page("b", None) is None
    adm.closed("a", "v1")
    assert adm.admit_page("a", "v1") is None
    assert adm.open_by_address == {"a": 2} and adm.open_by_visitor == {"v1": 1, "v2": 1}


def test_defaults_admit_a_class_of_30_behind_one_address():
    t = [0.0]
    adm = Admission(DEFAULT_LIMITS, clock=lambda: t[0])
    for i in range(30):  # thirty pupils, one school address, all at once, two tabs each over time
        assert adm.admit_page("school", f"pupil{i}") is None
        adm.opened("school", f"pupil{i}")
    t[0] = 10.0
    for i in range(30):
        assert adm.admit_page("school", f"pupil{i}") is None
        adm.opened("school", f"pupil{i}")
    assert adm.admit_page("school", "pupil0") == TOO_MANY_OPEN  # 60 open from the address


@pytest.mark.slow
def test_cookie_and_new_page_limit_over_http():
    with logged_server("--new-sessions-burst", "3", "--new-sessions-per-second", "0.01") as (url, log):
        code, headers, body = get(url)
        assert code == 200
        cookie = headers.get("Set-Cookie")
        assert cookie.startswith(VISITOR_COOKIE + "=") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
        assert "Path=/" in cookie
        value = cookie.split(";")[0]
        code, headers, _ = get(url, cookie=value)
        assert code == 200 and headers.get("Set-Cookie") is None  # the browser has one already
        get(url)
        code, headers, body = get(url)  # the fourth page from this address within the burst
        assert code == 429 and headers.get("Retry-After")
        assert TOO_MANY_NEW in body and "Bokeh" not in body and "docs_json" not in body  # no session's document
        assert f"http-equiv='refresh' content='{RETRY_S}'" in body  # the page asks again by itself
        assert "Traceback" not in log()


@pytest.mark.browser
@pytest.mark.slow
def test_too_many_open_tabs_get_the_labs_page(browser):
    with logged_server("--max-sessions-per-visitor", "2", "--max-sessions-per-address", "3") as (url, log):
        mine = browser.new_context()
        tabs = []
        for _ in range(2):
            tabs.append(mine.new_page())
            tabs[-1].goto(url)
            wait_readout(tabs[-1])
        third = mine.new_page()
        response = third.goto(url)
        assert response.status == 429
        assert TOO_MANY_MINE in third.evaluate(PAGE_TEXT)
        other = browser.new_context()  # another browser at the same address: one more tab, then the address is full
        ok = other.new_page()
        ok.goto(url)
        wait_readout(ok)
        refused = other.new_page()
        assert refused.goto(url).status == 429 and TOO_MANY_OPEN in refused.evaluate(PAGE_TEXT)
        tabs[0].close()  # a tab closed makes room
        third.wait_for_timeout(1500)
        assert third.goto(url).status == 200
        wait_readout(third)
        mine.close()
        other.close()


@pytest.mark.browser
@pytest.mark.slow
def test_an_idle_page_is_released_and_says_it_can_reload(browser):
    with logged_server("--idle-minutes", "0.05") as (url, log):  # 3 s
        context = browser.new_context()
        page = context.new_page()
        page.goto(url)
        wait_readout(page)
        page.wait_for_function(f"({PAGE_TEXT})().includes({CLOSED_NOTICE!r})", timeout=30_000)
        assert "code=4000" in log()  # closed by the idle check, not by anything else
        page.reload()  # reloading gives a working page again
        wait_readout(page)
        context.close()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("size", [100_000, 1_000_000])
def test_a_too_long_address_gets_the_labs_page(browser, size):
    with logged_server() as (url, log):
        context = browser.new_context()
        page = context.new_page()
        response = page.goto(f"{url}?caption={'a' * size}")
        assert response.status == 414
        text = page.evaluate(PAGE_TEXT)
        assert "This address is too long" in text and "Open the lab" in text
        page.get_by_role("link", name="Open the lab").click()
        wait_readout(page)
        context.close()


def _run_apart(coro):
    import asyncio

    """``asyncio.run`` in a thread of its own: Playwright's sync API leaves a running loop in this thread when
    browser tests ran before in the same process."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def test_the_server_s_listen_queue_holds_a_flood_of_connections():
    """Bokeh's listening socket, as the lab's server binds it, queues LISTEN_BACKLOG connections (the kernel's own
    figure, read with ``ss``), not Tornado's 128: 200 connections at once from one client overflowed that queue, the
    kernel dropped the rest (a newcomer's among them), and each came back only after TCP's retries (1, 3, 7, 15 s)."""
    import subprocess

    from bokeh.server import server

    from grpo_lab.admission import LISTEN_BACKLOG, _deepen_listen_queue

    from pathlib import Path

    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    _deepen_listen_queue()
    sockets, port = server.bind_sockets("127.0.0.1", 0)
    try:
        out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    finally:
        for sock in sockets:
            sock.close()
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert rows and all(row[0] == "LISTEN" for row in rows), out
    assert {int(row[2]) for row in rows} == {min(LISTEN_BACKLOG, somaxconn)} and min(LISTEN_BACKLOG, somaxconn) > 200
