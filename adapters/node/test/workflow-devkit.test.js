// The Workflow DevKit adapter's own pieces (adapters/node/workflow-devkit.js): its handshake,
// the same bytes for the same seed (messages and every file of the store), drop mode giving
// what a fresh process gives, and `ulid`'s factories started again at `reset`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const ADAPTER = new URL("../workflow-devkit.js", import.meta.url).pathname;

/** The adapter as a child process: `send` writes a message and resolves with its answer. */
function adapter() {
  const child = spawn(process.execPath, [ADAPTER], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  let answer = [];
  lines.on("line", (line) => {
    const message = JSON.parse(line);
    answer.push(message);
    if (message.type === "idle" || message.type === "ready") {
      const done = answer;
      answer = [];
      waiting.shift()(done);
    }
  });
  const send = (message) =>
    new Promise((resolve) => {
      waiting.push(resolve);
      child.stdin.write(`${JSON.stringify(message)}\n`);
    });
  const closed = new Promise((resolve) => child.on("exit", resolve));
  return { send, close: () => (child.stdin.end(), closed) };
}

const TOOLS = [
  {
    name: "panes_list",
    label: "List panes",
    description: "Lists the chart's panes.",
    parameters: { type: "object", properties: {}, additionalProperties: false },
    safety: "read-only",
    executionMode: "parallel",
  },
];
const LIMITS = { turnsMax: 4, callsPerBatchMax: 8, providerTimeoutMs: 60_000, inactivityTimeoutMs: 120_000, providerRetriesMax: 2 };
const START = { type: "startRun", session: "s", prompt: "List the panes.", readOnly: true, disabledTools: [], secrets: [], limits: LIMITS };

/** Every file under `dir` with its bytes, sorted by path. */
function files(dir) {
  const all = [];
  const walk = (path) => {
    for (const name of readdirSync(path).sort()) {
      const full = join(path, name);
      if (statSync(full).isDirectory()) walk(full);
      else all.push([full.slice(dir.length), readFileSync(full, "utf8")]);
    }
  };
  walk(dir);
  return all;
}

/** A run with one call: its messages up to the body's start, then to the run's end. */
async function oneCall(send, storeDir) {
  const answers = [];
  answers.push(await send({ type: "reset", seed: 7, tools: TOOLS, storeDir }));
  let answer = await send(START);
  answers.push(answer);
  const request = answer.find((message) => message.type === "modelRequest");
  assert.ok(request, "the run asks the model");
  answer = await send({ type: "modelReply", requestId: request.requestId, text: "", calls: [{ id: "c1", name: "panes_list", arguments: "{}" }] });
  for (let i = 0; i < 50 && !answer.some((message) => message.type === "bodyStart"); i += 1) {
    answers.push(answer);
    answer = await send({ type: "advance", toMs: answer.at(-1).nextTimerMs ?? answer.at(-1).atMs + 10 });
  }
  answers.push(answer);
  return answers;
}

test("the handshake names the SDK's version, the store and every rule it does not claim", async () => {
  const { send, close } = adapter();
  const [ready] = await send({ type: "hello", protocol: 2 });
  await close();
  assert.equal(ready.protocol, 2);
  assert.deepEqual(ready.runtime, { name: "@workflow/ai", version: "5.0.0" });
  assert.match(ready.durable.version, /^@workflow\/world-local 4\.4\.1 \(workflow 4\.8\.9,/u);
  for (const rule of ["R6", "R7", "R8", "R15", "R18", "R30", "R31", "R32", "R35"]) {
    assert.ok(!ready.claims.includes(rule), `${rule} is not claimed`);
    assert.ok(ready.notes[rule], `${rule} has a note`);
  }
});

test("the same seed gives the same messages and the same store bytes; drop mode, and a seed recovered before, give a fresh process's", async () => {
  const root = mkdtempSync(join(tmpdir(), "ward-workflow-devkit-test-"));
  try {
    const first = adapter();
    await first.send({ type: "hello", protocol: 2 });
    const a = await oneCall(first.send, join(root, "a"));
    const storeA = files(join(root, "a"));
    // The same seed again in the same process, after a drop and a recovery (which moves the
    // wall clock past the store's last record): as in a new process.
    assert.deepEqual(await first.send({ type: "crash" }), [{ type: "idle", atMs: a.at(-1).at(-1).atMs, nextTimerMs: null }]);
    await first.send({ type: "reset", seed: 7, tools: TOOLS, storeDir: join(root, "a") });
    const recovered = await first.send({ type: "recover", secrets: [] });
    assert.ok(recovered.some((message) => message.type === "bodyStart"), "the cut step runs again");
    assert.deepEqual(await first.send({ type: "crash" }), [{ type: "idle", atMs: recovered.at(-1).atMs, nextTimerMs: null }]);
    const b = await oneCall(first.send, join(root, "b"));
    await first.close();
    const second = adapter();
    await second.send({ type: "hello", protocol: 2 });
    const c = await oneCall(second.send, join(root, "c"));
    await second.close();
    assert.deepEqual(b, a);
    assert.deepEqual(c, a);
    const body = a.at(-1).find((message) => message.type === "bodyStart");
    assert.match(body.idempotencyKey, /^step_/u, "the step id is the body's key");
    assert.deepEqual(files(join(root, "b")), storeA);
    assert.deepEqual(files(join(root, "c")), storeA);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

const NOTES = [
  {
    name: "notes_find",
    label: "Find notes",
    description: "Finds the notes that hold a text.",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"], additionalProperties: false },
    safety: "read-only",
    executionMode: "parallel",
  },
];

/** Advances the adapter's clock until `done(answer)` holds (at most 50 times). */
async function until(send, answer, done) {
  const all = [...answer];
  for (let i = 0; i < 50 && !done(all); i += 1) {
    const last = all.at(-1);
    all.push(...(await send({ type: "advance", toMs: last.nextTimerMs ?? last.atMs + 10 })));
  }
  return all;
}

/** The bodies an answer starts, as ward sees them, in call order. */
const bodies = (answer) =>
  answer
    .filter((message) => message.type === "bodyStart")
    .map(({ callId, index, tool, input }) => ({ callId, index, tool, input }))
    .sort((a, b) => a.index - b.index);

test("a tool's step journals its own call, not its batch; after a crash the batch is the reply its model step journaled", async () => {
  const root = mkdtempSync(join(tmpdir(), "ward-workflow-devkit-test-"));
  const storeDir = join(root, "store");
  const long = "x".repeat(50_000);
  const calls = ["a", long, "b"].map((text, i) => ({ id: `c${i}`, name: "notes_find", arguments: JSON.stringify({ text }) }));
  try {
    const { send, close } = adapter();
    await send({ type: "hello", protocol: 2 });
    await send({ type: "reset", seed: 7, tools: NOTES, storeDir });
    const request = (await send({ ...START, prompt: "Find my notes." })).find((message) => message.type === "modelRequest");
    const replied = await send({ type: "modelReply", requestId: request.requestId, text: "", calls });
    const started = bodies(await until(send, replied, (all) => bodies(all).length === 3));
    assert.deepEqual(started.map((body) => body.input.text), ["a", long, "b"]);
    const steps = readdirSync(join(storeDir, "steps")).map((name) => readFileSync(join(storeDir, "steps", name), "utf8"));
    const tools = steps.filter((text) => text.includes("//toolBody"));
    assert.equal(tools.length, 3);
    assert.equal(tools.filter((text) => text.length > long.length).length, 1, "only the long call's step holds its text");
    // No body answered: after a crash every step runs again, its batch read from the journal.
    await send({ type: "crash" });
    await send({ type: "reset", seed: 7, tools: NOTES, storeDir });
    const recovered = await until(send, await send({ type: "recover", secrets: [] }), (all) => bodies(all).length === 3);
    await close();
    assert.deepEqual(bodies(recovered), started);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
