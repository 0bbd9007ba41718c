#!/usr/bin/env python3
"""Writes SIZE bytes of log-like text to PATH, the same bytes on every run (fixed seed).

    python3 benches/scripts/log.py 1GiB /tmp/big.log           # secrets throughout
    python3 benches/scripts/log.py 1GiB /tmp/clean.log --clean # nothing to redact

Lines are timestamped HTTP, database, storage and auth messages. Without --clean about one
line in five carries something to redact, every rule of SPEC section 7 represented: a
Bearer credential after an Authorization header, sk- keys, GitHub and Slack tokens, AWS key
ids, JWTs, URL passwords, home paths (Unix and Windows), the configured value VALUE (pass it
to `ward redact --secret`) and, now and then, a PEM private key block. With --clean no line
holds anything any rule redacts.
"""

import random
import sys

VALUE = "prov-3f9a1c7e5b2d8046a1c3"
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
B64URL = ALNUM + "-_"
NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"]
LEVELS = ["INFO ", "INFO ", "INFO ", "DEBUG", "WARN ", "ERROR"]
PLAIN = [
    "http: GET /api/v1/charts/{n} 200 {ms} ms",
    "http: POST /api/v1/drawings 201 {ms} ms bytes={n}",
    "scheduler: batch of {k} calls finished in {ms} ms",
    "cache: hit ratio {k}.{n} over the last minute",
    "chart: rendered {n} candles for 600519 weekly in {ms} ms",
    "worker {k}: heartbeat ok, queue depth {n}",
    "db: query market_bars took {ms} ms rows={n}",
    "storage: wrote {n} bytes to bucket charts-archive",
    "auth: session {n} renewed for tenant {k}",
    "indicator: moving average window {k} recomputed",
]


def pick(rng, alphabet, count):
    return "".join(rng.choice(alphabet) for _ in range(count))


def secret_line(rng):
    kind = rng.randrange(11)
    name = rng.choice(NAMES)
    if kind == 0:
        return "auth: header Authorization: Bearer " + pick(rng, ALNUM, 32)
    if kind == 1:
        return "config: loaded OPENAI_API_KEY=sk-proj-" + pick(rng, ALNUM, 40)
    if kind == 2:
        return "git: cloning with ghp_" + pick(rng, ALNUM, 36)
    if kind == 3:
        return "aws: credentials AKIA" + pick(rng, UPPER, 16) + " region eu-west-1"
    if kind == 4:
        return "slack: posting with xoxb-" + pick(rng, ALNUM, 24)
    if kind == 5:
        return ("provider: token eyJhbGciOiJIUzI1NiJ9.eyJ" + pick(rng, B64URL, 24) + "."
                + pick(rng, B64URL, 43))
    if kind == 6:
        return ("db: connecting to postgres://admin:" + pick(rng, ALNUM, 16)
                + "@db.internal:5432/charts")
    if kind == 7:
        return "storage: reading /home/" + name + "/charts/notes-" + str(rng.randrange(99)) + ".csv"
    if kind == 8:
        return "upload: failed for C:\\Users\\" + name.title() + "\\Documents\\chart.png"
    if kind == 9:
        return "provider: request with api_key=" + VALUE + " retried"
    body = "\n".join(pick(rng, ALNUM + "+/", 64) for _ in range(rng.randrange(4, 20)))
    return ("tls: loaded -----BEGIN RSA PRIVATE KEY-----\n" + body
            + "\n-----END RSA PRIVATE KEY-----")


def plain_line(rng):
    return rng.choice(PLAIN).format(n=rng.randrange(100000), ms=rng.randrange(900),
                                    k=rng.randrange(64))


def size_of(text):
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(text[: -len(unit)]) * factor
    return int(text)


def main():
    size, path = size_of(sys.argv[1]), sys.argv[2]
    clean = "--clean" in sys.argv[3:]
    rng = random.Random(18)
    pool = []
    for _ in range(100_000):
        body = plain_line(rng) if clean or rng.randrange(5) else secret_line(rng)
        pool.append(" " + rng.choice(LEVELS) + " " + body + "\n")
    written = 0
    line = 0
    with open(path, "w", encoding="utf-8", newline="") as output:
        while written < size:
            chunk = []
            for index in range(line, line + 10_000):
                stamp = "2026-12-01T%02d:%02d:%02d.%03dZ" % (
                    index // 3_600_000 % 24, index // 60_000 % 60, index // 1000 % 60,
                    index % 1000)
                chunk.append(stamp + pool[(index * 7919) % len(pool)])
            line += 10_000
            text = "".join(chunk)
            text = text[: size - written]
            output.write(text)
            written += len(text.encode("utf-8"))


if __name__ == "__main__":
    main()
