// The adapter's runtime side, imported by `workflow-devkit.js` once the bundle is built. The order of the imports matters: lib/wire.js fakes the
// timers and seeds the randomness first, then the file system is made synchronous, and only
// then are the SDK's packages imported (dynamically), so that every module of theirs binds the
// faked `setTimeout` of `node:timers/promises` and the synchronous `fs.promises`.

import { syncBuiltinESMExports } from "node:module";
import fs from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { clock, seedRandomValues, serve } from "../lib/wire.js";
import { Agent, Run, Stop } from "../lib/agent.js";
import { ABORTED, PROVIDER_CODES, ProviderError, failure, isEnvelope, providerFailure, unexpectedEnd } from "../lib/runtime.js";

seedRandomValues();

// The SDK's loggers write with `console`: standard output is the protocol's, so every console
// method writes to standard error.
for (const method of ["log", "info", "warn", "error", "debug", "trace"]) {
  console[method] = (...args) => {
    if (process.env.WARD_WORKFLOW_LOG) process.stderr.write(`${args.map((a) => (a instanceof Error ? a.stack : typeof a === "string" ? a : JSON.stringify(a))).join(" ")}\n`);
  };
}

/**
 * world-local's file I/O through `fs.promises`, done synchronously: the same calls, the same
 * bytes, each finished before its promise is handed back. A run then moves between two ward
 * messages through promise chains and faked timers only, which lib/wire.js's settling loop
 * sees to the end (real I/O completes on libuv's thread pool, in an order no seed decides).
 */
function synchronousFiles() {
  const p = fs.promises;
  for (const name of Object.keys(p)) {
    const sync = fs[`${name}Sync`];
    if (typeof p[name] !== "function" || typeof sync !== "function" || name === "open") continue;
    p[name] = async (...args) => sync(...args);
  }
  // The order of a directory's entries is the file system's: sorted, it is the names'.
  p.readdir = async (dir, options) => {
    const entries = fs.readdirSync(dir, options);
    return entries.sort((a, b) => {
      const x = typeof a === "string" ? a : a.name;
      const y = typeof b === "string" ? b : b.name;
      return x < y ? -1 : x > y ? 1 : 0;
    });
  };
  p.open = async (file, flags, mode) => {
    const fd = fs.openSync(file, flags, mode);
    return {
      fd,
      read: async (buffer, offset, length, position) => ({
        bytesRead: fs.readSync(fd, buffer, offset, length, position),
        buffer,
      }),
      write: async (buffer, ...rest) => ({ bytesWritten: fs.writeSync(fd, buffer, ...rest), buffer }),
      close: async () => fs.closeSync(fd),
    };
  };
  syncBuiltinESMExports();
}
synchronousFiles();

/**
 * The wall clock the runtime reads (`Date`): the virtual clock plus `wallBaseMs`. ulid's
 * monotonic factory refuses the instant 0, and a process that starts again on a store must
 * read a later wall clock than the store's last record (world-local orders events by their
 * ulid, whose first characters are the instant).
 */
const EPOCH_MS = 1_767_225_600_000; // 2026-01-01T00:00:00Z
let wallBaseMs = EPOCH_MS;
const VirtualDate = globalThis.Date;
class WallDate extends VirtualDate {
  constructor(...args) {
    if (args.length === 0) super(VirtualDate.now() + wallBaseMs);
    else super(...args);
  }

  static now() {
    return VirtualDate.now() + wallBaseMs;
  }
}
globalThis.Date = WallDate;

const { createLocalWorld } = await import("@workflow/world-local");
const { setWorld } = await import("workflow/runtime");
const { start, getRun } = await import("workflow/api");
const { FatalError, RetryableError } = await import("workflow");
const config = globalThis[Symbol.for("ward.workflow-devkit.config")];
const versions = config.versions;
const bundleDir = config.bundleDir;
const stepsModule = await import(pathToFileURL(join(bundleDir, "steps.mjs")).href);
const workflowsModule = await import(pathToFileURL(join(bundleDir, "workflows.mjs")).href);
await import("@vercel/functions").catch(() => undefined);

