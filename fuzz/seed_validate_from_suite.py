#!/usr/bin/env python3
"""Seeds corpus/validate/ with the JSON Schema Test Suite (R8a, FUZZING.md).

Writes one `validate` input per group of corpus/json-schema-test-suite/tests/{draft7,
draft2020-12} (remote-document groups left out): the selector byte 0xF5, the group's schema
as JSON text, a NUL byte, then the first invalid case's data (the first case when none is
invalid). Draft-7 object schemas get their `$schema`, since the fuzz check reads a schema
without one as draft 2020-12. Files are named by the SHA-1 of their bytes, as libFuzzer
names its own, so running the script again writes nothing new.
"""
import hashlib
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
SUITE = ROOT / "corpus" / "json-schema-test-suite" / "tests"
OUT = ROOT / "corpus" / "validate"
DRAFTS = {"draft7": "http://json-schema.org/draft-07/schema#", "draft2020-12": None}

written = 0
for folder, uri in DRAFTS.items():
    for path in sorted((SUITE / folder).rglob("*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            schema = group["schema"]
            text = json.dumps(schema, ensure_ascii=False)
            if "http://localhost:1234/" in text:
                continue
            if uri and isinstance(schema, dict) and "$schema" not in schema:
                schema = {"$schema": uri, **schema}
            cases = group["tests"]
            case = next((case for case in cases if not case["valid"]), cases[0])
            data = (
                b"\xf5"
                + json.dumps(schema, ensure_ascii=False).encode()
                + b"\0"
                + json.dumps(case["data"], ensure_ascii=False).encode()
            )
            target = OUT / hashlib.sha1(data).hexdigest()
            if not target.exists():
                target.write_bytes(data)
                written += 1
print(f"wrote {written} inputs to {OUT.relative_to(ROOT)}")
