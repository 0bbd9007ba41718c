"""The chart agent on PydanticAI made durable with DBOS (``pydantic-ai-slim[dbos]``, ``dbos``
on a SQLite system database), behind ward's protocol. Run with
``adapters/python/.venv/bin/python adapters/python/pydantic-ai-dbos.py`` after
``uv sync --project adapters/python --frozen``. The agent is the one of ``pydantic-ai.py``,
whose classes this file imports and whose header says what of it is the SDK's and what the
adapter's; here is only what durability adds. What is PydanticAI's and DBOS's and what is the
adapter's:

PydanticAI and DBOS (what ward tests):
- durable execution in the SDK's idiom: the ``DBOSDurability`` capability on the agent
  (named ``chart``), and ``agent.run()`` inside a ``@DBOS.workflow`` of the adapter's, one
  workflow per run, its id ``<session>/<n>`` (``SetWorkflowID``); the workflow's inputs are
  the run's session, guarded prompt, read-only flag, switched-off tools and limits;
- each model request is a DBOS step (``DBOSDurability``'s model step): its reply is recorded
  when it returns and, after a crash, replayed from the store without asking the provider;
  a request cut before its reply is asked again;
- function tools are the SDK's default under DBOS: PydanticAI does not wrap them (its DBOS
  docs: function tools are "not automatically wrapped"; ``@DBOS.step`` and child workflows
  are opt-in), so the workflow's recovery runs every body of the run again, those that had
  finished before the crash included, and DBOS hands a tool no idempotency key;
- tool calls in DBOS's default ``parallel_ordered_events`` mode;
- recovery: DBOS's own path (``get_pending_workflows``, ``reenqueue_for_recovery`` on its
  internal queue, ``start_queued_workflows``, ``execute_dequeued_workflow``), which replays
  the workflow from its start, each recorded step's output in place of the step;
- the store: DBOS's system database (``dbos.sqlite`` in the store directory ``reset`` gives),
  its tables, statements, pickle serializer and transactions.

The adapter's (``ward_kit``, ``pydantic-ai.py``, and here):
- everything ``pydantic-ai.py`` names as the adapter's (the provider, R3's checks before
  validation, the events, R20's running write), and the run's stop: PydanticAI refuses a
  ``CancellationToken`` in a DBOS workflow and ``DBOS.cancel_workflow`` acts only when the
  next step starts, so the kit's signal ends the waits (a read's body, the model request, a
  question) and no request is made after it;
- the quiet launch: ``DBOS.launch()`` starts threads (a background event loop, the queue
  thread and workers, the scheduler) that read and write the store in real time and draw
  from the seeded streams, so the adapter launches DBOS with none of them: the system
  database, its migrations and the application version, as ``launch`` makes them; the
  recovery launch would start is made by hand at ``recover``, on the main thread, its
  workflow a task of the kit's loop;
- the session: the next run's history is the session's messages as the kit keeps them,
  recorded by DBOS as the run workflow's output and read back from the last one that ended;
- the batch results' marker: the results of a batch enter the session when the next model
  request starts, in a DBOS step of the adapter's (``ward.results``); a workflow replayed
  after a crash finds the step recorded and does not report them again, but the session it
  keeps then holds the results of the bodies that ran again, which may differ from those
  reported before the crash (finding 1: ``drawing-4`` where ward was told ``drawing-3``),
  unreported: the session DBOS stores and ward's record of it part there (R30, not claimed);
- a replayed reply, which never reaches the provider, opens its batch in the kit silently:
  it was reported before the crash;
- determinism (ward digests the store's bytes): an engine of the adapter's
  (``system_database_engine``) with DBOS's connection settings and SQLite's ``'now'`` on the
  virtual clock, the SDK's message timestamps on it (``pydantic_ai._utils``,
  ``_model_request_attempts``), a fixed application version and executor id, the wall clock
  past the store's last record after a crash, the seeded streams seeded again from the seed
  and the store's size, SQLite's default rollback journal, and one run in memory before
  serving (``warm_up``), so that the ids PydanticAI and DBOS draw on first use are drawn
  before any ``reset`` in every process, killed and restarted or not.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "src"))

from ward_kit import wire  # noqa: E402 — the clocks and uuid4 are faked before the SDK binds them

wire.pin_hash_seed()
wire.install()
sys.dont_write_bytecode = False


def _adapter_module(name: str, file: str) -> Any:
    """Another adapter's file as a module (not run as a script)."""
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


