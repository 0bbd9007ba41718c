// The chart agent around an SDK: what the seed's runtime keeps that no SDK keeps for it, shared
// by the adapters so that each adapter's file is only its SDK's idiom. Every rule here is the
// adapter's, not the SDK's, and each adapter names it so in `ready.notes` (`kitNotes`, P14):
//
// - the registry's safety and execution mode per tool (R1, from `reset`), and the run's
//   resolved tool list (R4, R11–R13): registration order, no destructive tool in a read-only
//   run, no switched-off tool; each SDK is then given that list its own way;
// - R14's limit ranges and unusable secret values, refused at start;
// - R19's batch cap and inactivity deadline (reset by every reply and finished call, paused
//   while `ask_user` waits), firing the SDK's abort signal;
// - R20's stop: reads see the abort signal, a running write does not (it has committed);
// - R22's guard on every record ward observes, R23's events and the session store.

import Ajv from "ajv";
import {
  ABORTED,
  Guard,
  NOT_ALLOWED_OFF,
  NOT_ALLOWED_READ_ONLY,
  READ_ONLY_NOTE,
  Recorder,
  SYSTEM_PROMPT,
  Ward,
  argumentsCheck,
  failure,
  limitsError,
  precheck,
  secretsError,
} from "./runtime.js";

/** Why a run stops early: the abort reason every adapter hands its SDK's signal. */
export class Stop extends Error {
  constructor(outcome, error) {
    super(outcome);
    this.name = "Stop";
    this.outcome = outcome;
    this.error = error;
  }
}

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
const compiled = new Map();

/** A validator per distinct schema, compiled once for the adapter's life (R5). */
export function validatorOf(parameters) {
  const key = JSON.stringify(parameters);
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile(parameters);
    compiled.set(key, validate);
  }
  return validate;
}

/** R6's rendering of ajv's errors: at most 5 `path: message`, the prefix, `fields`. */
export function inputInvalid(errors) {
  const fields = [];
  for (const error of errors) {
    if (fields.length === 5) break;
    let path = error.instancePath;
    let message = error.message ?? "is invalid";
    if (error.keyword === "additionalProperties") {
      path = `${path}/${escape(error.params.additionalProperty)}`;
      message = "is not an allowed property";
    } else if (error.keyword === "required") {
      message = `missing required property '${error.params.missingProperty}'`;
    }
    fields.push({ path: path === "" ? "/" : path, message });
  }
  const text = fields.map(({ path, message }) => `${path}: ${message}`).join("; ");
  return { fields, message: `The tool input is invalid: ${text}` };
}

const escape = (key) => String(key).replaceAll("~", "~0").replaceAll("/", "~1");

/**
 * One run of the chart agent. An adapter builds its SDK's agent from `run.offered` and the
 * catalogue, reports through the methods here, and calls `finish` or `fail` at the end.
 */
export class Run {
  constructor(agent, message) {
    this.agent = agent;
    this.ward = agent.ward;
    this.out = agent.out;
    this.readOnly = message.readOnly;
    this.disabled = new Set(message.disabledTools);
    this.limits = message.limits;
    this.guard = new Guard(message.secrets);
    this.store = agent.sessionStore(message.session);
    this.history = [...this.store];
    this.recorder = new Recorder(this.out, this.guard, Date.now());
    this.controller = new AbortController();
    this.signal = this.controller.signal;
    this.offered = agent.catalogue
      .filter((tool) => !(this.readOnly && tool.safety === "destructive"))
      .filter((tool) => !this.disabled.has(tool.name))
      .map((tool) => tool.name);
    this.systemPrompt = this.readOnly ? SYSTEM_PROMPT + READ_ONLY_NOTE : SYSTEM_PROMPT;
    this.prompt = this.guard.text(message.prompt);
    this.batches = 0;
    this.calls = 0;
    this.turn = 0;
    this.batch = null;
    this.deadline = null;
    this.asking = 0;
  }

  tool(name) {
    return this.agent.byName.get(name);
  }

  /** R23's opening records: the run, the user's (guarded) message in store and events. */
  open() {
    this.recorder.event({ type: "run.started", readOnly: this.readOnly, tools: this.offered });
    this.recorder.append(this.store, { role: "user", text: this.prompt });
    this.recorder.event({ type: "user.message.created", text: this.prompt });
    this.touch();
  }

  /** R19's inactivity deadline, restarted by every reply and finished call. */
  touch() {
    clearTimeout(this.deadline);
    if (this.asking > 0 || this.signal.aborted) return;
    const ms = this.limits.inactivityTimeoutMs;
    this.deadline = setTimeout(() => {
      this.stop(
        new Stop(
          "run.failed",
          failure(
            "DEADLINE_EXCEEDED",
            `The run was inactive for ${Math.floor(ms / 1000)} s.`,
            "Retry with a narrower request.",
          ).error,
        ),
      );
    }, ms);
  }

