"""The chart agent around a runtime: what the seed's runtime keeps that no SDK keeps for it,
shared by every Python adapter so that each adapter's file is only its runtime's idiom. Every
rule here is the kit's, not the runtime's, and each adapter names it so in ``ready.notes``
(``runtime.kit_notes``, P14):

- the registry's safety and execution mode per tool (R1, from ``reset``), and the run's
  resolved tool list (R4, R11–R13): registration order, no destructive tool in a read-only
  run, no switched-off tool; each runtime is then given that list its own way;
- R14's limit ranges and unusable secret values, refused at start;
- R3's checks that come before validation (``Run.admit``) and the body (``Run.perform``);
- R19's batch cap and inactivity deadline (reset by every reply and finished call, paused
  while ``ask_user`` waits), firing the run's abort signal;
- R20's stop: reads see the abort signal, a running write does not (it has committed);
- R22's guard on every record ward observes, R23's events and the session store.

A port of the Node kit's ``lib/agent.js``: the same records in the same order.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import traceback
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from jsonschema.validators import Draft202012Validator, validator_for

from . import wire
from .runtime import (
    READ_ONLY_NOTE,
    SYSTEM_PROMPT,
    BodyPanic,
    Guard,
    Recorder,
    Signal,
    Ward,
    aborted,
    arguments_check,
    failure,
    limits_error,
    not_allowed_off,
    not_allowed_read_only,
    precheck,
    secrets_error,
)

FIELD_ERRORS_MAX = 5
"""R6: the model gets at most five field errors."""


class Stop(Exception):
    """Why a run stops early: the abort reason of the run's signal."""

    def __init__(self, outcome: str, error: dict[str, Any] | None = None) -> None:
        super().__init__(outcome)
        self.outcome = outcome
        self.error = error


_compiled: dict[str, Any] = {}


def validator_of(parameters: dict[str, Any]) -> Any:
    """A validator per distinct schema, compiled once for the adapter's life (R5): Draft
    2020-12 unless the schema names another draft (``$schema``). Formats are not asserted."""
    key = json.dumps(parameters, sort_keys=True)
    validator = _compiled.get(key)
    if validator is None:
        cls = validator_for(parameters, default=Draft202012Validator)
        cls.check_schema(parameters)
        validator = cls(parameters)
        _compiled[key] = validator
    return validator


def _pointer(path: Any) -> str:
    text = "".join(f"/{str(part).replace('~', '~0').replace('/', '~1')}" for part in path)
    return text or "/"


def _rule(error: Any) -> str:
    """A message that states the rule of the failing keyword and never a value of the input
    (R7): the schema's own values only, in ajv's wording, so that both kits say the same."""
    keyword, bound = error.validator, error.validator_value
    plural = {"minLength": "characters", "maxLength": "characters", "minItems": "items", "maxItems": "items"}
    plural |= {"minProperties": "properties", "maxProperties": "properties"}
    if keyword == "type":
        return f"must be {','.join(bound) if isinstance(bound, list) else bound}"
    comparisons = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
    if keyword in comparisons:
        return f"must be {comparisons[keyword]} {json.dumps(bound)}"
    if keyword in plural:
        side = "fewer" if keyword.startswith("min") else "more"
        return f"must NOT have {side} than {bound} {plural[keyword]}"
    messages = {
        "pattern": f"must match pattern {json.dumps(bound, ensure_ascii=False)}",
        "enum": "must be equal to one of the allowed values",
        "const": "must be equal to constant",
        "multipleOf": f"must be multiple of {json.dumps(bound)}",
        "uniqueItems": "must NOT have duplicate items",
        "oneOf": "must match exactly one schema in oneOf",
        "anyOf": "must match a schema in anyOf",
        "not": "must NOT be valid",
        "if": 'must match "then" schema',
        "contains": "must contain at least 1 valid item(s)",
        "propertyNames": "property name must be valid",
        "unevaluatedProperties": "must NOT have unevaluated properties",
        "unevaluatedItems": "must NOT have unevaluated items",
        "items": "must NOT have more items than the schema allows",
        "additionalItems": "must NOT have more items than the schema allows",
        "dependentRequired": "must have the properties its present properties require",
        "format": f"must match format {json.dumps(bound)}",
    }
    return messages.get(keyword, "is invalid")


