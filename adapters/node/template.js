// Your runtime behind ward: a template (README.md in this folder walks through it). Run with
// `node adapters/node/template.js`.
//
// Two parts, one file. `runAgent` is a tiny hand-written agent runtime standing for yours: it
// asks the model, validates each call against its tool's JSON Schema, runs the calls of a
// reply (in parallel unless one names a sequential tool), feeds the results back in call
// order, and stops at a reply without calls or at its turn limit. `Template` is the adapter:
// it hands `runAgent` ward's model and ward's tool bodies through the kit (`lib/`), and says
// in `claims` and `notes` which rule is whose. Replace `runAgent` with your runtime, keep
// what your runtime keeps in `claims`, and name in `notes` what the kit keeps for it.
//
// The runtime's (claimed, and what ward tests):
// - R5, R6: each input parsed (`JSON.parse`) and validated (ajv, compiled once per schema)
//   before the body, after the embedder's checks (`hooks.admit`, R3's order);
// - R16: the turn loop; R17: parallel unless sequential, results in call order;
// - R19's turn limit (a further reply with calls ends the run TOOL_LOOP_LIMIT) and request
//   timeout (a request not answered in time is aborted: PROVIDER_TIMEOUT, not retried);
// - R20's stop: the run's signal reaches the model and every running read.
// The kit's (`lib/agent.js`, claimed for the runtime and named in `notes`): R1, R4, R11–R14,
// R3's checks before validation (`Run.admit`: the call id, the tool's existence, R12, R13,
// the batch cap, size and secret values), the body (`Run.perform`: none after a stop), the
// inactivity deadline of R19, R22's guard and R23's events and store.

import { serve } from "./lib/wire.js";
import { Agent, Stop, inputInvalid, validatorOf } from "./lib/agent.js";
import { INTERNAL, ProviderError, failure, providerFailure, unclaimedNotes, unexpectedEnd } from "./lib/runtime.js";

// ---- the runtime: replace with yours ------------------------------------------------------

/** The turn limit's error (R19). */
class TurnLimit extends Error {}

/** A model request that did not answer within its time (R19). */
class RequestTimeout extends Error {}

/** The model's answer to `messages`, its request aborted after `ms` (R19) or on `signal`. */
async function ask(model, messages, signal, ms) {
  const local = new AbortController();
  const forward = () => local.abort(signal.reason);
  signal.addEventListener("abort", forward, { once: true });
  const timer = setTimeout(() => local.abort(new RequestTimeout()), ms);
  try {
    return await model(messages, local.signal);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", forward);
  }
}

/** The parsed input of a call, or its R6 error: empty text is `{}`. */
function parsed(tool, text) {
  let input;
  try {
    input = text.trim() === "" ? {} : JSON.parse(text);
  } catch (error) {
    const fields = [{ path: "/", message: `is not valid JSON: ${error.message}` }];
    return { error: invalid(fields, `The tool input is invalid: /: is not valid JSON: ${error.message}`) };
  }
  if (tool.validate(input)) return { input };
  const { fields, message } = inputInvalid(tool.validate.errors);
  return { error: invalid(fields, message) };
}

const invalid = (fields, message) =>
  failure("TOOL_INPUT_INVALID", message, "Correct the invalid field and retry the request.", fields);

/**
 * Runs one call: the embedder's checks first (`hooks.admit`: a policy, the batch cap), then
 * parsing and validation, then the tool's body, whose exception is `INTERNAL_ERROR`. A result
 * of its own is reported through `hooks.refused`.
 */
async function runCall({ tools, hooks, signal }, call, index) {
  const refusal = hooks.admit(call, index);
  if (refusal) return refusal;
  const tool = tools.get(call.name);
  const { input, error } = parsed(tool, call.arguments);
  if (error) {
    hooks.refused(index, error);
    return error;
  }
  try {
    return await tool.execute(input, index, signal);
  } catch {
    // A body that throws gets INTERNAL_ERROR, its own text never shown to the model (R3).
    const result = INTERNAL();
    hooks.refused(index, result);
    return result;
  }
}

/**
 * A tiny agent loop. `model(messages, signal)` answers `{text, calls}` (within
 * `requestTimeoutMs`); `tools` maps a name to `{validate, sequential, execute(input, index,
 * signal)}`; `messages` is the transcript so far; at most `maxTurns` batches run.
 */
