// The chart agent on LangGraph JS (`@langchain/langgraph`), durable on its SQLite checkpointer
// (`@langchain/langgraph-checkpoint-sqlite` on `better-sqlite3`), behind ward's protocol,
// version 2. Run with `node adapters/node/langgraph.js` (see README). What is LangGraph's and
// what is the adapter's:
//
// LangGraph (what ward tests):
// - the turn loop: a `StateGraph` over `MessagesAnnotation` (plus the run's policy), an
//   `agent` node calling the model, a conditional edge handing each tool call of its reply to
//   the `tools` node with `Send` (one task per call, as `createReactAgent`'s version 2 does),
//   and an edge back; the graph's `recursionLimit` is R19's turn limit
//   (`GraphRecursionError` is reported as `TOOL_LOOP_LIMIT`);
// - the tools: each catalogue tool a LangChain `tool()` with its JSON Schema, which
//   LangChain validates (`@cfworker/json-schema`) before the body runs; `ToolNode` resolves
//   the call by name and turns a thrown error (invalid input, unknown tool, a panicking body)
//   into an error `ToolMessage` of its own text; the model is offered the run's tools with
//   `bindTools`;
// - `ask_user`: `interrupt()` pauses the graph, and `Command({ resume })` takes it up;
// - retries: the chat model's `AsyncCaller` (`maxRetries: providerRetriesMax`, its backoff
//   and its reading of `retry-after`); stopping: the graph's `signal`;
// - durability: the checkpointer writes the state after each super-step
//   (`durability: "sync"`) and each task's writes as the task ends (`putWrites`); `recover`
//   takes up a thread's last checkpoint with `graph.invoke(null, config)`, which runs again
//   from its start every task of the cut super-step that has no writes.
//
// Adapter (lib/agent.js, and here):
// - ward's provider as a LangChain chat model (`BaseChatModel` subclass): the messages LangGraph
//   hands it become the protocol's transcript; a reply's calls become `tool_calls` (arguments
//   parsed with `JSON.parse`, as `@langchain/openai` does: text that does not parse is an
//   `invalid_tool_calls` entry); ward's errors are raised with an HTTP `status` and
//   `retry-after` header, as a provider package raises them; the provider timeout is a timer
//   aborting the request (LangChain's own `timeout` is `AbortSignal.timeout`, not virtual);
// - R12 and R13 at execution, R3's checks LangChain does not make, R17's sequential batches
//   (a lock), R19's batch cap and deadline, R20's stop (a running write keeps its result; the
//   run ends after every call has one), R22's guard, R23's events, each call's envelope;
// - the run's policy and limits in the graph state (so that the checkpointer keeps them), the
//   run's end recorded there (`updateState`), and the turn budget left on each `invoke` (the
//   `recursionLimit` of one invocation is counted from that invocation).
// - time and ids: the faked `Date` of lib/wire.js, past the store's last checkpoint after a
//   crash (a process that starts again reads a later wall clock, and checkpoint ids are time
//   ordered: uuid6), and `crypto.getRandomValues` seeded, which `@langchain/core`'s uuid
//   takes its random bytes from.

import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import Database from "better-sqlite3";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import {
  Annotation,
  Command,
  END,
  GraphRecursionError,
  MessagesAnnotation,
  START,
  Send,
  StateGraph,
  interrupt,
} from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { clock, seedRandom, seedRandomValues, serve } from "./lib/wire.js";
import { Agent, Run, Stop } from "./lib/agent.js";
import {
  ABORTED,
  HTTP_STATUS,
  PROVIDER_CODES,
  ProviderError,
  failure,
  isEnvelope,
  kitNotes,
  providerFailure,
  unexpectedEnd,
} from "./lib/runtime.js";

const require = createRequire(import.meta.url);
const version = (name) => require(`${name}/package.json`).version;
const VERSIONS = {
  langgraph: version("@langchain/langgraph"),
  checkpoint: version("@langchain/langgraph-checkpoint"),
  sqlite: version("@langchain/langgraph-checkpoint-sqlite"),
  core: version("@langchain/core"),
  betterSqlite3: version("better-sqlite3"),
};
const SQLITE_VERSION = new Database(":memory:").prepare("select sqlite_version() as v").get().v;

