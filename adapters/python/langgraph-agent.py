"""The chart agent on LangGraph for Python (``langgraph`` with ``langchain-core``), behind ward's
protocol. Run with ``adapters/python/.venv/bin/python adapters/python/langgraph-agent.py``
after ``uv sync --project adapters/python --frozen`` (the file is not named ``langgraph.py``:
a script's folder is first on ``sys.path`` and would shadow the package). What is LangGraph's
and what is the adapter's:

LangGraph and LangChain (what ward tests):
- the turn loop: a ``StateGraph`` over the messages (``add_messages``) and the run's policy, an
  ``agent`` node calling the model,
  a conditional edge handing each tool call of its reply to the ``tools`` node with ``Send``
  (one task per call, as ``create_react_agent``'s version 2 does), and an edge back; the
  graph's ``recursion_limit`` is R19's turn limit (``GraphRecursionError`` is reported as
  ``TOOL_LOOP_LIMIT``);
- the tools: each catalogue tool a ``StructuredTool`` with its JSON Schema as ``args_schema``;
  ``ToolNode`` resolves a call by name (an unknown name is its own error text) and, with
  ``handle_tool_errors=True``, turns a body's exception into an error ``ToolMessage`` of its
  own text; the model is offered the run's tools with ``bind_tools``; a reply's argument text
  is parsed by ``langchain_core``'s ``parse_tool_call``, as ``langchain-openai`` parses it
  (text that is not JSON becomes an ``invalid_tool_calls`` entry);
- ``ask_user``: ``interrupt()`` pauses the graph, and ``Command(resume=...)`` takes it up;
- retries: ``Runnable.with_retry`` (tenacity's exponential backoff with jitter, on the
  loop's virtual clock); stopping: the cancellation of the task running the graph;
- the session and durability (PROTOCOL.md, "Durable runtimes and crashes"): a checkpointer
  thread per session, ``SqliteSaver`` (``langgraph-checkpoint-sqlite``) on a file in the
  store directory ``reset`` gives, whose messages are the next run's transcript; every
  super-step checkpointed before the next (``durability="sync"``), each task's writes as it
  ends; ``recover`` takes up the thread whose run is still open with ``ainvoke(None)``, which
  runs again every task of the cut super-step that has no writes (R33).

The adapter's (``ward_kit``, and here):
- ward's provider as a LangChain chat model (a ``BaseChatModel`` subclass): the messages
  LangGraph hands it become the protocol's transcript; ward's errors are raised as a provider
  package raises them (an HTTP status, retryable or not); the provider timeout is an
  ``asyncio.timeout`` on the request (LangChain's core has none: it is each integration's
  HTTP client's);
- R12 and R13 at execution, R3's checks LangChain does not make, R17's sequential batches (the
  kit's lock), R19's batch cap and deadline, R20's stop (a running write keeps its result, a
  read is abandoned; the run ends after every call has one), R22's guard, R23's events, each
  call's envelope (``Run.admit``, ``Run.perform``);
- the run's end written into the thread (``aupdate_state``): the calls a stop or the turn
  limit left without a result get theirs, so that the session's next run sees every result,
  and the run is marked closed, so that ``recover`` skips it; the run's policy and limits in
  the graph state, and a resumed run's counts and open batch read back from its messages
  (R34);
- the store's async face: ``SqliteSaver``'s async methods raise and ``AsyncSqliteSaver`` runs
  SQLite on aiosqlite's thread, outside the lockstep, so ``LoopSaver`` gives ``SqliteSaver``
  an async face of its sync methods, as LangGraph's ``InMemorySaver`` has;
- start-up: LangGraph's and LangChain's bytecode is cached, whatever
  ``PYTHONDONTWRITEBYTECODE`` says (compiled anew at every start, their thousand modules
  take seconds of CPU), and the interpreter is started again for ``PYTHONHASHSEED`` before
  they are imported, not after;
- determinism: LangChain's run ids (``uuid7`` of ``uuid_utils``, the operating system's
  randomness) drawn from the kit's seeded id stream and the virtual clock; ``uuid6``
  checkpoint ids restarted at each ``reset``; LangSmith tracing off; for the store's bytes
  (ward digests them): ``datetime.now()`` on the virtual clock (``wire.fake_datetime``), the
  wall clock past the store's last checkpoint after a crash, the seeded streams seeded again
  from the seed and the store's size, SQLite's rollback journal instead of WAL.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import time
import uuid
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))

from ward_kit import wire  # noqa: E402 — the clocks are faked before anything else is imported

wire.pin_hash_seed()  # before the heavy imports: it starts the interpreter again
wire.install()
# LangChain and LangGraph are about a thousand modules: compiled anew at every start they
# take seconds of CPU. The bytecode is cached as Python does by default, whatever
# PYTHONDONTWRITEBYTECODE says.
sys.dont_write_bytecode = False
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGCHAIN_TRACING_V2"] = "false"

from importlib.metadata import version  # noqa: E402

from ward_kit.runtime import kit_notes, unclaimed_notes  # noqa: E402

RUNTIME = {"name": "langgraph", "version": version("langgraph")}

CLAIMS = ["R1", "R2", "R3", "R4", "R5", "R11", "R12", "R13", "R14", "R16", "R17", "R19", "R20", "R21", "R22", "R23", "R33", "R34"]

NOTES = {
    **kit_notes(None),
    "R3": "LangGraph's: the tool's existence (ToolNode's own error text); the kit's part, in Run.admit before the body: the call id unique in its batch, the batch cap, the payload's size and configured secret values",
    "R5": "LangChain's: each tool a StructuredTool with the catalogue's JSON Schema as its args_schema, the SDK's way to give a tool a JSON Schema",
    "R6": "LangChain gives no field list: a StructuredTool with a JSON Schema args_schema passes its input on as it is (langchain_core/tools/base.py, _parse_input), and ToolNode's error texts are its own",
    "R7": "see R6: no message states a rule",
    "R8": "see R6: nothing is validated, so nothing is bounded",
    "R8a": "the adapter registers only the catalogue's schemas; any schema a developer registers is not tested here",
    "R12": "resolution: the kit's list, offered with bind_tools; execution: the kit's (Run.admit refuses the call): ToolNode runs any tool the graph was built with, and LangGraph has no hook that refuses a call by policy",
    "R17": "LangGraph's: one task per call (Send), results in call order; the kit's: a sequential batch's lock, taken in the order ToolNode starts the calls (LangGraph has no sequential tool)",
    "R18": "LangChain's Runnable.with_retry retries the provider (providerRetriesMax, tenacity's exponential backoff with jitter, on virtual time) but never reads retry-after: not claimed",
    "R19": "LangGraph's: the turn limit (recursion_limit); the adapter's: the provider timeout (asyncio.timeout; LangChain's core has none); the kit's: the batch cap and the inactivity deadline; a call past the cap that ToolNode refuses itself before the tool's function runs (an unknown tool, input its schema refuses) gets ToolNode's refusal, which the model reads, where R19 answers TOO_MANY_CALLS first",
    "R20": "LangGraph's: the stop cancels the task running the graph; the kit's: a running write keeps its result (its body runs apart from the task), a read is abandoned, and the run ends after every call has one",
    "R21": "the adapter's chat model raises ward's error as a provider package does; with_retry retries the retryable kinds",
    **unclaimed_notes(
        r15="LangGraph has no prompt redactor; the kit applies only R22's exact-value guard, not the pattern rules of section 7",
        r30="LangGraph's checkpointer journals the graph state after each super-step (the start, each reply, each task's writes; the run's end is the adapter's aupdate_state), but it stores the state as the nodes return it: the prompt is guarded for exact values only (no redactor, R15), and the model's calls and the bodies' results are stored as they came",
    ),
    "R31": "ward's chart is outside LangGraph's store: a body's change is applied when it returns and LangGraph commits its result as its task's pending write, not in one transaction with the change",
    "R32": "LangGraph journals no intent before a body starts: a task cut by a crash runs again from its start (its durable-execution docs: make nodes idempotent), so an outside effect may happen twice and never gets OUTCOME_UNKNOWN; it hands a tool no idempotency key",
    "R33": "LangGraph's: a resume (ainvoke(None)) runs again every task of the cut super-step that has no writes, the model request and a read among them",
    "R34": "the adapter's: the run's policy and limits kept in the graph state (ChartState.run), and the turn count read from the run's replies at a resume (a resumed invocation's recursion_limit counts from itself)",
    "R35": "SQLite's own transactions and journal keep committed data, but a failed checkpoint write ends the run as a failure, not as a crash, and ward faults no real disk",
}


import langchain_core.utils.uuid as lc_uuid  # noqa: E402
import langgraph.checkpoint.base.id as lg_id  # noqa: E402
import langgraph.pregel._checkpoint as lg_checkpoint  # noqa: E402
import langgraph.pregel._loop as lg_loop  # noqa: E402
import langgraph.pregel._retry as lg_retry  # noqa: E402
from langchain_core.exceptions import OutputParserException  # noqa: E402
from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage  # noqa: E402
from langchain_core.output_parsers.openai_tools import make_invalid_tool_call, parse_tool_call  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.errors import GraphRecursionError  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages  # noqa: E402
from langgraph.prebuilt import ToolNode, ToolRuntime  # noqa: E402
from langgraph.types import Command, Send, interrupt  # noqa: E402
from ward_kit.agent import Agent, Batch, DurableAgent, Run, Stop  # noqa: E402
from ward_kit.runtime import (  # noqa: E402
    HTTP_STATUS,
    NOT_RETRYABLE,
    PROVIDER_CODES,
    ProviderError,
    aborted,
    failure,
    is_envelope,
    provider_failure,
    unexpected_end,
)

# LangGraph stamps each checkpoint and task with ``datetime.now()``, which the store keeps (P4).
wire.fake_datetime(lg_checkpoint, lg_loop, lg_retry)


def _uuid7(timestamp: int | None = None, nanos: int | None = None) -> uuid.UUID:
    """LangChain's run ids (``uuid_utils``' uuid7, random from the operating system) made of
    the virtual clock's millisecond and the kit's seeded id stream (P4)."""
    milliseconds = wire.clock.now_ms if timestamp is None else timestamp * 1000 + (nanos or 0) // 1_000_000
    bits = uuid.uuid4().int & ((1 << 80) - 1)
    # The version (7) and the variant (RFC 9562) by hand: Python 3.11's UUID knows 1 to 5.
    value = (milliseconds << 80) | (bits & ~(0xF << 76) & ~(0x3 << 62)) | (0x7 << 76) | (0x2 << 62)
    return uuid.UUID(int=value)


lc_uuid._uuid_utils_uuid7 = _uuid7


STORE_FILE = "checkpoints.sqlite"
"""The checkpointer's file, in the store directory ``reset`` gives (P8)."""

