// The lockstep and the virtual clock of lib/wire.js (PROTOCOL.md, P3 and P4).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** Runs the fixture and gives a function that sends a message and reads its answer. */
function adapter() {
  const child = spawn(process.execPath, [new URL("./fixtures/timers.js", import.meta.url).pathname]);
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
  return { send, close: () => child.stdin.end() };
}

test("advance stops at each timer before the target, and leaves the target's timers to the next message", async () => {
  const { send, close } = adapter();
  assert.equal((await send({ type: "hello", protocol: 1 }))[0].type, "ready");
  assert.deepEqual(await send({ type: "reset", seed: 1, tools: [] }), [{ type: "idle", atMs: 0, nextTimerMs: null }]);
  // A zero-delay timer set from a promise fires while the runtime settles, at the same instant.
  assert.deepEqual(await send({ type: "startRun" }), [
    { type: "seen", what: "startRun", now: 0 },
    { type: "fired", at: 0, now: 0 },
    { type: "idle", atMs: 0, nextTimerMs: 100 },
  ]);
  assert.deepEqual(await send({ type: "advance", toMs: 300 }), [
    { type: "fired", at: 100, now: 100 },
    { type: "idle", atMs: 100, nextTimerMs: 250 },
  ]);
  assert.deepEqual(await send({ type: "advance", toMs: 300 }), [
    { type: "fired", at: 250, now: 250 },
    { type: "idle", atMs: 250, nextTimerMs: 400 },
  ]);
  assert.deepEqual(await send({ type: "advance", toMs: 300 }), [{ type: "idle", atMs: 300, nextTimerMs: 400 }]);
  // The timer due at the target does not fire on reaching it: ward's delivery there goes first.
  assert.deepEqual(await send({ type: "advance", toMs: 400 }), [{ type: "idle", atMs: 400 }]);
  assert.deepEqual(await send({ type: "cancel" }), [
    { type: "seen", what: "cancel", now: 400 },
    { type: "fired", at: 400, now: 400 },
    { type: "idle", atMs: 400, nextTimerMs: null },
  ]);
  // `reset` forgets every timer and sets the clock back to 0.
  await send({ type: "startRun" });
  assert.deepEqual(await send({ type: "reset", seed: 2, tools: [] }), [{ type: "idle", atMs: 0, nextTimerMs: null }]);
  assert.deepEqual(await send({ type: "advance", toMs: 1000 }), [{ type: "idle", atMs: 1000, nextTimerMs: null }]);
  close();
});

/** Runs `fixture` and gives a function that sends a message and reads its answer. */
function adapterOf(fixture) {
  const child = spawn(process.execPath, [new URL(`./fixtures/${fixture}`, import.meta.url).pathname]);
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
  return { send, close: () => child.stdin.end() };
}

test("every runtime answers protocol 2; a durable one names its store", async () => {
  const durable = adapterOf("durable.js");
  const [ready] = await durable.send({ type: "hello", protocol: 2 });
  assert.equal(ready.protocol, 2);
  assert.deepEqual(ready.durable, { store: "none", version: "0", drop: "drops its state" });
  durable.close();
  const plain = adapterOf("timers.js");
  const [plainReady] = await plain.send({ type: "hello", protocol: 2 });
  assert.equal(plainReady.protocol, 2);
  assert.equal(plainReady.durable, undefined);
  // `nextTimerMs: null`: no timer set, so ward may hand a delivery over with its instant.
  assert.deepEqual(await plain.send({ type: "reset", seed: 1, tools: [] }), [{ type: "idle", atMs: 0, nextTimerMs: null }]);
  plain.close();
});

test("crash keeps the clock, clears the timers and cuts the dropped runtime's output", async () => {
  const { send, close } = adapterOf("durable.js");
  await send({ type: "hello", protocol: 2 });
  assert.deepEqual(await send({ type: "reset", seed: 1, tools: [], storeDir: "/tmp/x" }), [
    { type: "seen", what: "reset", storeDir: "/tmp/x" },
    { type: "idle", atMs: 0, nextTimerMs: null },
  ]);
  await send({ type: "startRun" });
  // A delivery carrying its instant moves the clock there before it is handed over.
  assert.deepEqual(await send({ type: "cancel", atMs: 40 }), [
    { type: "seen", what: "cancel", now: 40 },
    { type: "idle", atMs: 40, nextTimerMs: 100 },
  ]);
  assert.deepEqual(await send({ type: "crash" }), [{ type: "idle", atMs: 40, nextTimerMs: null }]);
  // The dropped runtime's timer never fires, and nothing it wrote reaches ward.
  assert.deepEqual(await send({ type: "reset", seed: 1, tools: [], storeDir: "/tmp/x" }), [
    { type: "seen", what: "reset", storeDir: "/tmp/x" },
    { type: "idle", atMs: 0, nextTimerMs: null },
  ]);
  assert.deepEqual(await send({ type: "advance", toMs: 1000 }), [{ type: "idle", atMs: 1000, nextTimerMs: null }]);
  close();
});

test("crypto.getRandomValues draws from the seed once an adapter asks for it", async () => {
  const { seedRandom, seedRandomValues } = await import("../lib/wire.js");
  seedRandomValues();
  const draw = (seed) => {
    seedRandom(seed);
    const bytes = new Uint8Array(8);
    crypto.getRandomValues(bytes);
    return [...bytes];
  };
  assert.deepEqual(draw(7), draw(7));
  assert.notDeepEqual(draw(7), draw(8));
});

test("a reset without tools keeps the catalogue of the last one (ready says catalogueKept)", async () => {
  const { send, close } = adapter();
  const [ready] = await send({ type: "hello", protocol: 2 });
  assert.equal(ready.catalogueKept, true);
  const tools = [{ name: "panes_list", label: "List panes", description: "Lists the panes.", parameters: { type: "object" }, safety: "read-only", executionMode: "parallel" }];
  assert.deepEqual(await send({ type: "reset", seed: 1, tools }), [{ type: "idle", atMs: 0, nextTimerMs: null }]);
  assert.deepEqual(await send({ type: "reset", seed: 2 }), [{ type: "idle", atMs: 0, nextTimerMs: null }]);
  const [kept] = await send({ type: "catalogues" });
  // A fresh copy: a runtime that changed what it was given changes no later scenario.
  assert.deepEqual(kept, { type: "catalogues", tools, same: false });
  close();
});