/** The checkpointer's file, in the store directory `reset` gives (P8). */
const STORE_FILE = "checkpoints.sqlite";

seedRandomValues();

// The wall clock LangGraph reads (`Date.now`, which uuid6 checkpoint ids are made of) runs
// `wallBaseMs` ahead of the virtual clock; 0 but after a crash (`openStore`).
let wallBaseMs = 0;
const virtualNow = Date.now;
Date.now = () => virtualNow() + wallBaseMs;

/**
 * Starts the sequence of `uuid6` (the checkpoint ids; its module keeps the last instant and a
 * counter for ids made within one millisecond) again, as in a fresh process: one id made at a
 * far instant sets the counter to 0, and every later instant is not after it, so the ids made
 * from here on depend on this execution alone, not on what the process ran before. The far
 * instant grows with each restart: at the same instant twice (a process dropped before it
 * made a checkpoint) the counter would go on from 1, and the ids after it would differ by one
 * tick from those a fresh process makes (kill mode against drop mode, I11).
 */
let uuid6FarMs = 2 ** 45;
function restartUuid6() {
  const now = Date.now;
  uuid6FarMs += 1;
  Date.now = () => uuid6FarMs;
  uuid6(-1);
  Date.now = now;
}

/** The instant (ms since 1970) a uuid6 checkpoint id was made at. */
function uuid6Ms(id) {
  const hex = id.replaceAll("-", "");
  const ticks = BigInt(`0x${hex.slice(0, 12)}${hex.slice(13, 16)}`);
  return Number(ticks / 10000n) - 0xb1d069b5400;
}

/** The run's state: LangGraph's messages, and the run's policy and progress. */
const ChartState = Annotation.Root({
  ...MessagesAnnotation.spec,
  run: Annotation({ reducer: (_, next) => next, default: () => null }),
});

/** ward's failure as a provider package raises it: the HTTP status, `retry-after`. */
class ProviderHttpError extends Error {
  constructor(error) {
    const status = HTTP_STATUS[error.kind];
    super(error.kind === "malformedResponse" ? `Invalid response body: ${error.message}` : `${status} ${error.message}`);
    this.name = "ProviderHttpError";
    this.status = status;
    this.kind = error.kind;
    this.headers =
      error.retryAfterMs === undefined ? {} : { "retry-after": String(error.retryAfterMs / 1000) };
  }
}

/** The error a provider package raises for a request its caller aborted. */
function abortError() {
  const error = new Error("Request was aborted.");
  error.name = "AbortError";
  return error;
}

/** An envelope (SPEC §4) for what a `ToolMessage` holds: the body's, or LangGraph's text. */
function envelopeOf(message, run) {
  const text = typeof message.content === "string" ? message.content : JSON.stringify(message.content);
  try {
    const value = JSON.parse(text);
    if (isEnvelope(value)) return value;
  } catch {
    // LangGraph's own text: ToolNode's error message
  }
  if (text.startsWith("Error: Received tool input did not match expected schema")) {
    return failure("TOOL_INPUT_INVALID", text);
  }
  const unknown = /^Error: Tool "(.*)" not found\./su.exec(text);
  if (unknown) return failure("TOOL_NOT_FOUND", text, run?.available() ?? "Call one of the available tools.");
  return failure("INTERNAL_ERROR", text);
}

/** LangGraph's messages as the protocol's transcript (the system message goes apart). */
function transcriptOf(messages, run) {
  const transcript = [];
  for (const message of messages) {
    const type = message.getType();
    if (type === "human") {
      transcript.push({ role: "user", text: String(message.content) });
    } else if (type === "ai") {
      const calls = message.additional_kwargs?.ward_calls ?? [];
      transcript.push({ role: "assistant", text: String(message.content), calls });
    } else if (type === "tool") {
      transcript.push({
        role: "tool",
        callId: message.tool_call_id,
        name: message.name ?? "",
        result: envelopeOf(message, run),
      });
    }
  }
  return transcript;
}