/**
 * The SDK's modules load OpenTelemetry on first use, each once per process (`import()`,
 * whose module loading is real I/O): loaded here, before any run, so that no run waits on
 * it (lib/wire.js would take the wait for quiet, and a first run would differ from a later
 * one).
 */
async function warm() {
  const module = (path) => import(new URL(`../node_modules/${path}`, import.meta.url).href);
  await (await module("@workflow/core/dist/telemetry.js")).trace("ward.warm", async () => undefined);
  await (await module("@workflow/world-local/dist/telemetry.js")).trace("ward.warm", async () => undefined);
  await (await module("@workflow/ai/dist/agent/telemetry.js")).recordSpan({
    name: "ward.warm",
    telemetry: { isEnabled: true },
    attributes: {},
    fn: async () => undefined,
  });
}
await warm();

const WARD = Symbol.for("ward.workflow-devkit");
const WORKFLOW_ID = "workflow//./chart//chartRun";

/** The instant (ms since 1970) in a ulid's first ten characters. */
function ulidMs(id) {
  const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  let ms = 0;
  for (const char of id.slice(0, 10)) ms = ms * 32 + alphabet.indexOf(char);
  return ms;
}

/** The latest instant of a ulid-named record in the store directory, or 0. */
function lastInstant(dir) {
  let last = 0;
  const walk = (path) => {
    let entries;
    try {
      entries = fs.readdirSync(path, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.isDirectory()) walk(join(path, entry.name));
      for (const match of entry.name.matchAll(/_([0-9A-HJKMNP-TV-Z]{26})/gu)) last = Math.max(last, ulidMs(match[1]));
    }
  };
  walk(dir);
  return last;
}

const { hydrateStepArguments, hydrateStepReturnValue, hydrateWorkflowArguments, hydrateWorkflowReturnValue } =
  await import("@workflow/core/serialization");

/** The SDK's prompt as the protocol's transcript (the system message goes apart). */
function transcriptOf(prompt) {
  const transcript = [];
  const text = (content) =>
    typeof content === "string"
      ? content
      : content
          .filter((part) => part.type === "text")
          .map((part) => part.text)
          .join("");
  for (const message of prompt) {
    if (message.role === "user") {
      transcript.push({ role: "user", text: text(message.content) });
    } else if (message.role === "assistant") {
      const calls = (typeof message.content === "string" ? [] : message.content)
        .filter((part) => part.type === "tool-call")
        .map((part) => ({
          id: part.toolCallId,
          name: part.toolName,
          arguments: typeof part.input === "string" ? part.input : JSON.stringify(part.input),
        }));
      transcript.push({ role: "assistant", text: text(message.content), calls });
    } else if (message.role === "tool") {
      for (const part of message.content) {
        if (part.type !== "tool-result") continue;
        transcript.push({ role: "tool", callId: part.toolCallId, name: part.toolName, result: resultOf(part.output) });
      }
    }
  }
  return transcript;
}

/** A tool result as the SDK holds it: the body's envelope, or the SDK's own error text. */
function resultOf(output) {
  if (output?.type === "json" && isEnvelope(output.value)) return output.value;
  const text = typeof output?.value === "string" ? output.value : JSON.stringify(output?.value ?? null);
  return failure("INTERNAL_ERROR", text);
}

/** ward's reply as a stream of the model's parts (LanguageModelV3), as a provider streams it. */
function partsOf(reply) {
  const parts = [{ type: "stream-start", warnings: [] }];
  if (reply.text !== "") {
    parts.push({ type: "text-start", id: "text-0" });
    parts.push({ type: "text-delta", id: "text-0", delta: reply.text });
    parts.push({ type: "text-end", id: "text-0" });
  }
  for (const call of reply.calls) {
    parts.push({ type: "tool-call", toolCallId: call.id, toolName: call.name, input: call.arguments });
  }
  parts.push({
    type: "finish",
    finishReason: { unified: reply.calls.length > 0 ? "tool-calls" : "stop", raw: undefined },
    usage: {
      inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 0, text: 0, reasoning: 0 },
    },
  });
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}

