// The adapter's side of ward's protocol (PROTOCOL.md, SPEC §15 P1, P3, P4): JSON lines on
// standard input and output, the lockstep, and the runtime's virtual clock.
//
// Lockstep. Every message from ward is handed to the runtime, the runtime runs until nothing
// more can run, and the answer (everything it did, then `idle`) goes out as one write. "Nothing
// more can run" is found by yielding to the real event loop: one `setImmediate` turn drains
// every promise chain and `process.nextTick` queue, so two quiet turns in a row with no timer
// due mean the runtime waits on ward. Timers are faked; a timer due at the current instant
// fires inside the settling loop, as it would at once in a real process.
//
// Time. `@sinonjs/fake-timers` fakes `setTimeout`, `setInterval`, `setImmediate`, `Date`,
// `performance` and `process.hrtime` (named explicitly, as its README's default list and
// code disagree); promise microtasks and `process.nextTick` stay real, which is what lets the
// loop above find quiescence. `advance {toMs}` fires the earliest instant's timers before
// `toMs`; when none is due before it, the clock is set to `toMs` without firing the timers due
// there, and they fire while the runtime settles after ward's next message has been handed
// over: a delivery wins a tie with a timer, as both falling due at once in one process.

import { createRequire, syncBuiltinESMExports } from "node:module";
import { createInterface } from "node:readline";
import FakeTimers from "@sinonjs/fake-timers";

const require = createRequire(import.meta.url);

const realSetImmediate = globalThis.setImmediate;
const yieldToLoop = () => new Promise((resolve) => realSetImmediate(resolve));

/** The faked clock every adapter runs on; installed once, reset to 0 by `reset`. */
export const clock = FakeTimers.withGlobal(globalThis).install({
  now: 0,
  toFake: [
    "setTimeout",
    "clearTimeout",
    "setInterval",
    "clearInterval",
    "setImmediate",
    "clearImmediate",
    "Date",
    "performance",
    "hrtime",
  ],
  shouldClearNativeTimers: true,
  loopLimit: 100_000,
});

/** The instant of the earliest timer still set, or `undefined`. */
function nextTimerAt() {
  let earliest;
  for (const timer of clock.timers?.values() ?? []) {
    if (earliest === undefined || timer.callAt < earliest) earliest = timer.callAt;
  }
  return earliest;
}

/**
 * Randomness from the seed (P4): `Math.random` and `crypto.randomUUID` (the global and
 * `node:crypto`'s, which SDKs use for ids and retry jitter) draw from one mulberry32 stream,
 * seeded by `reset`.
 */
let randomState = 0;
function random() {
  randomState = (randomState + 0x6d2b79f5) >>> 0;
  let t = randomState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
function randomUUID() {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16));
  hex[12] = "4";
  hex[16] = ((Number.parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  const text = hex.join("");
  return `${text.slice(0, 8)}-${text.slice(8, 12)}-${text.slice(12, 16)}-${text.slice(16, 20)}-${text.slice(20)}`;
}
Math.random = random;
globalThis.crypto.randomUUID = randomUUID;
require("node:crypto").randomUUID = randomUUID;
syncBuiltinESMExports();

export function seedRandom(seed) {
  randomState = (Number(BigInt.asUintN(32, BigInt(seed))) ^ 0x9e3779b9) >>> 0;
  bytesState = (Number(BigInt.asUintN(32, BigInt(seed))) ^ 0x85ebca6b) >>> 0;
}

/**
 * `crypto.getRandomValues` from the seed too, for an SDK whose ids take random bytes (the
 * `uuid` code of `@langchain/core` does): a stream of its own, so that turning it on changes
 * no draw of `Math.random`. Off unless an adapter asks for it, so that the adapters written
 * before it draw exactly what they drew.
 */
let bytesState = 0;
function randomByte() {
  bytesState = (bytesState + 0x6d2b79f5) >>> 0;
  let t = bytesState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) & 0xff;
}
export function seedRandomValues() {
  const getRandomValues = (array) => {
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    for (let i = 0; i < bytes.length; i += 1) bytes[i] = randomByte();
    return array;
  };
  // `globalThis.crypto` is `node:crypto`'s `webcrypto`: one object to seed.
  Object.defineProperty(globalThis.crypto, "getRandomValues", { value: getRandomValues, configurable: true, writable: true });
}

/** Clears every timer without moving the clock: what a dropped runtime had set never fires. */
function clearTimers() {
  for (const timer of [...(clock.timers?.values() ?? [])]) clock.clearTimeout(timer.id);
}

/**
 * Forgets every timer and sets the clock to 0 (`reset`). Timers of an earlier scenario's
 * abandoned work must not fire in the next one.
 */
export function resetClock() {
  clock.reset();
  clock.now = 0;
}

/** The protocol version the kit speaks. */
const VERSION = 2;