/** A reply's calls as LangChain's `tool_calls`, parsed as `@langchain/openai` parses them. */
function aiMessageOf(reply) {
  const toolCalls = [];
  const invalid = [];
  const indices = [];
  reply.calls.forEach((call, index) => {
    try {
      const args = JSON.parse(call.arguments);
      toolCalls.push({ id: call.id, name: call.name, args, type: "tool_call" });
      indices.push(index);
    } catch (error) {
      invalid.push({ id: call.id, name: call.name, args: call.arguments, error: error.message, type: "invalid_tool_call" });
    }
  });
  return new AIMessage({
    content: reply.text,
    tool_calls: toolCalls,
    invalid_tool_calls: invalid,
    additional_kwargs: { ward_calls: reply.calls, ward_indices: indices },
  });
}

/**
 * The batch index of each `ToolMessage` after the reply at `at`: the first call of the reply
 * with the message's id and name not yet matched. Position cannot tell: the state LangGraph
 * shows holds the writes of the tasks of a cut super-step that ended, and only those.
 */
function resultIndices(messages, at) {
  const reply = messages[at];
  const calls = reply?.additional_kwargs?.ward_calls ?? [];
  const valid = reply?.additional_kwargs?.ward_indices ?? [];
  const matched = new Set();
  return messages.slice(at + 1).map((message) => {
    if (message.getType() !== "tool") return undefined;
    const index =
      valid.find((i) => !matched.has(i) && calls[i].id === message.tool_call_id && calls[i].name === message.name) ??
      calls.findIndex((call, i) => !matched.has(i) && call.id === message.tool_call_id && call.name === message.name);
    if (index === undefined || index < 0) return undefined;
    matched.add(index);
    return index;
  });
}

/** The `ToolMessage`s the state holds for `batch`'s calls, by call index, in state order. */
function heldResults(batch, messages) {
  const held = new Map();
  if (!batch) return held;
  const at = messages.findLastIndex((message) => message.getType() === "ai");
  resultIndices(messages, at).forEach((index, position) => {
    if (index !== undefined) held.set(index, messages[at + 1 + position]);
  });
  return held;
}

/**
 * The messages that give every call of `batch` its result, in the order of the calls (R20,
 * the adapter's): a call the state holds no result of gets its result as the run gave it (a
 * question the stop cut while the graph was paused) or ABORTED. The reducer appends a message
 * with a new id and replaces one whose id it holds: when a result is missing, the held
 * messages' ids take the batch's first results in call order and the rest are appended, or a
 * later run's transcript would show them out of order (I6).
 */
function completed(batch, messages) {
  const held = heldResults(batch, messages);
  if (!batch || held.size === batch.calls.length) return [];
  const slots = [...held.values()].map((message) => message.id);
  return batch.calls.map((call, index) => {
    const kept = held.get(index);
    const content = kept ? kept.content : JSON.stringify(batch.results[index] ?? ABORTED());
    const status = kept ? kept.status : "error";
    return new ToolMessage({ id: slots[index], content, tool_call_id: call.id, name: call.name, status });
  });
}

/** ward's provider as a LangChain chat model: `bindTools` names the tools offered. */
class WardChatModel extends BaseChatModel {
  constructor(fields) {
    super({ maxRetries: fields.maxRetries });
    this.adapter = fields.adapter;
    this.run = fields.run;
  }

  _llmType() {
    return "ward";
  }

  bindTools(tools, kwargs) {
    return this.withConfig({ tools: tools.map((entry) => convertToOpenAITool(entry)), ...kwargs });
  }

  async _generate(messages, options) {
    const run = this.run;
    const transcript = transcriptOf(messages.filter((message) => message.getType() !== "system"), run);
    const tools = (options.tools ?? []).map((entry) => entry.function.name);
    const reply = await this.caller.callWithOptions({ signal: options.signal }, () =>
      this.request(run, transcript, tools, options.signal),
    );
    run.replied(reply);
    const message = aiMessageOf(reply);
    return { generations: [{ text: reply.text, message }] };
  }

