"""The wire: a scripted exchange through the lockstep, as ward plays it, with the template
behind it; and an adapter process that fails exits rather than hangs."""

import json
import subprocess
import sys
from pathlib import Path

from ward_kit import wire
from ward_kit.agent import Agent

from conftest import LIMITS, TOOLS


def start_run(**fields):
    message = {"type": "startRun", "session": "s", "prompt": "Show the settings.", "readOnly": False, "disabledTools": [], "secrets": [], "limits": LIMITS}
    return json.dumps({**message, **fields})


def exchange(server, message):
    return [json.loads(line) for line in server.take(message if isinstance(message, str) else json.dumps(message))]


def test_hello_is_answered_by_ready_alone_and_reset_by_idle(template):
    server = wire.Server(Agent(template.Template()))
    ready = exchange(server, {"type": "hello", "protocol": 2})
    assert [message["type"] for message in ready] == ["ready"]
    assert ready[0]["protocol"] == 2 and ready[0]["runtime"]["name"] == "ward-template-python"
    assert "R15" not in ready[0]["claims"] and "R15" in ready[0]["notes"]
    assert exchange(server, {"type": "reset", "seed": 3, "tools": TOOLS}) == [{"type": "idle", "atMs": 0, "nextTimerMs": None}]


def test_a_reset_without_tools_keeps_the_catalogue_of_the_last_one(template):
    seen = []

    class Watching(template.Template):
        def reset(self, message, agent):
            seen.append(message["tools"])

    server = wire.Server(Agent(Watching()))
    ready = exchange(server, {"type": "hello", "protocol": 2})
    assert ready[0]["catalogueKept"] is True
    idle = [{"type": "idle", "atMs": 0, "nextTimerMs": None}]
    assert exchange(server, {"type": "reset", "seed": 3, "tools": TOOLS}) == idle
    assert exchange(server, {"type": "reset", "seed": 4}) == idle
    # A fresh copy: a runtime that changed what it was given changes no later scenario.
    assert seen[1] == seen[0] == TOOLS and seen[1] is not seen[0]


def test_a_reset_without_tools_and_none_before_it_is_refused(template):
    server = wire.Server(Agent(template.Template()))
    exchange(server, {"type": "hello", "protocol": 2})
    try:
        server.take(json.dumps({"type": "reset", "seed": 3}))
    except ValueError as error:
        assert "no catalogue before it" in str(error)
    else:
        raise AssertionError("a reset without a catalogue to keep was taken")


def test_a_run_in_lockstep(template):
    server = wire.Server(Agent(template.Template()))
    exchange(server, {"type": "hello", "protocol": 2})
    exchange(server, {"type": "reset", "seed": 3, "tools": TOOLS})
    opened = exchange(server, start_run())
    assert [message["type"] for message in opened] == ["event", "append", "event", "modelRequest", "idle"]
    assert opened[3]["requestId"] == "r0" and opened[3]["tools"] == ["settings_get", "settings_update"]
    # The inactivity deadline (120 s) and the request's timeout (60 s) are set: the next is 60 s.
    assert opened[-1] == {"type": "idle", "atMs": 0, "nextTimerMs": 60_000}
    assert exchange(server, {"type": "advance", "toMs": 40}) == [{"type": "idle", "atMs": 40, "nextTimerMs": 60_000}]
    calls = [
        {"id": "c1", "name": "settings_get", "arguments": "{}"},
        {"id": "c2", "name": "settings_update", "arguments": '{"theme":"blue"}'},
    ]
    batch = exchange(server, {"type": "modelReply", "requestId": "r0", "text": "", "calls": calls})
    kinds = [(message["type"], message.get("event", {}).get("type")) for message in batch]
    # A write makes the batch sequential (R17): the second call waits for the first's body.
    assert kinds == [("append", None), ("event", "assistant.message.completed"), ("event", "tool.started"), ("bodyStart", None), ("idle", None)]
    assert batch[3] == {"type": "bodyStart", "bodyId": "b0", "callId": "c1", "index": 0, "tool": "settings_get", "input": {}}
    assert all(message["event"]["timeMs"] == 40 for message in batch if message["type"] == "event")
    result = {"type": "bodyResult", "bodyId": "b0", "result": {"data": {"theme": "light"}}, "changed": False}
    after = exchange(server, {**result, "atMs": 75})
    kinds = [(message["type"], message.get("event", {}).get("type")) for message in after]
    assert kinds == [
        ("event", "tool.finished"),
        ("event", "tool.started"),
        ("event", "tool.finished"),
        ("append", None),
        ("append", None),
        ("modelRequest", None),
        ("idle", None),
    ]
    invalid = after[2]["event"]["result"]["error"]
    assert invalid["code"] == "TOOL_INPUT_INVALID"
    assert invalid["fields"] == [{"path": "/theme", "message": "must be equal to one of the allowed values"}]
    assert after[0]["event"]["timeMs"] == 75 and after[5]["requestId"] == "r1"
    ended = exchange(server, {"type": "modelReply", "requestId": "r1", "text": "Done.", "calls": [], "atMs": 90})
    assert ended[-2] == {"type": "runEnd", "outcome": "run.completed", "code": None, "batches": 1, "calls": 2}
    assert ended[-1] == {"type": "idle", "atMs": 90, "nextTimerMs": None}


def test_a_request_times_out_on_wards_clock(template):
    server = wire.Server(Agent(template.Template()))
    exchange(server, {"type": "hello", "protocol": 2})
    exchange(server, {"type": "reset", "seed": 0, "tools": TOOLS})
    exchange(server, start_run(limits={**LIMITS, "providerTimeoutMs": 1_000}))
    assert exchange(server, {"type": "advance", "toMs": 5_000}) == [
        {"type": "modelCancel", "requestId": "r0"},
        {"type": "event", "event": {"seq": 2, "timeMs": 1_000, "type": "run.failed", "error": {"code": "PROVIDER_TIMEOUT", "message": "The provider did not answer in time.", "retryable": True, "recommendedAction": "Retry the request later."}}},
        {"type": "runEnd", "outcome": "run.failed", "code": "PROVIDER_TIMEOUT", "batches": 0, "calls": 0},
        {"type": "idle", "atMs": 1_000, "nextTimerMs": None},
    ]


ADAPTER = Path(__file__).resolve().parent.parent / "template.py"


def test_the_adapter_process_exits_on_a_line_it_cannot_read():
    process = subprocess.run([sys.executable, str(ADAPTER)], input=b"not json\n", capture_output=True, timeout=60)
    assert process.returncode == 70 and b"JSONDecodeError" in process.stderr


def test_the_adapter_process_exits_when_ward_closes_its_input():
    hello = json.dumps({"type": "hello", "protocol": 2}) + "\n"
    process = subprocess.run([sys.executable, str(ADAPTER)], input=hello.encode(), capture_output=True, timeout=60)
    assert process.returncode == 0
    assert [json.loads(line)["type"] for line in process.stdout.splitlines()] == ["ready"]