  stop(reason) {
    clearTimeout(this.deadline);
    if (!this.signal.aborted) this.controller.abort(reason);
  }

  /** The provider request, as the SDK sends it: guarded, then handed to ward. */
  async ask(transcript, tools, signal) {
    const request = {
      systemPrompt: this.systemPrompt,
      transcript: this.guard.value(transcript),
      tools,
    };
    const reply = await this.ward.model(request, signal);
    this.touch();
    return reply;
  }

  /** The reply entered (R16, R22): store, event, and the batch it opens. */
  replied(reply) {
    const message = { role: "assistant", text: reply.text, calls: reply.calls };
    this.recorder.append(this.store, message);
    this.recorder.event({
      type: "assistant.message.completed",
      turn: this.turn,
      text: reply.text,
      calls: reply.calls,
    });
    this.turn += 1;
    this.batch = {
      calls: reply.calls,
      results: new Array(reply.calls.length).fill(null),
      seen: new Set(),
      claimed: new Set(),
      lock: Promise.resolve(),
      sequential: reply.calls.some((call) => this.tool(call.name)?.executionMode === "sequential"),
    };
    if (reply.calls.length > 0 && this.batches < this.limits.turnsMax) this.batches += 1;
  }

  /**
   * The index in the current batch of the SDK's call `callId` to `name`: the first not yet
   * claimed (with that argument text, when the SDK gives it), so that repeated ids, which
   * SDKs key their calls by, still map one to one.
   */
  indexOf(callId, name, argumentsText) {
    const batch = this.batch;
    for (let i = 0; i < batch.calls.length; i += 1) {
      const call = batch.calls[i];
      const same = argumentsText === undefined || call.arguments === argumentsText;
      if (call.id === callId && call.name === name && same && !batch.claimed.has(i)) {
        batch.claimed.add(i);
        return i;
      }
    }
    return -1;
  }

  started(index) {
    const call = this.batch.calls[index];
    this.recorder.event({ type: "tool.started", index, callId: call.id, name: call.name });
  }

  finished(index, result) {
    const call = this.batch.calls[index];
    if (this.batch.results[index] !== null) return;
    this.batch.results[index] = result;
    this.calls += 1;
    this.recorder.event({ type: "tool.finished", index, callId: call.id, name: call.name, result });
    this.touch();
  }

  /**
   * The adapter's part of the entry point (R3, R12, R13, R19, R20) around ward's body, for a
   * call the SDK decided to execute: `index`'s checks in R3's order for what the SDK has not
   * already checked, then the body. Sequential batches take the batch's lock (R17).
   * `idempotencyKey` is the key the SDK itself hands the tool, if any (P10).
   */
  async execute(index, input, signal, idempotencyKey) {
    const release = this.batch.sequential ? await this.acquire(this.batch) : () => {};
    try {
      return this.admit(index) ?? (await this.perform(index, input, signal, idempotencyKey));
    } finally {
      release();
    }
  }

  /**
   * A call taken up: past the batch cap `TOO_MANY_CALLS` alone; else its `tool.started`,
   * then R3's checks that come before validation (the call id, the tool's existence, R12 and
   * R13 unless the SDK refuses them itself, the size and secret values). The refusal,
   * reported, or `null`. For a runtime that validates the input itself, between `admit` and
   * `perform` (`template.js`).
   */
  admit(index) {
    const call = this.batch.calls[index];
    let refusal = this.pastCap(index);
    if (refusal === null) {
      this.started(index);
      refusal = this.refusal(index, call);
    }
    if (refusal) this.finished(index, refusal);
    return refusal;
  }

  /** The body of an admitted call (none after a stop, R20), its result reported. */
  async perform(index, input, signal, idempotencyKey) {
    const call = this.batch.calls[index];
    try {
      if (this.signal.aborted) {
        const result = ABORTED();
        this.finished(index, result);
        return result;
      }
      const tool = this.tool(call.name);
      const writes = tool.safety === "destructive";
      const result =
        call.name === "ask_user"
          ? await this.askUser(call, index, input, signal)
          : await this.ward.body(
              // The body sees the call id as its events name it: guarded (R22), as the core does.
              { callId: this.guard.text(call.id), index, tool: call.name, input, idempotencyKey },
              writes ? undefined : signal,
            );
      this.finished(index, result);
      return result;
    } catch (error) {
      if (error?.name === "BodyPanic") throw error;
      const result = ABORTED();
      this.finished(index, result);
      return result;
    }
  }

  /**
   * `TOO_MANY_CALLS` for the batch's `index`-th call past the batch cap (R19), or `null`. Such
   * a call is never taken up, whatever else is wrong with it: no `tool.started`, and none of
   * R3's checks (PROTOCOL.md).
   */
  pastCap(index) {
    const cap = this.limits.callsPerBatchMax;
    if (index < cap) return null;
    return failure("TOO_MANY_CALLS", `Only ${cap} tool calls run per message.`, `Send at most ${cap} tool calls in one message.`);
  }

