"""Your runtime behind ward: a template (README.md in this folder walks through it). Run with
``adapters/python/.venv/bin/python adapters/python/template.py`` after
``uv sync --project adapters/python``.

Two parts, one file. ``run_agent`` is a tiny hand-written agent runtime standing for yours: it
asks the model, validates each call against its tool's JSON Schema, runs the calls of a reply
(concurrently with ``asyncio.gather`` unless one names a sequential tool), feeds the results
back in call order, and stops at a reply without calls or at its turn limit. ``Template`` is
the adapter: it hands ``run_agent`` ward's model and ward's tool bodies through the kit
(``src/ward_kit/``), and says in ``claims`` and ``notes`` which rule is whose. Replace
``run_agent`` with your runtime, keep what your runtime keeps in ``claims``, and name in
``notes`` what the kit keeps for it.

The runtime's (claimed, and what ward tests):
- R5, R6: each input parsed (``json.loads``, strict: no ``NaN``) and validated (jsonschema,
  compiled once per schema) before the body, after the embedder's checks (``hooks.admit``,
  R3's order);
- R16: the turn loop; R17: concurrent unless sequential, results in call order;
- R19's turn limit (a further reply with calls ends the run TOOL_LOOP_LIMIT) and request
  timeout (``asyncio.timeout``: a request not answered in time is cancelled,
  PROVIDER_TIMEOUT, not retried);
- R20's stop: the run's signal reaches the model and every running read.
The kit's (``ward_kit.agent``, claimed for the runtime and named in ``notes``): R1, R4,
R11–R14, R3's checks before validation (``Run.admit``: the call id, the tool's existence, R12,
R13, the batch cap, size and secret values), the body (``Run.perform``: none after a stop), the
inactivity deadline of R19, R22's guard and R23's events and store.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))

from ward_kit import wire  # noqa: E402 — the clocks are faked before anything else is imported

# `wire.serve` starts the interpreter again with string hashing pinned (PYTHONHASHSEED=0); a
# runtime slow to import calls `wire.pin_hash_seed()` here first, so as to import it once.
wire.install()

from ward_kit.agent import Agent, Run, Stop, input_invalid, validator_of  # noqa: E402
from ward_kit.runtime import (  # noqa: E402
    BodyPanic,
    ProviderError,
    Signal,
    failure,
    internal,
    parse_json,
    provider_failure,
    unclaimed_notes,
    unexpected_end,
)

# ---- the runtime: replace with yours ------------------------------------------------------


class TurnLimit(Exception):
    """The turn limit's error (R19)."""


class RequestTimeout(Exception):
    """A model request that did not answer within its time (R19)."""


async def ask(model: Any, messages: list[Any], signal: Signal, seconds: float) -> dict[str, Any]:
    """The model's answer to ``messages``, its request cancelled after ``seconds`` (R19) or
    on ``signal``."""
    try:
        async with asyncio.timeout(seconds):
            return await model(messages, signal)
    except TimeoutError as error:
        raise RequestTimeout() from error


WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
"""Unicode's White_Space: R6's blank argument text is made of these alone."""


def parsed(tool: dict[str, Any], text: str) -> tuple[Any, dict[str, Any] | None]:
    """The parsed input of a call, or its R6 error: blank text is ``{}``."""
    try:
        value = {} if text.strip(WHITE_SPACE) == "" else parse_json(text)
    except (ValueError, RecursionError) as error:
        reason = str(error) if isinstance(error, ValueError) else "it nests too deeply"
        message = f"is not valid JSON: {reason}"
        return None, invalid([{"path": "/", "message": message}], f"The tool input is invalid: /: {message}")
    validator = tool["validator"]
    if validator.is_valid(value):
        return value, None
    rendered = input_invalid(validator, value)
    return None, invalid(rendered["fields"], rendered["message"])


def invalid(fields: list[dict[str, str]], message: str) -> dict[str, Any]:
    return failure("TOOL_INPUT_INVALID", message, "Correct the invalid field and retry the request.", fields)


async def run_call(agent: dict[str, Any], call: dict[str, Any], index: int) -> dict[str, Any]:
    """Runs one call: the embedder's checks first (``hooks.admit``: a policy, the batch cap),
    then parsing and validation, then the tool's body, whose exception is INTERNAL_ERROR. A
    result of its own is reported through ``hooks.refused``."""
    hooks = agent["hooks"]
    refusal = hooks["admit"](call, index)
    if refusal is not None:
        return refusal
    tool = agent["tools"][call["name"]]
    value, error = parsed(tool, call["arguments"])
    if error is not None:
        hooks["refused"](index, error)
        return error
    try:
        return await tool["execute"](value, index, agent["signal"])
    except Exception:
        # A body that raises gets INTERNAL_ERROR, its own text never shown to the model (R3).
        result = internal()
        hooks["refused"](index, result)
        return result