memory = _adapter_module("ward_pydantic_ai_in_memory", "pydantic-ai.py")

import pydantic_ai._model_request_attempts as sdk_attempts  # noqa: E402
import pydantic_ai._utils as sdk_utils  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from dbos import DBOS, SetWorkflowID  # noqa: E402
from dbos import _dbos as dbos_state  # noqa: E402
from dbos._core import execute_dequeued_workflow  # noqa: E402
from dbos._serialization import deserialize_args  # noqa: E402
from dbos._sys_db import SystemDatabase  # noqa: E402
from dbos._utils import INTERNAL_QUEUE_NAME, GlobalParams, generate_uuid  # noqa: E402
from pydantic_ai import Agent as SdkAgent  # noqa: E402
from pydantic_ai.durable_exec.dbos import DBOSDurability  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import FunctionModel  # noqa: E402
from pydantic_ai.settings import ModelSettings  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402
from pydantic_ai.usage import UsageLimits  # noqa: E402

from ward_kit.agent import Agent, DurableAgent, Run  # noqa: E402
from ward_kit.runtime import unclaimed_notes  # noqa: E402

# The SDK stamps each message with ``now_utc()``, which DBOS pickles into the store. Only these
# modules' name: a global ``wire.fake_datetime()`` would make pickle refuse every real datetime.
sdk_utils.datetime = wire.VirtualDatetime
sdk_attempts.datetime = wire.VirtualDatetime

STORE_FILE = "dbos.sqlite"
"""DBOS's system database, in the store directory ``reset`` gives (P8)."""

APPLICATION = {"name": "ward-chart", "application_version": "ward-chart-1", "executor_id": "ward"}
"""DBOS's application name, version and executor id, fixed: DBOS otherwise hashes the
registered workflows' source into the version, and the executor id keys recovery."""

AGENT_NAME = "chart"
"""The agent's name, which DBOS's step names carry."""

VERSIONS = {name: metadata.version(name) for name in ("pydantic-ai-slim", "dbos", "SQLAlchemy")}

NOTES = {
    **memory.PydanticAi.notes,
    "R20": "the kit's: the run's signal ends the waits (a read's body, the model request, a question) and no request or body starts after it; the adapter's: a running write is shielded and completes. PydanticAI refuses a CancellationToken in a DBOS workflow, and DBOS.cancel_workflow acts only when the next step starts",
    **unclaimed_notes(
        r15="PydanticAI has no prompt redactor; the adapter applies only R22's exact-value guard, not the pattern rules of section 7",
        r30="DBOS journals a run's start (the workflow's inputs: the guarded prompt, the policy, the limits) and each model reply (a step's recorded output), but not each call's result: PydanticAI does not make a function tool a step under DBOS (its docs: not automatically wrapped), and DBOS records the model's replies as they came, unguarded (R22's guard is on what ward observes, not on what DBOS pickles); after a crash the session holds the results of the bodies that ran again, entered by the adapter without reporting them again, where ward was told the results from before the crash",
    ),
    "R31": "a function tool is not a DBOS step: a body's change and its result are never committed together, and the workflow's recovery runs every body of the run again, those that had finished before the crash included",
    "R32": "no intent is journaled before a body starts and a cut call never gets OUTCOME_UNKNOWN: the recovery runs the body again; DBOS hands a tool no idempotency key",
    "R33": "DBOS's: a model request is a step, its reply recorded and replayed, a request cut before its reply asked again; a read's body runs again. The adapter's: the recovery DBOS.launch() would start, made by hand at `recover` on the main thread (DBOS's get_pending_workflows, reenqueue_for_recovery, start_queued_workflows, execute_dequeued_workflow), because launch starts threads outside the lockstep",
    "R34": "DBOS's: the workflow's recorded inputs (read-only, switched-off tools, limits), read back by the adapter at `recover`, and the turn count, which the SDK counts again as the workflow replays its recorded requests; the kit's: the inactivity deadline starts again at the resume",
    "R35": "SQLite's transactions keep committed data, but a failed write of DBOS's ends the run as a failure, not as a crash, and ward faults no real disk",
}


# ---- the store: DBOS's system database, deterministic ----------------------------------------


class Wall:
    """The wall clock DBOS and SQLite read: ``base_ms`` ahead of the virtual clock, 0 but after
    a crash (:meth:`Durable.open_store`), so that a record made after a crash never predates
    one made before it."""

    base_ms = 0


def _wall_seconds() -> float:
    return (wire.clock.now_ms + Wall.base_ms) / 1000


