// The chart agent on Vercel's Workflow DevKit: `@workflow/ai`'s `DurableAgent` in a workflow
// (`workflow`, `@workflow/core`), durable on the local world (`@workflow/world-local`: JSON
// files in a directory), behind ward's protocol, version 2. Run with
// `node adapters/node/workflow-devkit.js`. The workflow's source is
// `workflow-devkit/chart.js`, the adapter's runtime side `workflow-devkit/runtime.js`. What is
// the SDK's and what is the adapter's:
//
// Workflow DevKit (what ward tests):
// - the turn loop: `DurableAgent.stream` in a `"use workflow"` function, each model call its
//   `doStreamStep` step, each tool call its tool's `execute`, a `"use step"` function; the
//   turn limit is its `maxSteps` (turns_max + 1 model steps);
// - the tool list: every catalogue tool registered with its JSON Schema (`jsonSchema` with the
//   `validate` DurableAgent requires: `@cfworker/json-schema`, which runs in core's VM without
//   code generation) and `activeTools` as the run's resolved list (R4, R11–R13); DurableAgent
//   parses the argument text (`JSON.parse`), validates it (`schema.validate`) and finds the
//   tool before `execute`;
// - scheduling: DurableAgent runs a step's calls with `Promise.all`, each a step of its own;
// - retries: the step handler's retries (`step_retrying`, its backoff, a `RetryableError`'s
//   `retryAfter`) of the model's step; a tool step keeps core's retries, which take up a step
//   a crash cut, and a body that panics fails its step at once (`FatalError`, the SDK's way
//   not to retry); stopping: the run's cancellation (`Run.cancel`, a `run_cancelled` event);
// - durability: every step's start, result and failure, and the run's start and end, are
//   events that world-local writes as JSON files in the store directory before the workflow
//   goes on; `recover` opens a world with `recoverActiveRuns`, which re-enqueues every run
//   still running, and the workflow replays from its events: a step with a result is not run
//   again, a step cut by a crash runs again with the same step id, which the tool's step hands
//   ward as `bodyStart.idempotencyKey` (`getStepMetadata().stepId`, P10).
//
// Adapter (lib/agent.js, workflow-devkit/runtime.js):
// - ward's provider as a `LanguageModelV3` that a step makes (`wardModel`), streaming ward's
//   reply as the model's parts; ward's errors thrown as the step handler reads them: a
//   retryable kind as an error the step retries (`RetryableError` with ward's
//   `retryAfterMs`), a kind not retryable or the attempt past the run's `providerRetriesMax`
//   as a `FatalError` (R18's count is the adapter's; the retries are the step handler's);
//   the provider timeout is a timer aborting the request;
// - R3's checks DurableAgent does not make (call ids, payload size, configured secrets, the
//   batch cap), R12 and R13 at execution, R17's sequential batches (a lock), R19's deadline
//   and its end of a run past the turn limit (DurableAgent runs the calls of the step that
//   reaches `maxSteps`: the adapter answers them ABORTED and reports TOOL_LOOP_LIMIT), R20's
//   stop, R22's guard, R23's events, the session store's appends (lib/agent.js);
// - drop mode (`crash`): the world, its queue, the run and every pending promise are dropped
//   in place, without `close()`; the next `reset` opens a new world on the same directory. What
//   a fresh process would start afresh is started afresh: the monotonic ulid factories that
//   world-local's and core's modules make as they load (`workflow-devkit/ulid.js`, put in place
//   of `ulid` by a resolution hook, `workflow-devkit/hooks.js`), the seeded randomness, the
//   world singleton (`setWorld`); OpenTelemetry, which the SDK loads once per process, is
//   loaded before the first run, so that a first run does not wait on module loading;
// - time and ids: the faked clock of lib/wire.js, a wall clock (`Date`) from 2026-01-01 and
//   past the store's last record after a crash (ulid's first characters are the instant, and
//   world-local orders events by them), `Math.random` and `crypto.getRandomValues` seeded;
//   world-local's file calls made synchronous (`fs.promises` on the `*Sync` calls), so that a
//   run moves only through promises and faked timers between two ward messages;
// - the bundle: `@workflow/vitest`'s builder compiles `workflow-devkit/chart.js` once per
//   source hash into `workflow-devkit/.build/` (never into a store directory).

import { readFileSync } from "node:fs";
import { register } from "node:module";
import { ensureBundle } from "./workflow-devkit/build.js";
import { kitNotes } from "./lib/runtime.js";

/** A package's exact version, read from its own package.json (some export no `./package.json`). */
const version = (name) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), "utf8")).version;
const VERSIONS = {
  ai: version("@workflow/ai"),
  workflow: version("workflow"),
  core: version("@workflow/core"),
  worldLocal: version("@workflow/world-local"),
  aiSdk: version("ai"),
};

