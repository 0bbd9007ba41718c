// The chart agent on the OpenAI Agents SDK (`@openai/agents-core`), behind ward's protocol.
// Run with `node adapters/node/openai-agents.js` (see README). What is the SDK's and what is
// the adapter's:
//
// SDK (what ward tests):
// - the turn loop: one `Agent` (instructions, tools, ward's provider as its `Model`), run by a
//   `Runner` with `maxTurns: turnsMax`; `MaxTurnsExceededError` is reported as R19's
//   `TOOL_LOOP_LIMIT`. The SDK counts model calls, R19 counts batches: `maxTurns: n` stops the
//   run before the model's (n+1)th reply, `n + 1` would run an (n+1)th batch; the adapter
//   takes the reading that never runs a batch past the limit;
// - the tool list: every tool is registered with `tool()` in registration order, and its
//   `isEnabled` is the run's resolved list (R4, R11–R13); a call to a tool not enabled is the
//   SDK's "tool not found" (`toolNotFoundBehavior: "return_error_to_model"`), whose text
//   `toolErrorFormatter` gives as `TOOL_NOT_ALLOWED` for a registered tool and `TOOL_NOT_FOUND`
//   otherwise;
// - R12's second check: a tool input guardrail (`defineToolInputGuardrail`, `rejectContent`)
//   on every tool refuses a destructive tool in a read-only run and a switched-off tool,
//   whatever the model sent;
// - parsing and validation: each tool's parameters are a Standard Schema (`~standard`, the
//   SDK's seam for a validator) with ajv behind it, compiled once per schema; the SDK makes the
//   schema strict (optional properties become nullable), parses the argument text with
//   `JSON.parse`, drops the nulls of optional properties (`normalizeInput`) and validates
//   before any hook or body runs; an invalid input reaches the tool's `errorFunction` (the
//   SDK calls it for input errors only when the tool declares an `outputSchema`: each tool
//   declares SPEC §4's envelope), which renders R6's envelope;
// - retries: `modelSettings.retry` with `maxRetries: providerRetriesMax`, the SDK's backoff,
//   and `retryPolicies.providerSuggested()` following the model's `getRetryAdvice`, plus a
//   policy approving the replay of a timed-out request (R18 retries timeouts; the SDK refuses
//   to replay one unless a policy approves it);
// - the provider timeout: `modelSettings.timeoutMs: providerTimeoutMs` (`ModelTimeoutError`);
// - stopping: the run's `signal` (cancel and the deadline abort it).
//
// Adapter (lib/agent.js, and here):
// - ward's provider as a `Model`: it sends the SDK's input items, as the SDK built them, as
//   the protocol's transcript, and answers with a message and `function_call` items; ward's
//   errors are raised as a provider package raises them (an error with the HTTP `status` and
//   `headers`; a malformed reply as a status 200 that failed to parse), with `getRetryAdvice`
//   saying which are retryable and that a refused request (429, 503) is safe to replay;
// - R17's sequential batches: a lock, taken in the order the SDK starts the calls. The SDK's
//   only scheduling setting, `toolExecution.maxFunctionToolConcurrency`, is the Runner's for
//   every batch, so it cannot run one batch in parallel and the next one at a time;
// - R3's checks the SDK does not make, inside `execute`; the rendering of R6's field list in
//   `errorFunction` (the fields of the message the SDK reports, as the validator produced
//   them) and of SPEC §4's envelopes in `toolErrorFormatter`;
// - tracing is disabled (`setTracingDisabled`), so no exporter runs; sensitive data logging
//   is enabled, without which `errorFunction` gets no validation error to render (below).

import {
  Agent as SdkAgent,
  MaxTurnsExceededError,
  ModelBehaviorError,
  ModelTimeoutError,
  Runner,
  Usage,
  defineToolInputGuardrail,
  retryPolicies,
  setSensitiveDataLoggingEnabled,
  setTracingDisabled,
  tool,
} from "@openai/agents-core";
import { readFileSync } from "node:fs";
import { serve } from "./lib/wire.js";
import { Agent, Stop, inputInvalid } from "./lib/agent.js";
import {
  HTTP_STATUS,
  INTERNAL,
  NOT_ALLOWED_OFF,
  PROVIDER_CODES,
  ProviderError,
  RUN_FAILED,
  failure,
  isEnvelope,
  providerFailure,
  kitNotes,
  unclaimedNotes,
  unexpectedEnd,
} from "./lib/runtime.js";

// The SDK's package.json is not among its exports: read from the installed package.
const VERSION = JSON.parse(
  readFileSync(new URL("./node_modules/@openai/agents-core/package.json", import.meta.url), "utf8"),
).version;

