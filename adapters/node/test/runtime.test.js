// The adapter's own parts: R22's guard, R6's rendering of validator errors, R14's ranges.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Guard, argumentsCheck, limitsError, providerFailure, unclaimedNotes } from "../lib/runtime.js";
import { inputInvalid, validatorOf } from "../lib/agent.js";

test("the guard replaces every value and every 8-character fragment, merging what touches", () => {
  const guard = new Guard(["Zq81xLp0Wm3vB7", "short"]);
  assert.equal(guard.text("key Zq81xLp0Wm3vB7 end"), "key [REDACTED] end");
  assert.equal(guard.text("tail p0Wm3vB7 and Zq81xLp0 here"), "tail [REDACTED] and [REDACTED] here");
  assert.equal(guard.text("Zq81xLp0Wm3vB7Zq81xLp0Wm3vB7"), "[REDACTED]");
  assert.equal(guard.text("nothing to hide, short"), "nothing to hide, short");
  assert.deepEqual(guard.value({ "Zq81xLp0Wm3vB7": ["x Zq81xLp0Wm3vB7"] }), { "[REDACTED]": ["x [REDACTED]"] });
  // Keys that guard to the same text keep every member, the later in key order renamed.
  assert.deepEqual(guard.value({ "[REDACTED]": 1, "Zq81xLp0Wm3vB7": 2, "Zq81xLp0 end": 3 }), {
    "[REDACTED]": 2,
    "[REDACTED] (2)": 1,
    "[REDACTED] end": 3,
  });
  assert.equal(guard.carriesValue("…Zq81xLp0Wm3vB7…"), true);
  assert.equal(guard.carriesValue("Zq81xLp0 only a fragment"), false);
});

test("validator errors read as R6 says: paths, one per unexpected key, at most 5", () => {
  const schema = {
    type: "object",
    additionalProperties: false,
    required: ["symbol"],
    properties: { limit: { type: "integer", maximum: 798 }, period: { enum: ["daily"] } },
  };
  const validate = validatorOf(schema);
  assert.equal(validate({ limit: 900, period: "x", a: 1, "b/c": 2, d: 3 }), false);
  const invalid = inputInvalid(validate.errors);
  assert.equal(invalid.fields.length, 5, "capped at 5 of the 6 errors");
  const unexpected = invalid.fields.filter((field) => field.message === "is not an allowed property");
  assert.deepEqual(unexpected.map((field) => field.path), ["/a", "/b~1c", "/d"]);
  assert.ok(invalid.fields.some((f) => f.path === "/" && f.message === "missing required property 'symbol'"));
  assert.ok(invalid.message.startsWith("The tool input is invalid: "));
  assert.equal(validatorOf(schema), validate, "compiled once");
});

test("limits out of their ranges are refused with R14's names", () => {
  const limits = { turnsMax: 8, callsPerBatchMax: 32, providerTimeoutMs: 60000, inactivityTimeoutMs: 120000, providerRetriesMax: 2 };
  assert.equal(limitsError(limits), null);
  assert.equal(limitsError({ ...limits, turnsMax: 21 }), "turns_max is 21; it must be between 1 and 20");
  assert.equal(limitsError({ ...limits, providerRetriesMax: 6 }), "provider_retries_max is 6; it must be between 0 and 5");
});