/** The SDK's messages for a session's earlier runs (the session store holds the protocol's form). */
function messagesOf(history) {
  const messages = [];
  for (const message of history) {
    if (message.role === "user") {
      messages.push({ role: "user", content: message.text });
    } else if (message.role === "assistant") {
      const content = [];
      if (message.text !== "") content.push({ type: "text", text: message.text });
      for (const call of message.calls) {
        let input;
        try {
          input = JSON.parse(call.arguments);
        } catch {
          input = call.arguments;
        }
        content.push({ type: "tool-call", toolCallId: call.id, toolName: call.name, input });
      }
      messages.push({ role: "assistant", content });
    } else {
      const last = messages.at(-1);
      const part = {
        type: "tool-result",
        toolCallId: message.callId,
        toolName: message.name,
        output: { type: "json", value: message.result },
      };
      if (last?.role === "tool") last.content.push(part);
      else messages.push({ role: "tool", content: [part] });
    }
  }
  return messages;
}

/** Every step world-local journaled for run `runId`, oldest first, with its input and output. */
async function stepsOf(world, runId) {
  const steps = [];
  let cursor;
  for (;;) {
    const page = await world.steps.list({ runId, pagination: { limit: 100, cursor, sortOrder: "asc" }, resolveData: "all" });
    steps.push(...page.data);
    if (!page.hasMore) return steps;
    cursor = page.cursor;
  }
}

/** The steps of `steps` named `name` (`doStreamStep`, `toolBody`) that completed. */
const completed = (steps, name) => steps.filter((step) => step.stepName.endsWith(`//${name}`) && step.status === "completed");

/**
 * The calls of run `runId`'s model step `turn` (counted from 0), as its journaled result holds
 * them: `doStreamStep`'s `toolCalls`, each the stream's call with its argument text. The SDK
 * writes `{}` for an empty text, which the batch's checks answer as they answer an empty one
 * (`argumentsCheck` looks at size and secrets only; a body gets the step's own input).
 */
async function journaledCalls(world, runId, turn) {
  const step = completed(await stepsOf(world, runId), "doStreamStep")[turn];
  if (step === undefined) throw new FatalError(`run ${runId} journaled no model step ${turn}`);
  const { toolCalls } = await hydrateStepReturnValue(step.output, runId, undefined, globalThis);
  return toolCalls.map((call) => ({ id: call.toolCallId, name: call.toolName, arguments: call.input }));
}

/** The result of a call whose step threw (a body that panicked). */
const THREW = () => failure("INTERNAL_ERROR", "The tool failed unexpectedly.");

/** The text a provider failure leaves in the run's error, and its kind read back. */
const providerText = (error) => `ward provider ${error.kind}: ${error.message}`;
const providerKindOf = (text) => /ward provider ([a-zA-Z]+): /u.exec(String(text ?? ""))?.[1];

const ulids = globalThis[Symbol.for("ward.workflow-devkit.ulid")];
ulids.loaded();

class WorkflowDevKit {
  runtime = { name: "@workflow/ai", version: versions.ai };

  claims = config.claims;

  notes = config.notes;

  durable = config.durable;

  constructor() {
    this.world = null;
    this.run = null;
    this.histories = new Map();
  }

  reset(message, agent) {
    // As in a fresh process: the ids world-local and core make start again (`ulid.js`), and
    // the wall clock starts from 2026-01-01 again. A base kept from the seed before would move
    // every ulid of this seed's store, and would move `Date` under a run already recording when
    // the first run opens the world (`openWorld`): its events' times before its start.
    ulids.restart();
    wallBaseMs = EPOCH_MS;
    this.world = null;
    this.run = null;
    this.agent = agent;
    this.storeDir = message.storeDir ?? null;
    this.seed = message.seed;
    this.opened = null;
  }

  /** The local world on the store directory (P8), opened at the first run or `recover`. */
  open(recovering) {
    this.opened ??= this.openWorld(recovering);
    return this.opened;
  }