setTracingDisabled(true);
// By default (`OPENAI_AGENTS_DONT_LOG_TOOL_DATA` unset) the SDK hands a tool's
// `errorFunction` an input error stripped of its cause and of the call, so no runtime on it can
// tell the model which field was wrong (R6). Enabling "sensitive data logging" keeps both; the
// SDK's logger writes nothing unless `DEBUG` names it.
setSensitiveDataLoggingEnabled(true);

/** SPEC §4's envelope, each tool's declared output. */
const ENVELOPE = {
  type: "object",
  properties: {
    success: { type: "boolean" },
    data: {},
    error: { type: "object" },
    stateChanged: { type: "boolean" },
  },
  required: ["success", "stateChanged"],
};

/** ward's failure as a provider SDK throws it: `status` and `headers`, which the SDK reads. */
class ProviderHttpError extends Error {
  constructor(error) {
    const status = HTTP_STATUS[error.kind];
    super(error.kind === "malformedResponse" ? `Invalid response body: ${error.message}` : `${status} ${error.message}`);
    this.name = "ProviderHttpError";
    this.status = status;
    this.kind = error.kind;
    this.retryable = error.retryable;
    this.headers = error.retryAfterMs === undefined ? {} : { "retry-after-ms": String(error.retryAfterMs) };
  }
}

/** The SDK's input items as the protocol's transcript (the instructions go apart). */
function transcriptOf(input, rendered) {
  const items = typeof input === "string" ? [{ role: "user", content: input }] : input;
  const transcript = [];
  let assistant = null;
  const open = () => {
    if (assistant === null) {
      assistant = { role: "assistant", text: "", calls: [] };
      transcript.push(assistant);
    }
    return assistant;
  };
  for (const item of items) {
    if (item.type === "function_call") {
      open().calls.push({ id: item.callId, name: item.name, arguments: item.arguments });
      continue;
    }
    if (item.type === "function_call_result") {
      assistant = null;
      transcript.push({ role: "tool", callId: item.callId, name: item.name, result: resultOf(item, rendered) });
      continue;
    }
    if (item.role === "user") {
      assistant = null;
      transcript.push({ role: "user", text: textOf(item.content) });
    } else if (item.role === "assistant") {
      assistant = null;
      open().text += textOf(item.content);
    }
  }
  return transcript;
}

function textOf(content) {
  if (typeof content === "string") return content;
  return content
    .filter((part) => part.type === "input_text" || part.type === "output_text")
    .map((part) => part.text)
    .join("");
}

function resultOf(item, rendered) {
  const output = item.output;
  const text = typeof output === "string" ? output : output?.type === "text" ? output.text : JSON.stringify(output);
  try {
    const value = JSON.parse(text);
    if (isEnvelope(value)) return value;
  } catch {
    // not an envelope: the SDK's own text
  }
  return rendered.get(item.callId) ?? failure("INTERNAL_ERROR", text);
}

/** The SDK's input items for a session's earlier runs (the store holds the protocol's form). */
function itemsOf(history) {
  const items = [];
  for (const message of history) {
    if (message.role === "user") {
      items.push({ role: "user", content: message.text });
    } else if (message.role === "assistant") {
      if (message.text !== "" || message.calls.length === 0) {
        items.push({
          type: "message",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: message.text }],
        });
      }
      for (const call of message.calls) {
        items.push({ type: "function_call", callId: call.id, name: call.name, arguments: call.arguments, status: "completed" });
      }
    } else {
      items.push({
        type: "function_call_result",
        callId: message.callId,
        name: message.name,
        status: "completed",
        output: JSON.stringify(message.result),
      });
    }
  }
  return items;
}

/** ward's provider as the SDK's `Model`. */
class WardModel {
  constructor(run, rendered, ids) {
    this.run = run;
    this.rendered = rendered;
    this.ids = ids;
  }

  async getResponse(request) {
    const run = this.run;
    run.enterResults();
    const transcript = transcriptOf(request.input, this.rendered);
    const tools = request.tools.filter((entry) => entry.type === "function").map((entry) => entry.name);
    let reply;
    try {
      reply = await run.ask(transcript, tools, request.signal);
    } catch (error) {
      if (error instanceof ProviderError) throw new ProviderHttpError(error);
      throw error;
    }
    run.replied(reply);
    const output = [];
    if (reply.text !== "" || reply.calls.length === 0) {
      output.push({
        type: "message",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: reply.text }],
      });
    }
    for (const call of reply.calls) {
      output.push({ type: "function_call", callId: call.id, name: call.name, arguments: call.arguments, status: "completed" });
    }
    return { usage: new Usage(), output, responseId: `ward-${this.ids.next++}` };
  }

  getStreamedResponse() {
    throw new Error("the chart agent does not stream");
  }

  /**
   * What a provider package advises: retry what R18 retries, after the retry-after it was
   * given (the SDK's own header reading does not find it on this error); a refused request
   * is safe to replay.
   */
  getRetryAdvice({ error }) {
    if (!(error instanceof ProviderHttpError)) return undefined;
    return {
      suggested: error.retryable,
      retryAfterMs: error.headers["retry-after-ms"] === undefined ? undefined : Number(error.headers["retry-after-ms"]),
      replaySafety: error.status === 429 || error.status === 503 ? "safe" : undefined,
    };
  }
}