async function runAgent(agent) {
  const { model, tools, messages, maxTurns, requestTimeoutMs, signal } = agent;
  for (let batches = 0; ; ) {
    signal.throwIfAborted();
    const reply = await ask(model, messages, signal, requestTimeoutMs);
    messages.push({ role: "assistant", text: reply.text, calls: reply.calls });
    if (reply.calls.length === 0) return reply.text;
    if (batches === maxTurns) throw new TurnLimit();
    batches += 1;
    const sequential = reply.calls.some((call) => tools.get(call.name)?.sequential);
    const results = [];
    if (sequential) {
      for (const [index, call] of reply.calls.entries()) results.push(await runCall(agent, call, index));
    } else {
      results.push(...(await Promise.all(reply.calls.map((call, index) => runCall(agent, call, index)))));
    }
    reply.calls.forEach((call, index) => {
      messages.push({ role: "tool", callId: call.id, name: call.name, result: results[index] });
    });
  }
}

// ---- the adapter: ward's model and bodies through the kit ---------------------------------

class Template {
  runtime = { name: "ward-template", version: "1.0.0" };

  claims = ["R1", "R2", "R3", "R4", "R5", "R6", "R7", "R11", "R12", "R13", "R14", "R16", "R17", "R19", "R20", "R22", "R23"];

  notes = {
    R1: "the kit's: each tool's safety and execution mode, from `reset` (lib/agent.js)",
    R3: "the runtime's: parsing and validation before the body; the kit's: the call id, the tool's existence, R12, R13, the batch cap, payload size and configured secrets, before validation (Run.admit)",
    R4: "the kit's: the run's tool list in registration order (lib/agent.js)",
    R8: "the runtime's validator (ajv) reports every error; the runtime keeps the first five, not R8's cost bound",
    R8a: "only the catalogue's schemas are registered",
    R11: "the kit's: the read-only list (lib/agent.js)",
    R12: "the kit's: a destructive call refused at execution (Run.admit)",
    R13: "the kit's: a switched-off call refused at execution (Run.admit)",
    R14: "the kit's: limit ranges and secret values refused at start (lib/runtime.js)",
    R18: "the runtime does not retry the provider",
    R19: "the runtime's: the turn limit and the request timeout; the kit's: the batch cap and the inactivity deadline",
    R21: "the runtime's: a provider error ends the run with R21's code, without retries (R18)",
    R22: "the kit's: the exact-value guard on every record (lib/runtime.js)",
    R23: "the kit's: events and the session store (lib/agent.js)",
    ...unclaimedNotes({
      R15: "no redactor: the prompt is stored and sent as the guard leaves it",
      R30: "no durable sessions",
    }),
  };

  async start(run) {
    const tools = new Map(
      run.agent.catalogue.map((tool) => [
        tool.name,
        {
          validate: validatorOf(tool.parameters),
          sequential: tool.executionMode === "sequential",
          execute: (input, index, signal) => run.perform(index, input, signal),
        },
      ]),
    );
    const hooks = {
      admit: (call, index) => run.admit(index),
      refused: (index, result) => run.finished(index, result),
    };
    const model = async (messages, signal) => {
      run.enterResults();
      const reply = await run.ask(messages, run.offered, signal);
      run.replied(reply);
      return reply;
    };
    const messages = [...run.history, { role: "user", text: run.prompt }];
    try {
      const { turnsMax: maxTurns, providerTimeoutMs: requestTimeoutMs } = run.limits;
      const agent = { model, tools, hooks, messages, maxTurns, requestTimeoutMs, signal: run.signal };
      const text = await runAgent(agent);
      run.complete(text);
    } catch (error) {
      run.enterResults();
      run.fail(this.outcomeOf(run, error));
    }
  }

  outcomeOf(run, error) {
    if (run.signal.aborted && run.signal.reason instanceof Stop) return run.signal.reason;
    if (error instanceof TurnLimit) {
      return failure("TOOL_LOOP_LIMIT", `The agent stopped after ${run.limits.turnsMax} tool turns.`, "Refine the request and retry.").error;
    }
    if (error instanceof RequestTimeout) return providerFailure("timeout", "The provider did not answer in time.");
    if (error instanceof ProviderError) return providerFailure(error.kind, error.message);
    return unexpectedEnd(error?.stack ?? error);
  }
}

serve(new Agent(new Template()));
