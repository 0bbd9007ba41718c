"""P14: the kit checks R12's execution half and R13 in ``Run.admit`` only for a runtime that
has no mechanism of its own; for one that has (``refuses_at_execution``), a second check
would hide the runtime's failure, so the kit leaves the call to the runtime."""

from ward_kit.agent import Agent, Run
from ward_kit.runtime import Guard, arguments_check, kit_notes

TOOLS = [
    {"name": "get_chart", "description": "", "parameters": {"type": "object"}, "safety": "read", "executionMode": "parallel"},
    {"name": "draw_line", "description": "", "parameters": {"type": "object"}, "safety": "destructive", "executionMode": "parallel"},
]
LIMITS = {"turnsMax": 4, "callsPerBatchMax": 8, "inactivityTimeoutMs": 60000, "providerTimeoutMs": 30000, "providerRetriesMax": 2}


class Runtime:
    runtime = {"name": "test", "version": "0"}
    claims: list[str] = []
    notes: dict[str, str] = {}

    def __init__(self, refuses: bool) -> None:
        if refuses:
            self.refuses_at_execution = True


def refusal_of(runtime: Runtime, name: str, read_only: bool, disabled: list[str]):
    agent = Agent(runtime)
    agent.reset({"type": "reset", "seed": 0, "tools": TOOLS}, lambda record: None)
    run = Run(agent, {"prompt": "p", "readOnly": read_only, "disabledTools": disabled, "secrets": [], "limits": LIMITS, "session": "s"})
    call = {"id": "call_1", "name": name, "arguments": "{}"}
    run.replied({"text": "", "calls": [call]})
    return run.refusal(0, call)


def test_the_kit_refuses_a_call_the_run_does_not_allow_for_a_runtime_without_a_mechanism():
    read_only = refusal_of(Runtime(refuses=False), "draw_line", True, [])
    switched_off = refusal_of(Runtime(refuses=False), "get_chart", False, ["get_chart"])
    assert read_only["error"]["code"] == "TOOL_NOT_ALLOWED"
    assert switched_off["error"]["code"] == "TOOL_NOT_ALLOWED"


def test_the_kit_leaves_it_to_a_runtime_that_refuses_at_execution():
    assert refusal_of(Runtime(refuses=True), "draw_line", True, []) is None
    assert refusal_of(Runtime(refuses=True), "get_chart", False, ["get_chart"]) is None
    # The kit's other checks still run: the tool's existence.
    assert refusal_of(Runtime(refuses=True), "no_such_tool", False, [])["error"]["code"] == "TOOL_NOT_FOUND"


def test_the_kit_notes_say_whose_execution_check_it_is():
    assert "the kit's (Run.admit" in kit_notes(None)["R12"]
    sdk = kit_notes("a guardrail")
    assert "the SDK's (a guardrail); the kit does not check it a second time" in sdk["R12"]
    assert "the SDK's (a guardrail)" in sdk["R13"]
    assert set(sdk) == {"R1", "R3", "R4", "R11", "R12", "R13", "R14", "R19", "R20", "R22", "R23"}


def test_a_call_past_the_batch_cap_gets_too_many_calls_and_no_start_whatever_else_is_wrong(loop):
    # R19: past the cap a call is never taken up, so none of R3's refusals is its answer
    # (here a repeated id and an unknown tool), and it has no `tool.started` (PROTOCOL.md).
    records = []
    agent = Agent(Runtime(refuses=False))
    agent.reset({"type": "reset", "seed": 0, "tools": TOOLS}, records.append)
    limits = {**LIMITS, "callsPerBatchMax": 1}
    run = Run(agent, {"prompt": "p", "readOnly": False, "disabledTools": [], "secrets": [], "limits": limits, "session": "s"})
    calls = [{"id": "call_1", "name": "get_chart", "arguments": "{}"}, {"id": "call_1", "name": "no_such_tool", "arguments": "{}"}]
    run.replied({"text": "", "calls": calls})
    assert run.admit(0) is None
    assert run.admit(1)["error"]["code"] == "TOO_MANY_CALLS"
    events = [(record["event"]["type"], record["event"]["index"]) for record in records if record.get("type") == "event" and record["event"]["type"].startswith("tool.")]
    assert events == [("tool.started", 0), ("tool.finished", 1)]
    if run.deadline is not None:
        run.deadline.cancel()


def test_keys_that_guard_to_the_same_text_keep_every_member():
    # R22 as ward's core keeps it: in key order, the later key becomes `<text> (2)`.
    guard = Guard(["Zq81xLp0Wm3vB7"])
    value = {"[REDACTED]": 1, "Zq81xLp0Wm3vB7": 2, "Zq81xLp0 end": 3}
    assert guard.value(value) == {"[REDACTED]": 2, "[REDACTED] (2)": 1, "[REDACTED] end": 3}


def test_a_decoded_secret_is_read_only_in_text_that_parses_as_r6_reads_it():
    # R3's order: the argument text is parsed before its decoded strings are read; text that
    # repeats a key is R6's to refuse (TOOL_INPUT_INVALID), so no SECRET_IN_INPUT for it.
    guard = Guard(["U9SpenxsANi sk-Y9H"])

    def code(text: str) -> str | None:
        refused = arguments_check(text, guard)
        return None if refused is None else refused["error"]["code"]

    assert code('{"q":"\\u00559SpenxsANi sk-Y9H"}') == "SECRET_IN_INPUT"
    assert code('{"a":{"q":"\\u00559SpenxsANi sk-Y9H", "q" :1}}') is None
    assert code('{"\\u0071":"\\u00559SpenxsANi sk-Y9H","q":1}') is None
    assert code('{"q":"\\u00559SpenxsANi sk-Y9H","r":{"q":1},"s":["q","q"]}') == "SECRET_IN_INPUT"
    # The raw text's check comes first, repeats or not.
    assert code('{"q":"U9SpenxsANi sk-Y9H","q":1}') == "SECRET_IN_INPUT"
