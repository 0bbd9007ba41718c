"""The chart agent on PydanticAI (``pydantic-ai-slim``, import name ``pydantic_ai``), behind
ward's protocol. Run with ``adapters/python/.venv/bin/python adapters/python/pydantic-ai.py``
after ``uv sync --project adapters/python`` (the SDK is pinned in ``uv.lock``, group
``sdks``). PydanticAI has no JavaScript sibling; the pattern of decisions is that of
``adapters/node/openai-agents.js`` and ``ai-js``. What is the SDK's and what is the
adapter's:

SDK (what ward tests):
- the turn loop: one ``Agent`` per ``reset`` whose model is ward's provider as a
  ``FunctionModel``, run once per ``startRun`` by ``agent.run`` with the run's instructions,
  the session's earlier messages (``message_history``) and ``output_type=[str, None]``: the
  SDK retries a reply without text or calls unless ``None`` is an allowed output, and R16
  ends the run there;
- the turn limit: ``UsageLimits(request_limit=turnsMax)``, ``UsageLimitExceeded`` reported as
  R19's ``TOOL_LOOP_LIMIT``. The SDK counts model requests where R19 counts batches:
  ``request_limit=n`` refuses the model's (n+1)th request, so a run is never asked for the
  reply after its last batch, while ``n + 1`` would run an (n+1)th batch; the adapter takes
  the reading that never runs a batch past the limit (``tool_calls_limit`` counts calls, not
  batches);
- the provider timeout: ``ModelSettings(request_timeout=…)``, the deadline the SDK enforces
  around every request on the event loop's clock (an anyio cancel scope;
  ``ModelRequestTimeout``, reported as ``PROVIDER_TIMEOUT``), given 0.4 ms less than
  ``providerTimeoutMs`` so that it falls on the kit's millisecond (``DEADLINE_SLACK_MS``);
- the tool list: every tool of the catalogue is ``Tool.from_schema`` (the tool's JSON Schema,
  its description, ``sequential`` for a sequential tool) in one ``FunctionToolset``, in
  registration order, ``filtered`` by the run's resolved list (``run.not_allowed`` as its
  policy, R4, R11–R13). A tool the filter leaves out is not in the step's tools, so a call to
  it is the SDK's unknown tool: a retry prompt ``Unknown tool name: …`` listing the available
  tools, never validated or run (R12's second check, R13), which the adapter names
  ``TOOL_NOT_ALLOWED`` for a registered tool and ``TOOL_NOT_FOUND`` otherwise;
- parsing and validation: the SDK parses the argument text with pydantic-core
  (``validate_json``; ``Tool.from_schema`` validates nothing more, its schema is
  ``any_schema``), and an invalid input goes back to the model as the SDK's retry prompt. The
  tool's ``args_validator``, the SDK's seam for a validator, checks the parsed input with
  jsonschema (compiled once per schema, ``ward_kit.agent``) and raises ``ModelRetry`` with
  R6's message; text that is not JSON is the SDK's own ``json_invalid`` error list;
- the retry budget: ``retries={'tools': turnsMax}``. The SDK counts each tool's failed steps
  and fails the whole run (``UnexpectedModelBehavior``) when a tool fails again past its
  budget (1 by default: a second invalid call to the same tool in the next turn ends the
  run). R6 bounds nothing but R19's turn limit, and a tool can fail in at most ``turnsMax``
  steps, so with this budget the limit is the SDK's turn limit alone;
- scheduling: the SDK validates every call of a reply first, in order, then runs them as
  tasks in segments: a ``sequential`` tool is a barrier that runs alone, the calls between
  barriers run in parallel, and the results go back in call order (``_call_tools``);
- a body's failure: the SDK fails the whole run on an exception out of a tool function; the
  adapter's capability answers it in the SDK's hook for that, ``on_tool_execute_error``,
  with ``INTERNAL_ERROR`` as the tool's result;
- stopping: a ``CancellationToken`` per run, fired by the run's signal (cancel, the
  inactivity deadline): the SDK cancels the task driving the run, and with it the model
  request and every tool task, and raises ``RunCancelled``.

Adapter (``src/ward_kit/``, and here):
- ward's provider as the ``FunctionModel``'s function: it sends the SDK's messages, as the
  SDK built them, as the protocol's transcript (a tool's result as the envelope the adapter
  made of the SDK's part, the SDK's text in its message), and answers with a ``TextPart`` and
  ``ToolCallPart`` s carrying the raw argument text; ward's failures are raised as the SDK's
  ``ModelHTTPError`` (an HTTP status) or, for a malformed reply, ``ModelAPIError``;
- R3's checks that come before validation (``Run.refusal``: the call id, the batch cap, size
  and configured secrets), in the SDK's ``before_tool_validate`` hook of a capability: a
  refusal is ``ToolFailed`` with the envelope as its text, which the SDK sends as a failed
  tool return without spending the tool's retry budget;
- each call's events (R23): a call the SDK refuses (the kit's checks, an invalid input, a tool
  not among the step's tools) has its ``tool.started`` and result when the SDK decides it, in
  its validation of the reply's calls, before any runs (an unknown tool, which no hook sees,
  through the tool manager's ``validate_tool_call`` with ``wrap_validation_errors=False``,
  for the SDK's own text); a call it runs has its ``tool.started`` when its segment reaches
  it; what the SDK answered otherwise is read off its tool returns when the step ends;
- R20's running write: the SDK cancels every tool task when its run is cancelled; a write's
  body runs in a task the adapter shields from that cancellation (``asyncio.shield``), and
  the run ends only after it has its result;
- ``ask_user`` is a tool like the others, whose body (the kit's) asks ward's user. The SDK's
  deferred calls (``CallDeferred``, ``requires_approval``) do not fit it: they are settled
  at the end of the step, after every other call of the reply, or end the run with
  ``DeferredToolRequests`` to resume from, and ``ask_user``'s result is the user's own text;
- retries: none. The SDK retries a provider only in its HTTP transports (``pydantic_ai
  .retries``, tenacity), which a ``FunctionModel`` has no use for: a provider failure ends
  the run with R21's code at once;
- start-up: PydanticAI's bytecode is cached, whatever ``PYTHONDONTWRITEBYTECODE`` says, and
  the interpreter is started again for ``PYTHONHASHSEED`` before the SDK is imported, not
  after.
"""

