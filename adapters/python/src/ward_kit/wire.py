"""The adapter's side of ward's protocol (PROTOCOL.md, SPEC §15 P1, P3, P4): JSON lines on
standard input and output, the lockstep, and the runtime's virtual clock.

The loop. The kit runs the runtime on :class:`VirtualLoop`, an asyncio event loop of its own
(a subclass of ``asyncio.BaseEventLoop`` with no selector and no I/O) whose ``time()`` is
ward's clock and which runs only when the kit drives it. ``looptime`` (PyPI) was the other
choice: it fast-forwards a selector loop's time, but it is a pytest plugin built to skip
sleeps as fast as possible, so its clock moves by itself whenever the loop would wait; ward
needs the opposite (a clock that moves only on ``advance`` and a delivery's ``atMs``, and a
loop that says when nothing more can run), and a loop of a hundred lines gives exactly that
with nothing to install. ``asyncio.sleep``, ``asyncio.wait_for``, ``asyncio.timeout`` and
``loop.call_later`` all read ``loop.time()``, so every timer of the runtime is on ward's clock.

Lockstep. Every message from ward is handed to the runtime on the main thread, then the loop
settles: it runs the ready callbacks and fires the timers due at the current instant until the
ready queue is empty and no timer is due ("nothing more can run without an outside event").
The answer (everything the runtime did, then ``idle``) goes out as one write. A timer is due
at the first whole millisecond its instant rounds to (:func:`due_ms`); ``idle.nextTimerMs``
is the earliest one still set, or ``null``.

Time. ``advance {toMs}`` fires the earliest instant's timers before ``toMs``; when none is due
before it, the clock is set to ``toMs`` without firing the timers due there, and they fire
while the runtime settles after ward's next message has been handed over: a delivery wins a
tie with a timer, as both falling due at once in one process. ``time.monotonic``,
``time.time``, ``time.perf_counter`` (and their ``_ns`` forms) read the same clock, from 0
at ``reset`` (``time.time()`` is then 1970-01-01, as the Node kit's ``Date.now()`` is 0).
``datetime.datetime.now()`` is C code that reads the operating system's clock:
:func:`fake_datetime` makes ``datetime.datetime`` a subclass whose ``now()``, ``utcnow()`` and
``today()`` read ``time.time()``, for a runtime that stamps its records with it (LangGraph's
checkpoints). Call it after the runtime's imports: a module that took the type at its import
keeps the real one, and pydantic knows a ``datetime`` field by the real type only.

Randomness (P4). ``random``'s module functions and ``uuid.uuid4`` draw from streams seeded by
``reset.seed`` (two streams, so that drawing ids changes no draw of ``random``);
:func:`seed_os_random` also seeds ``os.urandom`` and ``secrets``, for a runtime whose ids take
random bytes. String hashing is pinned (``PYTHONHASHSEED=0``: :func:`serve` starts the
interpreter again with it when it is not set), so a runtime iterating a set of strings
iterates it in the same order in every process.

Threads. The loop runs no threads: ``run_in_executor`` (and so ``asyncio.to_thread``) runs
the function inline and returns its finished future, so a synchronous tool stays in the
lockstep. A thread of the runtime's own is outside ward's clock: make tools async.
"""

from __future__ import annotations

import asyncio
import datetime
import heapq
import json
import math
import os
import random
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from typing import Any, Protocol

LINE_BYTES_MAX = 16 * 1024 * 1024
"""A line is at most 16 MiB, its newline not counted (PROTOCOL.md, framing)."""

SETTLE_STEPS_MAX = 1_000_000
"""Loop iterations one answer may take: a runtime that never stops running is a bug to report,
not a hang of ward's (its watchdog would end it anyway, without saying why)."""


class Clock:
    """ward's virtual clock, in whole milliseconds since ``reset``."""

    def __init__(self) -> None:
        self.now_ms = 0


clock = Clock()


def due_ms(when: float) -> int:
    """The whole millisecond at which a timer set for loop instant ``when`` (seconds) fires:
    the nearest one, so that ``call_later(0.1)`` at 40 ms fires at 140 ms whatever the float
    sum's last bit. Every decision of the loop goes through this one function."""
    return math.floor(when * 1000 + 0.5)


