// What the two Vercel AI SDK adapters share, word for word: `ai-sdk.js` (ai 6) and
// `ai-sdk-7.js` (ai 7, the `ai7` alias). Every part here is the adapter's, none is the SDK's:
// each major's own classes (`APICallError`) are passed in, so that an error is raised with the
// class of the major under test. What differs between the majors (the mock model, the options
// of `generateText`, how a refused call's envelope is found) stays in each adapter's file.
//
// - ward's failure kinds raised as a provider package raises them (R21): `APICallError` with
//   the HTTP status, `isRetryable` and `retry-after-ms`; a malformed reply as the `Invalid
//   JSON response` of a status 200, which a provider package does not mark retryable;
// - the SDK's prompt as the protocol's transcript, and a session's earlier runs as the SDK's
//   messages;
// - R19's provider timeout: a timer aborting one request, a retryable error;
// - what ended a run early: a stop, the turn limit (the SDK's `ToolChoiceViolationError`), or
//   the provider's last error.

import { ProviderError, failure, providerFailure, unexpectedEnd } from "./runtime.js";
import { Stop } from "./agent.js";

/** How a provider package reports each of ward's failure kinds: HTTP status, retryable. */
const STATUS = {
  authentication: [401, false],
  permission: [403, false],
  modelNotFound: [404, false],
  rateLimited: [429, true],
  unavailable: [503, true],
  timeout: [408, true],
  malformedResponse: [200, false],
};

/** ward's provider failure `error` as the `APICallError` (of the major under test) a provider package throws. */
export function providerError(APICallError, error) {
  const [statusCode, isRetryable] = STATUS[error.kind];
  const message = error.kind === "malformedResponse" ? "Invalid JSON response" : error.message;
  return new APICallError({
    message,
    url: "ward://provider",
    requestBodyValues: {},
    statusCode,
    responseHeaders:
      error.retryAfterMs === undefined ? {} : { "retry-after-ms": String(error.retryAfterMs) },
    isRetryable,
    data: { kind: error.kind },
  });
}

/**
 * The SDK's prompt as the protocol's transcript (the system message goes apart); each tool
 * result's envelope is `resultOf(part)`, the adapter's way of reading it.
 */
export function transcriptOf(prompt, resultOf) {
  const transcript = [];
  for (const message of prompt) {
    if (message.role === "user") {
      const text = message.content
        .filter((part) => part.type === "text")
        .map((part) => part.text)
        .join("");
      transcript.push({ role: "user", text });
    } else if (message.role === "assistant") {
      const text = message.content
        .filter((part) => part.type === "text")
        .map((part) => part.text)
        .join("");
      const calls = message.content
        .filter((part) => part.type === "tool-call")
        .map((part) => ({
          id: part.toolCallId,
          name: part.toolName,
          arguments: typeof part.input === "string" ? part.input : JSON.stringify(part.input),
        }));
      transcript.push({ role: "assistant", text, calls });
    } else if (message.role === "tool") {
      for (const part of message.content) {
        if (part.type !== "tool-result") continue;
        transcript.push({
          role: "tool",
          callId: part.toolCallId,
          name: part.toolName,
          result: resultOf(part),
        });
      }
    }
  }
  return transcript;
}

/** The SDK's messages for a session's earlier runs (the store holds the protocol's form). */
export function messagesOf(history) {
  const messages = [];
  for (const message of history) {
    if (message.role === "user") {
      messages.push({ role: "user", content: message.text });
    } else if (message.role === "assistant") {
      const content = [];
      if (message.text !== "") content.push({ type: "text", text: message.text });
      for (const call of message.calls) {
        let input;
        try {
          input = JSON.parse(call.arguments);
        } catch {
          input = call.arguments;
        }
        content.push({ type: "tool-call", toolCallId: call.id, toolName: call.name, input });
      }
      messages.push({ role: "assistant", content });
    } else {
      const last = messages.at(-1);
      const part = {
        type: "tool-result",
        toolCallId: message.callId,
        toolName: message.name,
        output: { type: "json", value: message.result },
      };
      if (last?.role === "tool") last.content.push(part);
      else messages.push({ role: "tool", content: [part] });
    }
  }
  return messages;
}

/**
 * One provider request with R19's timeout: a timer aborting it, a retryable error. A
 * failure ward gives is raised as `APICallError` (of the major under test).
 */
export async function request(APICallError, run, transcript, tools, outer) {
  const local = new AbortController();
  const forward = () => local.abort(outer.reason);
  outer?.addEventListener("abort", forward, { once: true });
  const timeout = new ProviderError({ kind: "timeout", message: "The provider did not answer in time." });
  const timer = setTimeout(() => local.abort(timeout), run.limits.providerTimeoutMs);
  try {
    return await run.ask(transcript, tools, local.signal);
  } catch (error) {
    if (error instanceof ProviderError) throw providerError(APICallError, error);
    throw error;
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", forward);
  }
}

/** What ended the run early: a stop, the turn limit, or the provider's last error. */
export function outcomeOf(run, error) {
  if (run.signal.aborted && run.signal.reason instanceof Stop) return run.signal.reason;
  if (error?.name === "AI_ToolChoiceViolationError") {
    return failure(
      "TOOL_LOOP_LIMIT",
      `The agent stopped after ${run.limits.turnsMax} tool turns.`,
      "Refine the request and retry.",
    ).error;
  }
  const last = error?.name === "AI_RetryError" ? error.lastError : error;
  const kind = last?.data?.kind;
  if (kind !== undefined) return providerFailure(kind, last.message);
  return unexpectedEnd(`generateText: ${error?.stack ?? error}`);
}

/** The field list R6 asks for, carried by the validator's error somewhere in `error`'s causes. */
export function fieldsOf(error) {
  for (let cause = error; cause; cause = cause.cause) {
    if (Array.isArray(cause.fields)) return cause.fields;
  }
  return undefined;
}
