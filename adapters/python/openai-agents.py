"""The chart agent on the OpenAI Agents SDK for Python (``openai-agents``, import name
``agents``), behind ward's protocol. Run with
``adapters/python/.venv/bin/python adapters/python/openai-agents.py`` after
``uv sync --project adapters/python`` (the SDK is pinned in ``uv.lock``, group ``sdks``).
The JavaScript sibling is ``adapters/node/openai-agents.js``; where the two differ, the reason
is below. What is the SDK's and what is the adapter's:

SDK (what ward tests):
- the turn loop: one ``Agent`` (instructions, tools, explicit model settings) per run, run by
  ``Runner.run`` with ``max_turns=turnsMax`` and a ``RunConfig`` whose ``model_provider``
  resolves the agent's model to ward's provider (so no OpenAI client is built);
  ``MaxTurnsExceeded`` is reported as R19's ``TOOL_LOOP_LIMIT``. As in JavaScript the SDK
  counts model calls where R19 counts batches: ``max_turns=n`` stops the run before the
  model's (n+1)th reply, ``n + 1`` would run an (n+1)th batch; the adapter takes the reading
  that never runs a batch past the limit;
- the tool list: every tool of the catalogue is a ``FunctionTool`` with the tool's JSON Schema
  as ``params_json_schema`` (``strict_json_schema=False``: the catalogue's schemas have
  optional properties, which strict mode would make required), in registration order, whose
  ``is_enabled`` is the run's resolved list (R4, R11–R13); a call to a tool not enabled is
  the SDK's "tool not found" (``tool_not_found_behavior="return_error_to_model"``), whose
  text ``RunConfig.tool_error_formatter`` gives as ``TOOL_NOT_FOUND`` for a name not
  registered and ``TOOL_NOT_ALLOWED`` for a registered tool (after R3's call id checks);
- R12's second check: a tool input guardrail (``ToolInputGuardrail``,
  ``ToolGuardrailFunctionOutput.reject_content``) on every tool refuses a destructive tool in
  a read-only run and a switched-off tool, whatever the model sent;
- scheduling: the SDK starts every function call of a reply as a task of its own and gives
  the results back in the reply's order;
- retries: ``ModelSettings.retry`` (``ModelRetrySettings``) with
  ``max_retries=providerRetriesMax``, the SDK's backoff (its jitter draws from ``random``,
  seeded by the kit), and ``retry_policies.any(provider_suggested(), network_error())``: the
  model's ``get_retry_advice`` says which of ward's failures are retryable, the SDK reads
  the ``retry-after-ms`` header off the error itself, and ``network_error`` retries the SDK's
  own ``ModelTimeoutError`` (R18 retries timeouts);
- the provider timeout: ``ModelSettings.timeout`` (seconds; ``ModelTimeoutError``);
- stopping: the SDK takes no abort signal; a run stops by the cancellation of the task that
  runs ``Runner.run``, which the SDK hands on to the model request and to every tool task
  (cancel and the inactivity deadline cancel it).

Adapter (``src/ward_kit/``, and here):
- ward's provider as a ``Model`` subclass (``get_response``) behind a ``ModelProvider``: it
  sends the SDK's input items, as the SDK built them, as the protocol's transcript, and
  answers with a ``ResponseOutputMessage`` and ``ResponseFunctionToolCall`` items; ward's
  failures are raised as a provider package raises them (an error with the HTTP
  ``status_code`` and ``headers``), with ``get_retry_advice`` saying which are retryable and
  that a refused request (429, 503) is safe to replay;
- parsing and validation (R5, R6). Here the Python SDK differs from the JavaScript one: it
  validates only the tools ``@function_tool`` derives from a Python signature (a pydantic
  model), and hands a ``FunctionTool`` built from a JSON Schema the raw argument text, the
  docs' "custom function tool", whose ``on_invoke_tool`` parses and validates it itself.
  So the adapter does: strict JSON (a repeated key refused at its object's path, with line
  and column), then jsonschema against the tool's schema (``ward_kit.agent.input_invalid``
  renders R6's fields), after R3's checks that come before validation (``Run.admit``);
- a body's failure: a hand-built ``FunctionTool`` has no ``failure_error_function`` (only
  ``@function_tool`` wraps its invoker with one; an exception out of ``on_invoke_tool``
  fails the whole run, ``UserError: Error running tool …``), so ``on_invoke_tool`` gives a
  body's panic ``INTERNAL_ERROR`` itself, as the SDK's docs ask of such a tool;
- R17's sequential batches: a lock, taken in the order the SDK starts the calls. The SDK's
  only scheduling setting, ``RunConfig.tool_execution.max_function_tool_concurrency``, is the
  run's for every batch, so it cannot run one batch in parallel and the next one at a time;
  ``ModelSettings.parallel_tool_calls`` asks the provider for at most one call per reply and
  schedules nothing (ward's provider follows its script), so it is not set;
- R20's running write: the SDK cancels every tool task when its run is cancelled; a write's
  body runs in a task the adapter shields from that cancellation, and the run ends only after
  it has its result (a running write completes and keeps it);
- ``ask_user`` is a tool like the others, whose body (the kit's) asks ward's user.
  ``needs_approval`` does not fit it: an approval is a yes or no on running a call, it ends
  ``Runner.run`` with an interruption to resume from a ``RunState``, and ``ask_user``'s
  result is the user's own text;
- tracing is disabled (``set_tracing_disabled(True)`` and ``RunConfig.tracing_disabled``), so
  no exporter or background thread runs.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import traceback
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))

from ward_kit import wire  # noqa: E402 — the clocks and uuid4 are faked before the SDK binds them

# Importing the SDK (with the OpenAI client, MCP and its sandbox, which its package imports)
# takes about 4 s of CPU compiled from source and under 2 s from bytecode, and ward waits 10 s
# for `ready`. So the interpreter starts again with string hashing pinned (P4) before the
# import, not after it, and keeps the compiled bytecode even where PYTHONDONTWRITEBYTECODE is
# set: the first start writes it under the environment's `__pycache__` folders (gitignored),
# as a Python without that setting does, and later starts read it.
if __name__ == "__main__":
    wire.pin_hash_seed()
sys.dont_write_bytecode = False
wire.install()

from agents import Agent as SdkAgent  # noqa: E402
from agents import (  # noqa: E402
    FunctionTool,
    MaxTurnsExceeded,
    Model,
    ModelBehaviorError,
    ModelProvider,
    ModelResponse,
    ModelRetryAdvice,
    ModelRetrySettings,
    ModelSettings,
    ModelTimeoutError,
    RunConfig,
    Runner,
    ToolErrorFormatterArgs,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    Usage,
    retry_policies,
    set_tracing_disabled,
)
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from ward_kit.agent import Agent, Run, Stop, input_invalid  # noqa: E402
from ward_kit.runtime import (  # noqa: E402
    HTTP_STATUS,
    PROVIDER_CODES,
    BodyPanic,
    ProviderError,
    aborted,
    failure,
    internal,
    is_envelope,
    not_allowed_off,
    precheck,
    provider_failure,
    run_failed,
    unclaimed_notes,
    unexpected_end,
)

VERSION = metadata.version("openai-agents")

set_tracing_disabled(True)


# ---- R6: the argument text ------------------------------------------------------------------

WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
"""Unicode's White_Space: R6's blank argument text is made of these alone."""

DEPTH_MAX = 128
"""How deeply arrays and objects may nest, as ward's parser (serde_json) allows."""