class VirtualLoop(asyncio.BaseEventLoop):
    """An asyncio loop whose time is ward's clock and which runs only when driven
    (:meth:`settle`). It has no selector: nothing it runs waits on a file or a socket."""

    def __init__(self) -> None:
        super().__init__()
        self.set_exception_handler(_report)
        self._fired: tuple[int, float] = (0, 0.0)

    def time(self) -> float:
        """ward's instant; while the timers due at it run, never before the latest of their own
        instants. A timer fires at the whole millisecond nearest its instant (:func:`due_ms`),
        up to half a millisecond before it, and a runtime that checks its deadline against
        ``loop.time()`` when its timer fires and sets the timer again when it finds itself
        early (anyio's cancel scopes) would otherwise set it again at the same millisecond
        forever: a real loop's clock would have moved on, ward's cannot."""
        fired_ms, fired_when = self._fired
        if fired_ms == clock.now_ms:
            return max(clock.now_ms / 1000, fired_when)
        return clock.now_ms / 1000

    # BaseEventLoop's hooks for I/O, which this loop never does.
    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def _write_to_self(self) -> None:
        pass

    def run_in_executor(self, executor: Any, func: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """Runs ``func`` inline: no thread runs outside the lockstep (see the module docs)."""
        future = self.create_future()
        try:
            future.set_result(func(*args))
        except BaseException as error:  # noqa: BLE001 — handed to the awaiting task as it is
            future.set_exception(error)
        return future

    def next_timer_ms(self) -> int | None:
        """The instant of the earliest timer still set, or ``None``."""
        self._drop_cancelled()
        if not self._scheduled:
            return None
        return due_ms(self._scheduled[0]._when)

    def _drop_cancelled(self) -> None:
        while self._scheduled and self._scheduled[0]._cancelled:
            self._timer_cancelled_count -= 1
            handle = heapq.heappop(self._scheduled)
            handle._scheduled = False

    def can_run(self) -> bool:
        """Whether anything can run now: a ready callback, or a timer due at this instant."""
        if self._ready:
            return True
        next_ms = self.next_timer_ms()
        return next_ms is not None and next_ms <= clock.now_ms

    def _run_once(self) -> None:
        """One iteration: the timers due now join the ready queue, then every callback that
        was ready runs once (those it makes ready wait for the next iteration), as
        ``BaseEventLoop._run_once`` does without the selector's wait."""
        self._drop_cancelled()
        while self._scheduled and due_ms(self._scheduled[0]._when) <= clock.now_ms:
            handle = heapq.heappop(self._scheduled)
            handle._scheduled = False
            if handle._cancelled:
                self._timer_cancelled_count -= 1
                continue
            self._ready.append(handle)
            self._fired = (clock.now_ms, max(self.time(), handle._when))
        for _ in range(len(self._ready)):
            handle = self._ready.popleft()
            if not handle._cancelled:
                handle._run()

    def settle(self) -> None:
        """Runs until nothing more can run without an outside event."""
        for _ in range(SETTLE_STEPS_MAX):
            if not self.can_run():
                return
            self._run_once()
        raise RuntimeError(f"the runtime was still running after {SETTLE_STEPS_MAX} loop iterations at {clock.now_ms} ms")

    def advance(self, to_ms: int) -> None:
        """``advance {toMs}``: fire the earliest instant's timers before ``toMs``, or move the
        clock to ``toMs`` and fire nothing (its timers fire after ward's next message)."""
        next_ms = self.next_timer_ms()
        if next_ms is not None and next_ms < to_ms:
            clock.now_ms = max(clock.now_ms, next_ms)
            self.settle()
            return
        clock.now_ms = max(clock.now_ms, to_ms)

    def enter(self) -> None:
        """Makes this the running loop of the main thread, as ``run_forever`` would, so that
        ``asyncio.get_running_loop()``, ``asyncio.sleep`` and tasks find it."""
        asyncio.events._set_running_loop(self)


def _report(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler: to standard error, the adapter's log, never to ward."""
    error = context.get("exception")
    sys.stderr.write(f"{context.get('message', 'error in the event loop')}: {error!r}\n")


# ---- clocks and randomness ----------------------------------------------------------------

_real = {
    "monotonic": time.monotonic,
    "monotonic_ns": time.monotonic_ns,
    "perf_counter": time.perf_counter,
    "perf_counter_ns": time.perf_counter_ns,
    "time": time.time,
    "time_ns": time.time_ns,
    "uuid4": uuid.uuid4,
    "urandom": os.urandom,
}
_ids = random.Random(0)
_bytes = random.Random(0)


def _seconds() -> float:
    return clock.now_ms / 1000


def _nanoseconds() -> int:
    return clock.now_ms * 1_000_000


_real_datetime = datetime.datetime


class VirtualDatetime(_real_datetime):
    """``datetime.datetime`` whose clock readings are ``time.time()``'s. It keeps the module's
    name and the type's, so that what pickles or serializes a datetime by its class's path
    finds this one; the instants it reads are of the real type."""

    @classmethod
    def now(cls, tz: datetime.tzinfo | None = None) -> datetime.datetime:  # type: ignore[override]
        return _real_datetime.fromtimestamp(time.time(), tz)

    @classmethod
    def utcnow(cls) -> datetime.datetime:  # type: ignore[override]
        return _real_datetime.fromtimestamp(time.time(), datetime.timezone.utc).replace(tzinfo=None)

    @classmethod
    def today(cls) -> datetime.datetime:  # type: ignore[override]
        return _real_datetime.fromtimestamp(time.time())


VirtualDatetime.__module__ = "datetime"
VirtualDatetime.__name__ = VirtualDatetime.__qualname__ = "datetime"


def _uuid4() -> uuid.UUID:
    return uuid.UUID(bytes=_ids.randbytes(16), version=4)


def install() -> None:
    """Fakes the clocks and ``uuid.uuid4`` (idempotent). Call it before importing a runtime
    that takes ``from time import monotonic`` at its import, as ``template.py`` does."""
    time.monotonic = _seconds
    time.perf_counter = _seconds
    time.time = _seconds
    time.monotonic_ns = _nanoseconds
    time.perf_counter_ns = _nanoseconds
    time.time_ns = _nanoseconds
    uuid.uuid4 = _uuid4


def fake_datetime(*modules: Any) -> None:
    """Makes ``datetime.datetime`` :class:`VirtualDatetime`, so that code looking the type up
    when it runs (``from datetime import datetime`` in a function) reads the virtual clock,
    and so is the ``datetime`` name of each of ``modules`` (those that took the type at their
    import). Call it after the runtime's imports (see the module docs); :func:`uninstall`
    undoes the first part."""
    datetime.datetime = VirtualDatetime  # type: ignore[misc]
    for module in modules:
        if getattr(module, "datetime", None) is _real_datetime:
            module.datetime = VirtualDatetime


def uninstall() -> None:
    """Gives back the real clocks and ids (for tests)."""
    for name in ("monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "time", "time_ns"):
        setattr(time, name, _real[name])
    datetime.datetime = _real_datetime  # type: ignore[misc]
    uuid.uuid4 = _real["uuid4"]
    os.urandom = _real["urandom"]


def seed_random(seed: int) -> None:
    """Seeds ``random`` and the id stream from ``reset.seed`` (P4)."""
    seed = seed % 2**64
    random.seed(seed ^ 0x9E3779B97F4A7C15)
    _ids.seed(seed ^ 0x85EBCA6B)
    _bytes.seed(seed ^ 0xC2B2AE35)


def seed_os_random() -> None:
    """``os.urandom`` (and so ``secrets`` and ``random.SystemRandom``'s callers that go
    through it) from the seed too, a stream of its own. Off unless an adapter asks for it."""
    os.urandom = lambda size: _bytes.randbytes(size)


def pin_hash_seed() -> None:
    """Starts the interpreter again with ``PYTHONHASHSEED=0`` unless it already has it."""
    if os.environ.get("PYTHONHASHSEED") == "0":
        return
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], {**os.environ, "PYTHONHASHSEED": "0"})


# ---- the protocol -------------------------------------------------------------------------

Out = Callable[[dict[str, Any]], None]


class Runtime(Protocol):
    """What :func:`serve` drives: ``ready()`` (the handshake's ``runtime``, ``claims``,
    ``notes``, optional ``durable``), ``reset(message, out)``, ``handle(message)``, and for a
    durable runtime ``crash()``. ``out(record)`` queues a message for the current answer."""

    def ready(self) -> dict[str, Any]: ...

    def reset(self, message: dict[str, Any], out: Out) -> None: ...

    def handle(self, message: dict[str, Any]) -> None: ...


def dumps(message: Any) -> str:
    """One message as ward reads it: compact, UTF-8. A string holding a lone surrogate
    (``"\\ud800"`` in an argument text) cannot be UTF-8, and is written escaped, as
    ``JSON.stringify`` writes it."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text


class Server:
    """The lockstep over any pair of byte streams (:func:`serve` uses standard input and
    output; tests use their own). ``take(line)`` returns the answer's lines."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.answer: list[str] = []
        self.epoch = 0
        # Version 2 for every runtime: its `idle` says when its next timer is due, and ward
        # hands over a delivery due before it with its instant (`atMs`), not an `advance`
        # first: the same traces in fewer exchanges. A durable runtime also gets crashes.
        self.version = 2
        self.loop = VirtualLoop()
        self.loop.enter()
        # The catalogue of the last `reset` (`ready.catalogueKept`), as JSON text: ward leaves
        # `tools` out of a `reset` whose catalogue is that one, and the kit hands the runtime a
        # fresh copy of the kept one, so that a runtime changing what it was given changes no
        # later scenario. It survives a `crash`: it is ward's, not the runtime's.
        self.catalogue: str | None = None

    def write(self, message: dict[str, Any]) -> None:
        self.answer.append(dumps(message))

    def new_epoch(self) -> Out:
        """An ``out`` that writes only until the next ``reset`` or ``crash``, so that no task
        or timer of a dropped runtime can reach ward's output."""
        self.epoch += 1
        mine = self.epoch

        def out(message: dict[str, Any]) -> None:
            if self.epoch == mine:
                self.write(message)

        return out

    def new_loop(self) -> None:
        """A fresh loop: the tasks and timers of what came before never run again."""
        old = self.loop
        self.loop = VirtualLoop()
        self.loop.enter()
        old._ready.clear()
        old._scheduled.clear()
        old.close()

    def take(self, line: str) -> list[str]:
        message = json.loads(line)
        kind = message["type"]
        if kind == "hello":
            ready = self.runtime.ready()
            self.write({"type": "ready", "protocol": self.version, "catalogueKept": True, **ready})
            return self.flush()
        if kind == "reset":
            if "tools" in message:
                self.catalogue = json.dumps(message["tools"])
            elif self.catalogue is None:
                raise ValueError("a reset without tools, and no catalogue before it to keep")
            else:
                message["tools"] = json.loads(self.catalogue)
            out = self.new_epoch()
            self.new_loop()
            clock.now_ms = 0
            seed_random(message["seed"])
            self.runtime.reset(message, out)
        elif kind == "crash":
            # Drop mode (P9): nothing runs, nothing settles; the clock stays where it is.
            self.new_epoch()
            self.new_loop()
            self.runtime.crash()  # type: ignore[attr-defined]
        elif kind == "advance":
            self.loop.advance(message["toMs"])
        else:
            # Version 2: a delivery due after the clock carries its instant; the clock moves
            # there as an `advance` with no timer due before it would, and the timers due
            # there fire after the delivery has been handed over.
            at_ms = message.pop("atMs", None)
            if at_ms is not None:
                clock.now_ms = max(clock.now_ms, at_ms)
            self.runtime.handle(message)
            self.loop.settle()
        self.write(self.idle())
        return self.flush()

    def idle(self) -> dict[str, Any]:
        next_ms = self.loop.next_timer_ms()
        if next_ms is not None and next_ms > clock.now_ms:
            return {"type": "idle", "atMs": clock.now_ms, "nextTimerMs": next_ms}
        if next_ms is None:
            # `null` says no timer is set, so that ward may skip the `advance`s.
            return {"type": "idle", "atMs": clock.now_ms, "nextTimerMs": None}
        return {"type": "idle", "atMs": clock.now_ms}

    def flush(self) -> list[str]:
        lines, self.answer = self.answer, []
        return lines


def serve(runtime: Runtime) -> None:
    """Serves the protocol on standard input and output until ward closes the input. An
    exception ends the adapter with its traceback on standard error (exit 70), which ward
    reports as a protocol violation with that tail; it never hangs."""
    pin_hash_seed()
    install()
    server = Server(runtime)
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    try:
        while True:
            raw = stdin.readline(LINE_BYTES_MAX + 2)
            if not raw:
                break
            if not raw.endswith(b"\n") and len(raw) > LINE_BYTES_MAX:
                raise ValueError(f"a line from ward is longer than {LINE_BYTES_MAX} bytes")
            lines = server.take(raw.decode("utf-8"))
            stdout.write("".join(f"{line}\n" for line in lines).encode("utf-8"))
            stdout.flush()
    except BaseException:  # noqa: BLE001 — any failure ends the process, never a hang
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(70)
    sys.stderr.flush()
    os._exit(0)