test("randomness comes from the seed: the same seed, the same draws", async () => {
  const { seedRandom } = await import("../lib/wire.js");
  const { randomUUID } = await import("node:crypto");
  seedRandom(7);
  const first = [Math.random(), Math.random(), randomUUID(), globalThis.crypto.randomUUID()];
  seedRandom(7);
  assert.deepEqual([Math.random(), Math.random(), randomUUID(), globalThis.crypto.randomUUID()], first);
  seedRandom(8);
  assert.notEqual(Math.random(), first[0]);
  assert.match(first[2], /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test("secret values too short to tell from text are refused at start", async () => {
  const { secretsError } = await import("../lib/runtime.js");
  assert.equal(secretsError(["a-long-enough-value"]), null);
  assert.match(secretsError(["a-long-enough-value", "hunter2"]), /^invalid secrets: secret #2 has 7 characters/);
  assert.match(secretsError(["abc\u200bdefg\u200b"]), /has 7 characters/);
});

test("a secret written with JSON escapes is refused as the body would read it", () => {
  const guard = new Guard(["U9SpenxsANi sk-Y9H"]);
  const code = (text) => argumentsCheck(text, guard)?.error.code ?? null;
  assert.equal(code('{"query":"login with U9SpenxsANi sk-Y9H"}'), "SECRET_IN_INPUT");
  assert.equal(code('{"query":"login with \\u00559SpenxsANi sk-Y9H"}'), "SECRET_IN_INPUT");
  assert.equal(code('{"\\u00559SpenxsANi sk-Y9H":1}'), "SECRET_IN_INPUT");
  assert.equal(code('{"query":["a",{"b":"\\u00559SpenxsANi sk-Y9H"}]}'), "SECRET_IN_INPUT");
  assert.equal(code('{"query":"login with U9Spenxs"}'), null);
  assert.equal(code("not json U9Spenxs"), null);
  // Text that repeats a key is parsed first and refused by R6 (TOOL_INPUT_INVALID), so its
  // decoded strings are not read: nested, escaped, after white space.
  assert.equal(code('{"a":{"q":"\\u00559SpenxsANi sk-Y9H", "q" :1}}'), null);
  assert.equal(code('{"\\u0071":"\\u00559SpenxsANi sk-Y9H","q":1}'), null);
  assert.equal(code('{"q":"\\u00559SpenxsANi sk-Y9H","r":{"q":1},"s":["q","q"]}'), "SECRET_IN_INPUT");
});

test("repeated keys are found in objects only, compared decoded", async () => {
  const { repeatsAKey } = await import("../lib/runtime.js");
  assert.equal(repeatsAKey('{"a":1,"b":{"a":2},"c":["a","a"]}'), false);
  assert.equal(repeatsAKey('{"a":1,"\\u0061":2}'), true);
  assert.equal(repeatsAKey('[{"a":"x\\"y"},{"a":1}]'), false);
  assert.equal(repeatsAKey('{"k":"a\\\\","k" : 2}'), true);
});

test("R21's run errors: every code as the SPEC names it, retryable exactly for R18's four", () => {
  const expected = {
    authentication: ["PROVIDER_AUTHENTICATION", false],
    permission: ["PROVIDER_PERMISSION", false],
    modelNotFound: ["PROVIDER_MODEL_NOT_FOUND", false],
    rateLimited: ["PROVIDER_RATE_LIMITED", true],
    unavailable: ["PROVIDER_UNAVAILABLE", true],
    timeout: ["PROVIDER_TIMEOUT", true],
    malformedResponse: ["PROVIDER_MALFORMED_RESPONSE", true],
  };
  for (const [kind, [code, retryable]] of Object.entries(expected)) {
    const error = providerFailure(kind, "m");
    assert.deepEqual([error.code, error.retryable, error.message], [code, retryable, "m"], kind);
  }
});

test("the unclaimed notes cover R15, R24-R29 and R30-R35, each with a sentence", () => {
  const notes = unclaimedNotes({ R15: "why not R15", R30: "why not R30" });
  const rules = ["R15", "R24", "R25", "R26", "R27", "R28", "R29", "R30", "R31", "R32", "R33", "R34", "R35"];
  assert.deepEqual(Object.keys(notes).sort(), rules.sort());
  assert.equal(notes.R15, "why not R15");
  assert.equal(notes.R30, "why not R30");
  for (const rule of rules) assert.ok(notes[rule].length > 0, rule);
});

test("the repeated-key scan ends on text that is not JSON", async () => {
  const { repeatsAKey } = await import("../lib/runtime.js");
  assert.equal(repeatsAKey('{"a'), false);
  assert.equal(repeatsAKey('{"a":1,"a'), false);
});
