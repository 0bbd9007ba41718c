"""The durable PydanticAI adapter on DBOS (``adapters/python/pydantic-ai-dbos.py``): SQLite's
``'now'`` on the virtual clock, DBOS launched without a thread, a run cut by a crash taken up
by DBOS's own recovery on the kit's loop (its tool bodies run again: the SDK's default), and
a session's next run given its history from DBOS's store."""

import json
import threading
from typing import Any

import pytest
from conftest import LIMITS, TOOLS, imported

from ward_kit import wire

pytest.importorskip("dbos")


@pytest.fixture(scope="module")
def adapter():
    yield from imported("pydantic-ai-dbos.py", "ward_pydantic_ai_dbos_under_test")


def exchange(server: wire.Server, message: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in server.take(json.dumps(message))]


def kinds(messages: list[dict[str, Any]]) -> list[str]:
    return [message["type"] for message in messages]


def served(adapter: Any, store: str) -> wire.Server:
    wire.install()  # conftest gave the real clocks and ids back after the import's test
    server = wire.Server(adapter.SessionAgent(adapter.PydanticAiDbos()))
    exchange(server, {"type": "hello", "protocol": 2})
    exchange(server, {"type": "reset", "seed": 5, "tools": TOOLS, "storeDir": store})
    return server


def start(server: wire.Server, prompt: str) -> list[dict[str, Any]]:
    message = {"type": "startRun", "session": "s", "prompt": prompt, "readOnly": False, "disabledTools": [], "secrets": [], "limits": LIMITS}
    return exchange(server, message)


READ = [{"id": "c1", "name": "settings_get", "arguments": "{}"}]


def test_ready_declares_the_store_and_whose_rules_they_are(adapter):
    server = wire.Server(adapter.SessionAgent(adapter.PydanticAiDbos()))
    ready = exchange(server, {"type": "hello", "protocol": 2})[0]
    assert ready["runtime"] == {"name": "pydantic-ai-dbos", "version": "2.68.0 (dbos 3.4.0)"}
    assert "dbos 3.4.0" in ready["durable"]["version"] and "SQLAlchemy 2.1.9" in ready["durable"]["version"]
    assert "R33" in ready["claims"] and "R34" in ready["claims"]
    for rule in ("R30", "R31", "R32", "R35"):
        assert rule not in ready["claims"] and ready["notes"][rule]
    assert "by hand at `recover`" in ready["notes"]["R33"]


def test_sqlites_now_reads_the_virtual_clock(adapter):
    wire.install()
    engine = adapter.store_engine(None)
    wire.clock.now_ms = 86_400_000
    with engine.connect() as connection:
        now = connection.execute(adapter.sa.text("SELECT strftime('%s', 'now'), strftime('%Y-%m-%d', 0, 'unixepoch')")).one()
    assert tuple(now) == ("86400", "1970-01-01")


def test_dbos_is_launched_and_runs_a_workflow_without_a_thread(adapter, tmp_path):
    before = threading.active_count()
    server = served(adapter, str(tmp_path))
    opened = start(server, "Show the settings.")
    assert kinds(opened)[-2:] == ["modelRequest", "idle"]
    ended = exchange(server, {"type": "modelReply", "requestId": "r0", "text": "Done.", "calls": [], "atMs": 10})
    assert ended[-2]["type"] == "runEnd" and ended[-2]["outcome"] == "run.completed"
    assert threading.active_count() == before
    assert (tmp_path / "dbos.sqlite").exists()


def test_a_cut_run_is_recovered_on_the_kits_loop_and_its_finished_read_runs_again(adapter, tmp_path):
    server = served(adapter, str(tmp_path))
    start(server, "Show the settings.")
    batch = exchange(server, {"type": "modelReply", "requestId": "r0", "text": "", "calls": READ})
    assert [m for m in batch if m["type"] == "bodyStart"][0]["callId"] == "c1"
    exchange(server, {"type": "bodyResult", "bodyId": "b0", "result": {"data": {"theme": "light"}}, "changed": False})
    # Cut while the second request waits: the first reply is a recorded step, the read is not.
    assert exchange(server, {"type": "crash"})[-1]["type"] == "idle"
    exchange(server, {"type": "reset", "seed": 5, "tools": TOOLS, "storeDir": str(tmp_path)})
    before = threading.active_count()
    recovered = exchange(server, {"type": "recover", "secrets": []})
    # The reply is replayed from the store (no request), the read's body runs again.
    assert "modelRequest" not in kinds(recovered)
    assert [m["callId"] for m in recovered if m["type"] == "bodyStart"] == ["c1"]
    assert "append" not in kinds(recovered)
    after = exchange(server, {"type": "bodyResult", "bodyId": "b0", "result": {"data": {"theme": "light"}}, "changed": False})
    request = [m for m in after if m["type"] == "modelRequest"][0]
    assert [m["role"] for m in request["transcript"]] == ["user", "assistant", "tool"]
    ended = exchange(server, {"type": "modelReply", "requestId": request["requestId"], "text": "Light.", "calls": []})
    assert ended[-2] == {"type": "runEnd", "outcome": "run.completed", "code": None, "batches": 1, "calls": 1}
    assert threading.active_count() == before


def test_the_next_run_has_its_history_from_dbos_after_a_crash(adapter, tmp_path):
    server = served(adapter, str(tmp_path))
    start(server, "First.")
    exchange(server, {"type": "modelReply", "requestId": "r0", "text": "One.", "calls": []})
    exchange(server, {"type": "crash"})
    exchange(server, {"type": "reset", "seed": 5, "tools": TOOLS, "storeDir": str(tmp_path)})
    assert kinds(exchange(server, {"type": "recover", "secrets": []})) == ["idle"]
    request = [m for m in start(server, "Second.") if m["type"] == "modelRequest"][0]
    assert request["transcript"] == [
        {"role": "user", "text": "First."},
        {"role": "assistant", "text": "One.", "calls": []},
        {"role": "user", "text": "Second."},
    ]


def test_the_store_is_the_same_bytes_for_the_same_seed(adapter, tmp_path):
    stores = []
    for name in ("a", "b"):
        directory = tmp_path / name
        server = served(adapter, str(directory))
        start(server, "Show the settings.")
        exchange(server, {"type": "modelReply", "requestId": "r0", "text": "", "calls": READ, "atMs": 5})
        exchange(server, {"type": "crash"})
        exchange(server, {"type": "reset", "seed": 5, "tools": TOOLS, "storeDir": str(directory)})
        exchange(server, {"type": "recover", "secrets": []})
        exchange(server, {"type": "bodyResult", "bodyId": "b0", "result": {"data": {}}, "changed": False, "atMs": 7})
        exchange(server, {"type": "modelReply", "requestId": "r0", "text": "Done.", "calls": [], "atMs": 9})
        stores.append((directory / "dbos.sqlite").read_bytes())
    assert stores[0] == stores[1]