  /**
   * One provider request with R19's timeout: a timer aborting it, a retryable error. A request
   * the caller's signal aborted fails as a provider package's does (`@langchain/openai` names
   * the error `AbortError`), which LangChain's `AsyncCaller` does not retry: its retry loop
   * does not see the signal (`callWithOptions` only races it), so any other error would send
   * the aborted run's request again after its backoff, into the next run.
   */
  async request(run, transcript, tools, outer) {
    if (outer?.aborted) throw abortError();
    const local = new AbortController();
    const forward = () => local.abort(outer.reason);
    outer?.addEventListener("abort", forward, { once: true });
    const timeout = new ProviderError({ kind: "timeout", message: "The provider did not answer in time." });
    const timer = setTimeout(() => local.abort(timeout), run.limits.providerTimeoutMs);
    try {
      return await run.ask(transcript, tools, local.signal);
    } catch (error) {
      if (outer?.aborted) throw abortError();
      if (error instanceof ProviderError) throw new ProviderHttpError(error);
      throw error;
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", forward);
    }
  }
}

/** The steps a run of `turnsMax` batches may take: a model step and a tools step each, and one model step more. */
const stepsOf = (turnsMax) => 2 * turnsMax + 1;

class LangGraph {
  runtime = { name: "@langchain/langgraph", version: VERSIONS.langgraph };

  claims = ["R1", "R2", "R3", "R4", "R5", "R11", "R12", "R13", "R14", "R16", "R17", "R18", "R19", "R20", "R21", "R22", "R23", "R33", "R34"];

  notes = {
    ...kitNotes(null),
    R17: "the adapter's for a sequential batch: a lock taken in the order ToolNode starts the calls; ToolNode's for a parallel batch and the order of results",
    R19: "LangGraph's: the turn limit (`recursionLimit`); the adapter's: the provider timeout (a timer aborting the request); the kit's: the batch cap and the inactivity deadline (lib/agent.js); a call past the cap that ToolNode refuses itself before the tool's function runs (an unknown tool, input its schema refuses) gets ToolNode's refusal, which the model reads, where R19 answers TOO_MANY_CALLS first",
    R6: "LangChain validates with @cfworker/json-schema and ToolNode gives the model its own text (`Error: Received tool input did not match expected schema ... Please fix your mistakes.`): no field list, no path",
    R7: "see R6: the messages are LangChain's, not R7's",
    R8: "LangChain's validator reports every error of an input; nothing bounds it to 5",
    R8a: "the adapter registers only the catalogue's schemas; any schema a developer registers is not tested here",
    R15: "LangGraph has no prompt redactor; the adapter applies only R22's exact-value guard, not the pattern rules of section 7",
    R24: "no redactor: see R15",
    R25: "no redactor: see R15",
    R26: "no redactor: see R15",
    R27: "no redactor: see R15",
    R28: "no redactor: see R15",
    R29: "no redactor: see R15",
    R30: "LangGraph's checkpointer journals the graph state after each super-step (the start, each reply, each task's writes; the run's end is the adapter's `updateState`), but it stores the state as the nodes return it: the prompt is guarded for exact values only (no redactor, R15), and the model's calls and the bodies' results are stored as they came",
    R31: "ward's chart is outside LangGraph's store: a body's change is applied when it returns and LangGraph commits its result as its task's pending write, not in one transaction with the change",
    R32: "LangGraph journals no intent before a body starts: a task cut by a crash runs again from its start (its durable-execution docs: make nodes idempotent), so an outside effect may happen twice and never gets OUTCOME_UNKNOWN; it hands a tool no idempotency key",
    R35: "SQLite's own transactions and journal keep committed data, but a failed checkpoint write ends the run as a failure, not as a crash, and ward faults no real disk",
  };