def _extra_keys(error: Any) -> list[str]:
    """The keys an ``additionalProperties: false`` error is about, in the input's order."""
    schema, instance = error.schema, error.instance
    known = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    return [key for key in instance if key not in known and not any(re.search(pattern, key) for pattern in patterns)]


def input_invalid(validator: Any, instance: Any) -> dict[str, Any]:
    """R6's rendering of the validator's errors: at most 5 ``path: message``, the prefix,
    ``fields``. ``iter_errors`` is lazy, so no more errors are found than are shown."""
    fields: list[dict[str, str]] = []
    for error in validator.iter_errors(instance):
        if len(fields) == FIELD_ERRORS_MAX:
            break
        path = list(error.absolute_path)
        if error.validator == "additionalProperties" and error.validator_value is False:
            for key in _extra_keys(error):
                if len(fields) == FIELD_ERRORS_MAX:
                    break
                fields.append({"path": _pointer([*path, key]), "message": "is not an allowed property"})
            continue
        if error.validator == "required":
            missing = [name for name in error.validator_value if isinstance(error.instance, dict) and name not in error.instance]
            taken = sum(1 for field in fields if field["path"] == _pointer(path) and field["message"].startswith("missing required"))
            name = missing[taken] if taken < len(missing) else "?"
            fields.append({"path": _pointer(path), "message": f"missing required property '{name}'"})
            continue
        fields.append({"path": _pointer(path), "message": _rule(error)})
    text = "; ".join(f"{field['path']}: {field['message']}" for field in fields)
    return {"fields": fields, "message": f"The tool input is invalid: {text}"}


class Sdk(Protocol):
    """What a runtime's adapter class gives :class:`Agent`: ``runtime`` (name and exact
    version), ``claims``, ``notes``, and ``start(run)``, a coroutine that runs one run and
    ends it with ``run.complete`` or ``run.fail``; optionally ``reset(message, agent)``, and
    ``refuses_at_execution = True`` when the runtime refuses a call the run does not allow
    with a mechanism of its own (R12's second check, R13), which the kit then does not
    repeat (``runtime.kit_notes``)."""

    runtime: dict[str, str]
    claims: list[str]
    notes: dict[str, str]

    def start(self, run: Run) -> Coroutine[Any, Any, None]: ...


class Batch:
    """One reply's calls and their results, as the kit tracks them."""

    def __init__(self, calls: list[dict[str, Any]], sequential: bool) -> None:
        self.calls = calls
        self.results: list[dict[str, Any] | None] = [None] * len(calls)
        self.seen: set[str] = set()
        self.claimed: set[int] = set()
        self.lock = asyncio.Lock()
        self.sequential = sequential