/** R18's timeouts: the replay of a timed-out request, approved. */
const retryTimeouts = ({ error }) =>
  error instanceof ModelTimeoutError ? { retry: true, approveUnsafeReplay: true } : false;

class OpenAiAgents {
  runtime = { name: "openai-agents", version: VERSION };

  claims = ["R1", "R2", "R3", "R4", "R5", "R6", "R7", "R11", "R12", "R13", "R14", "R16", "R17", "R18", "R19", "R20", "R21", "R22", "R23"];

  // R12's second check and R13 are the SDK's input guardrail (P14): the kit does not repeat them.
  refusesAtExecution = true;

  notes = {
    ...kitNotes("a tool input guardrail on every tool, `rejectContent`, and `isEnabled`"),
    R17: "the adapter's for a sequential batch: a lock taken in the order the SDK starts the calls; the SDK's for a parallel batch and the order of results",
    R19: "the SDK's: the turn limit (`maxTurns`) and the provider timeout (`modelSettings.timeoutMs`); the kit's: the batch cap and the inactivity deadline, which aborts the run's signal (lib/agent.js)",
    R8: "ajv (with allErrors, so that up to 5 errors can be reported) collects every error of an input before the adapter keeps 5: the cost is not bounded",
    R8a: "the adapter validates only the catalogue's schemas; any schema a developer registers is not tested here",
    ...unclaimedNotes({
      R15: "the Agents SDK has no prompt redactor (its `traceIncludeSensitiveData` and `dontLogToolData` keep data out of traces and logs only); the adapter applies only R22's exact-value guard, not the pattern rules of section 7",
      R30: "no durable sessions: the SDK's sessions keep items, and its RunState resumes an interrupted approval, but neither journals intents before bodies",
    }),
  };

  reset(message, agent) {
    this.agent = agent;
    this.ids = { next: 0 };
    this.fields = new Map();
    this.parameters = new Map(message.tools.map((entry) => [entry.name, this.standardSchema(entry)]));
  }

  /**
   * The tool's schema as a Standard Schema, the SDK's seam for a validator: ajv's verdict,
   * each error one issue `path: message` of R6, whose list the adapter keeps by the text the
   * SDK makes of it so that `errorFunction` can give the model R6's fields.
   */
  standardSchema(entry) {
    const validate = this.agent.validators.get(entry.name);
    const fields = this.fields;
    return {
      "~standard": {
        version: 1,
        vendor: "ward-ajv",
        validate: (value) => {
          if (validate(value)) return { value };
          const invalid = inputInvalid(validate.errors ?? []);
          const issues = invalid.fields.map((field) => ({ message: `${field.path}: ${field.message}` }));
          fields.set(issues.map((issue) => issue.message).join(", "), invalid);
          return { issues };
        },
        jsonSchema: { input: () => entry.parameters, output: () => entry.parameters },
      },
    };
  }

  /** The run's tools in registration order, each with the SDK's own mechanisms. */
  toolsOf(run, rendered) {
    const offered = new Set(run.offered);
    const guardrail = defineToolInputGuardrail({
      name: "ward-policy",
      run: async ({ toolCall }) => {
        const refusal = run.notAllowed(toolCall.name);
        if (refusal === null) return { behavior: { type: "allow" } };
        return { behavior: { type: "rejectContent", message: JSON.stringify(refusal) } };
      },
    });
    return run.agent.catalogue.map((entry) =>
      tool({
        name: entry.name,
        description: entry.description,
        parameters: this.parameters.get(entry.name),
        outputSchema: ENVELOPE,
        isEnabled: () => offered.has(entry.name),
        inputGuardrails: [guardrail],
        errorFunction: (context, error, details) => this.refused(run, rendered, entry.name, error, details),
        execute: async (input, context, details) => {
          const index = run.indexOf(details.toolCall.callId, entry.name, details.toolCall.arguments);
          try {
            return await run.execute(index, input, details.signal);
          } catch (error) {
            run.finished(index, INTERNAL());
            throw error;
          }
        },
      }),
    );
  }

