"""The OpenAI Agents adapter's pure parts (``adapters/python/openai-agents.py``): R6's reading
of the argument text, which the adapter keeps because the Python SDK hands a FunctionTool
built from a JSON Schema the raw text, and the conversions between the SDK's input items and
the protocol's transcript."""

import json

import pytest
from conftest import imported

from ward_kit.agent import validator_of


@pytest.fixture(scope="module")
def adapter():
    yield from imported("openai-agents.py", "ward_openai_agents_under_test")


def test_blank_text_is_the_empty_object(adapter):
    assert adapter.parse_arguments("") == ({}, None)
    assert adapter.parse_arguments(" \t\n\u3000\u00a0") == ({}, None)


def test_json_is_read_strictly(adapter):
    assert adapter.parse_arguments('{"a": [1, 2.5, -3e2, true, null, "x"]}') == ({"a": [1, 2.5, -300.0, True, None, "x"]}, None)
    for text, reason in [
        ("NaN", "expected value"),
        ('{"a": Infinity}', "expected value"),
        ('{"a": 1e999}', "number out of range"),
        ('{"a": 1,}', "trailing comma"),
        ("[1,]", "trailing comma"),
        ("{a: 1}", "key must be a string"),
        ('{"a" 1}', "expected `:`"),
        ('{"a": 1 "b": 2}', "expected `,` or `}`"),
        ("[1 2]", "expected `,` or `]`"),
        ("{} x", "trailing characters"),
        ('{"a": "b', "EOF while parsing a string"),
        ('{"a": 1', "EOF while parsing an object"),
        ("[1", "EOF while parsing a list"),
        ('{"a": ', "EOF while parsing a value"),
        ('{"a": "\\x"}', "invalid escape"),
        ('{"a": "\x01"}', "control character (\\u0000-\\u001F) found while parsing a string"),
    ]:
        value, error = adapter.parse_arguments(text)
        assert value is None and error["path"] == "/", text
        assert error["message"].startswith(f"is not valid JSON: {reason} (line "), (text, error)


def test_nesting_is_bounded_as_wards_parser_bounds_it(adapter):
    assert adapter.parse_arguments("[" * 128 + "]" * 128)[1] is None
    _, error = adapter.parse_arguments("[" * 129 + "]" * 129)
    assert error["message"].startswith("is not valid JSON: recursion limit exceeded")


def test_a_repeated_key_is_refused_at_its_objects_path_with_line_and_byte_column(adapter):
    assert adapter.parse_arguments('{"limit":60,"limit":60,"period":"weekly"}') == (
        None,
        {"path": "/", "message": "repeats a key (line 1, column 19)"},
    )
    # Columns count UTF-8 bytes, as ward's parser does.
    assert adapter.parse_arguments('{"名前":1,"名前":2}')[1] == {"path": "/", "message": "repeats a key (line 1, column 20)"}
    # The object's own path, with JSON Pointer escapes; the first repeat in the text.
    text = '{"a/b": [{"x": 1}, {"y": 1,\n "y": 2}], "a/b": 3}'
    assert adapter.parse_arguments(text)[1] == {"path": "/a~1b/1", "message": "repeats a key (line 2, column 4)"}


def test_a_repeat_in_text_that_stops_being_json_is_text_that_is_not_json(adapter):
    _, error = adapter.parse_arguments('{"a": 1, "a": 2')
    assert error["path"] == "/" and error["message"].startswith("is not valid JSON: EOF while parsing an object")


def test_checked_gives_the_envelope_of_r6(adapter):
    validator = validator_of(
        {
            "type": "object",
            "properties": {"symbol": {"type": "string"}, "period": {"enum": ["daily", "weekly"]}},
            "required": ["symbol", "period"],
            "additionalProperties": False,
        }
    )
    assert adapter.checked(validator, '{"symbol":"AAPL","period":"daily"}') == ({"symbol": "AAPL", "period": "daily"}, None)
    _, envelope = adapter.checked(validator, '{"symbol":"sk-secret-value","extra":1}')
    error = envelope["error"]
    assert envelope["success"] is False and envelope["stateChanged"] is False
    assert error["code"] == "TOOL_INPUT_INVALID" and error["recommendedAction"] == "Correct the invalid field and retry the request."
    # jsonschema's keyword order (R8, not claimed), rendered by the kit.
    assert error["fields"] == [
        {"path": "/", "message": "missing required property 'period'"},
        {"path": "/extra", "message": "is not an allowed property"},
    ]
    assert error["message"] == "The tool input is invalid: /: missing required property 'period'; /extra: is not an allowed property"
    assert "sk-secret-value" not in json.dumps(envelope)
    _, envelope = adapter.checked(validator, '{"symbol":"A","symbol":"B","period":"daily"}')
    assert envelope["error"]["message"] == "The tool input is invalid: /: repeats a key (line 1, column 22)"


def test_history_becomes_input_items_and_comes_back_as_the_same_transcript(adapter):
    ok = {"success": True, "data": {"panes": []}, "stateChanged": False}
    refused = {"success": False, "error": {"code": "TOOL_NOT_FOUND", "message": "m", "retryable": True, "recommendedAction": "a"}, "stateChanged": False}
    history = [
        {"role": "user", "text": "List the panes."},
        {"role": "assistant", "text": "Looking.", "calls": [{"id": "call_9", "name": "panes_list", "arguments": "{}"}, {"id": "call_10", "name": "nope", "arguments": ""}]},
        {"role": "tool", "callId": "call_9", "name": "panes_list", "result": ok},
        {"role": "tool", "callId": "call_10", "name": "nope", "result": refused},
        {"role": "assistant", "text": "", "calls": []},
        {"role": "user", "text": "Thanks."},
    ]
    assert adapter.transcript_of(adapter.items_of(history)) == history


def test_a_tool_output_that_is_not_an_envelope_reads_as_an_internal_error(adapter):
    items = [
        {"type": "function_call", "call_id": "c", "name": "panes_list", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "An error occurred while running the tool. Please try again."},
    ]
    tool = adapter.transcript_of(items)[1]
    assert tool["name"] == "panes_list"
    assert tool["result"]["error"]["code"] == "INTERNAL_ERROR"
    assert tool["result"]["error"]["message"] == "An error occurred while running the tool. Please try again."
