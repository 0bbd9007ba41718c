"""The LangGraph adapter's pure parts (``adapters/python/langgraph-agent.py``): a reply's
calls as LangChain's message (text that is not JSON an ``invalid_tool_calls`` entry, finding
3), results matched to calls by id, ToolNode's own texts as envelopes, and LangChain's run ids
drawn from the seeded stream (P4)."""

import json

import pytest
from conftest import imported

from ward_kit import wire


@pytest.fixture(scope="module")
def adapter():
    yield from imported("langgraph-agent.py", "ward_langgraph_under_test")


def test_a_call_that_is_not_json_becomes_an_invalid_tool_call(adapter):
    calls = [
        {"id": "call_9", "name": "indicators_query", "arguments": "{'symbol': 'AAPL'}"},
        {"id": "call_10", "name": "panes_list", "arguments": ""},
    ]
    message = adapter.ai_message_of({"text": "", "calls": calls}, "ward-0")
    assert [call["id"] for call in message.tool_calls] == ["call_10"]
    assert message.tool_calls[0]["args"] == {}
    assert [call["id"] for call in message.invalid_tool_calls] == ["call_9"]
    assert message.additional_kwargs["ward_indices"] == [1]
    assert message.additional_kwargs["ward_calls"] == calls


def test_results_are_matched_to_calls_by_id_and_name_not_position(adapter):
    calls = [
        {"id": "a", "name": "panes_list", "arguments": "{}"},
        {"id": "b", "name": "panes_list", "arguments": "{}"},
        {"id": "a", "name": "settings_get", "arguments": "{}"},
    ]
    reply = adapter.ai_message_of({"text": "", "calls": calls}, "ward-0")
    results = [
        adapter.ToolMessage(content="{}", tool_call_id="a", name="settings_get"),
        adapter.ToolMessage(content="{}", tool_call_id="b", name="panes_list"),
        adapter.ToolMessage(content="{}", tool_call_id="a", name="panes_list"),
    ]
    assert adapter.result_indices([reply, *results], 0) == [2, 1, 0]


def test_tool_nodes_own_texts_become_envelopes(adapter):
    def envelope(text):
        return adapter.envelope_of(adapter.ToolMessage(content=text, tool_call_id="x", name="foo"), None)

    unknown = envelope("Error: foo is not a valid tool, try one of [panes_list, settings_get].")
    assert unknown["error"]["code"] == "TOOL_NOT_FOUND"
    panic = envelope("Error: BodyPanic('The tool failed unexpectedly.')\n Please fix your mistakes.")
    assert panic["error"]["code"] == "INTERNAL_ERROR"
    body = {"success": True, "data": {"panes": []}, "stateChanged": False}
    assert envelope(json.dumps(body)) == body


def test_run_ids_come_from_the_seeded_stream_and_the_virtual_clock(adapter):
    wire.install()  # conftest gave the real uuid4 back after the import's test
    wire.clock.now_ms = 1234
    wire.seed_random(7)
    first = adapter.lc_uuid.uuid7()
    wire.seed_random(7)
    again = adapter.lc_uuid.uuid7()
    assert first == again
    assert first.version == 7
    assert first.int >> 80 == 1234
    wire.seed_random(8)
    assert adapter.lc_uuid.uuid7() != first