  durable = {
    store: `a SQLite database (${STORE_FILE}; SQLite's default rollback journal: the adapter does not apply SqliteSaver's journal_mode=WAL, whose header salts are random) in the store directory, written by @langchain/langgraph-checkpoint-sqlite's SqliteSaver: one thread per session`,
    version: `@langchain/langgraph-checkpoint-sqlite ${VERSIONS.sqlite} (@langchain/langgraph-checkpoint ${VERSIONS.checkpoint}, @langchain/langgraph ${VERSIONS.langgraph}) on better-sqlite3 ${VERSIONS.betterSqlite3}, SQLite ${SQLITE_VERSION}`,
    drop: "every object of the runtime (graph, checkpointer, run, pending promises) and the better-sqlite3 Database handle are dropped without close(): the handle is kept referenced so that nothing closes or checkpoints it, until a reset for another store directory; timers are cleared and the dropped runtime's output is cut",
  };

  constructor() {
    this.db = null;
    this.storeDir = null;
    this.dropped = [];
  }

  reset(message, agent) {
    this.agent = agent;
    this.questions = new Map();
    this.paused = null;
    if (message.storeDir !== this.storeDir) {
      // The execution the dropped handles belong to is over: as after a kill, they go.
      for (const db of this.dropped) db.close();
      this.dropped = [];
      this.db?.close();
      this.db = null;
    }
    this.storeDir = message.storeDir ?? null;
    this.seed = message.seed;
    this.openStore();
    this.tools = message.tools.map((entry) => this.toolOf(entry));
    this.graph = this.graphOf();
  }

  /** The checkpointer on the store directory's file (P8), and the wall clock past its last checkpoint. */
  openStore() {
    this.db?.close();
    if (this.storeDir !== null) mkdirSync(this.storeDir, { recursive: true });
    this.db = new Database(this.storeDir === null ? ":memory:" : join(this.storeDir, STORE_FILE));
    this.saver = new SqliteSaver(this.db);
    // SqliteSaver turns WAL on, and SQLite draws each WAL header's salt from the operating
    // system's randomness: the same writes would leave other bytes (P4; ward digests every byte
    // of the store directory). SQLite's default rollback journal, deleted at each commit, leaves
    // none. It is kept by not applying that one pragma (switching back after it fails while a
    // dropped connection is still open, which would make drop mode differ from kill mode).
    const pragma = this.db.pragma.bind(this.db);
    this.db.pragma = (text, options) => (text === "journal_mode=WAL" ? undefined : pragma(text, options));
    this.saver.setup();
    this.db.pragma = pragma;
    const last = this.db.prepare("SELECT checkpoint_id FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1").get();
    wallBaseMs = last === undefined ? 0 : uuid6Ms(last.checkpoint_id) + 1 - clock.now;
    // A process that starts again on a store draws other random numbers than the one that
    // wrote it: the seeded streams (message ids are random uuids) are seeded again from the
    // seed and the store's size, or the ids drawn after a crash would be those drawn before
    // it, and LangGraph's message reducer would take a new message for an old one.
    if (last !== undefined) {
      const rows = this.db.prepare("SELECT (SELECT count(*) FROM checkpoints) * 65536 + (SELECT count(*) FROM writes) AS n").get().n;
      seedRandom(BigInt.asUintN(64, BigInt(this.seed)) ^ BigInt(Math.imul(rows, 0x9e3779b1) >>> 0));
    }
    restartUuid6();
  }

  /** Drop mode (P9): the handle is kept, never closed; nothing of the runtime runs again. */
  crash() {
    if (this.db !== null) this.dropped.push(this.db);
    this.db = null;
    this.saver = null;
    this.graph = null;
    this.run = null;
    this.questions = new Map();
    this.paused = null;
  }

  graphOf() {
    const toolNode = new ToolNode(this.tools);
    return new StateGraph(ChartState)
      .addNode("agent", (state, config) => this.callModel(state, config))
      .addNode("tools", toolNode)
      .addEdge(START, "agent")
      .addConditionalEdges("agent", (state) => this.route(state), ["tools", END])
      .addEdge("tools", "agent")
      .compile({ checkpointer: this.saver });
  }

