// The ai 7 adapter's handshake, and the facts of ai 7 it rests on: the envelope it records for
// a call the SDK refused carries the very text the model reads (`String(error)`), and the
// SDK parses a call only against `activeTools` (R12's execution check, which the adapter
// leaves to the SDK). Run with `node --test test/ai-sdk-7.test.js` from adapters/node.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { generateText, isStepCount, jsonSchema, tool } from "ai7";
import { MockLanguageModelV4 } from "ai7/test";

const require = createRequire(import.meta.url);
const adapter = fileURLToPath(new URL("../ai-sdk-7.js", import.meta.url));

test("ready names the SDK as installed under ai7, and whose each kept rule is", async () => {
  const child = spawn(process.execPath, [adapter], { stdio: ["pipe", "pipe", "inherit"] });
  child.stdin.write(`${JSON.stringify({ type: "hello", protocol: 2 })}\n`);
  const line = await new Promise((resolve) => {
    let text = "";
    child.stdout.on("data", (chunk) => {
      text += chunk;
      if (text.includes("\n")) resolve(text.slice(0, text.indexOf("\n")));
    });
  });
  child.stdin.end();
  const ready = JSON.parse(line);
  const installed = require("ai7/package.json");
  assert.deepEqual(ready.runtime, { name: "ai", version: installed.version });
  assert.match(ready.runtime.version, /^7\./);
  for (const rule of ["R1", "R3", "R4", "R5", "R12", "R13", "R14", "R17", "R19", "R20", "R21", "R22", "R23"]) {
    assert.ok(ready.claims.includes(rule), `${rule} is claimed`);
    assert.ok(ready.notes[rule], `${rule} says whose it is`);
  }
  for (const rule of ["R8", "R8a", "R15", "R30"]) assert.ok(!ready.claims.includes(rule) && ready.notes[rule]);
});

/** Two steps of one `generateText`: the first reply's calls, then `Done.`; the prompts the model got. */
async function twoSteps(calls, activeTools) {
  const prompts = [];
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      prompts.push(prompt);
      const first = prompts.length === 1;
      return {
        content: first
          ? calls.map(([toolCallId, toolName, input]) => ({ type: "tool-call", toolCallId, toolName, input }))
          : [{ type: "text", text: "Done." }],
        finishReason: { unified: first ? "tool-calls" : "stop", raw: undefined },
        usage: {
          inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
          outputTokens: { total: 0, text: 0, reasoning: 0 },
        },
        warnings: [],
      };
    },
  });
  const ran = [];
  const refused = [];
  const schema = { type: "object", properties: {}, additionalProperties: false };
  const tools = Object.fromEntries(
    ["panes_list", "pane_create"].map((name) => [
      name,
      tool({ description: name, inputSchema: jsonSchema(schema), execute: async () => ran.push(name) && { ok: true } }),
    ]),
  );
  await generateText({
    model,
    instructions: "test",
    prompt: "go",
    tools,
    activeTools,
    stopWhen: isStepCount(2),
    repairToolCall: async ({ error }) => {
      refused.push(String(error));
      return null;
    },
    _internal: { generateId: () => "id", generateCallId: () => "call" },
  });
  const results = prompts[1].filter((message) => message.role === "tool").flatMap((message) => message.content);
  return { ran, refused, results };
}

test("a refused call: the model reads String(error), the text the adapter records", async () => {
  const { ran, refused, results } = await twoSteps([["c1", "nowhere", "{}"]], undefined);
  assert.deepEqual(ran, []);
  assert.equal(refused.length, 1);
  assert.deepEqual(results.map((part) => part.output), [{ type: "error-text", value: refused[0] }]);
  assert.match(refused[0], /^AI_NoSuchToolError: /);
});

test("a tool left out of activeTools is refused by the SDK and never runs", async () => {
  const { ran, refused } = await twoSteps([["c1", "pane_create", "{}"], ["c2", "panes_list", "{}"]], ["panes_list"]);
  assert.deepEqual(ran, ["panes_list"]);
  assert.equal(refused.length, 1);
  assert.match(refused[0], /unavailable tool 'pane_create'/);
});