/**
 * Serves the protocol on standard input and output. `runtime` is the adapter:
 * `{ ready(): {runtime, claims, notes, durable?}, reset(message, out), handle(message, out),
 * crash?() }`, where `out(record)` queues a message for the current answer. A thrown error
 * ends the adapter with its stack on standard error, which ward reports as a protocol
 * violation with that tail.
 *
 * Version 2: every runtime answers `hello` with protocol 2, so that its `idle` says when its
 * next timer is due (`nextTimerMs`, `null` for none) and ward hands over a delivery due
 * before it with its instant (`atMs`) rather than an `advance` first: the same traces in
 * fewer exchanges (the template, seeds 0..100: 1,183 messages from ward against 1,416, 28
 * `advance`s against 261). A runtime whose `ready()` names `durable` (PROTOCOL.md, "Durable
 * runtimes and crashes") also gets `reset.storeDir`, `crash` and `recover`. At `crash` the runtime drops what it holds
 * (`crash()`), every timer is cleared and the `out` it was given stops writing: each `out`
 * handed to a runtime belongs to one epoch, which the next `crash` or `reset` ends, so that
 * no promise or timer of a dropped runtime can reach ward's output.
 *
 * The catalogue (`ready.catalogueKept`): ward leaves `tools` out of a `reset` whose catalogue
 * is the one of the last `reset`, and the kit hands the runtime a fresh copy of the kept one,
 * so that a runtime changing what it was given changes no later scenario. It survives a
 * `crash`: it is ward's, not the runtime's.
 */
export function serve(runtime) {
  const lockstep = new Lockstep(runtime);
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    lockstep.queued.push(line);
    lockstep.drain().catch((error) => {
      process.stderr.write(`${error?.stack ?? error}\n`);
      process.exit(70);
    });
  });
  lines.on("close", () => process.exit(0));
}

/** One adapter process's side of the lockstep: the messages queued, the answer being written. */
class Lockstep {
  constructor(runtime) {
    this.runtime = runtime;
    this.queued = [];
    this.answer = [];
    this.busy = false;
    this.epoch = 0;
    this.catalogue = undefined;
    this.out = (message) => this.write(message);
  }

  write(message) {
    this.answer.push(JSON.stringify(message));
  }

  /** Ends the epoch of every `out` handed to the runtime so far; the next writes while it lasts. */
  newEpoch() {
    this.epoch += 1;
    const mine = this.epoch;
    this.out = (message) => {
      if (this.epoch === mine) this.write(message);
    };
  }

  async settle() {
    let quiet = 0;
    let seen = this.answer.length;
    while (quiet < 2) {
      await yieldToLoop();
      const at = nextTimerAt();
      if (at !== undefined && at <= clock.now) {
        clock.tick(0);
        quiet = 0;
        continue;
      }
      if (this.answer.length !== seen) {
        seen = this.answer.length;
        quiet = 0;
      } else {
        quiet += 1;
      }
    }
  }

  async advance(toMs) {
    const at = nextTimerAt();
    if (at !== undefined && at < toMs) {
      clock.tick(Math.max(0, at - clock.now));
      await this.settle();
      return;
    }
    clock.now = Math.max(clock.now, toMs);
  }

  reset(message) {
    if (message.tools !== undefined) this.catalogue = structuredClone(message.tools);
    else if (this.catalogue === undefined) throw new Error("a reset without tools, and no catalogue before it to keep");
    else message.tools = structuredClone(this.catalogue);
    this.newEpoch();
    resetClock();
    seedRandom(message.seed);
    this.runtime.reset(message, this.out);
  }

  /** Hands `message` to the runtime and lets it settle; whether the answer ends with `idle`. */
  async take(message) {
    switch (message.type) {
      case "hello": {
        const ready = this.runtime.ready();
        this.write({ type: "ready", protocol: VERSION, catalogueKept: true, ...ready });
        return false;
      }
      case "reset":
        this.reset(message);
        break;
      case "crash":
        // Drop mode (P9): nothing runs, nothing settles; the clock stays where it is.
        this.newEpoch();
        clearTimers();
        this.runtime.crash?.();
        break;
      case "advance":
        await this.advance(message.toMs);
        break;
      default:
        // Version 2: a delivery due after the clock carries its instant; the clock moves there
        // as an `advance` with no timer due before it would, and the timers due there fire
        // after the delivery has been handed over.
        if (message.atMs !== undefined) {
          clock.now = Math.max(clock.now, message.atMs);
          delete message.atMs;
        }
        this.runtime.handle(message, this.out);
        await this.settle();
    }
    return true;
  }

  async drain() {
    if (this.busy) return;
    this.busy = true;
    while (this.queued.length > 0) {
      const message = JSON.parse(this.queued.shift());
      if (await this.take(message)) this.write(idle());
      this.answer.push("");
      const text = this.answer.join("\n");
      this.answer = [];
      process.stdout.write(text);
    }
    this.busy = false;
  }
}

/** The `idle` that ends an answer: when the runtime's next timer is due, `null` for none. */
function idle() {
  const next = nextTimerAt();
  if (next !== undefined && next > clock.now) return { type: "idle", atMs: clock.now, nextTimerMs: next };
  // `null` says no timer is set, so that ward may skip the `advance`s.
  if (next === undefined) return { type: "idle", atMs: clock.now, nextTimerMs: null };
  return { type: "idle", atMs: clock.now };
}