  /** Each tool call of the last reply to the `tools` node, one task each (`Send`). */
  route(state) {
    const last = state.messages.at(-1);
    const calls = last?.tool_calls ?? [];
    if (calls.length === 0) return END;
    const indices = last.additional_kwargs?.ward_indices ?? [];
    return calls.map((call, position) => new Send("tools", { lg_tool_call: { ...call, ward_index: indices[position] } }));
  }

  async callModel(state, config) {
    const run = this.run;
    this.syncResults(run, state.messages);
    run.enterResults();
    const offered = new Set(run.offered);
    const model = new WardChatModel({ adapter: this, run, maxRetries: run.limits.providerRetriesMax }).bindTools(
      this.tools.filter((entry) => offered.has(entry.name)),
    );
    const response = await model.invoke([new SystemMessage(run.systemPrompt), ...state.messages], {
      signal: config.signal,
    });
    return { messages: [response] };
  }

  /**
   * The batch's results LangGraph holds as `ToolMessage`s (in the order of the calls' tasks)
   * into the run: a body's as it returned (its events were reported when it ran), LangGraph's
   * own refusals (invalid input, an unknown tool, a body that threw) with their events now.
   */
  syncResults(run, messages) {
    const batch = run.batch;
    if (!batch) return;
    const at = messages.findLastIndex((message) => message.getType() === "ai");
    if (at < 0) return;
    const indices = resultIndices(messages, at);
    messages.slice(at + 1).forEach((message, position) => {
      const index = indices[position];
      if (index === undefined || batch.results[index] !== null) return;
      const result = run.guard.value(envelopeOf(message, run));
      if (!batch.reported?.has(index)) run.started(index);
      run.finished(index, result);
    });
  }

  /** A catalogue tool as a LangChain tool whose body is ward's (or the user's, for `ask_user`). */
  toolOf(entry) {
    return tool((input, config) => this.body(entry, input, config), {
      name: entry.name,
      description: entry.description,
      schema: entry.parameters,
    });
  }

  async body(entry, input, config) {
    const run = this.run;
    const index = config.toolCall?.ward_index;
    if (run === null || index === undefined) throw new Error("a tool ran outside a run");
    run.batch.reported ??= new Set();
    run.batch.reported.add(index);
    if (entry.name === "ask_user") return this.askUser(run, index, input);
    const work = run.execute(index, input, run.signal);
    run.inflight.add(work);
    try {
      return JSON.stringify(run.guard.value(await work));
    } finally {
      run.inflight.delete(work);
    }
  }

  /**
   * `ask_user`: the question goes to ward once per call, and `interrupt()` pauses the graph
   * until the driver resumes it with the call's envelope (`Command({ resume })`). The task
   * runs again from its start on resume: the second time `interrupt()` returns the envelope.
   */
  askUser(run, index, input) {
    const key = `${run.turn}:${index}`;
    if (!this.questions.has(key)) {
      const work = run.execute(index, input, run.signal);
      run.inflight.add(work);
      work.then(() => run.inflight.delete(work), () => run.inflight.delete(work));
      this.questions.set(key, work);
    }
    const envelope = interrupt({ ward_question: key });
    return JSON.stringify(run.guard.value(envelope));
  }

  configOf(run, steps) {
    return {
      configurable: { thread_id: run.session },
      recursionLimit: Math.max(1, steps),
      signal: run.signal,
      durability: "sync",
    };
  }

  async start(run) {
    this.prepare(run);
    const thread = { configurable: { thread_id: run.session } };
    const snapshot = await this.graph.getState(thread);
    const messages = snapshot.values?.messages ?? [];
    // LangGraph's own count: an invocation from a checkpoint of step `m` stops past step
    // `m + 1 + recursionLimit` (a thread without checkpoints is at step -2).
    const step = snapshot.metadata?.step ?? -2;
    const policy = {
      session: run.session,
      prompt: run.prompt,
      readOnly: run.readOnly,
      disabledTools: [...run.disabled],
      limits: run.limits,
      from: messages.length,
      stop: step + 2 + stepsOf(run.limits.turnsMax),
      open: true,
    };
    await this.drive(run, { messages: [new HumanMessage(run.prompt)], run: policy }, policy);
  }

