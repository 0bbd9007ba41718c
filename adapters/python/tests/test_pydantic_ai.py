"""The PydanticAI adapter (``adapters/python/pydantic-ai.py``) and the SDK behaviours its
findings rest on (``findings/pydantic-ai.md``).

The first tests drive the adapter through the kit's lockstep, as ward does. The others run
PydanticAI (``pydantic-ai-slim`` 2.68.0) by itself, on a plain asyncio loop, with a
``FunctionModel`` that replays scripted replies: they pin down what the SDK does with its
defaults and with ``Tool.from_schema``, including the defaults the adapter sets otherwise
(the retry budget, a tool's exception, an empty reply), which no scenario file can show."""

import asyncio
import json
from typing import Any

import pytest
from conftest import LIMITS, TOOLS, imported

from ward_kit import wire
from ward_kit.agent import Agent

pydantic_ai = pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent as SdkAgent  # noqa: E402
from pydantic_ai import ModelRetry, Tool  # noqa: E402
from pydantic_ai.exceptions import UnexpectedModelBehavior  # noqa: E402
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402


@pytest.fixture(scope="module")
def adapter():
    yield from imported("pydantic-ai.py", "ward_pydantic_ai_under_test")


def exchange(server: wire.Server, message: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in server.take(json.dumps(message))]


def started(server: wire.Server, **fields: Any) -> list[dict[str, Any]]:
    exchange(server, {"type": "hello", "protocol": 2})
    exchange(server, {"type": "reset", "seed": 3, "tools": TOOLS})
    message = {"type": "startRun", "session": "s", "prompt": "Show the settings.", "readOnly": False, "disabledTools": [], "secrets": [], "limits": LIMITS}
    return exchange(server, {**message, **fields})


def kinds(messages: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(message["type"], message.get("event", {}).get("type")) for message in messages]


def test_ready_names_the_sdk_and_whose_rules_they_are(adapter):
    server = wire.Server(Agent(adapter.PydanticAi()))
    ready = exchange(server, {"type": "hello", "protocol": 2})
    assert ready[0]["runtime"] == {"name": "pydantic-ai", "version": "2.68.0"}
    assert "R18" not in ready[0]["claims"] and "R17" in ready[0]["claims"]
    assert "the SDK's" in ready[0]["notes"]["R12"]


def test_a_run_in_lockstep(adapter):
    server = wire.Server(Agent(adapter.PydanticAi()))
    opened = started(server)
    assert kinds(opened) == [("event", "run.started"), ("append", None), ("event", "user.message.created"), ("modelRequest", None), ("idle", None)]
    assert opened[3]["tools"] == ["settings_get", "settings_update"]
    # The SDK's request deadline (60 s, on ward's clock) is the only timer before the deadline.
    assert opened[-1] == {"type": "idle", "atMs": 0, "nextTimerMs": 60_000}
    calls = [
        {"id": "c1", "name": "settings_get", "arguments": "{}"},
        {"id": "c2", "name": "settings_update", "arguments": '{"theme":"blue"}'},
    ]
    batch = exchange(server, {"type": "modelReply", "requestId": "r0", "text": "", "calls": calls, "atMs": 40})
    # The SDK validates both calls first: the invalid write is answered at once, then the
    # read's body starts as its turn comes (the write would be a barrier of its own, R17's
    # finding).
    assert kinds(batch) == [
        ("append", None),
        ("event", "assistant.message.completed"),
        ("event", "tool.started"),
        ("event", "tool.finished"),
        ("event", "tool.started"),
        ("bodyStart", None),
        ("idle", None),
    ]
    assert [batch[index]["event"]["callId"] for index in (2, 3, 4)] == ["c2", "c2", "c1"]
    invalid = batch[3]["event"]["result"]["error"]
    assert invalid["code"] == "TOOL_INPUT_INVALID"
    assert invalid["message"] == "The tool input is invalid: /theme: must be equal to one of the allowed values"
    assert invalid["fields"] == [{"path": "/theme", "message": "must be equal to one of the allowed values"}]
    assert batch[5] == {"type": "bodyStart", "bodyId": "b0", "callId": "c1", "index": 0, "tool": "settings_get", "input": {}}
    after = exchange(server, {"type": "bodyResult", "bodyId": "b0", "result": {"data": {"theme": "light"}}, "changed": False, "atMs": 75})
    assert kinds(after)[:3] == [("event", "tool.finished"), ("append", None), ("append", None)]
    request = after[3]
    assert request["type"] == "modelRequest" and request["requestId"] == "r1"
    # Results in call order, each the envelope the model reads.
    results = [message for message in request["transcript"] if message["role"] == "tool"]
    assert [message["callId"] for message in results] == ["c1", "c2"]
    assert results[0]["result"] == {"success": True, "data": {"theme": "light"}, "stateChanged": False}
    assert results[1]["result"]["error"]["fields"] == invalid["fields"]
    ended = exchange(server, {"type": "modelReply", "requestId": "r1", "text": "Done.", "calls": [], "atMs": 90})
    assert ended[-2] == {"type": "runEnd", "outcome": "run.completed", "code": None, "batches": 1, "calls": 2}


