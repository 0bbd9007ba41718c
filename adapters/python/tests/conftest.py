"""Shared fixtures: a fresh virtual loop and clock for each test, and the real clocks given
back after it, so that tests neither see nor leave the faked ones."""

import asyncio
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from ward_kit import wire

ADAPTERS = Path(__file__).resolve().parent.parent
"""``adapters/python/``: the template and the SDK adapters."""

# A small catalogue and limits for the tests that drive a runtime by hand.
TOOLS = [
    {
        "name": "settings_get",
        "label": "Get settings",
        "description": "Reads the chart settings.",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
        "safety": "read-only",
        "executionMode": "parallel",
    },
    {
        "name": "settings_update",
        "label": "Update settings",
        "description": "Changes the chart settings.",
        "parameters": {
            "type": "object",
            "properties": {"theme": {"enum": ["light", "dark"]}},
            "required": ["theme"],
            "additionalProperties": False,
        },
        "safety": "destructive",
        "executionMode": "sequential",
    },
]
LIMITS = {"turnsMax": 8, "callsPerBatchMax": 32, "providerTimeoutMs": 60_000, "inactivityTimeoutMs": 120_000, "providerRetriesMax": 2}


@pytest.fixture(autouse=True)
def fresh_clock():
    wire.clock.now_ms = 0
    yield
    wire.uninstall()
    asyncio.events._set_running_loop(None)


@pytest.fixture
def loop():
    """A virtual loop entered as the running loop, its clock at 0."""
    virtual = wire.VirtualLoop()
    virtual.enter()
    return virtual


def imported(file: str, name: str) -> Iterator[ModuleType]:
    """An adapter's module (a file of ``adapters/python/``), imported and not run, for a
    fixture to yield from. ``PYTHONHASHSEED`` is ``0`` while it is imported, so that
    ``wire.pin_hash_seed`` does not start pytest again with its output captured away; the
    import installs the faked clocks, which ``fresh_clock`` gives back after each test."""
    spec = importlib.util.spec_from_file_location(name, ADAPTERS / file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    seed = os.environ.get("PYTHONHASHSEED")
    os.environ["PYTHONHASHSEED"] = "0"
    try:
        spec.loader.exec_module(module)
    finally:
        if seed is None:
            del os.environ["PYTHONHASHSEED"]
        else:
            os.environ["PYTHONHASHSEED"] = seed
    yield module
    del sys.modules[name]


@pytest.fixture
def template():
    """The template's module."""
    yield from imported("template.py", "ward_template_under_test")