const CLAIMS = ["R1", "R2", "R3", "R4", "R5", "R11", "R12", "R13", "R14", "R16", "R17", "R19", "R20", "R21", "R22", "R23", "R33", "R34"];

const NOTES = {
  ...kitNotes(null),
  R17: "the adapter's for a sequential batch: a lock taken in the order DurableAgent starts the calls; DurableAgent's for a parallel batch and the order of results",
  R19: "the adapter's: the end of a run past the turn limit (DurableAgent runs the calls of the step that reaches `maxSteps`: the adapter answers them ABORTED) and the provider timeout; the kit's: the batch cap and the inactivity deadline (lib/agent.js)",
  R6: "DurableAgent gives no field list: an input that fails `schema.validate` (or argument text that is not JSON) throws out of its `executeTool`, and the run fails; the model never reads R6's message",
  R7: "see R6",
  R8: "see R6: the validator's errors reach no one",
  R8a: "the adapter registers only the catalogue's schemas; any schema a developer registers is not tested here",
  R15: "Workflow DevKit has no prompt redactor; the adapter applies only R22's exact-value guard, not the pattern rules of section 7",
  R18: "the step handler retries a failed model step after its own backoff (1 s, or a RetryableError's retryAfter) and at most 3 times (`doStreamStep` keeps core's default `maxRetries`; DurableAgent's own `maxRetries` option is passed to no one): more retries than 3 cannot be had",
  R24: "no redactor: see R15",
  R25: "no redactor: see R15",
  R26: "no redactor: see R15",
  R27: "no redactor: see R15",
  R28: "no redactor: see R15",
  R29: "no redactor: see R15",
  R30: "world-local journals every step's arguments and result as the workflow hands them over (the model's reply as streamed, each tool call's input before the adapter's checks), not through R22's guard; only the prompt the adapter passes is guarded, and for exact values only (no redactor, R15)",
  R31: "ward's chart is outside world-local's store: a body's change is applied when ward answers, and its step's result is committed afterwards, not in one transaction with the change; a step cut by a crash runs again, with the same step id (bodyStart.idempotencyKey), which is all the SDK offers",
  R32: "Workflow DevKit journals a step's start (`step_started`) before its body, but a step cut by a crash is run again (at least once), never answered OUTCOME_UNKNOWN; it hands the tool its step id as an idempotency key",
  R35: "world-local writes each record to a temporary file and renames it (no fsync), and ward faults no real disk",
};

const DURABLE = {
  store: "JSON files of @workflow/world-local in the store directory (runs/, events/, steps/, streams/, .locks/, version.txt): every run's start, each step's start, retry, result or failure, the run's end; one workflow run per ward run, its input the run's policy and its session's earlier messages",
  version: `@workflow/world-local ${VERSIONS.worldLocal} (workflow ${VERSIONS.workflow}, @workflow/core ${VERSIONS.core}, @workflow/ai ${VERSIONS.ai}, ai ${VERSIONS.aiSdk})`,
  drop: "the world (its storage, queue and streamer), the run and every pending promise are dropped without close() and nothing is flushed (world-local writes each record whole before going on); timers are cleared and the dropped runtime's output is cut; the next reset opens a new world on the same directory with the ulid factories started again, as a new process would",
};

/**
 * The handshake is answered at once, before the SDK loads (seconds on a busy machine, which
 * ward's watchdog counts): the first line, `hello`, is read here and put back on standard
 * input for lib/wire.js, whose own `ready`, the same message, is then not written again.
 */
function answerHelloEarly() {
  let text = "";
  const onData = (chunk) => {
    text += chunk.toString("utf8");
    const end = text.indexOf("\n");
    if (end < 0) return;
    process.stdin.off("data", onData);
    process.stdin.pause();
    process.stdin.unshift(Buffer.from(text, "utf8"));
    let hello;
    try {
      hello = JSON.parse(text.slice(0, end));
    } catch {
      return;
    }
    if (hello?.type !== "hello" || hello.protocol < 2) return;
    const ready = { type: "ready", protocol: 2, catalogueKept: true, runtime: { name: "@workflow/ai", version: VERSIONS.ai }, claims: CLAIMS, notes: NOTES, durable: DURABLE };
    const line = `${JSON.stringify(ready)}\n`;
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = (data, ...rest) => {
      if (data === line) {
        process.stdout.write = write;
        return true;
      }
      return write(data, ...rest);
    };
    write(line);
  };
  process.stdin.on("data", onData);
}
answerHelloEarly();

// The bundle is built before lib/wire.js fakes the timers (esbuild and SWC run on real ones),
// then the resolution hook of `ulid` is registered, then the runtime side is imported.
const bundleDir = ensureBundle();
register("./workflow-devkit/hooks.js", import.meta.url);
globalThis[Symbol.for("ward.workflow-devkit.config")] = { bundleDir, versions: VERSIONS, claims: CLAIMS, notes: NOTES, durable: DURABLE };
await import("./workflow-devkit/runtime.js");
