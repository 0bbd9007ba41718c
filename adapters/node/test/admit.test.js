// P14: the kit checks R12's execution half and R13 in `Run.admit` only for an SDK without a
// mechanism of its own; for one that has (`refusesAtExecution`), a second check would hide the
// SDK's failure, so the kit leaves the call to the SDK.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Agent, Run } from "../lib/agent.js";
import { kitNotes } from "../lib/runtime.js";

const TOOLS = [
  { name: "get_chart", description: "", parameters: { type: "object" }, safety: "read", executionMode: "parallel" },
  { name: "draw_line", description: "", parameters: { type: "object" }, safety: "destructive", executionMode: "parallel" },
];
const LIMITS = { turnsMax: 4, callsPerBatchMax: 8, inactivityTimeoutMs: 60000, providerTimeoutMs: 30000, providerRetriesMax: 2 };

function refusalOf(refusesAtExecution, name, readOnly, disabledTools) {
  const sdk = { runtime: { name: "test", version: "0" }, claims: [], notes: {}, refusesAtExecution };
  const agent = new Agent(sdk);
  agent.reset({ type: "reset", seed: 0, tools: TOOLS }, () => {});
  const run = new Run(agent, { prompt: "p", readOnly, disabledTools, secrets: [], limits: LIMITS, session: "s" });
  const call = { id: "call_1", name, arguments: "{}" };
  run.replied({ text: "", calls: [call] });
  clearTimeout(run.deadline);
  return run.refusal(0, call);
}

test("the kit refuses a call the run does not allow for an SDK without a mechanism", () => {
  assert.equal(refusalOf(false, "draw_line", true, []).error.code, "TOOL_NOT_ALLOWED");
  assert.equal(refusalOf(false, "get_chart", false, ["get_chart"]).error.code, "TOOL_NOT_ALLOWED");
});

test("the kit leaves it to an SDK that refuses at execution, and keeps its other checks", () => {
  assert.equal(refusalOf(true, "draw_line", true, []), null);
  assert.equal(refusalOf(true, "get_chart", false, ["get_chart"]), null);
  assert.equal(refusalOf(true, "no_such_tool", false, []).error.code, "TOOL_NOT_FOUND");
});

test("the kit's notes say whose execution check it is", () => {
  assert.match(kitNotes(null).R12, /the kit's \(Run\.admit/);
  const sdk = kitNotes("a guardrail");
  assert.match(sdk.R12, /the SDK's \(a guardrail\); the kit does not check it a second time/);
  assert.match(sdk.R13, /the SDK's \(a guardrail\)/);
  assert.deepEqual(Object.keys(sdk), ["R1", "R3", "R4", "R11", "R12", "R13", "R14", "R19", "R20", "R22", "R23"]);
});

test("a call past the batch cap gets TOO_MANY_CALLS and no start, whatever else is wrong with it", () => {
  // R19: past the cap a call is never taken up, so none of R3's refusals is its answer (here
  // a repeated id and an unknown tool), and it has no `tool.started` (PROTOCOL.md).
  const records = [];
  const sdk = { runtime: { name: "test", version: "0" }, claims: [], notes: {}, refusesAtExecution: false };
  const agent = new Agent(sdk);
  agent.reset({ type: "reset", seed: 0, tools: TOOLS }, (record) => records.push(record));
  const limits = { ...LIMITS, callsPerBatchMax: 1 };
  const run = new Run(agent, { prompt: "p", readOnly: false, disabledTools: [], secrets: [], limits, session: "s" });
  run.replied({ text: "", calls: [
    { id: "call_1", name: "get_chart", arguments: "{}" },
    { id: "call_1", name: "no_such_tool", arguments: "{}" },
  ] });
  clearTimeout(run.deadline);
  assert.equal(run.admit(0), null);
  assert.equal(run.admit(1).error.code, "TOO_MANY_CALLS");
  clearTimeout(run.deadline); // the finished call set the inactivity deadline again
  const events = records
    .filter((record) => record.type === "event" && record.event.type.startsWith("tool."))
    .map((record) => [record.event.type, record.event.index]);
  assert.deepEqual(events, [["tool.started", 0], ["tool.finished", 1]]);
});