class Run:
    """One run of the chart agent. An adapter builds its runtime's agent from ``run.offered``
    and the catalogue, reports through the methods here, and calls ``complete`` or ``fail``
    at the end."""

    def __init__(self, agent: Agent, message: dict[str, Any]) -> None:
        self.agent = agent
        self.ward = agent.ward
        self.out = agent.out
        self.read_only: bool = message["readOnly"]
        self.disabled = set(message["disabledTools"])
        self.limits: dict[str, int] = message["limits"]
        self.guard = Guard(message["secrets"])
        self.store = agent.session_store(message["session"])
        self.history = list(self.store)
        self.recorder = Recorder(self.out, self.guard, wire.clock.now_ms)
        self.signal = Signal()
        self.offered = [
            tool["name"]
            for tool in agent.catalogue
            if not (self.read_only and tool["safety"] == "destructive") and tool["name"] not in self.disabled
        ]
        self.system_prompt = SYSTEM_PROMPT + READ_ONLY_NOTE if self.read_only else SYSTEM_PROMPT
        self.prompt = self.guard.text(message["prompt"])
        self.batches = 0
        self.calls = 0
        self.turn = 0
        self.batch: Batch | None = None
        self.deadline: asyncio.TimerHandle | None = None
        self.asking = 0

    def tool(self, name: str) -> dict[str, Any] | None:
        return self.agent.by_name.get(name)

    def open(self) -> None:
        """R23's opening records: the run, the user's (guarded) message in store and events."""
        self.recorder.event({"type": "run.started", "readOnly": self.read_only, "tools": self.offered})
        self.recorder.append(self.store, {"role": "user", "text": self.prompt})
        self.recorder.event({"type": "user.message.created", "text": self.prompt})
        self.touch()

    def touch(self) -> None:
        """R19's inactivity deadline, restarted by every reply and finished call."""
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
        if self.asking > 0 or self.signal.aborted:
            return
        ms = self.limits["inactivityTimeoutMs"]

        def expire() -> None:
            error = failure("DEADLINE_EXCEEDED", f"The run was inactive for {ms // 1000} s.", "Retry with a narrower request.")
            self.stop(Stop("run.failed", error["error"]))

        self.deadline = asyncio.get_running_loop().call_later(ms / 1000, expire)

    def stop(self, reason: Stop) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
        self.signal.abort(reason)

    async def ask(self, transcript: list[Any], tools: list[str], signal: Signal | None) -> dict[str, Any]:
        """The provider request, as the runtime sends it: guarded, then handed to ward."""
        request = {"systemPrompt": self.system_prompt, "transcript": self.guard.value(transcript), "tools": tools}
        reply = await self.ward.model(request, signal)
        self.touch()
        return reply

    def replied(self, reply: dict[str, Any]) -> None:
        """The reply entered (R16, R22): store, event, and the batch it opens."""
        self.recorder.append(self.store, {"role": "assistant", "text": reply["text"], "calls": reply["calls"]})
        self.recorder.event({"type": "assistant.message.completed", "turn": self.turn, "text": reply["text"], "calls": reply["calls"]})
        self.turn += 1
        calls = reply["calls"]
        sequential = any((self.tool(call["name"]) or {}).get("executionMode") == "sequential" for call in calls)
        self.batch = Batch(calls, sequential)
        if calls and self.batches < self.limits["turnsMax"]:
            self.batches += 1

    def index_of(self, call_id: str, name: str, arguments_text: str | None = None) -> int:
        """The index in the current batch of the runtime's call ``call_id`` to ``name``: the
        first not yet claimed (with that argument text, when given), so that repeated ids,
        which runtimes key their calls by, still map one to one."""
        batch = self.batch
        assert batch is not None
        for index, call in enumerate(batch.calls):
            same = arguments_text is None or call["arguments"] == arguments_text
            if call["id"] == call_id and call["name"] == name and same and index not in batch.claimed:
                batch.claimed.add(index)
                return index
        return -1

    def started(self, index: int) -> None:
        assert self.batch is not None
        call = self.batch.calls[index]
        self.recorder.event({"type": "tool.started", "index": index, "callId": call["id"], "name": call["name"]})

    def finished(self, index: int, result: dict[str, Any]) -> None:
        assert self.batch is not None
        call = self.batch.calls[index]
        if self.batch.results[index] is not None:
            return
        self.batch.results[index] = result
        self.calls += 1
        self.recorder.event({"type": "tool.finished", "index": index, "callId": call["id"], "name": call["name"], "result": result})
        self.touch()

    async def execute(self, index: int, input: Any, signal: Signal | None, idempotency_key: str | None = None) -> dict[str, Any]:
        """The kit's part of the entry point (R3, R12, R13, R19, R20) around ward's body, for
        a call the runtime decided to execute: ``admit``'s checks, then ``perform``.
        Sequential batches take the batch's lock (R17)."""
        batch = self.batch
        assert batch is not None
        if batch.sequential:
            async with batch.lock:
                return self.admit(index) or await self.perform(index, input, signal, idempotency_key)
        return self.admit(index) or await self.perform(index, input, signal, idempotency_key)

    def admit(self, index: int) -> dict[str, Any] | None:
        """A call taken up: past the batch cap ``TOO_MANY_CALLS`` alone; else its
        ``tool.started``, then R3's checks that come before validation (the call id, the tool's
        existence, R12, R13, the size and secret values). The refusal, reported, or ``None``. For a runtime that validates the input
        itself, between ``admit`` and ``perform`` (``template.py``)."""
        assert self.batch is not None
        call = self.batch.calls[index]
        refusal = self.past_cap(index)
        if refusal is None:
            self.started(index)
            refusal = self.refusal(index, call)
        if refusal is not None:
            self.finished(index, refusal)
        return refusal

    async def perform(self, index: int, input: Any, signal: Signal | None, idempotency_key: str | None = None) -> dict[str, Any]:
        """The body of an admitted call (none after a stop, R20), its result reported. A
        body's BodyPanic goes on to the runtime, whose catch makes it INTERNAL_ERROR."""
        assert self.batch is not None
        call = self.batch.calls[index]
        try:
            if self.signal.aborted:
                result = aborted()
                self.finished(index, result)
                return result
            tool = self.tool(call["name"])
            assert tool is not None
            writes = tool["safety"] == "destructive"
            # The body sees the call id as its events name it: guarded (R22), as the core does.
            call_id = self.guard.text(call["id"])
            if call["name"] == "ask_user":
                result = await self.ask_user(call_id, index, input, signal)
            else:
                result = await self.ward.body(call_id, index, call["name"], input, None if writes else signal, idempotency_key)
            self.finished(index, result)
            return result
        except BodyPanic:
            raise
        except Exception:
            result = aborted()
            self.finished(index, result)
            return result

    def past_cap(self, index: int) -> dict[str, Any] | None:
        """``TOO_MANY_CALLS`` for the batch's ``index``-th call past the batch cap (R19), or
        ``None``. Such a call is never taken up, whatever else is wrong with it: no
        ``tool.started``, and none of R3's checks (PROTOCOL.md)."""
        cap = self.limits["callsPerBatchMax"]
        if index < cap:
            return None
        return failure("TOO_MANY_CALLS", f"Only {cap} tool calls run per message.", f"Send at most {cap} tool calls in one message.")

    def refusal(self, index: int, call: dict[str, Any]) -> dict[str, Any] | None:
        """R3's checks before validation, in their order, of the batch's ``index``-th call."""
        assert self.batch is not None
        refused = precheck(call, self.batch.seen, self.guard)
        if refused is not None:
            return refused
        if self.tool(call["name"]) is None:
            return failure("TOOL_NOT_FOUND", f"No tool is named '{call['name']}'.", self.available())
        if not getattr(self.agent.sdk, "refuses_at_execution", False):
            refused = self.not_allowed(call["name"])
            if refused is not None:
                return refused
        return arguments_check(call["arguments"], self.guard)

    def not_allowed(self, name: str) -> dict[str, Any] | None:
        """R12 and R13 at execution: the refusal of registered tool ``name`` in this run.

        ``admit`` asks it only when the runtime has no mechanism of its own that refuses such
        a call (``Sdk.refuses_at_execution`` unset): a second check on top of the runtime's
        would hide the very failure ward exists to find (P14). An adapter hands it to that
        mechanism as its policy."""
        if self.read_only and (self.tool(name) or {}).get("safety") == "destructive":
            return not_allowed_read_only(name)
        if name in self.disabled:
            return not_allowed_off(name)
        return None

    def available(self) -> str:
        return f"Call one of the available tools: {', '.join(self.offered)}."

    async def ask_user(self, call_id: str, index: int, input: Any, signal: Signal | None) -> dict[str, Any]:
        self.asking += 1
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
        try:
            text = await self.ward.ask(call_id, index, input, signal)
            return {"success": True, "data": {"answer": text}, "stateChanged": False}
        finally:
            self.asking -= 1

    def enter_results(self) -> None:
        """The batch's results entered in call order (R17): each call one result."""
        batch = self.batch
        if batch is None:
            return
        for index, call in enumerate(batch.calls):
            if batch.results[index] is None:
                self.finished(index, aborted())
            self.recorder.append(self.store, {"role": "tool", "callId": call["id"], "name": call["name"], "result": batch.results[index]})
        self.batch = None

    def end(self, outcome: str, fields: dict[str, Any], code: str | None) -> None:
        """The run's end: its terminal event and report (R23)."""
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
        self.recorder.end(outcome, fields, code, self.batches, self.calls)
        self.agent.current = None

    def complete(self, text: str) -> None:
        self.end("run.completed", {"text": self.guard.text(text)}, None)

    def fail(self, error: Stop | dict[str, Any]) -> None:
        """Ends the run for ``error``: a Stop (cancel, deadline), or a failure with its code."""
        if isinstance(error, Stop):
            if error.outcome == "run.cancelled":
                self.end("run.cancelled", {}, None)
            else:
                assert error.error is not None
                self.end("run.failed", {"error": error.error}, error.error["code"])
            return
        self.end("run.failed", {"error": error}, error["code"])


