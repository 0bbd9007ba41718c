"""The virtual clock: timers, sleeps, timeouts and the time module follow ward's clock, which
moves only on `advance` (and a delivery's `atMs`)."""

import asyncio
import time

import pytest

from ward_kit import wire


def test_a_sleep_ends_only_when_ward_advances_the_clock(loop):
    task = loop.create_task(asyncio.sleep(60))
    loop.settle()
    assert not task.done()
    assert loop.next_timer_ms() == 60_000
    # An advance short of the timer moves the clock and fires nothing.
    loop.advance(59_999)
    assert wire.clock.now_ms == 59_999 and not task.done()
    # An advance to the timer's instant fires it only once the runtime next settles, after
    # ward's next message has been handed over (a delivery wins a tie with a timer).
    loop.advance(60_000)
    assert wire.clock.now_ms == 60_000 and not task.done()
    loop.settle()
    assert task.done() and task.exception() is None
    assert loop.next_timer_ms() is None


def test_an_advance_past_a_timer_stops_at_the_timer(loop):
    order = []
    loop.call_later(0.5, order.append, "first")
    loop.call_later(0.5, order.append, "second")
    loop.call_later(2, order.append, "later")
    loop.advance(10_000)
    assert wire.clock.now_ms == 500 and order == ["first", "second"]
    loop.advance(10_000)
    assert wire.clock.now_ms == 2_000 and order == ["first", "second", "later"]
    loop.advance(10_000)
    assert wire.clock.now_ms == 10_000


def test_nothing_runs_between_messages(loop):
    steps = []

    async def chatty():
        for step in range(3):
            steps.append(step)
            await asyncio.sleep(0)

    loop.create_task(chatty())
    assert steps == []
    loop.settle()
    assert steps == [0, 1, 2] and not loop.can_run()


def test_time_reads_wards_clock(loop):
    wire.install()
    wire.clock.now_ms = 1_234
    assert time.monotonic() == 1.234
    assert time.time() == 1.234
    assert time.perf_counter() == 1.234
    assert time.monotonic_ns() == 1_234_000_000
    assert loop.time() == 1.234
    wire.clock.now_ms = 61_000
    assert time.monotonic() == 61.0


def test_wait_for_times_out_at_the_virtual_instant(loop):
    never = loop.create_future()
    seen = {}

    async def waiting():
        try:
            await asyncio.wait_for(never, 5)
        except TimeoutError:
            seen["at"] = loop.time()
            raise

    task = loop.create_task(waiting())
    loop.settle()
    loop.advance(4_000)
    loop.settle()
    assert not task.done()
    loop.advance(30_000)
    assert task.done() and isinstance(task.exception(), TimeoutError)
    assert seen["at"] == 5.0 and wire.clock.now_ms == 5_000
    assert never.cancelled()


def test_a_delivery_at_the_instant_of_a_timeout_wins(loop):
    reply = loop.create_future()

    async def asking():
        async with asyncio.timeout(1):
            return await reply

    task = loop.create_task(asking())
    loop.settle()
    loop.advance(1_000)  # no timer before 1 000 ms: the clock moves there, nothing fires
    reply.set_result("the model's reply")
    loop.settle()
    assert task.result() == "the model's reply"


def test_run_in_executor_runs_inline(loop):
    async def threaded():
        return await asyncio.to_thread(lambda: "inline")

    task = loop.create_task(threaded())
    loop.settle()
    assert task.result() == "inline"


def test_a_runtime_that_never_stops_running_is_reported(loop, monkeypatch):
    monkeypatch.setattr(wire, "SETTLE_STEPS_MAX", 1_000)

    async def spinning():
        while True:
            await asyncio.sleep(0)

    task = loop.create_task(spinning())
    with pytest.raises(RuntimeError, match="still running"):
        loop.settle()
    task.cancel()
    loop.settle()
    assert task.cancelled()


def test_datetime_now_reads_the_virtual_clock(loop):
    import datetime

    wire.install()
    wire.fake_datetime()
    from datetime import datetime as looked_up, timezone

    wire.clock.now_ms = 1_500
    assert looked_up.now(timezone.utc) == datetime.datetime(1970, 1, 1, 0, 0, 1, 500_000, tzinfo=timezone.utc)
    assert looked_up.utcnow() == datetime.datetime(1970, 1, 1, 0, 0, 1, 500_000)
    # What serializes a datetime by its class's path finds the faked type, and instants are
    # of the real one.
    assert (looked_up.__module__, looked_up.__qualname__) == ("datetime", "datetime")
    assert type(looked_up.now()) is wire._real_datetime
    # A module that took the type at its import gets the faked one too.
    import types

    module = types.ModuleType("took_it")
    module.datetime = wire._real_datetime
    wire.fake_datetime(module)
    assert module.datetime is wire.VirtualDatetime


def test_a_deadline_checked_against_the_loop_when_its_timer_fires_is_met(loop):
    # anyio's cancel scope: at its timer, `loop.time() >= deadline` or the timer is set again.
    # A deadline between two milliseconds fires at the nearer one, which may be before it.
    wire.clock.now_ms = 40
    fired = []

    def check(deadline):
        if loop.time() >= deadline:
            fired.append(wire.clock.now_ms)
        else:
            loop.call_at(deadline, check, deadline)

    for extra in (0.1, 0.1004, 0.1006):
        deadline = loop.time() + extra
        loop.call_at(deadline, check, deadline)
    loop.advance(10_000)
    loop.settle()
    assert fired == [140, 140]
    loop.advance(10_000)
    loop.settle()
    assert fired == [140, 140, 141]
    # The clock reads ward's instant again once it moves on.
    loop.advance(10_000)
    assert loop.time() == 10.0 and wire.clock.now_ms == 10_000
