"""Seeded randomness (P4): the same `reset.seed` gives the same ids and draws, in any process."""

import json
import random
import uuid

from ward_kit import wire


class Drawing:
    """A runtime that draws ids and numbers at every reset, as an SDK's ids would."""

    def __init__(self):
        self.draws = []

    def ready(self):
        return {"runtime": {"name": "drawing", "version": "0"}, "claims": []}

    def reset(self, message, out):
        self.draws.append((str(uuid.uuid4()), str(uuid.uuid4()), random.random()))

    def handle(self, message):
        pass


def reset(server, seed):
    server.take(json.dumps({"type": "reset", "seed": seed, "tools": []}))


def test_the_same_seed_gives_the_same_ids():
    wire.install()
    runtime = Drawing()
    server = wire.Server(runtime)
    reset(server, 7)
    reset(server, 8)
    reset(server, 7)
    first, other, again = runtime.draws
    assert first == again
    assert first != other
    assert uuid.UUID(first[0]).version == 4 and first[0] != first[1]


def test_drawing_ids_changes_no_draw_of_random():
    wire.install()
    wire.seed_random(11)
    plain = random.random()
    wire.seed_random(11)
    uuid.uuid4()
    assert random.random() == plain


def test_a_seed_past_64_bits_is_taken_as_ward_sends_it():
    wire.seed_random(2**64 - 1)
    assert 0 <= random.random() < 1