  prepare(run) {
    run.session = run.session ?? this.agent.session;
    run.inflight = new Set();
    this.run = run;
    this.questions = new Map();
  }

  /**
   * The `recursionLimit` that keeps the run's turn limit from the thread's last checkpoint.
   * An invocation counts its steps from where it starts, and LangGraph's step numbers also
   * count the checkpoints a resume writes: the steps left are read from the run's replies
   * instead, a model step and a tools step for each batch left, and one model step more.
   */
  async stepsLeft(run, policy) {
    const snapshot = await this.graph.getState({ configurable: { thread_id: run.session } });
    const messages = (snapshot.values?.messages ?? []).slice(policy.from);
    const batches = messages.filter((message) => (message.additional_kwargs?.ward_calls ?? []).length > 0).length;
    const pending = snapshot.next.includes("tools") ? 1 : 0;
    // A resumed invocation (`Command({ resume })` or `invoke(null)` from a checkpoint) runs
    // two steps more than its `recursionLimit` (the pending task's step included), where a new
    // one runs as many as its limit (`PregelLoop`'s stop is counted from the checkpoint's
    // step, and only a new invocation writes a checkpoint for its input first): the limit is
    // two less than the steps left.
    return pending + stepsOf(run.limits.turnsMax - batches) - 2;
  }

  /** Invokes the graph until the run ends: each pause for `ask_user` resumed with its answer. */
  async drive(run, input, policy) {
    let value = input;
    try {
      for (;;) {
        const steps = value === input && input !== null ? stepsOf(run.limits.turnsMax) : await this.stepsLeft(run, policy);
        const config = this.configOf(run, steps);
        // No limit below 1 resumes: a run with a model step left, or a tools step and a model
        // step, stops after that model step.
        if (steps < 1) config.interruptAfter = ["agent"];
        const result = await this.graph.invoke(value, config);
        if (steps < 1 && (result.messages.at(-1)?.tool_calls ?? []).length > 0) {
          throw new GraphRecursionError(`Recursion limit of ${steps} reached`);
        }
        const interrupts = result.__interrupt__ ?? [];
        if (interrupts.length === 0) {
          const last = result.messages.at(-1);
          return await this.close(run, () => run.complete(typeof last?.content === "string" ? last.content : ""));
        }
        const resume = {};
        for (const pause of interrupts) {
          const envelope = await this.questions.get(pause.value.ward_question);
          resume[pause.id] = envelope ?? ABORTED();
        }
        if (run.signal.aborted) throw run.signal.reason;
        value = new Command({ resume });
      }
    } catch (error) {
      if (this.run !== run) return undefined;
      await Promise.allSettled([...run.inflight]);
      return this.close(run, () => run.fail(this.outcomeOf(run, error)));
    }
  }

  /**
   * The run's end: the calls without a result get ABORTED, in LangGraph's state too, and the
   * run is closed there (`updateState`, the adapter's record of the end), then reported.
   */
  async close(run, report) {
    if (this.run !== run) return;
    const thread = { configurable: { thread_id: run.session } };
    let snapshot = await this.graph.getState(thread);
    this.syncResults(run, snapshot.values.messages ?? []);
    const held = heldResults(run.batch, snapshot.values.messages ?? []);
    if (held.size > 0 && held.size < (run.batch?.calls.length ?? 0)) {
      // The held results are the writes of the cut super-step's tasks that ended, and a
      // state read gives them new ids each time: an empty update makes them a checkpoint's.
      await this.graph.updateState(thread, { messages: [] });
      snapshot = await this.graph.getState(thread);
    }
    const results = completed(run.batch, snapshot.values.messages ?? []);
    run.enterResults();
    await this.graph.updateState(thread, { messages: results, run: { ...snapshot.values.run, open: false } });
    if (this.run !== run) return;
    this.run = null;
    report();
  }