def test_the_request_deadline_falls_on_wards_millisecond(adapter):
    """The SDK's deadline is an anyio cancel scope at ``loop.time() + timeout``; at 120.665 s
    plus 60 s it would be a float's last bit past 180,665 ms, which the kit's loop rounds to,
    and the scope would re-arm itself there forever (``DEADLINE_SLACK_MS``)."""
    server = wire.Server(Agent(adapter.PydanticAi()))
    started(server)
    exchange(server, {"type": "advance", "toMs": 60_001})
    message = {"type": "startRun", "session": "t", "prompt": "Again.", "readOnly": False, "disabledTools": [], "secrets": [], "limits": LIMITS}
    wire.clock.now_ms = 120_665
    assert exchange(server, message)[-1] == {"type": "idle", "atMs": 120_665, "nextTimerMs": 180_665}
    ended = exchange(server, {"type": "advance", "toMs": 180_666})
    assert [message["type"] for message in ended] == ["modelCancel", "event", "runEnd", "idle"]
    assert ended[2]["code"] == "PROVIDER_TIMEOUT" and ended[1]["event"]["timeMs"] == 60_000


# ---- PydanticAI by itself --------------------------------------------------------------------


def scripted(replies: list[list[tuple[str, str, str]] | str], seen: list[list[Any]]) -> FunctionModel:
    """A ``FunctionModel`` answering with ``replies`` in turn (calls ``(id, name, arguments)``,
    or text), recording the messages of every request in ``seen``."""
    script = iter(replies)

    async def reply(messages: list[Any], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        step = next(script)
        if isinstance(step, str):
            return ModelResponse(parts=[TextPart(step)] if step else [])
        return ModelResponse(parts=[ToolCallPart(name, arguments, tool_call_id=call_id) for call_id, name, arguments in step])

    return FunctionModel(reply)


def chart_tool(name: str, bodies: list[Any], validator: Any = None, **options: Any) -> Tool[Any]:
    """A tool as the adapter builds one (``Tool.from_schema``), whose body records its input."""

    async def body(ctx: Any, **input: Any) -> dict[str, Any]:
        bodies.append((name, input))
        return {"success": True, "data": input, "stateChanged": False}

    schema = {"type": "object", "properties": {"theme": {"type": "string"}}, "additionalProperties": False}
    return Tool.from_schema(body, name=name, description=name, json_schema=schema, takes_ctx=True, args_validator=validator, **options)


def wants_a_theme(ctx: Any, **input: Any) -> None:
    if not isinstance(input.get("theme"), str):
        raise ModelRetry("The tool input is invalid: /: missing required property 'theme'")


def returns(messages: list[Any]) -> list[Any]:
    return [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]


def test_a_repeated_key_keeps_its_last_value():
    bodies: list[Any] = []
    agent = SdkAgent(scripted([[("c1", "settings_update", '{"theme":"dark","theme":"light"}')], "Done."], []), tools=[chart_tool("settings_update", bodies)])
    asyncio.run(agent.run("Go."))
    assert bodies == [("settings_update", {"theme": "light"})]


def test_blank_argument_text_is_not_json_to_the_sdk():
    bodies: list[Any] = []
    seen: list[Any] = []
    agent = SdkAgent(scripted([[("c1", "settings_get", " "), ("c2", "settings_get", "")], "Done."], seen), tools=[chart_tool("settings_get", bodies)])
    asyncio.run(agent.run("Go."))
    # The empty text is `{}` (`raw_args or '{}'`); white space alone is pydantic-core's error.
    assert bodies == [("settings_get", {})]
    blank = returns(seen[1])[0]
    assert blank.outcome == "retried" and blank.content[0]["type"] == "json_invalid"


def test_text_that_is_not_json_is_answered_with_the_input_quoted():
    seen: list[Any] = []
    agent = SdkAgent(scripted([[("c1", "settings_get", "{'theme': 'dark'}")], "Done."], seen), tools=[chart_tool("settings_get", [])])
    asyncio.run(agent.run("Go."))
    text = returns(seen[1])[0].model_response_str()
    assert text.startswith('{"error":[{"type":"json_invalid","loc":[],"msg":"Invalid JSON: key must be a string')
    assert "\"input\":\"{'theme': 'dark'}\"" in text


def test_json_that_is_not_an_object_fails_the_run_and_every_call_of_its_reply():
    bodies: list[Any] = []
    replies = [[("c1", "settings_get", "[]"), ("c2", "settings_update", '{"theme":"dark"}')], "Done."]
    tools = [chart_tool("settings_get", bodies, wants_a_theme), chart_tool("settings_update", bodies)]
    agent = SdkAgent(scripted(replies, []), tools=tools)
    with pytest.raises(TypeError, match="argument after \\*\\* must be a mapping, not list"):
        asyncio.run(agent.run("Go."))
    assert bodies == []


def test_a_call_id_repeated_in_a_reply_fails_the_run():
    bodies: list[Any] = []
    agent = SdkAgent(scripted([[("c1", "settings_get", "{}"), ("c1", "settings_update", '{"theme":"dark"}')], "Done."], []), tools=[chart_tool("settings_get", bodies), chart_tool("settings_update", bodies)])
    with pytest.raises(UnexpectedModelBehavior, match="duplicate `tool_call_id`s: \\['c1'\\]"):
        asyncio.run(agent.run("Go."))
    assert bodies == []


def test_the_history_sends_the_results_of_a_repeated_call_id_together():
    seen: list[Any] = []
    calls = [ToolCallPart("settings_get", "{}", tool_call_id=call_id) for call_id in ("c1", "c2", "c1")]
    history = [
        ModelRequest.user_text_prompt("Go."),
        ModelResponse(parts=calls),
        ModelRequest(parts=[ToolReturnPart("settings_get", {"n": n}, tool_call_id=call.tool_call_id) for n, call in enumerate(calls)]),
    ]
    agent = SdkAgent(scripted(["Done."], seen), tools=[chart_tool("settings_get", [])])
    asyncio.run(agent.run("Again.", message_history=history))
    # `_order_tool_results_by_call`: each result moves to its call id's first position.
    sent = [part for part in seen[0][2].parts if isinstance(part, ToolReturnPart)]
    assert [(part.tool_call_id, part.content) for part in sent] == [("c1", {"n": 0}), ("c1", {"n": 2}), ("c2", {"n": 1})]


def test_a_sequential_tool_is_a_barrier_inside_its_batch():
    events: list[str] = []

    def slow(name: str, **options: Any) -> Tool[Any]:
        async def body(ctx: Any, **input: Any) -> dict[str, Any]:
            events.append(f"{name} start")
            await asyncio.sleep(0.01)
            events.append(f"{name} end")
            return {}

        return Tool.from_schema(body, name=name, description=name, json_schema={"type": "object"}, takes_ctx=True, **options)

    replies = [[("c1", "write", "{}"), ("c2", "read_a", "{}"), ("c3", "read_b", "{}")], "Done."]
    agent = SdkAgent(scripted(replies, []), tools=[slow("write", sequential=True), slow("read_a"), slow("read_b")])
    asyncio.run(agent.run("Go."))
    # The barrier runs alone; the calls after it run together (R17 wants one at a time).
    assert events == ["write start", "write end", "read_a start", "read_b start", "read_a end", "read_b end"]


def test_the_default_retry_budget_fails_the_run_on_a_second_invalid_call():
    bodies: list[Any] = []
    replies = [
        [("c1", "settings_update", "{}")],
        [("c2", "settings_update", "{}"), ("c3", "settings_get", "{}")],
        "Done.",
    ]
    tools = [chart_tool("settings_update", bodies, wants_a_theme), chart_tool("settings_get", bodies)]
    agent = SdkAgent(scripted(replies, []), tools=tools)
    with pytest.raises(UnexpectedModelBehavior, match="Tool 'settings_update' exceeded max retries count of 1"):
        asyncio.run(agent.run("Go."))
    # The reply's valid call never ran: every call is validated before any runs.
    assert bodies == []
    # With the adapter's budget (`turnsMax`), the run goes on.
    agent = SdkAgent(scripted(replies, []), tools=tools)
    assert asyncio.run(agent.run("Go.", retries={"tools": 8})).output == "Done."
    assert bodies == [("settings_get", {})]


def test_by_default_a_tools_exception_fails_the_whole_run():
    async def failing(ctx: Any, **input: Any) -> Any:
        raise RuntimeError("the chart is gone")

    tool = Tool.from_schema(failing, name="settings_get", description="", json_schema={"type": "object"}, takes_ctx=True)
    agent = SdkAgent(scripted([[("c1", "settings_get", "{}")], "Done."], []), tools=[tool])
    with pytest.raises(RuntimeError, match="the chart is gone"):
        asyncio.run(agent.run("Go."))


def test_by_default_a_reply_without_text_or_calls_is_asked_again():
    seen: list[Any] = []
    agent = SdkAgent(scripted(["", "Done."], seen))
    assert asyncio.run(agent.run("Go.")).output == "Done."
    assert len(seen) == 2
    # With `None` among the outputs (the adapter's `output_type`), the empty reply ends the run.
    seen.clear()
    agent = SdkAgent(scripted(["", "Done."], seen), output_type=[str, type(None)])
    assert asyncio.run(agent.run("Go.")).output is None
    assert len(seen) == 1