VERSIONS = {
    name: version(name) for name in ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite", "langchain-core")
}


class Wall:
    """The wall clock LangGraph reads (``time.time_ns``, which its uuid6 checkpoint ids are
    made of): ``base_ms`` ahead of the virtual clock, 0 but after a crash (:meth:`LangGraph.open_store`)."""

    base_ms = 0


def _wall_seconds() -> float:
    return (wire.clock.now_ms + Wall.base_ms) / 1000


def _wall_nanoseconds() -> int:
    return (wire.clock.now_ms + Wall.base_ms) * 1_000_000


def uuid6_ms(checkpoint_id: str) -> int:
    """The instant (ms since 1970) a uuid6 checkpoint id was made at."""
    return (lg_id.UUID(checkpoint_id).time - 0x01B21DD213814000) // 10_000


class Journal(sqlite3.Connection):
    """The checkpointer's connection, on SQLite's default rollback journal: ``SqliteSaver.setup``
    turns WAL on, and SQLite draws each WAL header's salt from the operating system's
    randomness, so the same writes would leave other bytes (P4; ward digests every byte of the
    store directory). That one pragma is not applied; every other statement is SqliteSaver's."""

    def executescript(self, script: str) -> sqlite3.Cursor:  # type: ignore[override]
        return super().executescript(script.replace("PRAGMA journal_mode=WAL;", ""))