from __future__ import annotations

import asyncio
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))

from ward_kit import wire  # noqa: E402 — the clocks and uuid4 are faked before the SDK binds them

wire.pin_hash_seed()  # before the SDK's imports: it starts the interpreter again
wire.install()
# PydanticAI is some 200,000 lines of Python: compiled anew at every start (the machines here
# set PYTHONDONTWRITEBYTECODE) they take seconds of CPU. The bytecode is cached as Python does
# by default; the import then takes about a second, within the 60 s ward gives `hello`.
sys.dont_write_bytecode = False

from pydantic_ai import Agent as SdkAgent  # noqa: E402
from pydantic_ai import CancellationToken, ModelRetry, RunContext, Tool, ToolFailed  # noqa: E402

# The SDK's own rendering of a retried call ("anything else presenting the same failure must
# build it the same way"), for the text an invalid input's envelope holds.
from pydantic_ai._output import build_retried_tool_return  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.exceptions import (  # noqa: E402
    ModelAPIError,
    ModelHTTPError,
    ModelRequestTimeout,
    RunCancelled,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.settings import ModelSettings  # noqa: E402
from pydantic_ai.tools import ToolDefinition  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402
from pydantic_ai.usage import UsageLimits  # noqa: E402

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
    kit_notes,
    not_allowed_off,
    provider_failure,
    run_failed,
    unclaimed_notes,
    unexpected_end,
)

VERSION = metadata.version("pydantic-ai-slim")

MODEL_NAME = "ward"
"""The ``FunctionModel``'s name, in the SDK's errors."""