  /** R3's checks before validation, in their order, of the batch's `index`-th call. */
  refusal(index, call) {
    const tool = this.tool(call.name);
    return (
      precheck(call, this.batch.seen, this.guard) ??
      (tool === undefined ? failure("TOOL_NOT_FOUND", `No tool is named '${call.name}'.`, this.available()) : null) ??
      (this.agent.sdk.refusesAtExecution ? null : this.notAllowed(call.name)) ??
      argumentsCheck(call.arguments, this.guard)
    );
  }

  /**
   * R12 and R13 at execution: the refusal of registered tool `name` in this run, or `null`.
   * `Run.admit` asks it only when the SDK has no mechanism of its own that refuses such a call
   * (`Sdk.refusesAtExecution` unset): a second check on top of the SDK's would hide the very
   * failure of the SDK's that ward exists to find (P14). An adapter hands it to that
   * mechanism as its policy.
   */
  notAllowed(name) {
    if (this.readOnly && this.tool(name)?.safety === "destructive") return NOT_ALLOWED_READ_ONLY(name);
    if (this.disabled.has(name)) return NOT_ALLOWED_OFF(name);
    return null;
  }

  available() {
    return `Call one of the available tools: ${this.offered.join(", ")}.`;
  }

  acquire(batch) {
    let release;
    const previous = batch.lock;
    batch.lock = new Promise((resolve) => {
      release = resolve;
    });
    return previous.then(() => release);
  }

  async askUser(call, index, input, signal) {
    this.asking += 1;
    clearTimeout(this.deadline);
    try {
      const text = await this.ward.ask({ callId: this.guard.text(call.id), index, input }, signal);
      return { success: true, data: { answer: text }, stateChanged: false };
    } finally {
      this.asking -= 1;
    }
  }

  /** The batch's results entered in call order (R17): each call one result. */
  enterResults() {
    const batch = this.batch;
    if (!batch) return;
    for (let index = 0; index < batch.calls.length; index += 1) {
      if (batch.results[index] === null) this.finished(index, ABORTED());
      const call = batch.calls[index];
      this.recorder.append(this.store, {
        role: "tool",
        callId: call.id,
        name: call.name,
        result: batch.results[index],
      });
    }
    this.batch = null;
  }

  /** The run's end: its terminal event and report (R23). */
  end(outcome, fields, code) {
    clearTimeout(this.deadline);
    this.recorder.end(outcome, fields, code, this.batches, this.calls);
    this.agent.current = null;
  }

  complete(text) {
    this.end("run.completed", { text: this.guard.text(text) }, null);
  }

  /** Ends the run for `error`: a Stop (cancel, deadline), or a failure with its code. */
  fail(error) {
    if (error instanceof Stop) {
      if (error.outcome === "run.cancelled") this.end("run.cancelled", {}, null);
      else this.end("run.failed", { error: error.error }, error.error.code);
      return;
    }
    this.end("run.failed", { error: error }, error.code);
  }
}

/**
 * The adapter process's state: the catalogue of the last `reset`, the sessions, and the run
 * in progress. `Sdk` is the adapter's class with `start(run)` returning a promise, and
 * `refusesAtExecution: true` when its SDK refuses a call the run does not allow with a
 * mechanism of its own (R12's second check, R13), which the kit then does not repeat.
 */
export class Agent {
  constructor(sdk) {
    this.sdk = sdk;
    this.out = null;
    this.ward = null;
    this.catalogue = [];
    this.byName = new Map();
    this.validators = new Map();
    this.sessions = new Map();
    this.current = null;
  }

  ready() {
    return {
      runtime: this.sdk.runtime,
      claims: this.sdk.claims,
      notes: this.sdk.notes,
    };
  }

  reset(message, out) {
    this.out = out;
    this.ward = new Ward(out);
    this.catalogue = message.tools;
    this.byName = new Map(message.tools.map((tool) => [tool.name, tool]));
    this.validators = new Map(message.tools.map((tool) => [tool.name, validatorOf(tool.parameters)]));
    this.sessions = new Map();
    this.current = null;
    this.sdk.reset?.(message, this);
  }

  sessionStore(name) {
    if (!this.sessions.has(name)) this.sessions.set(name, []);
    return this.sessions.get(name);
  }

  handle(message) {
    switch (message.type) {
      case "startRun":
        return this.startRun(message);
      case "cancel":
        this.current?.stop(new Stop("run.cancelled"));
        return undefined;
      default:
        return this.ward.deliver(message);
    }
  }

  startRun(message) {
    const refused = limitsError(message.limits) ?? secretsError(message.secrets);
    if (refused) {
      this.out({ type: "startError", message: refused });
      return;
    }
    this.ward.beginRun();
    const run = new Run(this, message);
    this.current = run;
    run.open();
    this.sdk.start(run).catch((error) => {
      process.stderr.write(`${error?.stack ?? error}\n`);
      process.exit(70);
    });
  }
}