class LoopSaver(SqliteSaver):
    """``SqliteSaver`` with the async face LangGraph's ``ainvoke`` calls, each method its sync
    twin, as LangGraph's own ``InMemorySaver`` does. ``AsyncSqliteSaver`` runs SQLite on a
    thread of aiosqlite's, outside the lockstep and ward's clock; the statements, the tables
    and the serializer here are ``SqliteSaver``'s."""

    async def aget_tuple(self, config: Any) -> Any:
        return self.get_tuple(config)

    async def alist(self, config: Any, *, filter: Any = None, before: Any = None, limit: int | None = None) -> Any:
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def aget_delta_channel_history(self, *, config: Any, channels: Any) -> Any:
        return self.get_delta_channel_history(config=config, channels=channels)


class ChartState(TypedDict, total=False):
    """The run's state: LangGraph's messages, and the run's policy and progress (``run``), so
    that the checkpointer keeps them (R34)."""

    messages: Annotated[list[Any], add_messages]
    run: dict[str, Any]


class ProviderHttpError(Exception):
    """ward's failure as a provider package raises it: its HTTP status, retryable or not."""

    def __init__(self, error: ProviderError) -> None:
        status = HTTP_STATUS[error.kind]
        text = f"Invalid response body: {error}" if error.kind == "malformedResponse" else f"{status} {error}"
        super().__init__(text)
        self.kind = error.kind
        self.status = status
        self.provider_message = str(error)