  async openWorld(recovering) {
    if (this.storeDir === null) throw new Error("the Workflow DevKit adapter needs reset.storeDir");
    fs.mkdirSync(this.storeDir, { recursive: true });
    const last = lastInstant(this.storeDir);
    wallBaseMs = last === 0 ? EPOCH_MS : last + 1 - clock.now;
    const world = createLocalWorld({ dataDir: this.storeDir, recoverActiveRuns: recovering });
    world.registerHandler("__wkf_workflow_", workflowsModule.POST);
    world.registerHandler("__wkf_step_", stepsModule.POST);
    const create = world.events.create.bind(world.events);
    world.events.create = async (runId, data, ...rest) => {
      const result = await create(runId, data, ...rest);
      if (["run_completed", "run_failed", "run_cancelled"].includes(data?.eventType)) this.ended(runId, data);
      return result;
    };
    this.world = world;
    setWorld(world);
    await this.loadHistories(world);
    return world;
  }

  /** The sessions' messages: each session's last finished run's conversation, from the store. */
  async loadHistories(world) {
    this.histories = new Map();
    this.active = [];
    const runs = await this.runsOf(world);
    for (const run of runs) {
      const input = await this.inputOf(world, run.runId);
      if (run.status === "completed") {
        const output = await hydrateWorkflowReturnValue((await world.runs.get(run.runId, { resolveData: "all" })).output, run.runId, undefined);
        this.histories.set(input.session, output.messages);
      } else {
        this.histories.set(input.session, await this.conversationOf(world, run.runId, input));
        if (run.status === "running" || run.status === "pending") this.active.push({ runId: run.runId, input });
      }
    }
  }

  /**
   * The conversation of a run that did not complete, as its steps journaled it: its input's
   * messages and prompt, then each model step's reply and the results of its calls (a call
   * whose step left no result: the result acknowledged in this process, if any, else ABORTED,
   * as the run's end gave it).
   */
  async conversationOf(world, runId, input, acknowledged = () => undefined) {
    const messages = [...input.history, { role: "user", content: input.prompt }];
    const steps = await stepsOf(world, runId);
    const results = new Map();
    for (const step of completed(steps, "toolBody")) {
      // A step's input is its call's arguments (an array, or an object holding it as `args`).
      const value = await hydrateStepArguments(step.input, runId, undefined, [], globalThis);
      const list = Array.isArray(value) ? value : Array.isArray(value?.args) ? value.args : [value];
      const call = list.find((item) => item !== null && typeof item === "object" && "toolCallId" in item);
      if (call === undefined) continue;
      results.set(call.toolCallId, await hydrateStepReturnValue(step.output, runId, undefined, globalThis));
    }
    for (const step of completed(steps, "doStreamStep")) {
      const { step: reply, toolCalls } = await hydrateStepReturnValue(step.output, runId, undefined, globalThis);
      const calls = reply.toolCalls ?? [];
      messages.push({ role: "assistant", content: [...(reply.text ? [{ type: "text", text: reply.text }] : []), ...calls] });
      if (calls.length === 0) continue;
      messages.push({
        role: "tool",
        content: (toolCalls ?? calls).map((call) => ({
          type: "tool-result",
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          output: { type: "json", value: acknowledged(call.toolCallId) ?? results.get(call.toolCallId) ?? ABORTED() },
        })),
      });
    }
    return messages;
  }

  async runsOf(world) {
    const all = [];
    let cursor;
    for (;;) {
      const page = await world.runs.list({ pagination: { limit: 100, cursor, sortOrder: "asc" }, resolveData: "none" });
      all.push(...page.data);
      if (!page.hasMore) return all;
      cursor = page.cursor;
    }
  }

  async inputOf(world, runId) {
    const run = await world.runs.get(runId, { resolveData: "all" });
    const args = await hydrateWorkflowArguments(run.input, runId, undefined, globalThis);
    return Array.isArray(args) ? args[0] : args;
  }