def fatal() -> None:
    """Ends the adapter for a failure of its own (exit 70, the traceback on standard error):
    ward reports a protocol violation with that tail; the adapter never hangs."""
    traceback.print_exc()
    sys.stderr.flush()
    os._exit(70)


class Agent:
    """The adapter process's state, as :func:`ward_kit.wire.serve` drives it: the catalogue of
    the last ``reset``, the sessions, and the run in progress. ``sdk`` is the adapter's
    class (:class:`Sdk`)."""

    def __init__(self, sdk: Sdk) -> None:
        self.sdk = sdk
        self.out: wire.Out = lambda message: None
        self.ward = Ward(self.out)
        self.catalogue: list[dict[str, Any]] = []
        self.by_name: dict[str, dict[str, Any]] = {}
        self.validators: dict[str, Any] = {}
        self.sessions: dict[str, list[Any]] = {}
        self.current: Run | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    def ready(self) -> dict[str, Any]:
        return {"runtime": self.sdk.runtime, "claims": self.sdk.claims, "notes": self.sdk.notes}

    def reset(self, message: dict[str, Any], out: wire.Out) -> None:
        self.out = out
        self.ward = Ward(out)
        self.catalogue = message["tools"]
        self.by_name = {tool["name"]: tool for tool in self.catalogue}
        self.validators = {tool["name"]: validator_of(tool["parameters"]) for tool in self.catalogue}
        self.sessions = {}
        self.current = None
        self.tasks = set()
        reset: Callable[[dict[str, Any], Agent], None] | None = getattr(self.sdk, "reset", None)
        if reset is not None:
            reset(message, self)

    def session_store(self, name: str) -> list[Any]:
        return self.sessions.setdefault(name, [])

    def handle(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "startRun":
            self.start_run(message)
        elif kind == "cancel":
            if self.current is not None:
                self.current.stop(Stop("run.cancelled"))
        else:
            self.ward.deliver(message)

    def start_run(self, message: dict[str, Any]) -> None:
        refused = limits_error(message["limits"]) or secrets_error(message["secrets"])
        if refused is not None:
            self.out({"type": "startError", "message": refused})
            return
        self.ward.begin_run()
        run = Run(self, message)
        self.current = run
        run.open()
        self.spawn(self.sdk.start(run))

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Runs ``work`` (a run, or a durable runtime's recovery) as a task of the loop; an
        exception in it ends the adapter (:func:`fatal`)."""

        async def go() -> None:
            try:
                await work
            except Exception:
                fatal()

        # A strong reference: the loop keeps only weak ones to its tasks.
        task = asyncio.get_running_loop().create_task(go())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


class DurableAgent(Agent):
    """The kit's agent for a durable runtime (PROTOCOL.md, "Durable runtimes and crashes"):
    ``ready`` names the store (the adapter's ``durable``), ``crash`` drops the runtime (its
    ``crash()``) with the run in progress and its tasks, ``recover`` runs its ``recover(agent,
    message)`` as a task, and :meth:`resume_run` opens the run a crash cut. Each run knows the
    session it belongs to (``run.session``)."""

    def ready(self) -> dict[str, Any]:
        return {**super().ready(), "durable": self.sdk.durable}  # type: ignore[attr-defined]

    def crash(self) -> None:
        self.current = None
        self.tasks = set()
        self.sdk.crash()  # type: ignore[attr-defined]

    def handle(self, message: dict[str, Any]) -> None:
        if message["type"] == "recover":
            self.spawn(self.sdk.recover(self, message))  # type: ignore[attr-defined]
            return
        super().handle(message)

    def start_run(self, message: dict[str, Any]) -> None:
        super().start_run(message)
        if self.current is not None:
            self.current.session = message["session"]  # type: ignore[attr-defined]

    def resume_run(self, policy: dict[str, Any], secrets: list[str]) -> Run:
        """A run taken up after a crash: its policy (session, prompt, read-only flag,
        switched-off tools, limits) from the adapter's store, its secrets from ``recover``."""
        self.ward.begin_run()
        keys = ("session", "prompt", "readOnly", "disabledTools", "limits")
        run = Run(self, {**{key: policy[key] for key in keys}, "secrets": secrets})
        run.session = policy["session"]  # type: ignore[attr-defined]
        self.current = run
        run.recorder.event({"type": "run.started", "readOnly": run.read_only, "tools": run.offered})
        run.touch()
        return run