def _wall_nanoseconds() -> int:
    return (wire.clock.now_ms + Wall.base_ms) * 1_000_000


_sqlite = sqlite3.connect(":memory:", check_same_thread=False)
"""SQLite's own ``strftime``, for the override's other arguments."""


def strftime(format: str, timeval: Any = None, *modifiers: Any) -> Any:
    """SQLite's ``strftime`` with ``'now'`` read from ``time.time()`` (DBOS's default
    timestamps are ``strftime('%s','now')``-style expressions evaluated by SQLite)."""
    if timeval == "now":
        arguments = (format, time.time(), "unixepoch", *modifiers)
    else:
        arguments = (format, timeval, *modifiers)
    placeholders = ",".join("?" * len(arguments))
    return _sqlite.execute(f"SELECT strftime({placeholders})", arguments).fetchone()[0]


def store_engine(path: str | None) -> sa.Engine:
    """The system database's engine, as DBOS makes it for SQLite (IMMEDIATE transactions, its
    busy timeout, foreign keys) with ``'now'`` on the virtual clock. ``None``: in memory."""
    if path is None:
        engine = sa.create_engine("sqlite://", poolclass=sa.pool.StaticPool, connect_args={"check_same_thread": False})
    else:
        engine = sa.create_engine(f"sqlite:///{path}")

    @sa.event.listens_for(engine, "connect")
    def connected(connection: Any, record: Any) -> None:
        connection.isolation_level = "IMMEDIATE"
        connection.execute("PRAGMA busy_timeout=30000")
        connection.execute("PRAGMA foreign_keys=ON")
        connection.create_function("strftime", -1, strftime)

    return engine


class InlineLoop:
    """DBOS's background event loop in the kit's: a coroutine DBOS submits is a task of the
    running loop, driven in the lockstep."""

    def submit_coroutine(self, coroutine: Any) -> Any:
        import asyncio

        return asyncio.get_running_loop().create_task(coroutine)


def quiet_launch(instance: Any) -> None:
    """What ``DBOS.launch()`` makes that workflows and steps need, without its threads: the
    system database, its migrations and the application version."""
    config = instance._config
    instance._launched = True
    GlobalParams.app_name = config["name"]
    # DBOS runs a synchronous workflow on this executor; none is registered, so no thread starts.
    instance._executor_field = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dbos-executor-")
    instance._background_event_loop = InlineLoop()
    instance._sys_db_field = SystemDatabase.create(
        system_database_url=config["system_database_url"],
        engine_kwargs=config["database"]["sys_db_engine_kwargs"],
        engine=config["system_database_engine"],
        schema=config.get("dbos_system_schema", "dbos"),
        serializer=instance._serializer,
        use_listen_notify=config["use_listen_notify"],
        executor_id=GlobalParams.executor_id,
        notification_listener_polling_interval_sec=1.0,
        notification_coalesce_sec=0.01,
        polling_concurrency=None,
        app_name=GlobalParams.app_name,
        observability_query_timeout_sec=None,
        idle_transaction_timeout_sec=None,
        sharding=False,
    )
    instance._sys_db.run_migrations()
    instance._sys_db.create_application_version(GlobalParams.app_version)


def store_rows(engine: sa.Engine) -> tuple[int, int]:
    """The store's size (workflows and steps) and the instant of its last record, ms: ``(0,
    0)`` for a store DBOS has not made yet."""
    with engine.connect() as connection:
        made = connection.execute(sa.text("SELECT count(*) FROM sqlite_master WHERE name = 'operation_outputs'")).scalar_one()
        if made == 0:
            return 0, 0
        workflows, steps, last = connection.execute(
            sa.text(
                "SELECT (SELECT count(*) FROM workflow_status), (SELECT count(*) FROM operation_outputs),"
                " max((SELECT coalesce(max(updated_at), 0) FROM workflow_status),"
                " (SELECT coalesce(max(completed_at_epoch_ms), 0) FROM operation_outputs))"
            )
        ).one()
    return workflows * 65536 + steps, int(last or 0)


# ---- the adapter --------------------------------------------------------------------------------


def reply_of(response: ModelResponse) -> dict[str, Any]:
    """A recorded ``ModelResponse`` as the reply ward gave (text, calls with raw arguments)."""
    text = "".join(part.content for part in response.parts if isinstance(part, TextPart))
    calls = [
        {"id": part.tool_call_id, "name": part.tool_name, "arguments": part.args if isinstance(part.args, str) else json.dumps(part.args)}
        for part in response.parts
        if isinstance(part, ToolCallPart)
    ]
    return {"text": text, "calls": calls}