  async start(run) {
    run.session = this.agent.session;
    const world = await this.open(false);
    await this.pendingHistory;
    const input = {
      session: run.session,
      prompt: run.prompt,
      systemPrompt: run.systemPrompt,
      readOnly: run.readOnly,
      disabledTools: [...run.disabled],
      offered: run.offered,
      catalogue: this.agent.catalogue.map(({ name, description, parameters }) => ({ name, description, parameters })),
      limits: run.limits,
      history: this.histories.get(run.session) ?? messagesOf(run.history),
    };
    run.inflight = new Set();
    this.run = run;
    this.watch(run);
    run.startedFrom = input.history;
    run.from = input.history.length + 1;
    run.wait = new Promise((resolve) => {
      run.done = resolve;
    });
    const started = await start({ workflowId: WORKFLOW_ID }, [input], { world });
    run.runId = started.runId;
    await this.drive(run);
  }

  /** Waits for the workflow's end and reports it, after every call has its result (R20). */
  async drive(run) {
    const end = await run.wait;
    if (this.run !== run) return;
    await Promise.allSettled([...run.inflight]);
    if (end.eventType === "run_completed") {
      const record = await this.world.runs.get(run.runId, { resolveData: "all" });
      const output = await hydrateWorkflowReturnValue(record.output, run.runId, undefined);
      this.restoreFrom(run, output.messages);
      const last = output.steps.at(-1);
      if (run.signal.aborted && run.signal.reason instanceof Stop) return this.close(run, () => run.fail(run.signal.reason));
      if (last === "tool-calls" && output.steps.length > run.limits.turnsMax) {
        return this.close(run, () =>
          run.fail(failure("TOOL_LOOP_LIMIT", `The agent stopped after ${run.limits.turnsMax} tool turns.`, "Refine the request and retry.").error),
        );
      }
      return this.close(run, () => run.complete(output.text ?? ""));
    }
    await this.restoreEnded(run);
    if (run.signal.aborted && run.signal.reason instanceof Stop) return this.close(run, () => run.fail(run.signal.reason));
    if (run.turn > run.limits.turnsMax && (run.batch?.calls.length ?? 0) > 0) {
      // The reply past the turn limit ended the run, whatever DurableAgent then did with its
      // calls (an unknown name or an invalid input throws, finding 2): R19's end, the adapter's.
      return this.close(run, () =>
        run.fail(failure("TOOL_LOOP_LIMIT", `The agent stopped after ${run.limits.turnsMax} tool turns.`, "Refine the request and retry.").error),
      );
    }
    const error = end.eventData?.error;
    const text = typeof error === "string" ? error : (error?.message ?? JSON.stringify(error ?? null));
    const kind = providerKindOf(text);
    if (kind !== undefined && PROVIDER_CODES[kind] !== undefined) {
      return this.close(run, () => run.fail(providerFailure(kind, text.slice(text.indexOf(": ") + 2))));
    }
    return this.close(run, () => run.fail(unexpectedEnd(`workflow ${end.eventType}: ${text}`)));
  }

  close(run, report) {
    if (this.run !== run) return;
    run.enterResults();
    this.run = null;
    report();
    // The session's messages for its next run: what this run started from, then what it
    // appended to the session store (its prompt, replies and results, whatever the end).
    if (!run.resumed) {
      this.histories.set(run.session, [...run.startedFrom, ...messagesOf(run.store.slice(run.history.length))]);
    } else {
      // A resumed run's earlier replies were seen by the process a crash dropped: its steps say
      // them. A result this process acknowledged is the one ward holds, also where the step
      // left no record (a step that finished after its workflow failed).
      const input = { history: run.startedFrom, prompt: run.prompt };
      const results = new Map(
        run.store.filter((message) => message.role === "tool").map((message) => [message.callId, message.result]),
      );
      const acknowledged = (callId) => results.get(run.guard.text(callId));
      this.histories.delete(run.session);
      this.pendingHistory = this.conversationOf(this.world, run.runId, input, acknowledged).then((messages) =>
        this.histories.set(run.session, messages),
      );
    }
  }

  /** The workflow's terminal event, seen as world-local writes it. */
  ended(runId, data) {
    const run = this.run;
    if (run?.runId === runId) run.done(data);
  }

  /**
   * A resumed run that ends without a model step in this process (it failed, or was
   * cancelled): its batch's results and its counts from its journaled steps, as a model step
   * would have had them (`settleFrom`, `restoreFrom`).
   */
  async restoreEnded(run) {
    if (!run.resumed || run.restored) return;
    const journal = await this.conversationOf(this.world, run.runId, { history: run.startedFrom, prompt: run.prompt });
    this.settleFrom(run, journal);
    this.restoreFrom(run, journal);
  }