class RetryableProviderError(ProviderHttpError):
    """A provider failure ``with_retry`` retries (R18's kinds)."""


def provider_error(error: ProviderError) -> ProviderHttpError:
    return ProviderHttpError(error) if error.kind in NOT_RETRYABLE else RetryableProviderError(error)


def envelope_of(message: ToolMessage, run: Run | None) -> dict[str, Any]:
    """An envelope (SPEC §4) for what a ``ToolMessage`` holds: the body's, or ToolNode's text."""
    content = message.content
    text = content if isinstance(content, str) else json.dumps(content)
    try:
        value = json.loads(text)
        if is_envelope(value):
            return value
    except ValueError:
        pass  # ToolNode's own text: an unknown tool, or a body's exception
    if text.startswith("Error: ") and " is not a valid tool, try one of [" in text:
        action = run.available() if run is not None else "Call one of the available tools."
        return failure("TOOL_NOT_FOUND", text, action)
    if text.startswith("Error invoking tool "):
        return failure("TOOL_INPUT_INVALID", text)
    return failure("INTERNAL_ERROR", text)


def transcript_of(messages: list[BaseMessage], run: Run | None) -> list[dict[str, Any]]:
    """LangGraph's messages as the protocol's transcript (the system message goes apart)."""
    transcript: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            transcript.append({"role": "user", "text": str(message.content)})
        elif isinstance(message, AIMessage):
            calls = message.additional_kwargs.get("ward_calls", [])
            transcript.append({"role": "assistant", "text": str(message.content), "calls": calls})
        elif isinstance(message, ToolMessage):
            result = envelope_of(message, run)
            transcript.append({"role": "tool", "callId": message.tool_call_id, "name": message.name or "", "result": result})
    return transcript


def ai_message_of(reply: dict[str, Any], message_id: str) -> AIMessage:
    """A reply as LangChain's message: its calls parsed as ``langchain-openai`` parses them
    (``parse_tool_call``; text that is not JSON is an ``invalid_tool_calls`` entry)."""
    tool_calls: list[Any] = []
    invalid: list[Any] = []
    indices: list[int] = []
    for index, call in enumerate(reply["calls"]):
        raw = {"id": call["id"], "function": {"name": call["name"], "arguments": call["arguments"]}}
        try:
            parsed = parse_tool_call(raw, return_id=True)
        except OutputParserException as error:
            invalid.append(make_invalid_tool_call(raw, str(error)))
            continue
        if parsed is not None:
            tool_calls.append(parsed)
            indices.append(index)
    kwargs = {"ward_calls": reply["calls"], "ward_indices": indices}
    return AIMessage(content=reply["text"], tool_calls=tool_calls, invalid_tool_calls=invalid, additional_kwargs=kwargs, id=message_id)


def result_indices(messages: list[BaseMessage], at: int) -> list[int | None]:
    """The batch index of each ``ToolMessage`` after the reply at ``at``: the first call of
    the reply with the message's id and name not yet matched (never by position)."""
    reply = messages[at]
    calls = reply.additional_kwargs.get("ward_calls", [])
    valid = reply.additional_kwargs.get("ward_indices", [])
    matched: set[int] = set()
    indices: list[int | None] = []
    for message in messages[at + 1 :]:
        if not isinstance(message, ToolMessage):
            indices.append(None)
            continue
        same = [i for i in range(len(calls)) if i not in matched and calls[i]["id"] == message.tool_call_id and calls[i]["name"] == message.name]
        preferred = [i for i in same if i in valid]
        index = (preferred or same or [None])[0]
        if index is not None:
            matched.add(index)
        indices.append(index)
    return indices


def last_reply(messages: list[BaseMessage]) -> int:
    for at in range(len(messages) - 1, -1, -1):
        if isinstance(messages[at], AIMessage):
            return at
    return -1


