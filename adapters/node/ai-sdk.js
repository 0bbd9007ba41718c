// The chart agent on the Vercel AI SDK (`ai`, v6), behind ward's protocol. Run with
// `node adapters/node/ai-sdk.js` (see README). What is the SDK's and what is the adapter's:
//
// SDK (what ward tests):
// - the turn loop: `generateText` with `stopWhen: stepCountIs(turnsMax + 1)`; the step past
//   the limit gets `toolChoice: "none"` through `prepareStep`, so the SDK refuses its calls
//   (`ToolChoiceViolationError`), reported as R19's `TOOL_LOOP_LIMIT`;
// - the tool list: every tool is registered with `tool()`, and `activeTools` is the run's
//   resolved list (R4, R11–R13): a call to a tool not active is the SDK's `NoSuchToolError`;
// - validation: `jsonSchema(parameters, { validate })`, the SDK's seam for a validator, with
//   ajv (compiled once per schema) rendering R6's messages; the SDK parses the argument text
//   itself (`InvalidToolInputError` for text that is not JSON or input that is invalid), and
//   what the model reads of an error is the SDK's own text;
// - scheduling: the SDK runs a step's calls with `Promise.all`;
// - retries: `maxRetries: providerRetriesMax` with the SDK's backoff and `retry-after-ms`;
// - stopping: `abortSignal` (cancel and the deadline abort it).
//
// Adapter (lib/agent.js, lib/ai-sdk-common.js shared with ai-sdk-7.js, and here):
// - ward's provider as a `MockLanguageModelV3` (`ai/test`): it sends the SDK's prompt, as the
//   SDK built it, as the protocol's transcript; ward's errors are raised as a provider package
//   raises them (`APICallError` with the HTTP status and `retry-after-ms`; a malformed reply as
//   the `Invalid JSON response` of a status 200, which a provider package does not mark
//   retryable); the provider timeout is a timer that aborts the request;
// - R17's sequential batches: a lock, taken in the order the SDK starts the calls;
// - R3's checks the SDK does not make, inside `execute`; the code of an error the SDK made is
//   named from the SDK's error class (`NoSuchToolError`, `InvalidToolInputError`, seen in
//   `experimental_repairToolCall`, which repairs nothing).

import { APICallError, NoSuchToolError, generateText, jsonSchema, stepCountIs, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { createRequire } from "node:module";
import { serve } from "./lib/wire.js";
import { Agent, inputInvalid } from "./lib/agent.js";
import { fieldsOf, messagesOf, outcomeOf, request, transcriptOf } from "./lib/ai-sdk-common.js";
import {
  INTERNAL,
  NOT_ALLOWED_OFF,
  failure,
  isEnvelope,
  kitNotes,
  unclaimedNotes,
} from "./lib/runtime.js";

const require = createRequire(import.meta.url);
const VERSION = require("ai/package.json").version;

/** The envelope of a tool result in the SDK's prompt: a body's own, or the one made of the SDK's error. */
function resultOf(part, rendered) {
  const output = part.output;
  if (output.type === "json" && isEnvelope(output.value)) return output.value;
  const known = rendered.get(part.toolCallId);
  if (known) return known;
  const text = typeof output.value === "string" ? output.value : JSON.stringify(output.value);
  return failure("INTERNAL_ERROR", text);
}

class AiSdk {
  runtime = { name: "ai", version: VERSION };

  claims = ["R1", "R2", "R3", "R4", "R5", "R6", "R7", "R11", "R12", "R13", "R14", "R16", "R17", "R18", "R19", "R20", "R21", "R22", "R23"];

  // R12's second check and R13 are the SDK's `activeTools` (P14): the kit does not repeat them.
  refusesAtExecution = true;

  notes = {
    ...kitNotes("`activeTools`: a call to a tool not active is its NoSuchToolError and never reaches `execute`"),
    R17: "the adapter's for a sequential batch: a lock taken in the order the SDK starts the calls; the SDK's for a parallel batch and the order of results",
    R19: "the SDK's: the turn limit (`stopWhen: stepCountIs`, `toolChoice: none` past it); the adapter's: the provider timeout (a timer aborting the request); the kit's: the batch cap and the inactivity deadline (lib/agent.js)",
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

  /** An error the SDK made for a call it will not execute, as SPEC §4's envelope. */
  refused(run, rendered, toolCall, error) {
    const index = run.indexOf(toolCall.toolCallId, toolCall.toolName, toolCall.input);
    const name = toolCall.toolName;
    const entry = run.tool(name);
    // Past the cap the kit's answer comes first, with no `tool.started` (R19).
    const capped = index >= 0 ? run.pastCap(index) : null;
    let result;
    if (capped !== null) {
      result = capped;
    } else if (NoSuchToolError.isInstance(error) && entry !== undefined) {
      result = run.notAllowed(name) ?? NOT_ALLOWED_OFF(name);
      result.error.message = error.message;
    } else if (NoSuchToolError.isInstance(error)) {
      result = failure("TOOL_NOT_FOUND", error.message, run.available());
    } else {
      result = failure("TOOL_INPUT_INVALID", error.message, undefined, fieldsOf(error));
    }
    rendered.set(toolCall.toolCallId, result);
    if (index >= 0) {
      if (capped === null) run.started(index);
      run.finished(index, result);
    }
  }

  async start(run) {
    const rendered = new Map();
    const model = new MockLanguageModelV3({
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
        system: run.systemPrompt,
        messages: [...messagesOf(run.history), { role: "user", content: run.prompt }],
        tools: this.toolsOf(run),
        activeTools: run.offered,
        stopWhen: stepCountIs(turnsMax + 1),
        prepareStep: ({ stepNumber }) => (stepNumber >= turnsMax ? { toolChoice: "none" } : undefined),
        maxRetries: run.limits.providerRetriesMax,
        abortSignal: run.signal,
        experimental_repairToolCall: async ({ toolCall, error }) => {
          this.refused(run, rendered, toolCall, error);
          return null;
        },
        onStepFinish: () => run.enterResults(),
        _internal: { generateId: () => `ai-${this.ids++}` },
      });
      if (run.signal.aborted) throw run.signal.reason;
      run.complete(result.text);
    } catch (error) {
      run.enterResults();
      run.fail(outcomeOf(run, error));
    }
  }
}

serve(new Agent(new AiSdk()));