  /** The run's counts from the SDK's conversation (after a crash, the host saw none of it). */
  restoreFrom(run, messages) {
    if (run.restored) return;
    run.restored = true;
    const own = messages.filter((message) => message.role !== "system").slice(run.from);
    let turn = 0;
    let batches = 0;
    let calls = 0;
    for (const message of own) {
      if (message.role === "assistant") {
        turn += 1;
        const parts = typeof message.content === "string" ? [] : message.content.filter((part) => part.type === "tool-call");
        if (parts.length > 0 && batches < run.limits.turnsMax) batches += 1;
      } else if (message.role === "tool") {
        calls += message.content.filter((part) => part.type === "tool-result").length;
      }
    }
    run.turn = Math.max(run.turn, turn);
    run.batches = Math.max(run.batches, batches);
    run.calls = Math.max(run.calls, calls);
  }

  /**
   * After a crash, a call of the batch whose step finished before it is not run again: the
   * workflow replays its journaled result, which this process never saw. That result, as the
   * SDK hands it to the model, is the call's result here too (not the ABORTED of a call left
   * without one); a step that threw has the result `body` gave it.
   */
  settleFrom(run, prompt) {
    const batch = run.batch;
    if (!batch) return;
    const parts = prompt.filter((message) => message.role === "tool").flatMap((message) => message.content);
    batch.calls.forEach((call, index) => {
      if (batch.results[index] !== null) return;
      const part = parts.findLast((entry) => entry.type === "tool-result" && entry.toolCallId === call.id);
      if (part === undefined) return;
      const value = part.output?.type === "json" && isEnvelope(part.output.value) ? part.output.value : THREW();
      run.finished(index, run.guard.value(value));
    });
  }

  /** ward's provider as a language model (the SDK's `LanguageModelV3`), inside `doStreamStep`. */
  model(meta) {
    return {
      specificationVersion: "v3",
      provider: "ward",
      modelId: "ward",
      supportedUrls: {},
      doGenerate: async () => {
        throw new FatalError("DurableAgent streams: doGenerate is not used");
      },
      doStream: (options) => this.stream(options, meta),
    };
  }

  async stream(options, meta) {
    const run = this.run;
    if (run === null) throw new FatalError("a model step ran outside a run");
    const prompt = options.prompt.filter((message) => message.role !== "system");
    if (run.resumed) this.settleFrom(run, prompt);
    if (!run.restored && run.resumed) this.restoreFrom(run, prompt);
    run.restored = true;
    run.enterResults();
    const transcript = transcriptOf(prompt);
    const tools = (options.tools ?? []).map((entry) => entry.name);
    let reply;
    try {
      reply = await this.request(run, transcript, tools, options.abortSignal);
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      // R18's count is the adapter's: the step's attempt past the run's retries is the last.
      if (!error.retryable || meta.attempt > run.limits.providerRetriesMax) throw new FatalError(providerText(error));
      if (error.retryAfterMs !== undefined) throw new RetryableError(providerText(error), { retryAfter: error.retryAfterMs });
      throw new Error(providerText(error));
    }
    run.replied(reply);
    run.batch.turn = run.turn - 1;
    return { stream: partsOf(reply) };
  }

  /** One provider request with R19's timeout: a timer aborting it, a retryable error. */
  async request(run, transcript, tools, outer) {
    const local = new AbortController();
    const forward = () => local.abort(outer.reason);
    outer?.addEventListener("abort", forward, { once: true });
    const stop = () => local.abort(run.signal.reason);
    run.signal.addEventListener("abort", stop, { once: true });
    const timeout = new ProviderError({ kind: "timeout", message: "The provider did not answer in time." });
    const timer = setTimeout(() => local.abort(timeout), run.limits.providerTimeoutMs);
    try {
      return await run.ask(transcript, tools, local.signal);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", forward);
      run.signal.removeEventListener("abort", stop);
    }
  }