DEADLINE_SLACK_MS = 0.4
"""What the adapter takes off the provider timeout it gives the SDK, in ms. The SDK's deadline
is an anyio cancel scope at ``loop.time() + timeout``, which re-arms itself until
``loop.time()`` reaches it; the kit's loop fires a timer at the whole millisecond its instant
rounds to, so a deadline a float's last bit past that millisecond (``120.665 + 60`` is
``180.66500000000002``) would be re-armed at the same instant forever. 0.4 ms less rounds to
the same millisecond and is reached there: the request still times out at exactly
``providerTimeoutMs`` on ward's clock."""

# ---- the SDK's messages and the protocol's --------------------------------------------------


def messages_of(history: list[dict[str, Any]]) -> list[ModelMessage]:
    """The SDK's messages for a session's earlier runs (the store holds the protocol's form,
    guarded: R22)."""
    messages: list[ModelMessage] = []
    for message in history:
        role = message["role"]
        if role == "user":
            messages.append(ModelRequest(parts=[UserPromptPart(message["text"])]))
        elif role == "assistant":
            parts: list[Any] = [TextPart(message["text"])] if message["text"] != "" or not message["calls"] else []
            parts += [ToolCallPart(call["name"], call["arguments"], tool_call_id=call["id"]) for call in message["calls"]]
            messages.append(ModelResponse(parts=parts))
        else:
            part = ToolReturnPart(message["name"], message["result"], tool_call_id=message["callId"])
            last = messages[-1] if messages else None
            if isinstance(last, ModelRequest) and all(isinstance(other, ToolReturnPart) for other in last.parts):
                last.parts = [*last.parts, part]
            else:
                messages.append(ModelRequest(parts=[part]))
    return messages


def user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(item for item in content if isinstance(item, str))


# ---- the adapter ------------------------------------------------------------------------------


class Policy(AbstractCapability[Any]):
    """The adapter's capability: R3's
    checks before validation and a body's exception as ``INTERNAL_ERROR``, in the SDK's hooks;
    each call's result as the SDK decides it (an invalid input when its validation fails), and,
    when a step ends, what is left of its tool returns."""

    def __init__(self, adapter: PydanticAi) -> None:
        super().__init__()
        self.adapter = adapter

    async def before_tool_validate(self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any) -> Any:
        refusal = await self.adapter.take_up(ctx, call)
        if refusal is not None:
            raise ToolFailed(json.dumps(refusal, ensure_ascii=False))
        return args

    async def on_tool_validate_error(self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any, error: Exception) -> Any:
        self.adapter.invalid(call, error)
        raise error

    async def on_tool_execute_error(self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any, error: Exception) -> Any:
        return self.adapter.body_failed(call)

    async def wrap_node_run(self, ctx: RunContext[Any], *, node: Any, handler: Any) -> Any:
        if not SdkAgent.is_call_tools_node(node):
            return await handler(node)
        try:
            result = await handler(node)
        except BaseException:
            last = ctx.messages[-1] if ctx.messages else None
            if isinstance(last, ModelRequest) and last.state == "interrupted":
                self.adapter.settle(last.parts)
            raise
        if SdkAgent.is_model_request_node(result):
            self.adapter.settle(result.request.parts)
        return result