async def run_agent(agent: dict[str, Any]) -> str:
    """A tiny agent loop. ``model(messages, signal)`` answers ``{text, calls}`` (within
    ``request_timeout_s``); ``tools`` maps a name to ``{validator, sequential,
    execute(input, index, signal)}``; ``messages`` is the transcript so far; at most
    ``max_turns`` batches run."""
    model, tools, messages, signal = agent["model"], agent["tools"], agent["messages"], agent["signal"]
    batches = 0
    while True:
        signal.raise_if_aborted()
        reply = await ask(model, messages, signal, agent["request_timeout_s"])
        messages.append({"role": "assistant", "text": reply["text"], "calls": reply["calls"]})
        if not reply["calls"]:
            return reply["text"]
        if batches == agent["max_turns"]:
            raise TurnLimit()
        batches += 1
        calls = reply["calls"]
        if any(call["name"] in tools and tools[call["name"]]["sequential"] for call in calls):
            results = [await run_call(agent, call, index) for index, call in enumerate(calls)]
        else:
            results = await asyncio.gather(*(run_call(agent, call, index) for index, call in enumerate(calls)))
        for call, result in zip(calls, results, strict=True):
            messages.append({"role": "tool", "callId": call["id"], "name": call["name"], "result": result})


# ---- the adapter: ward's model and bodies through the kit ---------------------------------


class Template:
    runtime = {"name": "ward-template-python", "version": "1.0.0"}

    claims = ["R1", "R2", "R3", "R4", "R5", "R6", "R7", "R11", "R12", "R13", "R14", "R16", "R17", "R19", "R20", "R22", "R23"]

    notes = {
        "R1": "the kit's: each tool's safety and execution mode, from `reset` (ward_kit/agent.py)",
        "R3": "the runtime's: the tool's existence and validation before the body; the kit's: the call id, payload size, configured-secret and read-only checks (Run.admit)",
        "R4": "the kit's: the run's tool list in registration order (ward_kit/agent.py)",
        "R8": "jsonschema's errors are walked lazily and cut at five, but in its keyword order and ajv's wording, not R6's documented order: not claimed, so I4 is not judged against the core's wording",
        "R8a": "only the catalogue's schemas are registered",
        "R11": "the kit's: the read-only list (ward_kit/agent.py)",
        "R12": "the kit's: a destructive call refused at execution (Run.admit)",
        "R13": "the kit's: a switched-off call refused at execution (Run.admit)",
        "R14": "the kit's: limit ranges and secret values refused at start (ward_kit/runtime.py)",
        "R18": "the template does not retry the provider",
        "R19": "the runtime's: the turn limit and the request timeout; the kit's: the batch cap and the inactivity deadline",
        "R21": "a provider error ends the run with R21's code, without retries (R18)",
        "R22": "the kit's: the exact-value guard on every record (ward_kit/runtime.py)",
        "R23": "the kit's: events and the session store (ward_kit/agent.py)",
        **unclaimed_notes(
            r15="no redactor: the prompt is stored and sent as the guard leaves it",
            r30="no durable sessions",
        ),
    }

    async def start(self, run: Run) -> None:
        tools = {
            tool["name"]: {
                "validator": validator_of(tool["parameters"]),
                "sequential": tool["executionMode"] == "sequential",
                "execute": lambda value, index, signal: run.perform(index, value, signal),
            }
            for tool in run.agent.catalogue
        }
        hooks = {
            "admit": lambda call, index: run.admit(index),
            "refused": lambda index, result: run.finished(index, result),
        }

        async def model(messages: list[Any], signal: Signal) -> dict[str, Any]:
            run.enter_results()
            reply = await run.ask(messages, run.offered, signal)
            run.replied(reply)
            return reply

        messages = [*run.history, {"role": "user", "text": run.prompt}]
        agent = {
            "model": model,
            "tools": tools,
            "hooks": hooks,
            "messages": messages,
            "max_turns": run.limits["turnsMax"],
            "request_timeout_s": run.limits["providerTimeoutMs"] / 1000,
            "signal": run.signal,
        }
        try:
            text = await run_agent(agent)
            run.complete(text)
        except Exception as error:
            run.enter_results()
            run.fail(self.outcome_of(run, error))

    def outcome_of(self, run: Run, error: BaseException) -> Stop | dict[str, Any]:
        if run.signal.aborted and isinstance(run.signal.reason, Stop):
            return run.signal.reason
        if isinstance(error, TurnLimit):
            limit = run.limits["turnsMax"]
            return failure("TOOL_LOOP_LIMIT", f"The agent stopped after {limit} tool turns.", "Refine the request and retry.")["error"]
        if isinstance(error, RequestTimeout):
            return provider_failure("timeout", "The provider did not answer in time.")
        if isinstance(error, ProviderError):
            return provider_failure(error.kind, str(error))
        if isinstance(error, BodyPanic):
            return unexpected_end("a body's panic reached the turn loop")
        return unexpected_end(repr(error))


if __name__ == "__main__":
    wire.serve(Agent(Template()))