  /** A tool's step: the batch the call belongs to, the adapter's checks, ward's body. */
  async body(call, meta) {
    const run = this.run;
    if (run === null) throw new FatalError("a tool ran outside a run");
    await this.ensureBatch(run, call);
    const index = run.indexOf(call.toolCallId, call.name);
    if (index < 0) throw new FatalError(`no call ${call.toolCallId} in the batch`);
    if (call.turn >= run.limits.turnsMax) {
      // R19 is the adapter's: DurableAgent runs the calls of the step that reaches `maxSteps`.
      // Such a call starts no body and gets no event: the run's end answers it ABORTED.
      return ABORTED();
    }
    const work = run.execute(index, call.input, run.signal, meta.stepId);
    run.inflight.add(work);
    try {
      return run.guard.value(await work);
    } catch (error) {
      run.finished(index, THREW());
      // A body that panicked is not run again: a `FatalError` is the SDK's way to fail a step
      // at once. The step keeps core's retries, which take up a step a crash cut (R33).
      throw error?.name === "BodyPanic" ? new FatalError(error.message) : error;
    } finally {
      run.inflight.delete(work);
    }
  }

  /**
   * The batch of `call`: the reply this process took, or after a crash (the host holds none)
   * the reply its model step journaled. The steps of one batch that start together read the
   * journal once.
   */
  async ensureBatch(run, call) {
    if (run.batch !== null && run.batch.turn === call.turn) return;
    if (run.journaled?.turn !== call.turn) run.journaled = { turn: call.turn, calls: journaledCalls(this.world, run.runId, call.turn) };
    const calls = await run.journaled.calls;
    if (run.batch !== null && run.batch.turn === call.turn) return;
    run.enterResults();
    run.turn = Math.max(run.turn, call.turn + 1);
    run.batch = {
      turn: call.turn,
      calls,
      results: new Array(calls.length).fill(null),
      seen: new Set(),
      claimed: new Set(),
      lock: Promise.resolve(),
      sequential: calls.some((entry) => run.tool(entry.name)?.executionMode === "sequential"),
    };
  }

  /** Stops the workflow the SDK's way (`Run.cancel`), once the run's signal fires. */
  watch(run) {
    run.signal.addEventListener(
      "abort",
      () => {
        if (run.runId !== undefined) getRun(run.runId).cancel().catch(() => undefined);
      },
      { once: true },
    );
  }

  /** `recover` (P9): the run world-local holds as running is re-enqueued by `world.start()`. */
  async recover(agent, message) {
    const world = await this.open(true);
    const active = this.active[0];
    if (active === undefined) {
      await world.start();
      return;
    }
    const run = agent.resumeRun(active.input, message.secrets);
    if (run === null) return;
    run.runId = active.runId;
    run.resumed = true;
    run.restored = false;
    run.startedFrom = active.input.history;
    run.from = active.input.history.length + 1;
    run.wait = new Promise((resolve) => {
      run.done = resolve;
    });
    this.run = run;
    this.watch(run);
    await world.start();
    await this.drive(run);
  }

  /**
   * Drop mode (P9): the world, its queue and the run are dropped without `close()`; what they
   * wait on (ward's replies and bodies) never comes, their timers are cleared (lib/wire.js),
   * and the next `reset` opens a new world on the same directory.
   */
  crash() {
    this.world = null;
    this.run = null;
    this.opened = null;
    setWorld(undefined);
  }
}

/** The adapter process's state, durable: `recover` takes a run up. */
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
    const refused = super.startRun(message);
    return refused;
  }

  died(error) {
    process.stderr.write(`${error?.stack ?? error}\n`);
    process.exit(70);
  }

  /** A run taken up after a crash: its policy from the workflow's input, its secrets from `recover`. */
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
    run.inflight = new Set();
    this.current = run;
    run.recorder.event({ type: "run.started", readOnly: run.readOnly, tools: run.offered });
    run.touch();
    return run;
  }
}

const sdk = new WorkflowDevKit();
globalThis[WARD] = {
  model: (meta) => sdk.model(meta),
  body: (call, meta) => sdk.body(call, meta),
};
serve(new DurableAgent(sdk));