@contextmanager
def muted(run: Run) -> Iterator[None]:
    """The kit's records of ``run`` kept from ward: what a process before a crash reported."""
    out = run.recorder.out
    run.recorder.out = lambda message: None
    try:
        yield
    finally:
        run.recorder.out = out


class DurablePolicy(memory.Policy):
    """The in-memory adapter's capability, and around each model request: the previous batch's
    results entered in the session (the adapter's DBOS step), and a reply the workflow
    replayed from the store opening its batch in the kit."""

    async def wrap_node_run(self, ctx: Any, *, node: Any, handler: Any) -> Any:
        if not SdkAgent.is_model_request_node(node):
            return await super().wrap_node_run(ctx, node=node, handler=handler)
        adapter = self.adapter
        await adapter.enter_results()
        adapter.asked = False
        result = await handler(node)
        if not adapter.asked and SdkAgent.is_call_tools_node(result):
            adapter.replayed(result.model_response)
        return result


class PydanticAiDbos(memory.PydanticAi):
    runtime = {"name": "pydantic-ai-dbos", "version": f"{VERSIONS['pydantic-ai-slim']} (dbos {VERSIONS['dbos']})"}

    claims = [*memory.PydanticAi.claims, "R33", "R34"]

    notes = NOTES

    durable = {
        "store": f"DBOS's SQLite system database ({STORE_FILE}, SQLite's default rollback journal) in the store directory: one workflow per run, its inputs, each model request's step, its output (the session's messages)",
        "version": f"dbos {VERSIONS['dbos']} (pydantic-ai-slim {VERSIONS['pydantic-ai-slim']}, SQLAlchemy {VERSIONS['SQLAlchemy']}) on Python's sqlite3, SQLite {sqlite3.sqlite_version}",
        "drop": "the DBOS instance, its registry, the agent, the run and the engine are dropped without destroy(), dispose() or close(): the engine and its pooled sqlite3 connections stay referenced, until a reset for another store directory; the loop with its tasks and timers is replaced and the dropped runtime's output is cut",
    }

    def __init__(self) -> None:
        self.store_dir: str | None = None
        self.engine: sa.Engine | None = None
        self.dropped: list[Any] = []
        self.asked = False
        self.entering = False

    def reset(self, message: dict[str, Any], agent: Agent) -> None:
        self.agent = agent
        self.run = None
        self.indices, self.begun, self.fields, self.writes = {}, set(), {}, []
        if message.get("storeDir") != self.store_dir:
            # The execution the dropped handles belong to is over: as after a kill, they go.
            for engine in [*self.dropped, self.engine]:
                if engine is not None:
                    engine.dispose()
            self.dropped, self.engine = [], None
        self.store_dir = message.get("storeDir")
        self.forget_dbos()
        self.build(agent)
        self.open_store(message["seed"])

    def build(self, agent: Agent) -> None:
        """The agent (``pydantic-ai.py``'s, with ``DBOSDurability``) and the adapter's workflow
        and step, in a fresh DBOS registry."""
        tools = [self.tool_of(entry) for entry in agent.catalogue]
        toolset = FunctionToolset(tools, id="chart").filtered(self.offered)
        model = FunctionModel(self.model_function, model_name=memory.MODEL_NAME)
        capabilities = [DurablePolicy(self), DBOSDurability()]
        self.chart_agent = SdkAgent(model, name=AGENT_NAME, toolsets=[toolset], output_type=[str, type(None)], capabilities=capabilities)

        @DBOS.workflow(name="ward.run")
        async def run_workflow(session: str, prompt: str, read_only: bool, disabled: list[str], limits: dict[str, int]) -> dict[str, Any]:
            return await self.workflow_body()

        @DBOS.step(name="ward.results")
        async def results_step() -> None:
            self.entering = True
            assert self.run is not None
            self.run.enter_results()

        self.run_workflow = run_workflow
        self.results_step = results_step

    def open_store(self, seed: int) -> None:
        """DBOS on the store directory's file (P8), launched quietly; the wall clock past its
        last record; the seeded streams as a process starting on that store has them."""
        path = None
        if self.store_dir is not None:
            os.makedirs(self.store_dir, exist_ok=True)
            path = os.path.join(self.store_dir, STORE_FILE)
        self.engine = store_engine(path)
        # Both before DBOS writes anything (its launch records the application version).
        time.time = _wall_seconds
        time.time_ns = _wall_nanoseconds
        rows, last_ms = store_rows(self.engine)
        Wall.base_ms = 0 if rows == 0 else max(0, last_ms + 1 - wire.clock.now_ms)
        # A process that starts again on a store draws other numbers than the one that wrote
        # it: DBOS's claim tokens are uuid4s, which would repeat those drawn before the crash.
        if rows != 0:
            wire.seed_random(seed ^ ((rows * 0x9E3779B1) & 0xFFFFFFFF))
        url = "sqlite://" if path is None else f"sqlite:///{path}"
        config = {**APPLICATION, "system_database_url": url, "system_database_engine": self.engine, "run_admin_server": False}
        quiet_launch(DBOS(config=config))  # type: ignore[arg-type]

    def forget_dbos(self) -> None:
        """The DBOS instance and registry of the last reset forgotten, never destroyed."""
        instance = dbos_state._dbos_global_instance
        if instance is not None:
            self.dropped.append(self.engine)
            self.engine = None
        dbos_state._dbos_global_instance = None
        dbos_state._dbos_global_registry = None

    def crash(self) -> None:
        """Drop mode (P9): nothing of the runtime runs again; its handles stay open."""
        self.forget_dbos()
        self.run = None
        self.chart_agent = None
        self.writes = []

    # ---- the session, from DBOS's store

    def history(self, session: str) -> list[Any]:
        """The session's messages: the output of its last run workflow that ended, as DBOS
        gives a workflow's result (``check_workflow_result``)."""
        assert self.engine is not None
        prefix = f"{session}/"
        with self.engine.connect() as connection:
            row = connection.execute(
                sa.text(
                    "SELECT workflow_uuid FROM workflow_status WHERE substr(workflow_uuid, 1, :n) = :prefix"
                    " AND status = 'SUCCESS' ORDER BY workflow_uuid DESC LIMIT 1"
                ),
                {"n": len(prefix), "prefix": prefix},
            ).one_or_none()
        if row is None:
            return []
        output = dbos_state._dbos_global_instance._sys_db.check_workflow_result(row[0], fail_if_missing=True)
        return list(output["store"])

    def workflow_id(self, session: str) -> str:
        """The next run's workflow id: the session and the count of its runs so far."""
        assert self.engine is not None
        prefix = f"{session}/"
        with self.engine.connect() as connection:
            count = connection.execute(
                sa.text("SELECT count(*) FROM workflow_status WHERE substr(workflow_uuid, 1, :n) = :prefix"),
                {"n": len(prefix), "prefix": prefix},
            ).scalar_one()
        return f"{prefix}{count:06d}"

    # ---- a run

    def prepare(self, run: Run) -> None:
        self.run = run
        self.indices, self.begun, self.writes = {}, set(), []
        self.fields = {}

    async def start(self, run: Run) -> None:
        self.prepare(run)
        session = run.session  # type: ignore[attr-defined]
        with SetWorkflowID(self.workflow_id(session)):
            await self.run_workflow(session, run.prompt, run.read_only, sorted(run.disabled), run.limits)

    async def workflow_body(self) -> dict[str, Any]:
        """The run workflow's body: ``agent.run()``, the run's end, and the session's messages
        as its output."""
        run = self.run
        assert run is not None
        limits = run.limits
        settings = ModelSettings(request_timeout=(limits["providerTimeoutMs"] - memory.DEADLINE_SLACK_MS) / 1000)
        error: BaseException | None = None
        output: Any = None
        try:
            result = await self.chart_agent.run(
                run.prompt,
                message_history=memory.messages_of(run.history),
                instructions=run.system_prompt,
                usage_limits=UsageLimits(request_limit=limits["turnsMax"]),
                model_settings=settings,
                retries={"tools": limits["turnsMax"]},
                infer_name=False,
            )
            output = result.output
        except Exception as caught:
            error = caught
        await self.writes_done()
        await self.enter_results()
        if error is None and not run.signal.aborted:
            run.complete(output if isinstance(output, str) else "")
        else:
            run.fail(self.outcome_of(run, error))
        return {"store": list(run.store)}

    async def enter_results(self) -> None:
        """The open batch's results into the session, in the adapter's DBOS step; replayed,
        the step is recorded and they were entered before the crash: silently here."""
        self.entering = False
        await self.results_step()
        if not self.entering and self.run is not None:
            with muted(self.run):
                self.run.enter_results()

    async def model_function(self, messages: list[Any], info: Any) -> ModelResponse:
        """ward's provider (``pydantic-ai.py``'s), asked only while the run goes on."""
        run = self.run
        assert run is not None
        run.signal.raise_if_aborted()
        self.asked = True
        return await super().model_function(messages, info)

    def replayed(self, response: ModelResponse) -> None:
        """A reply the workflow replayed from the store: its batch opens in the kit as when it
        came (turn and batch counts), its records already reported before the crash."""
        run = self.run
        assert run is not None
        self.indices, self.begun, self.writes = {}, set(), []
        with muted(run):
            run.replied(reply_of(response))

    async def recover(self, agent: SessionAgent, message: dict[str, Any]) -> None:
        """``recover`` (P9): the run workflow still pending, its run rebuilt from the
        workflow's recorded inputs, then DBOS's own recovery of it, on the kit's loop."""
        instance = dbos_state._dbos_global_instance
        database = instance._sys_db
        pending = database.get_pending_workflows(GlobalParams.executor_id, GlobalParams.app_version)
        if not pending:
            return
        status = database.get_workflow_status(pending[0].workflow_id)
        inputs = deserialize_args(status["inputs"], status["serialization"], instance._serializer)
        session, prompt, read_only, disabled, limits = inputs["args"]
        policy = {"session": session, "prompt": prompt, "readOnly": read_only, "disabledTools": disabled, "limits": limits}
        run = agent.resume_run(policy, message["secrets"])
        run.store.append({"role": "user", "text": run.prompt})
        self.prepare(run)
        for workflow in pending:
            database.reenqueue_for_recovery(workflow.workflow_id, [GlobalParams.executor_id], INTERNAL_QUEUE_NAME)
        owner = generate_uuid()
        queue = instance._registry.get_internal_queue()
        claimed, _ = database.start_queued_workflows(queue, GlobalParams.executor_id, GlobalParams.app_version, None, 0, owner_xid=owner)
        for workflow_id in claimed:
            execute_dequeued_workflow(instance, database.get_workflow_status(workflow_id), owner)


