"""Shared fixtures: a fresh virtual loop and clock for each test, and the real clocks given
back after it, so that tests neither see nor leave the faked ones."""

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

from ward_kit import wire

TEMPLATE = Path(__file__).resolve().parent.parent / "template.py"


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


@pytest.fixture
def template():
    """The template's module (its import installs the faked clocks; the fixture above gives
    the real ones back)."""
    name = "ward_template_under_test"
    spec = importlib.util.spec_from_file_location(name, TEMPLATE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[name]