class WardChatModel(BaseChatModel):
    """ward's provider as a LangChain chat model: ``bind_tools`` names the tools offered."""

    adapter: Any = None

    @property
    def _llm_type(self) -> str:
        return "ward"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(entry) for entry in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("the ward model answers asynchronously only")

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        run: Run = self.adapter.run
        transcript = transcript_of([message for message in messages if not isinstance(message, SystemMessage)], run)
        tools = [entry["function"]["name"] for entry in kwargs.get("tools", [])]
        seconds = run.limits["providerTimeoutMs"] / 1000
        try:
            async with asyncio.timeout(seconds):
                reply = await run.ask(transcript, tools, run.signal)
        except TimeoutError as error:
            timeout = ProviderError({"kind": "timeout", "message": "The provider did not answer in time."})
            raise provider_error(timeout) from error
        except ProviderError as error:
            raise provider_error(error) from error
        run.replied(reply)
        message = ai_message_of(reply, f"ward-{self.adapter.epoch}-{self.adapter.replies}")
        self.adapter.replies += 1
        return ChatResult(generations=[ChatGeneration(message=message)])


def steps_of(turns_max: int) -> int:
    """The graph steps of a run of ``turns_max`` batches: a model step and a tools step each,
    and one model step more (LangGraph's formula for a ReAct agent's iterations)."""
    return 2 * turns_max + 1