_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")


class NotJson(ValueError):
    """Text that is not JSON: the parser's reason (grammar only, never the text) and where."""

    def __init__(self, reason: str, text: str, at: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line, self.column = position(text, at)


def position(text: str, at: int) -> tuple[int, int]:
    """The 1-based line and column of character ``at``, the column counted in UTF-8 bytes as
    ward's parser counts it (``名`` is three columns)."""
    start = text.rfind("\n", 0, at) + 1
    return text.count("\n", 0, at) + 1, len(text[start:at].encode("utf-8", "surrogatepass")) + 1


def pointer(path: list[str | int]) -> str:
    """A JSON Pointer, the root written ``/``."""
    text = "".join(f"/{str(part).replace('~', '~0').replace('/', '~1')}" for part in path)
    return text or "/"


class Reader:
    """Strict JSON, as ward reads an argument text (R6): no ``NaN`` or ``Infinity``, no number
    beyond a double, at most 128 levels deep; a repeated key is read over (the later value
    kept) so that text which stops being JSON further on is reported as not JSON, and the
    first repeat is kept: its object's path and the position of the repeated key's end."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.path: list[str | int] = []
        self.repeat: tuple[str, int, int] | None = None

    def read(self) -> Any:
        text = self.text
        value, at = self.value(_SPACE.match(text, 0).end(), 0)
        at = _SPACE.match(text, at).end()
        if at != len(text):
            raise NotJson("trailing characters", text, at)
        return value

    def value(self, at: int, depth: int) -> tuple[Any, int]:
        text = self.text
        if at >= len(text):
            raise self.end("EOF while parsing a value")
        head = text[at]
        if head == '"':
            return self.string(at + 1)
        if head in ("{", "["):
            if depth == DEPTH_MAX:
                raise NotJson("recursion limit exceeded", text, at)
            return (self.object if head == "{" else self.array)(at + 1, depth + 1)
        for word, constant in (("null", None), ("true", True), ("false", False)):
            if text.startswith(word, at):
                return constant, at + len(word)
        match = _NUMBER.match(text, at)
        if match is None:
            raise NotJson("expected value", text, at)
        integer, fraction, exponent = match.groups()
        try:
            number: int | float = float(match.group()) if fraction or exponent else int(integer)
        except ValueError:  # an integer past Python's digit limit
            raise NotJson("number out of range", text, at) from None
        if isinstance(number, float) and number in (float("inf"), float("-inf")):
            raise NotJson("number out of range", text, at)
        return number, match.end()

    def string(self, at: int) -> tuple[str, int]:
        try:
            return json.decoder.scanstring(self.text, at, True)
        except json.JSONDecodeError as error:
            # Python's reasons in the words of ward's parser (serde_json).
            if error.msg.startswith("Unterminated string"):
                raise self.end("EOF while parsing a string") from None
            if error.msg.startswith("Invalid control character"):
                raise NotJson("control character (\\u0000-\\u001F) found while parsing a string", self.text, error.pos) from None
            raise NotJson("invalid escape", self.text, error.pos) from None

    def end(self, reason: str) -> NotJson:
        """The error of text that ends too soon, at its last character."""
        return NotJson(reason, self.text, max(len(self.text) - 1, 0))

    def object(self, at: int, depth: int) -> tuple[dict[str, Any], int]:
        text = self.text
        result: dict[str, Any] = {}
        at = _SPACE.match(text, at).end()
        if text[at : at + 1] == "}":
            return result, at + 1
        while True:
            if at >= len(text):
                raise self.end("EOF while parsing an object")
            if text[at] != '"':
                raise NotJson("key must be a string", text, at)
            key, at = self.string(at + 1)
            if key in result and self.repeat is None:
                line, column = position(text, at - 1)
                self.repeat = (pointer(self.path), line, column)
            at = _SPACE.match(text, at).end()
            if at >= len(text):
                raise self.end("EOF while parsing an object")
            if text[at] != ":":
                raise NotJson("expected `:`", text, at)
            at = _SPACE.match(text, at + 1).end()
            self.path.append(key)
            result[key], at = self.value(at, depth)
            self.path.pop()
            at = _SPACE.match(text, at).end()
            if at >= len(text):
                raise self.end("EOF while parsing an object")
            head = text[at]
            if head == "}":
                return result, at + 1
            if head != ",":
                raise NotJson("expected `,` or `}`", text, at)
            at = _SPACE.match(text, at + 1).end()
            if text[at : at + 1] == "}":
                raise NotJson("trailing comma", text, at)

    def array(self, at: int, depth: int) -> tuple[list[Any], int]:
        text = self.text
        result: list[Any] = []
        at = _SPACE.match(text, at).end()
        if at >= len(text):
            raise self.end("EOF while parsing a list")
        if text[at] == "]":
            return result, at + 1
        while True:
            self.path.append(len(result))
            item, at = self.value(at, depth)
            self.path.pop()
            result.append(item)
            at = _SPACE.match(text, at).end()
            if at >= len(text):
                raise self.end("EOF while parsing a list")
            head = text[at]
            if head == "]":
                return result, at + 1
            if head != ",":
                raise NotJson("expected `,` or `]`", text, at)
            at = _SPACE.match(text, at + 1).end()
            if text[at : at + 1] == "]":
                raise NotJson("trailing comma", text, at)


def parse_arguments(text: str) -> tuple[Any, dict[str, str] | None]:
    """The input of argument ``text``, or R6's one error for it: blank text is ``{}``; text
    that is not JSON is an error at ``/``; JSON that repeats a key an error at the object's
    path; each with line and column."""
    if text.strip(WHITE_SPACE) == "":
        return {}, None
    reader = Reader(text)
    try:
        value = reader.read()
    except NotJson as error:
        return None, {"path": "/", "message": f"is not valid JSON: {error.reason} (line {error.line}, column {error.column})"}
    if reader.repeat is not None:
        path, line, column = reader.repeat
        return None, {"path": path, "message": f"repeats a key (line {line}, column {column})"}
    return value, None


def checked(validator: Any, text: str) -> tuple[Any, dict[str, Any] | None]:
    """R5 and R6 for one call: its parsed input, or its ``TOOL_INPUT_INVALID`` envelope."""
    value, error = parse_arguments(text)
    if error is not None:
        message = f"The tool input is invalid: {error['path']}: {error['message']}"
        return None, failure("TOOL_INPUT_INVALID", message, None, [error])
    if validator.is_valid(value):
        return value, None
    rendered = input_invalid(validator, value)
    return None, failure("TOOL_INPUT_INVALID", rendered["message"], None, rendered["fields"])


# ---- the transcript -------------------------------------------------------------------------


def field(item: Any, name: str) -> Any:
    """A field of an input item, a dict or a pydantic model."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        if field(part, "type") in ("input_text", "output_text"):
            parts.append(field(part, "text") or "")
    return "".join(parts)


def result_of(output: Any) -> dict[str, Any]:
    """A tool output item's envelope: the adapter's own JSON, or the SDK's text as an
    ``INTERNAL_ERROR``."""
    text = output if isinstance(output, str) else text_of(output) if isinstance(output, list) else json.dumps(output)
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    return value if is_envelope(value) else failure("INTERNAL_ERROR", text)


def transcript_of(items: str | list[Any]) -> list[dict[str, Any]]:
    """The SDK's input items as the protocol's transcript (the instructions go apart)."""
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    transcript: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    assistant: dict[str, Any] | None = None

    def current() -> dict[str, Any]:
        nonlocal assistant
        if assistant is None:
            assistant = {"role": "assistant", "text": "", "calls": []}
            transcript.append(assistant)
        return assistant

    for item in items:
        kind = field(item, "type")
        if kind == "function_call":
            call_id, name = field(item, "call_id"), field(item, "name")
            names[call_id] = name
            current()["calls"].append({"id": call_id, "name": name, "arguments": field(item, "arguments")})
        elif kind == "function_call_output":
            assistant = None
            call_id = field(item, "call_id")
            transcript.append({"role": "tool", "callId": call_id, "name": names.get(call_id, ""), "result": result_of(field(item, "output"))})
        elif field(item, "role") == "user":
            assistant = None
            transcript.append({"role": "user", "text": text_of(field(item, "content"))})
        elif field(item, "role") == "assistant":
            assistant = None
            current()["text"] += text_of(field(item, "content"))
    return transcript


def items_of(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The SDK's input items for a session's earlier runs (the store holds the protocol's
    form)."""
    items: list[dict[str, Any]] = []
    for number, message in enumerate(history):
        role = message["role"]
        if role == "user":
            items.append({"role": "user", "content": message["text"]})
        elif role == "assistant":
            if message["text"] != "" or not message["calls"]:
                content = [{"type": "output_text", "text": message["text"], "annotations": []}]
                items.append({"type": "message", "id": f"msg_h{number}", "role": "assistant", "status": "completed", "content": content})
            for call in message["calls"]:
                items.append({"type": "function_call", "call_id": call["id"], "name": call["name"], "arguments": call["arguments"], "status": "completed"})
        else:
            items.append({"type": "function_call_output", "call_id": message["callId"], "output": json.dumps(message["result"], ensure_ascii=False)})
    return items


# ---- ward's provider as the SDK's Model -------------------------------------------------------


class ProviderHttpError(Exception):
    """ward's failure as a provider package raises it: ``status_code`` and ``headers``, which
    the SDK's retry machinery reads."""

    def __init__(self, error: ProviderError) -> None:
        status = HTTP_STATUS[error.kind]
        text = f"Invalid response body: {error}" if error.kind == "malformedResponse" else f"{status} {error}"
        super().__init__(text)
        self.status_code = status
        self.kind = error.kind
        self.retryable = error.retryable
        self.headers = {} if error.retry_after_ms is None else {"retry-after-ms": str(error.retry_after_ms)}


class WardModel(Model):
    """ward's provider: each request goes to ward as the protocol's ``modelRequest``."""

    def __init__(self, run: Run, ids: dict[str, int]) -> None:
        self.run = run
        self.ids = ids

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *,
        previous_response_id: Any = None,
        conversation_id: Any = None,
        prompt: Any = None,
    ) -> ModelResponse:
        run = self.run
        run.enter_results()
        offered = [tool.name for tool in tools if isinstance(tool, FunctionTool)]
        try:
            # No signal: a stop cancels the task, and the kit's wait tells ward (modelCancel).
            reply = await run.ask(transcript_of(input), offered, None)
        except ProviderError as error:
            raise ProviderHttpError(error) from None
        run.replied(reply)
        number = self.ids["next"]
        self.ids["next"] = number + 1
        output: list[Any] = []
        if reply["text"] != "" or not reply["calls"]:
            text = ResponseOutputText(type="output_text", text=reply["text"], annotations=[])
            output.append(ResponseOutputMessage(id=f"msg_{number}", type="message", role="assistant", status="completed", content=[text]))
        for call in reply["calls"]:
            output.append(ResponseFunctionToolCall(type="function_call", call_id=call["id"], name=call["name"], arguments=call["arguments"], status="completed"))
        return ModelResponse(output=output, usage=Usage(), response_id=f"ward-{number}")

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the chart agent does not stream")

    def get_retry_advice(self, request: Any) -> ModelRetryAdvice | None:
        """What a provider package advises: retry what R18 retries; a refused request is safe
        to replay. The retry-after is the SDK's to read, from the error's headers."""
        error = request.error
        if not isinstance(error, ProviderHttpError):
            return None
        safe = "safe" if error.status_code in (429, 503) else None
        return ModelRetryAdvice(suggested=error.retryable, replay_safety=safe)


class WardProvider(ModelProvider):
    def __init__(self, model: WardModel) -> None:
        self.model = model

    def get_model(self, model_name: str | None) -> Model:
        return self.model


# ---- the runtime -------------------------------------------------------------------------------


class OpenAiAgents:
    runtime = {"name": "openai-agents-python", "version": VERSION}

    claims = ["R1", "R2", "R3", "R4", "R5", "R6", "R7", "R11", "R12", "R13", "R14", "R16", "R17", "R18", "R19", "R20", "R21", "R22", "R23"]

    # R12's second check and R13 are the SDK's input guardrail (P14): the kit does not repeat them.
    refuses_at_execution = True

    notes = {
        "R1": "the kit's: each tool's safety and execution mode, from `reset` (ward_kit/agent.py)",
        "R3": "the SDK's: the tool's existence (tool not found); the kit's: the call id, batch cap, payload size and configured-secret checks (Run.admit); the adapter's: parsing and validation in on_invoke_tool, and INTERNAL_ERROR for a body that fails (a hand-built FunctionTool has no failure_error_function)",
        "R4": "the SDK's is_enabled filters the registered tools by the kit's resolved list (ward_kit/agent.py)",
        "R5": "the adapter's: the SDK validates only @function_tool's pydantic models and hands a FunctionTool built from a JSON Schema the raw text; jsonschema, compiled once per schema, runs in on_invoke_tool before the body",
        "R6": "the adapter's: strict JSON (a repeated key refused at its object's path, with line and column) and the kit's rendering of jsonschema's errors",
        "R8": "jsonschema's errors are walked lazily and cut at five, but in its keyword order and ajv's wording, not R6's documented order: not claimed, so I4 is not judged against the core's wording",
        "R8a": "the adapter validates only the catalogue's schemas; any schema a developer registers is not tested here",
        "R11": "the kit's read-only list, applied through the SDK's is_enabled",
        "R12": "resolution: the SDK's is_enabled, from the kit's list; execution: the SDK's tool input guardrail, from the kit's policy (run.not_allowed); the kit does not check it a second time",
        "R13": "the SDK's is_enabled and tool input guardrail, from the kit's policy; the kit does not check it a second time",
        "R14": "the kit's: limit ranges and secret values refused at start (ward_kit/runtime.py)",
        "R17": "the SDK's: concurrent tool tasks, their results in call order (a not-found call's after them: findings/openai-agents-python.md, 4); the adapter's: a lock for a batch holding a sequential tool (the SDK's max_function_tool_concurrency is per run, not per batch)",
        "R18": "the SDK's: ModelSettings.retry with retry_policies, its backoff and its reading of retry-after-ms; it does not cap a retry-after at 60 s (findings/openai-agents-python.md)",
        "R19": "the SDK's: max_turns and ModelSettings.timeout; the kit's: the batch cap and the inactivity deadline",
        "R20": "the SDK's: cancelling the run's task reaches the model request and every tool task; the adapter's: a running write is shielded from it and completes",
        "R21": "the adapter's: ward's failures raised as a provider package raises them, and the SDK's last error mapped to R21's code",
        "R22": "the kit's: the exact-value guard on every record (ward_kit/runtime.py)",
        "R23": "the kit's: events and the session store (ward_kit/agent.py)",
        **unclaimed_notes(
            r15="the Agents SDK has no prompt redactor (its trace_include_sensitive_data and OPENAI_AGENTS_DONT_LOG_TOOL_DATA keep data out of traces and logs only); the adapter applies only R22's exact-value guard, not the pattern rules of section 7",
            r30="no durable sessions: the SDK's sessions keep items, and its RunState resumes an interrupted approval, but neither journals intents before bodies",
        ),
    }

    def __init__(self) -> None:
        self.ids = {"next": 0}

    def reset(self, message: dict[str, Any], agent: Agent) -> None:
        """A fresh numbering of the model's responses for each seed (P4)."""
        self.ids = {"next": 0}

    # -- the tools

    def tools_of(self, run: Run, writes: set[asyncio.Task[Any]]) -> list[FunctionTool]:
        """The catalogue in registration order, each tool with the SDK's own mechanisms."""
        offered = set(run.offered)

        async def policy(data: Any) -> ToolGuardrailFunctionOutput:
            """R12 and R13 at execution, whatever the model sent."""
            context = data.context
            refusal = run.not_allowed(context.tool_name)
            if refusal is None:
                return ToolGuardrailFunctionOutput.allow()
            index = run.index_of(context.tool_call_id, context.tool_name, context.tool_arguments) if run.batch else -1
            if index >= 0:
                # Past the cap the kit's answer comes first, with no `tool.started` (R19).
                capped = run.past_cap(index)
                if capped is None:
                    run.started(index)
                refusal = capped or refusal
                run.finished(index, refusal)
            return ToolGuardrailFunctionOutput.reject_content(json.dumps(refusal, ensure_ascii=False))

        guardrail = ToolInputGuardrail(guardrail_function=policy, name="ward-policy")
        return [
            FunctionTool(
                name=entry["name"],
                description=entry["description"],
                params_json_schema=entry["parameters"],
                on_invoke_tool=self.invoker(run, entry, writes),
                strict_json_schema=False,
                is_enabled=lambda context, agent, name=entry["name"]: name in offered,
                tool_input_guardrails=[guardrail],
            )
            for entry in run.agent.catalogue
        ]

    def invoker(self, run: Run, entry: dict[str, Any], writes: set[asyncio.Task[Any]]) -> Any:
        name = entry["name"]
        validator = run.agent.validators[name]
        destructive = entry["safety"] == "destructive"

        async def body(index: int, value: Any) -> dict[str, Any]:
            try:
                return await run.perform(index, value, run.signal)
            except BodyPanic:
                # A body that raises gets INTERNAL_ERROR, its own text never shown (R3).
                result = internal()
                run.finished(index, result)
                return result

        async def call(index: int, text: str) -> dict[str, Any]:
            if run.signal.aborted and run.past_cap(index) is None:
                result = aborted()
                run.finished(index, result)
                return result
            refusal = run.admit(index)
            if refusal is not None:
                return refusal
            value, invalid = checked(validator, text)
            if invalid is not None:
                run.finished(index, invalid)
                return invalid
            if not destructive:
                return await body(index, value)
            # R20: a running write completes and keeps its result, the run's cancellation
            # notwithstanding; the run ends only after it (``start``).
            task = asyncio.ensure_future(body(index, value))
            writes.add(task)
            task.add_done_callback(writes.discard)
            return await asyncio.shield(task)

        async def on_invoke_tool(context: Any, text: str) -> str:
            index = run.index_of(context.tool_call_id, name, text) if run.batch else -1
            if index < 0:
                return json.dumps(internal())
            batch = run.batch
            assert batch is not None
            if batch.sequential:
                async with batch.lock:
                    result = await call(index, text)
            else:
                result = await call(index, text)
            return json.dumps(result, ensure_ascii=False)

        return on_invoke_tool

    def not_found(self, run: Run, args: ToolErrorFormatterArgs) -> str | None:
        """``tool_error_formatter``: a call to a tool not enabled, as SPEC §4's envelope, after
        R3's checks of its call id: the SDK refused it, the adapter names the refusal."""
        if args.kind != "tool_not_found":
            return None
        index = run.index_of(args.call_id, args.tool_name) if run.batch else -1
        if index < 0:
            result = failure("TOOL_NOT_FOUND", args.default_message, run.available()) if run.tool(args.tool_name) is None else run.not_allowed(args.tool_name) or not_allowed_off(args.tool_name)
            return json.dumps(result, ensure_ascii=False)
        assert run.batch is not None
        result = run.past_cap(index)
        if result is None:
            run.started(index)
            result = precheck(run.batch.calls[index], run.batch.seen, run.guard)
        if result is None and run.tool(args.tool_name) is None:
            result = failure("TOOL_NOT_FOUND", args.default_message, run.available())
        elif result is None:
            result = run.not_allowed(args.tool_name) or not_allowed_off(args.tool_name)
        run.finished(index, result)
        return json.dumps(result, ensure_ascii=False)

    # -- the run

    async def start(self, run: Run) -> None:
        writes: set[asyncio.Task[Any]] = set()
        limits = run.limits
        agent = SdkAgent(
            name="chart-agent",
            instructions=run.system_prompt,
            model="ward",
            tools=self.tools_of(run, writes),
            model_settings=ModelSettings(
                timeout=limits["providerTimeoutMs"] / 1000,
                retry=ModelRetrySettings(
                    max_retries=limits["providerRetriesMax"],
                    policy=retry_policies.any(retry_policies.provider_suggested(), retry_policies.network_error()),
                ),
            ),
        )
        config = RunConfig(
            model_provider=WardProvider(WardModel(run, self.ids)),
            tracing_disabled=True,
            trace_include_sensitive_data=False,
            tool_not_found_behavior="return_error_to_model",
            tool_error_formatter=lambda args: self.not_found(run, args),
        )
        items = [*items_of(run.history), {"role": "user", "content": run.prompt}]
        task = asyncio.ensure_future(Runner.run(agent, items, max_turns=limits["turnsMax"], run_config=config))
        run.signal.add_listener(task.cancel)
        try:
            result = await task
        except asyncio.CancelledError:
            await self.settle(writes)
            run.enter_results()
            run.fail(self.outcome_of(run, None))
            return
        except Exception as error:
            await self.settle(writes)
            run.enter_results()
            run.fail(self.outcome_of(run, error))
            return
        finally:
            run.signal.remove_listener(task.cancel)
        run.enter_results()
        if run.signal.aborted:
            run.fail(self.outcome_of(run, None))
            return
        output = result.final_output
        run.complete(output if isinstance(output, str) else "")

    @staticmethod
    async def settle(writes: set[asyncio.Task[Any]]) -> None:
        """Waits until every running write has its result (R20): the run ends after them."""
        while writes:
            await asyncio.gather(*list(writes), return_exceptions=True)

    def outcome_of(self, run: Run, error: BaseException | None) -> Stop | dict[str, Any]:
        """What ended the run early: a stop, the turn limit, or the provider's last error (to
        standard error, the adapter's log, as well)."""
        if error is not None:
            frames = traceback.extract_tb(error.__traceback__)
            where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
            # Guarded: a provider's message may echo a configured secret (R22 holds for the log too).
            sys.stderr.write(run.guard.text(f"the run ended early: {type(error).__name__}: {error}{where}") + "\n")
        if run.signal.aborted and isinstance(run.signal.reason, Stop):
            return run.signal.reason
        if isinstance(error, MaxTurnsExceeded):
            limit = run.limits["turnsMax"]
            return failure("TOOL_LOOP_LIMIT", f"The agent stopped after {limit} tool turns.", "Refine the request and retry.")["error"]
        if isinstance(error, ModelTimeoutError):
            return provider_failure("timeout", str(error))
        if isinstance(error, ProviderHttpError) and error.kind in PROVIDER_CODES:
            return provider_failure(error.kind, str(error))
        # The SDK refuses a whole reply it cannot run (ModelBehaviorError: a call id missing or
        # reused, ...): the run fails, the model's text is not repeated.
        if isinstance(error, ModelBehaviorError):
            return run_failed()
        return unexpected_end(repr(error))


if __name__ == "__main__":
    wire.serve(Agent(OpenAiAgents()))