class SessionAgent(DurableAgent):
    """The kit's durable agent with each session's history read from DBOS's store."""

    def session_store(self, name: str) -> list[Any]:
        if name not in self.sessions:
            self.sessions[name] = self.sdk.history(name)  # type: ignore[attr-defined]
        return self.sessions[name]


WARM_UP_TOOLS = [
    {
        "name": "settings_get",
        "label": "Get settings",
        "description": "Reads the settings.",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
        "safety": "read-only",
        "executionMode": "parallel",
    },
    {
        "name": "settings_update",
        "label": "Update settings",
        "description": "Changes the settings.",
        "parameters": {"type": "object", "properties": {"theme": {"type": "string"}}, "additionalProperties": False},
        "safety": "destructive",
        "executionMode": "sequential",
    },
]
WARM_UP_LIMITS = {"turnsMax": 2, "callsPerBatchMax": 4, "providerTimeoutMs": 60_000, "inactivityTimeoutMs": 120_000, "providerRetriesMax": 0}


def warm_up() -> None:
    """One run in memory before serving. PydanticAI and DBOS import modules and build their
    graphs on first use, drawing ids from the seeded stream as they do: a process started
    again after a kill would draw them after its ``reset`` where the process that was only
    dropped had drawn them long before, and the store would differ between the two (P9)."""
    server = wire.Server(SessionAgent(PydanticAiDbos()))
    calls = [{"id": "w0", "name": "settings_get", "arguments": "{}"}, {"id": "w1", "name": "settings_update", "arguments": '{"theme":"dark"}'}]
    messages = [
        {"type": "reset", "seed": 0, "tools": WARM_UP_TOOLS},
        {"type": "startRun", "session": "warm-up", "prompt": "Warm up.", "readOnly": False, "disabledTools": [], "secrets": [], "limits": WARM_UP_LIMITS},
        {"type": "modelReply", "requestId": "r0", "text": "", "calls": calls},
        {"type": "bodyResult", "bodyId": "b0", "result": {"data": {}}, "changed": False},
        {"type": "bodyResult", "bodyId": "b1", "result": {"data": {}}, "changed": True},
        {"type": "modelReply", "requestId": "r1", "text": "Done.", "calls": []},
    ]
    for message in messages:
        server.take(json.dumps(message))


if __name__ == "__main__":
    warm_up()
    wire.serve(SessionAgent(PydanticAiDbos()))