class LangGraph:
    runtime = RUNTIME

    claims = CLAIMS

    notes = NOTES

    durable = {
        "store": f"a SQLite database ({STORE_FILE}; SQLite's default rollback journal: the adapter does not apply SqliteSaver's journal_mode=WAL, whose header salts are random) in the store directory, written by langgraph-checkpoint-sqlite's SqliteSaver: one thread per session",
        "version": f"langgraph-checkpoint-sqlite {VERSIONS['langgraph-checkpoint-sqlite']} (langgraph-checkpoint {VERSIONS['langgraph-checkpoint']}, langgraph {VERSIONS['langgraph']}) on Python's sqlite3, SQLite {sqlite3.sqlite_version}",
        "drop": "every object of the runtime (graph, checkpointer, run, tasks) and the sqlite3 connection are dropped without close(): the connection is kept referenced so that nothing closes it, until a reset for another store directory; the loop with its tasks and timers is replaced and the dropped runtime's output is cut",
    }

    def __init__(self) -> None:
        self.agent: Agent | None = None
        self.run: Run | None = None
        self.replies = 0
        self.questions: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.inflight: set[asyncio.Future[Any]] = set()
        self.invocation: asyncio.Task[Any] | None = None
        self.db: sqlite3.Connection | None = None
        self.store_dir: str | None = None
        self.dropped: list[sqlite3.Connection] = []
        self.epoch = 0

    def reset(self, message: dict[str, Any], agent: Agent) -> None:
        self.agent = agent
        self.run = None
        self.replies = 0
        self.questions = {}
        self.inflight = set()
        self.invocation = None
        if message.get("storeDir") != self.store_dir:
            # The execution the dropped connections belong to is over: as after a kill, they go.
            for db in self.dropped:
                db.close()
            self.dropped = []
            if self.db is not None:
                self.db.close()
            self.db = None
        self.store_dir = message.get("storeDir")
        self.open_store(message["seed"])
        self.tools = [self.tool_of(entry) for entry in message["tools"]]
        self.graph = self.graph_of()

    def open_store(self, seed: int) -> None:
        """The checkpointer on the store directory's file (P8); the wall clock past its last
        checkpoint; the seeded streams and uuid6 as a process starting on that store has them."""
        if self.db is not None:
            self.db.close()
        if self.store_dir is None:
            self.db = sqlite3.connect(":memory:", factory=Journal, check_same_thread=False)
        else:
            os.makedirs(self.store_dir, exist_ok=True)
            self.db = sqlite3.connect(os.path.join(self.store_dir, STORE_FILE), factory=Journal, check_same_thread=False)
        self.saver = LoopSaver(self.db)
        self.saver.setup()
        # The kit installs its clocks as it starts serving: the wall clock goes on top of them.
        time.time = _wall_seconds
        time.time_ns = _wall_nanoseconds
        last = self.db.execute("SELECT checkpoint_id FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1").fetchone()
        Wall.base_ms = 0 if last is None else uuid6_ms(last[0]) + 1 - wire.clock.now_ms
        # A process that starts again on a store draws other numbers than the one that wrote
        # it: the seeded streams (message ids are random uuids, channel versions random
        # floats) are seeded again from the seed and the store's size, or the ids drawn after a
        # crash would repeat those drawn before it, and add_messages would take a new message
        # for an old one. The replies' ids carry the same count.
        rows = self.db.execute("SELECT (SELECT count(*) FROM checkpoints) * 65536 + (SELECT count(*) FROM writes)").fetchone()[0]
        if last is not None:
            wire.seed_random(seed ^ ((rows * 0x9E3779B1) & 0xFFFFFFFF))
        self.epoch = rows
        # uuid6 keeps its last instant across calls: a fresh process has none (P4).
        lg_id._last_v6_timestamp = None

    def crash(self) -> None:
        """Drop mode (P9): the connection is kept, never closed; nothing of the runtime runs again."""
        if self.db is not None:
            self.dropped.append(self.db)
        self.db = None
        self.graph = None
        self.run = None
        self.questions = {}
        self.inflight = set()
        self.invocation = None

    def graph_of(self) -> Any:
        builder = StateGraph(ChartState)
        builder.add_node("agent", self.call_model)
        builder.add_node("tools", ToolNode(self.tools, handle_tool_errors=True))
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", self.route, ["tools", END])
        builder.add_edge("tools", "agent")
        return builder.compile(checkpointer=self.saver)

    def route(self, state: dict[str, Any]) -> Any:
        """Each tool call of the last reply to the ``tools`` node, one task each (``Send``),
        with the call's index in the batch as the state its tool is given. ``create_react_agent``
        hands each task the whole state, for tools that read it (``InjectedState``); none
        here does, and the checkpointer serializes every task's input: 128 calls would carry
        128 copies of the transcript through every checkpoint read and write."""
        last = state["messages"][-1]
        calls = getattr(last, "tool_calls", None) or []
        if not calls:
            return END
        indices = last.additional_kwargs.get("ward_indices", [])
        sends = []
        for position, call in enumerate(calls):
            context = {"__type": "tool_call_with_context", "tool_call": call, "state": {"ward_index": indices[position]}}
            sends.append(Send("tools", context))
        return sends

    async def call_model(self, state: dict[str, Any]) -> dict[str, Any]:
        run = self.run
        assert run is not None
        self.sync_results(run, state["messages"])
        run.enter_results()
        offered = set(run.offered)
        retries = run.limits["providerRetriesMax"]
        model = WardChatModel(adapter=self).bind_tools([entry for entry in self.tools if entry.name in offered])
        model = model.with_retry(retry_if_exception_type=(RetryableProviderError,), stop_after_attempt=retries + 1)
        response = await model.ainvoke([SystemMessage(run.system_prompt), *state["messages"]])
        return {"messages": [response]}

    def sync_results(self, run: Run, messages: list[BaseMessage]) -> None:
        """The batch's results LangGraph holds as ``ToolMessage``s into the run: a body's as it
        returned (reported when it ran), ToolNode's own (an unknown tool, a body's exception)
        with their events now."""
        batch = run.batch
        at = last_reply(messages)
        if batch is None or at < 0:
            return
        for position, index in enumerate(result_indices(messages, at)):
            if index is None or batch.results[index] is not None:
                continue
            message = messages[at + 1 + position]
            assert isinstance(message, ToolMessage)
            if index not in getattr(batch, "reported", set()):
                run.started(index)
            run.finished(index, run.guard.value(envelope_of(message, run)))

    def tool_of(self, entry: dict[str, Any]) -> StructuredTool:
        """A catalogue tool as a LangChain tool whose body is ward's (or the user's)."""

        async def body(runtime: ToolRuntime, **input: Any) -> str:
            return await self.body(entry, runtime, input)

        return StructuredTool.from_function(
            coroutine=body, name=entry["name"], description=entry["description"], args_schema=entry["parameters"], infer_schema=False
        )

    async def body(self, entry: dict[str, Any], runtime: ToolRuntime, input: dict[str, Any]) -> str:
        """A call ToolNode runs: the kit's entry point around ward's body. The body runs apart
        from LangGraph's task (``shield``), so that a stop, which cancels the task, leaves a
        running write to complete and keep its result (R20)."""
        run = self.run
        state = runtime.state if isinstance(runtime.state, dict) else {}
        index = state.get("ward_index")
        if run is None or run.batch is None or not isinstance(index, int):
            raise RuntimeError("a tool ran outside a run")
        reported: set[int] = getattr(run.batch, "reported", set())
        reported.add(index)
        run.batch.reported = reported  # type: ignore[attr-defined]
        if entry["name"] == "ask_user":
            return await self.ask_user(run, index, input)
        work = asyncio.ensure_future(run.execute(index, input, run.signal))
        self.keep(work)
        result = await asyncio.shield(work)
        return json.dumps(run.guard.value(result))

    def keep(self, work: asyncio.Future[Any]) -> None:
        self.inflight.add(work)
        work.add_done_callback(self.inflight.discard)

    async def ask_user(self, run: Run, index: int, input: dict[str, Any]) -> str:
        """``ask_user``: the question goes to ward once per call, and ``interrupt()`` pauses the
        graph until the driver resumes it with the call's envelope (``Command(resume=...)``).
        The task runs again from its start on resume: then ``interrupt()`` returns the envelope.
        The question is a task of its own, which takes the batch's lock in the calls' order,
        as every body of the batch does, and holds it until the user answers."""
        key = f"{run.turn}:{index}"
        if key not in self.questions:
            work = asyncio.ensure_future(run.execute(index, input, run.signal))
            self.keep(work)
            self.questions[key] = work
        envelope = interrupt({"ward_question": key})
        return json.dumps(run.guard.value(envelope))

    def thread(self, run: Run) -> dict[str, Any]:
        return {"configurable": {"thread_id": run.session}}  # type: ignore[attr-defined]

    async def start(self, run: Run) -> None:
        assert self.agent is not None
        self.prepare(run)
        snapshot = await self.graph.aget_state(self.thread(run))
        policy = {
            "session": run.session,  # type: ignore[attr-defined]
            "prompt": run.prompt,
            "readOnly": run.read_only,
            "disabledTools": sorted(run.disabled),
            "limits": run.limits,
            "from": len(snapshot.values.get("messages", [])),
            "open": True,
        }
        await self.drive(run, {"messages": [HumanMessage(run.prompt)], "run": policy}, steps_of(run.limits["turnsMax"]))

    def prepare(self, run: Run) -> None:
        self.run = run
        self.questions = {}
        # The stop is the cancellation of the task running the graph: LangGraph cancels its
        # tasks in turn. The kit's own listeners (a read's body, the model request) come after.
        run.signal.add_listener(self.cancel_invocation)

    def cancel_invocation(self) -> None:
        if self.invocation is not None and not self.invocation.done():
            self.invocation.cancel()

    async def drive(self, run: Run, input: Any, steps: int) -> None:
        """Invokes the graph until the run ends: each pause for ``ask_user`` resumed with its
        answer, each invocation given the steps the turn limit leaves. Every super-step's
        checkpoint is written before the next starts (``durability="sync"``)."""
        value = input
        try:
            while True:
                config = {**self.thread(run), "recursion_limit": max(1, steps)}
                # No limit below 1 resumes: a run with a tools step and a model step left
                # stops after that model step (``interrupt_after``), as its limit would.
                after = ["agent"] if steps < 1 else None
                invocation = self.graph.ainvoke(value, config, interrupt_after=after, durability="sync")
                self.invocation = asyncio.ensure_future(invocation)
                result = await self.invocation
                if after is not None and getattr(result["messages"][-1], "tool_calls", None):
                    raise GraphRecursionError(f"Recursion limit of {steps} reached")
                interrupts = result.get("__interrupt__", [])
                if not interrupts:
                    last = result["messages"][-1]
                    text = last.content if isinstance(last.content, str) else ""
                    await self.close(run, lambda: run.complete(text))
                    return
                resume = {}
                for pause in interrupts:
                    envelope = await self.questions[pause.value["ward_question"]]
                    resume[pause.id] = envelope
                run.signal.raise_if_aborted()
                value = Command(resume=resume)
                steps = await self.steps_left(run)
        except (Exception, asyncio.CancelledError) as error:
            if self.run is not run:
                return
            await asyncio.gather(*self.inflight, return_exceptions=True)
            await self.close(run, lambda: run.fail(self.outcome_of(run, error)))

    async def recover(self, agent: DurableAgent, message: dict[str, Any]) -> None:
        """``recover`` (P9): the thread whose run is still open at its last checkpoint is taken
        up with ``ainvoke(None)``, LangGraph's resume: the tasks of the cut super-step without
        writes run again from their start; a pause for ``ask_user`` asks again."""
        assert self.db is not None
        threads = [row[0] for row in self.db.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")]
        for session in threads:
            snapshot = await self.graph.aget_state({"configurable": {"thread_id": session}})
            policy = snapshot.values.get("run")
            if not policy or not policy.get("open"):
                continue
            run = agent.resume_run(policy, message["secrets"])
            self.prepare(run)
            self.restore(run, snapshot.values.get("messages", [])[policy["from"] :], snapshot.next)
            await self.drive(run, None, await self.steps_left(run))
            return

    def restore(self, run: Run, messages: list[BaseMessage], next: tuple[str, ...]) -> None:
        """The run's counts and open batch, from the messages it kept. A batch whose tools step
        completed (the thread goes on to ``agent``) had its results entered and reported by
        the process before the crash: the model step after a tools step enters them as it
        starts, and no boundary falls between that step's checkpoint and its model request.
        It is not entered again (its results were acknowledged once; I16)."""
        for message in messages:
            if not isinstance(message, AIMessage):
                continue
            run.turn += 1
            if message.additional_kwargs.get("ward_calls") and run.batches < run.limits["turnsMax"]:
                run.batches += 1
        run.calls = sum(1 for message in messages if isinstance(message, ToolMessage))
        at = last_reply(messages)
        calls = [] if at < 0 else messages[at].additional_kwargs.get("ward_calls", [])
        if not calls or "tools" not in next:
            return
        sequential = any((run.tool(call["name"]) or {}).get("executionMode") == "sequential" for call in calls)
        run.batch = Batch(calls, sequential)
        for position, index in enumerate(result_indices(messages, at)):
            if index is not None:
                result = messages[at + 1 + position]
                assert isinstance(result, ToolMessage)
                run.batch.results[index] = run.guard.value(envelope_of(result, run))
                run.batch.seen.add(calls[index]["id"])

    async def steps_left(self, run: Run) -> int:
        """The ``recursion_limit`` of a resumed invocation that keeps the run's turn limit:
        LangGraph counts an invocation's steps from where it starts, so the steps left are
        read from the run's replies (a tools step pending, a model and a tools step for each
        batch left, one model step more), less the one step a resume runs beyond its limit."""
        snapshot = await self.graph.aget_state(self.thread(run))
        batches = run.batches
        pending = 1 if "tools" in snapshot.next else 0
        return pending + steps_of(run.limits["turnsMax"] - batches) - 2

    async def close(self, run: Run, report: Any) -> None:
        """The run's end: the calls without a result get theirs (ABORTED, or what the run gave
        a question the stop cut), in LangGraph's thread too, in call order, so that the
        session's next run sees one result per call; then the end is reported."""
        if self.run is not run:
            return
        snapshot = await self.graph.aget_state(self.thread(run))
        messages: list[BaseMessage] = snapshot.values.get("messages", [])
        self.sync_results(run, messages)
        complete = self.completed(run, messages)
        run.enter_results()
        # The run's end in the thread (the adapter's record), so that recover skips it.
        closed = {**snapshot.values.get("run", {}), "open": False}
        if complete is not None:
            await self.graph.aupdate_state(self.thread(run), {"messages": complete, "run": closed}, as_node="tools")
        else:
            node = "tools" if messages and isinstance(messages[-1], ToolMessage) else "agent"
            await self.graph.aupdate_state(self.thread(run), {"run": closed}, as_node=node)
        if self.run is not run:
            return
        self.run = None
        self.invocation = None
        report()

    def completed(self, run: Run, messages: list[BaseMessage]) -> list[Any] | None:
        """The thread's messages with every call of the open batch given its result, in call
        order, or ``None`` when the thread already holds one per call. The whole list is
        written again (``REMOVE_ALL_MESSAGES`` first): the results LangGraph holds are the
        writes of the cut step's tasks that ended, in the order they ended."""
        batch = run.batch
        at = last_reply(messages)
        if batch is None or at < 0:
            return None
        held = {index: messages[at + 1 + position] for position, index in enumerate(result_indices(messages, at)) if index is not None}
        if len(held) == len(batch.calls):
            return None
        results = []
        for index, call in enumerate(batch.calls):
            kept = held.get(index)
            if isinstance(kept, ToolMessage):
                results.append(ToolMessage(content=kept.content, tool_call_id=call["id"], name=call["name"], status=kept.status))
            else:
                content = json.dumps(run.guard.value(batch.results[index] or aborted()))
                results.append(ToolMessage(content=content, tool_call_id=call["id"], name=call["name"], status="error"))
        return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages[: at + 1], *results]

    def outcome_of(self, run: Run, error: BaseException) -> Stop | dict[str, Any]:
        """What ended the run early: a stop, the turn limit, or the provider's last error."""
        if run.signal.aborted and isinstance(run.signal.reason, Stop):
            return run.signal.reason
        if isinstance(error, GraphRecursionError):
            limit = run.limits["turnsMax"]
            return failure("TOOL_LOOP_LIMIT", f"The agent stopped after {limit} tool turns.", "Refine the request and retry.")["error"]
        if isinstance(error, ProviderHttpError) and error.kind in PROVIDER_CODES:
            return provider_failure(error.kind, error.provider_message)
        return unexpected_end(repr(error))


if __name__ == "__main__":
    wire.serve(DurableAgent(LangGraph()))
