"""P14: the kit checks R12's execution half and R13 in ``Run.admit`` only for a runtime that
has no mechanism of its own; for one that has (``refuses_at_execution``), a second check
would hide the runtime's failure, so the kit leaves the call to the runtime."""

from ward_kit.agent import Agent, Run
from ward_kit.runtime import kit_notes

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