  /**
   * The envelope for a call the SDK did not run, or whose body threw: an input error (R6's
   * fields), the guardrail's refusal, or an internal failure.
   */
  refused(run, rendered, name, error, details) {
    let result;
    // The SDK's InvalidToolInputError (not exported): a ModelBehaviorError with the cause.
    if (error instanceof ModelBehaviorError && "originalError" in error) {
      const cause = error.originalError;
      const invalid = cause instanceof SyntaxError ? notJson(cause) : this.fields.get(cause?.message);
      result = invalid
        ? failure("TOOL_INPUT_INVALID", invalid.message, undefined, invalid.fields)
        : failure("TOOL_INPUT_INVALID", error.message);
    } else {
      try {
        const value = JSON.parse(error.message);
        result = isEnvelope(value) ? value : INTERNAL();
      } catch {
        result = INTERNAL();
      }
    }
    const call = details?.toolCall;
    if (call !== undefined) {
      const index = run.indexOf(call.callId, name, call.arguments);
      if (index >= 0) {
        // Past the cap the kit's answer comes first, with no `tool.started` (R19).
        const capped = run.pastCap(index);
        if (capped !== null) result = capped;
        else run.started(index);
        rendered.set(call.callId, result);
        run.finished(index, result);
      }
    }
    return result;
  }

  /** `toolErrorFormatter`: a call to a tool not enabled, as SPEC §4's envelope. */
  notFound(run, rendered, { kind, toolName, callId, defaultMessage }) {
    if (kind !== "tool_not_found") return undefined;
    let result =
      run.tool(toolName) === undefined
        ? failure("TOOL_NOT_FOUND", defaultMessage, run.available())
        : (run.notAllowed(toolName) ?? NOT_ALLOWED_OFF(toolName));
    const index = run.batch ? run.indexOf(callId, toolName) : -1;
    if (index >= 0) {
      // Past the cap the kit's answer comes first, with no `tool.started` (R19).
      const capped = run.pastCap(index);
      if (capped !== null) result = capped;
      else run.started(index);
      rendered.set(callId, result);
      run.finished(index, result);
    }
    return JSON.stringify(result);
  }

  async start(run) {
    const rendered = new Map();
    const model = new WardModel(run, rendered, this.ids);
    const agent = new SdkAgent({
      name: "chart-agent",
      instructions: run.systemPrompt,
      model,
      tools: this.toolsOf(run, rendered),
      modelSettings: {
        timeoutMs: run.limits.providerTimeoutMs,
        retry: {
          maxRetries: run.limits.providerRetriesMax,
          policy: retryPolicies.any(retryPolicies.providerSuggested(), retryTimeouts),
        },
      },
    });
    const runner = new Runner({
      tracingDisabled: true,
      toolNotFoundBehavior: "return_error_to_model",
      toolErrorFormatter: (args) => this.notFound(run, rendered, args),
    });
    try {
      const result = await runner.run(agent, [...itemsOf(run.history), { role: "user", content: run.prompt }], {
        maxTurns: run.limits.turnsMax,
        signal: run.signal,
      });
      run.enterResults();
      if (run.signal.aborted) throw run.signal.reason;
      run.complete(typeof result.finalOutput === "string" ? result.finalOutput : "");
    } catch (error) {
      run.enterResults();
      run.fail(this.outcomeOf(run, error));
    }
  }

  /** What ended the run early: a stop, the turn limit, or the provider's last error. */
  outcomeOf(run, error) {
    if (run.signal.aborted && run.signal.reason instanceof Stop) return run.signal.reason;
    if (error instanceof MaxTurnsExceededError) {
      return failure(
        "TOOL_LOOP_LIMIT",
        `The agent stopped after ${run.limits.turnsMax} tool turns.`,
        "Refine the request and retry.",
      ).error;
    }
    const kind = error instanceof ModelTimeoutError ? "timeout" : error?.kind;
    if (kind !== undefined && PROVIDER_CODES[kind] !== undefined) return providerFailure(kind, error.message);
    // The SDK refuses a whole reply it cannot run (`ModelBehaviorError`: a call id missing or
    // reused, ...): the run fails, the model's text is not repeated.
    if (error instanceof ModelBehaviorError) return RUN_FAILED();
    return unexpectedEnd(error?.stack ?? error);
  }
}

/** R6's one error at `/` for text that is not JSON, with line and column when V8 gives them. */
function notJson(error) {
  const position = /at position (\d+)/.exec(error.message);
  const where = /\(line (\d+) column (\d+)\)/.exec(error.message);
  let at = "";
  if (where) at = ` (line ${where[1]}, column ${where[2]})`;
  else if (position) at = ` (at character ${Number(position[1]) + 1})`;
  const fields = [{ path: "/", message: `is not valid JSON${at}` }];
  return { fields, message: `The tool input is invalid: /: is not valid JSON${at}` };
}

serve(new Agent(new OpenAiAgents()));