  /** What ended the run early: a stop, the turn limit, or the provider's last error. */
  outcomeOf(run, error) {
    if (run.signal.aborted && run.signal.reason instanceof Stop) return run.signal.reason;
    if (error instanceof GraphRecursionError || error?.name === "GraphRecursionError") {
      return failure(
        "TOOL_LOOP_LIMIT",
        `The agent stopped after ${run.limits.turnsMax} tool turns.`,
        "Refine the request and retry.",
      ).error;
    }
    const kind = error?.kind;
    if (kind !== undefined && PROVIDER_CODES[kind] !== undefined) return providerFailure(kind, error.message);
    return unexpectedEnd(error?.stack ?? error);
  }

  /**
   * `recover` (P9): the thread whose run is still open at its last checkpoint is taken up with
   * `invoke(null)`, LangGraph's resume: the tasks of the cut super-step without writes run
   * again from their start; a pause for `ask_user` asks again.
   */
  async recover(agent, message) {
    const threads = this.db.prepare("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id").all();
    for (const { thread_id: session } of threads) {
      const snapshot = await this.graph.getState({ configurable: { thread_id: session } });
      const policy = snapshot.values?.run;
      if (!policy?.open) continue;
      const run = agent.resumeRun(policy, message.secrets);
      if (run === null) return;
      this.prepare(run);
      this.restore(run, snapshot.values.messages.slice(policy.from), policy, snapshot.next);
      await this.drive(run, null, policy);
      return;
    }
  }

  /**
   * The run's counts and open batch, from the messages it kept. A batch whose tools step
   * completed (the thread goes on to `agent`) has had its results entered and reported by
   * the process before the crash: the model step that follows a tools step enters them as it
   * starts, and no boundary falls between the step's checkpoint and that model request. It
   * is not entered again (its results were acknowledged once; I16).
   */
  restore(run, messages, policy, next) {
    for (const message of messages) {
      if (message.getType() !== "ai") continue;
      const calls = message.additional_kwargs?.ward_calls ?? [];
      run.turn += 1;
      if (calls.length > 0 && run.batches < policy.limits.turnsMax) run.batches += 1;
    }
    run.calls = messages.filter((message) => message.getType() === "tool").length;
    const at = messages.findLastIndex((message) => message.getType() === "ai");
    const calls = at < 0 ? [] : (messages[at].additional_kwargs?.ward_calls ?? []);
    if (calls.length === 0 || !next.includes("tools")) return;
    run.batch = {
      calls,
      results: new Array(calls.length).fill(null),
      seen: new Set(),
      claimed: new Set(),
      lock: Promise.resolve(),
      sequential: calls.some((call) => run.tool(call.name)?.executionMode === "sequential"),
    };
    const indices = resultIndices(messages, at);
    messages.slice(at + 1).forEach((message, position) => {
      const index = indices[position];
      if (index !== undefined) {
        run.batch.results[index] = run.guard.value(envelopeOf(message, run));
        run.batch.seen.add(calls[index].id);
      }
    });
  }
}

/** The adapter process's state, durable: `crash` drops the runtime, `recover` takes a run up. */
class DurableAgent extends Agent {
  ready() {
    return { ...super.ready(), durable: this.sdk.durable };
  }

  crash() {
    this.current = null;
    this.sdk.crash();
  }

  handle(message) {
    if (message.type === "recover") {
      this.sdk.recover(this, message).catch((error) => this.died(error));
      return undefined;
    }
    return super.handle(message);
  }

  startRun(message) {
    this.session = message.session;
    super.startRun(message);
  }

  died(error) {
    process.stderr.write(`${error?.stack ?? error}\n`);
    process.exit(70);
  }

  /** A run taken up after a crash: its policy from the state, its secrets from `recover`. */
  resumeRun(policy, secrets) {
    this.ward.beginRun();
    const run = new Run(this, {
      session: policy.session,
      prompt: policy.prompt,
      readOnly: policy.readOnly,
      disabledTools: policy.disabledTools,
      secrets,
      limits: policy.limits,
    });
    run.session = policy.session;
    this.current = run;
    run.recorder.event({ type: "run.started", readOnly: run.readOnly, tools: run.offered });
    run.touch();
    return run;
  }
}

serve(new DurableAgent(new LangGraph()));
