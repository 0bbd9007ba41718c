// The chart agent as a Workflow DevKit workflow: the source `@workflow/vitest`'s builder
// compiles (its SWC plugin splits the `"use workflow"` function into the workflow bundle, run
// in core's deterministic VM, and each `"use step"` function into the step bundle, run in the
// adapter's realm). `workflow-devkit.js` builds it at start-up and explains what is whose.
//
// Everything here is the SDK's idiom: a `DurableAgent` (`@workflow/ai`) with every catalogue
// tool (JSON Schema with a `validate`, which DurableAgent requires, and an `execute` that is a
// step), ward's provider as a step-made model, and the turn limit as DurableAgent's `maxSteps`.
// The steps call into the adapter through one object the adapter puts on `globalThis` before
// the step bundle runs (`globalThis[WARD]`): the step bundle is the adapter's code, run by the
// SDK's step handler, so this is how a step reaches its process's outside world.

import { DurableAgent } from "@workflow/ai/agent";
import { Validator } from "@cfworker/json-schema";
import { jsonSchema } from "ai";
import { getStepMetadata, getWritable } from "workflow";

const WARD = Symbol.for("ward.workflow-devkit");

/** ward's provider, made inside DurableAgent's model step (`doStreamStep` calls it). */
export async function wardModel() {
  "use step";
  return globalThis[WARD].model(getStepMetadata());
}

/** A catalogue tool's body: the adapter's entry point checks, then ward's body. */
export async function toolBody(call) {
  "use step";
  return globalThis[WARD].body(call, getStepMetadata());
}

/**
 * The tool's input check, as DurableAgent calls it (`schema.validate`) before `execute`: a
 * JSON Schema validator that needs no code generation, so that it runs inside core's VM.
 */
function validatorOf(parameters) {
  let validator = null;
  return (value) => {
    validator ??= new Validator(parameters, "2020-12", false);
    const verdict = validator.validate(value);
    if (verdict.valid) return { success: true, value };
    const first = verdict.errors.at(-1);
    const path = first?.instanceLocation?.replace(/^#/u, "") || "/";
    return { success: false, error: new Error(`The tool input is invalid: ${path}: ${first?.error ?? "is invalid"}`) };
  };
}

/**
 * One run of a session. `input` is the run's policy as the adapter resolved it: the guarded
 * prompt, the earlier messages of the session (the SDK's form), the system prompt, the tools
 * offered, the limits. The workflow returns DurableAgent's messages and steps' finish reasons.
 */
export async function chartRun(input) {
  "use workflow";
  let stepNumber = 0;
  const tools = {};
  for (const entry of input.catalogue) {
    tools[entry.name] = {
      description: entry.description,
      inputSchema: jsonSchema(entry.parameters, { validate: validatorOf(entry.parameters) }),
      // The step's input is its own call only: the batch it belongs to is the adapter's to
      // find (the reply it holds, or after a crash the model step's journaled result), so
      // that a batch of n calls journals n inputs, not n copies of the batch.
      execute: (value, { toolCallId }) =>
        toolBody({ session: input.session, turn: stepNumber - 1, toolCallId, name: entry.name, input: value }),
    };
  }
  const agent = new DurableAgent({ model: wardModel, tools, instructions: input.systemPrompt });
  const result = await agent.stream({
    messages: [...input.history, { role: "user", content: input.prompt }],
    writable: getWritable(),
    activeTools: input.offered,
    maxSteps: input.limits.turnsMax + 1,
    prepareStep: ({ stepNumber: next }) => {
      stepNumber = next + 1;
      return {};
    },
  });
  return {
    steps: result.steps.map((step) => step.finishReason),
    text: result.steps.at(-1)?.text ?? "",
    messages: result.messages.filter((message) => message.role !== "system"),
  };
}