class PydanticAi:
    runtime = {"name": "pydantic-ai", "version": VERSION}

    claims = ["R1", "R2", "R3", "R4", "R5", "R11", "R12", "R13", "R14", "R16", "R17", "R19", "R20", "R22", "R23"]

    # R12's second check and R13 are the SDK's: a tool its toolset's filter leaves out is not
    # in the step's tools, and a call to it is an unknown tool (P14): the kit does not repeat them.
    refuses_at_execution = True

    notes = {
        **kit_notes("the toolset's `filtered`, whose policy is `run.not_allowed`: a tool left out is not among the step's tools, and a call to it is the SDK's unknown tool, never validated or run"),
        "R4": "the SDK's: the toolset's tools in registration order, `filtered` by the kit's resolved list (`run.not_allowed`)",
        "R3": "the SDK's: the tool's existence, validation before the body, a body's exception answered in its `on_tool_execute_error` hook; the kit's part, in the SDK's `before_tool_validate` hook: the call id, the batch cap, the payload's size and configured secret values",
        "R5": "the SDK's seam: each tool's `args_validator` (after the SDK's own JSON parsing), with jsonschema behind it, compiled once per schema",
        "R6": "not claimed: an input its schema refuses gets R6's message and fields (the adapter's, through the SDK's `ModelRetry`), but the SDK parses the text itself: white space alone is not `{}` but pydantic-core's `json_invalid`, text that is not JSON gets pydantic-core's error list with no `path: message` list, and a repeated key keeps its last value",
        "R7": "not claimed: the SDK answers text that is not JSON with pydantic-core's error list, which quotes the argument text whole (`input`); the adapter's own messages quote nothing",
        "R17": "the SDK's: `sequential=True` on a sequential tool, a barrier inside the batch, and results in call order",
        "R19": "the SDK's: the turn limit (`UsageLimits.request_limit`) and the provider timeout (`ModelSettings.request_timeout`); the kit's: the batch cap and the inactivity deadline, which fires the run's cancellation token; a call past the cap to a tool the step does not offer gets the SDK's unknown-tool refusal (before any hook of the adapter's), which the model reads, where R19 answers TOO_MANY_CALLS first",
        "R20": "the SDK's: a `CancellationToken` fired by the run's signal cancels the model request and every tool task; the adapter's: a running write is shielded from it and completes; the kit's: no body starts after a stop",
        "R8": "jsonschema's errors are walked lazily and cut at five, but in its keyword order and ajv's wording, not R6's documented order",
        "R8a": "the adapter validates only the catalogue's schemas; any schema a developer registers is not tested here",
        "R18": "PydanticAI retries a provider only in its HTTP transports (`pydantic_ai.retries`, tenacity), which a FunctionModel has no use for: the adapter does not retry",
        "R21": "a provider failure ends the run with R21's code, without retries (R18)",
        **unclaimed_notes(
            r15="PydanticAI has no prompt redactor; the adapter applies only R22's exact-value guard, not the pattern rules of section 7",
            r30="no durable sessions: the adapter keeps each session's messages in memory (PydanticAI's durable execution is DBOS, Temporal or Prefect, none of them here)",
        ),
    }

    def reset(self, message: dict[str, Any], agent: Agent) -> None:
        self.agent = agent
        self.run: Run | None = None
        self.indices: dict[str, int] = {}
        self.begun: set[int] = set()
        self.fields: dict[tuple[str, str], list[dict[str, str]]] = {}
        self.writes: list[tuple[int, asyncio.Task[Any]]] = []
        tools = [self.tool_of(entry) for entry in agent.catalogue]
        toolset = FunctionToolset(tools, id="chart").filtered(self.offered)
        model = FunctionModel(self.model_function, model_name=MODEL_NAME)
        self.chart_agent = SdkAgent(model, toolsets=[toolset], output_type=[str, type(None)], capabilities=[Policy(self)])

    # ---- the tools

    def tool_of(self, entry: dict[str, Any]) -> Tool[Any]:
        """One tool of the catalogue: its JSON Schema, its description, a barrier when it is
        sequential, jsonschema behind the SDK's ``args_validator``."""

        async def body(ctx: RunContext[Any], **input: Any) -> Any:
            return await self.perform(ctx, entry, input)

        return Tool.from_schema(
            body,
            name=entry["name"],
            description=entry["description"],
            json_schema=entry["parameters"],
            takes_ctx=True,
            sequential=entry["executionMode"] == "sequential",
            args_validator=self.validate,
        )

    def offered(self, ctx: RunContext[Any], tool_def: ToolDefinition) -> bool:
        """The toolset's filter: the run's resolved list, ``run.not_allowed`` its policy."""
        assert self.run is not None
        return self.run.not_allowed(tool_def.name) is None

    def validate(self, ctx: RunContext[Any], **input: Any) -> None:
        """R5 and R6 in the SDK's seam: jsonschema on the input the SDK parsed."""
        assert ctx.tool_name is not None and ctx.tool_call_id is not None
        validator = self.agent.validators[ctx.tool_name]
        if validator.is_valid(input):
            return
        rendered = input_invalid(validator, input)
        self.fields[(ctx.tool_call_id, rendered["message"])] = rendered["fields"]
        raise ModelRetry(rendered["message"])

    async def perform(self, ctx: RunContext[Any], entry: dict[str, Any], input: dict[str, Any]) -> Any:
        """The body of a call the SDK validated, as its turn comes (its segment's task):
        ``tool.started``, then the kit's ``perform``, a read on the run's signal, a write
        shielded from the run's cancellation (R20)."""
        run = self.run
        assert run is not None and run.batch is not None and ctx.tool_call_id is not None
        await self.unresolved(ctx, len(run.batch.calls))
        index = self.indices[ctx.tool_call_id]
        self.started(index)
        if entry["safety"] != "destructive":
            return await run.perform(index, input, run.signal)
        task = asyncio.ensure_future(run.perform(index, input, run.signal))
        self.writes.append((index, task))
        return await asyncio.shield(task)

    # ---- the calls of a reply

    async def take_up(self, ctx: RunContext[Any], call: ToolCallPart) -> dict[str, Any] | None:
        """A call the SDK resolved, before its validation: its index, and R3's checks that come
        before validation (the kit's), the refusal (then its ``tool.started`` and result) or
        ``None``. A call the SDK goes on to run has its ``tool.started`` when its turn comes
        (``perform``): the SDK validates every call of a reply first, then runs them in
        segments, and a call of a later segment is not under way while an earlier one writes.
        The calls before this one that the SDK did not resolve are its unknown tools: their
        results first."""
        run = self.run
        assert run is not None and run.batch is not None
        index = run.index_of(call.tool_call_id, call.tool_name, call.args if isinstance(call.args, str) else None)
        await self.unresolved(ctx, index)
        self.indices[call.tool_call_id] = index
        refusal = run.past_cap(index)
        if refusal is None:
            refusal = run.refusal(index, run.batch.calls[index])
            if refusal is not None:
                self.started(index)
        if refusal is not None:
            run.finished(index, refusal)
        return refusal

    async def unresolved(self, ctx: RunContext[Any], end: int) -> None:
        """The results of the calls before ``end`` the SDK did not resolve (a tool not among the
        step's tools), at the instant it refused them, in the text it refused them with: the
        ``ModelRetry`` its tool manager raises for the call (``validate_tool_call`` with
        ``wrap_validation_errors=False``, which spends no retry budget)."""
        run = self.run
        assert run is not None and run.batch is not None and ctx.tool_manager is not None
        batch = run.batch
        manager = ctx.tool_manager
        for index in range(end):
            call = batch.calls[index]
            if index in batch.claimed or manager.get_tool_def(call["name"]) is not None:
                continue
            batch.claimed.add(index)
            self.indices.setdefault(call["id"], index)
            try:
                await manager.validate_tool_call(ToolCallPart(call["name"], call["arguments"], tool_call_id=call["id"]), wrap_validation_errors=False)
            except ModelRetry as error:
                self.started(index)
                run.finished(index, self.unknown(call["name"], error.message))

    def invalid(self, call: ToolCallPart, error: Exception) -> None:
        """A call whose validation failed: ``TOOL_INPUT_INVALID`` with the text the model
        reads, the validator's ``ModelRetry`` message (R6's, with its fields) or the SDK's
        rendering of pydantic-core's errors (text that is not JSON)."""
        run = self.run
        assert run is not None
        part = build_retried_tool_return(error, tool_name=call.tool_name, tool_call_id=call.tool_call_id)
        text = part.model_response_str(wrap_if_error=False)
        fields = self.fields.get((call.tool_call_id, text))
        index = self.indices[call.tool_call_id]
        self.started(index)
        run.finished(index, failure("TOOL_INPUT_INVALID", text, None, fields))

    def unknown(self, name: str, text: str) -> dict[str, Any]:
        """The envelope of the SDK's unknown tool: ``TOOL_NOT_ALLOWED`` for a registered tool
        the run does not offer, ``TOOL_NOT_FOUND`` otherwise, with the SDK's text."""
        run = self.run
        assert run is not None
        if run.tool(name) is None:
            return failure("TOOL_NOT_FOUND", text, run.available())
        result = run.not_allowed(name) or not_allowed_off(name)
        result["error"]["message"] = text
        return result

    def started(self, index: int) -> None:
        """``tool.started`` of the batch's call ``index``, once."""
        assert self.run is not None
        if index not in self.begun:
            self.begun.add(index)
            self.run.started(index)

    def body_failed(self, call: ToolCallPart) -> dict[str, Any]:
        """A body's exception (a panic), answered as R3's ``INTERNAL_ERROR``."""
        result = internal()
        assert self.run is not None
        self.run.finished(self.indices[call.tool_call_id], result)
        return result

    def settle(self, parts: list[Any]) -> None:
        """The results of a step's calls the SDK answered itself (refusals, invalid input,
        unknown tools), from its tool returns, for the calls that have none yet."""
        run = self.run
        if run is None or run.batch is None:
            return
        for part in parts:
            if not isinstance(part, ToolReturnPart):
                continue
            index = self.indices.get(part.tool_call_id)
            if index is None:
                index = run.index_of(part.tool_call_id, part.tool_name)
                if index < 0:
                    continue
                self.indices[part.tool_call_id] = index
            if run.batch.results[index] is not None:
                # Answered already: by the adapter's refusal (a call past the cap, never
                # taken up, has no `tool.started`) or by its body.
                continue
            self.started(index)
            run.finished(index, self.envelope_of(part))

    def envelope_of(self, part: ToolReturnPart) -> dict[str, Any]:
        """SPEC §4's envelope of one of the SDK's tool returns: a body's own (or the kit's), or
        the one the adapter makes of the SDK's refusal, whose message is the text the model
        reads."""
        content = part.content
        if is_envelope(content):
            return content
        if part.outcome == "failed" and isinstance(content, str):
            try:
                value = json.loads(content)
            except ValueError:
                value = None
            if is_envelope(value):
                return value
        text = part.model_response_str(wrap_if_error=False)
        if part.outcome in ("interrupted", "denied"):
            return aborted()
        cause = part.retry.cause if part.outcome == "retried" and part.retry is not None else None
        if cause == "unknown_tool":
            return self.unknown(part.tool_name, text)
        if cause in ("validation_error", "model_retry"):
            return failure("TOOL_INPUT_INVALID", text, None, self.fields.get((part.tool_call_id, text)))
        return failure("INTERNAL_ERROR", text)

    def transcript_of(self, messages: list[ModelMessage]) -> list[dict[str, Any]]:
        """The SDK's messages as the protocol's transcript (the instructions go apart)."""
        transcript: list[dict[str, Any]] = []
        for message in messages:
            if isinstance(message, ModelResponse):
                text = "".join(part.content for part in message.parts if isinstance(part, TextPart))
                calls = [
                    {"id": part.tool_call_id, "name": part.tool_name, "arguments": part.args if isinstance(part.args, str) else json.dumps(part.args)}
                    for part in message.parts
                    if isinstance(part, ToolCallPart)
                ]
                transcript.append({"role": "assistant", "text": text, "calls": calls})
                continue
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    transcript.append({"role": "tool", "callId": part.tool_call_id, "name": part.tool_name, "result": self.envelope_of(part)})
                elif isinstance(part, UserPromptPart):
                    transcript.append({"role": "user", "text": user_text(part.content)})
        return transcript

    # ---- ward's provider

    async def model_function(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """ward's provider as the ``FunctionModel``'s function."""
        run = self.run
        assert run is not None
        run.enter_results()
        # A new batch: its calls' indices, starts and running writes.
        self.indices, self.begun, self.writes = {}, set(), []
        transcript = self.transcript_of(messages)
        tools = [tool.name for tool in info.function_tools]
        try:
            reply = await run.ask(transcript, tools, run.signal)
        except ProviderError as error:
            raise provider_error(error) from None
        run.replied(reply)
        parts: list[Any] = [TextPart(reply["text"])] if reply["text"] != "" else []
        parts += [ToolCallPart(call["name"], call["arguments"], tool_call_id=call["id"]) for call in reply["calls"]]
        return ModelResponse(parts=parts, model_name=MODEL_NAME)

    # ---- a run

    async def start(self, run: Run) -> None:
        self.run = run
        self.indices, self.begun, self.writes = {}, set(), []
        self.fields = {}
        token = CancellationToken()
        run.signal.add_listener(token.cancel)
        limits = run.limits
        settings = ModelSettings(request_timeout=(limits["providerTimeoutMs"] - DEADLINE_SLACK_MS) / 1000)
        error: BaseException | None = None
        output: Any = None
        try:
            result = await self.chart_agent.run(
                run.prompt,
                message_history=messages_of(run.history),
                instructions=run.system_prompt,
                usage_limits=UsageLimits(request_limit=limits["turnsMax"]),
                model_settings=settings,
                retries={"tools": limits["turnsMax"]},
                cancellation_token=token,
                infer_name=False,
            )
            output = result.output
        except (Exception, asyncio.CancelledError) as caught:
            error = caught
        await self.writes_done()
        run.enter_results()
        if error is None and not run.signal.aborted:
            run.complete(output if isinstance(output, str) else "")
        else:
            run.fail(self.outcome_of(run, error))

    async def writes_done(self) -> None:
        """R20: the run ends once every write it started has its result. A write whose body
        panicked after the SDK's task was cancelled gets ``INTERNAL_ERROR`` here, as the SDK's
        hook would have given it."""
        run = self.run
        assert run is not None
        for index, task in self.writes:
            try:
                await task
            except BodyPanic:
                if run.batch is not None:
                    run.finished(index, internal())
            except BaseException:  # noqa: BLE001 — the kit gives it ABORTED at the run's end
                pass

    def outcome_of(self, run: Run, error: BaseException | None) -> Stop | dict[str, Any]:
        """What ended the run early: a stop, the turn limit, the provider's error, or the SDK's
        refusal of a reply."""
        if run.signal.aborted and isinstance(run.signal.reason, Stop):
            return run.signal.reason
        if isinstance(error, UsageLimitExceeded):
            limit = run.limits["turnsMax"]
            return failure("TOOL_LOOP_LIMIT", f"The agent stopped after {limit} tool turns.", "Refine the request and retry.")["error"]
        if isinstance(error, ModelRequestTimeout):
            return provider_failure("timeout", "The provider did not answer in time.")
        kind = getattr(error, "ward_kind", None)
        if kind in PROVIDER_CODES:
            return provider_failure(kind, getattr(error, "ward_message", str(error)))
        if isinstance(error, (UnexpectedModelBehavior, RunCancelled)):
            # The SDK refuses a whole reply it cannot run (a call id repeated, a retry budget
            # spent): the run fails, the model's text is not repeated.
            return run_failed()
        return unexpected_end(repr(error))


def provider_error(error: ProviderError) -> Exception:
    """ward's failure as a model class of the SDK raises it: ``ModelHTTPError`` with the HTTP
    status, or ``ModelAPIError`` for a reply that could not be read."""
    raised: Exception
    body = {"kind": error.kind, "message": str(error)}
    if error.kind == "malformedResponse":
        raised = ModelAPIError(MODEL_NAME, f"Invalid response body: {error}", body=body)
    else:
        headers = {} if error.retry_after_ms is None else {"retry-after-ms": str(error.retry_after_ms)}
        raised = ModelHTTPError(HTTP_STATUS[error.kind], MODEL_NAME, body, headers=headers)
    raised.ward_kind = error.kind  # type: ignore[attr-defined]
    raised.ward_message = str(error)  # type: ignore[attr-defined]
    return raised


if __name__ == "__main__":
    wire.serve(Agent(PydanticAi()))
