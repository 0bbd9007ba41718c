//! Every finding about PydanticAI made durable with DBOS (`findings/pydantic-ai-dbos.md`,
//! `pydantic-ai-slim` 2.68.0 with `dbos` 3.4.0 on SQLite) replays: its committed crash plan
//! file, run through `ward replay --crashes --runtime` against
//! `adapters/python/pydantic-ai-dbos.py`, breaks the invariant the finding names, with the
//! explanation it quotes.
//!
//! The adapter needs Python and its environment (`uv sync --project adapters/python
//! --frozen`, the README's setup command). Without them each test says why it did not run and
//! passes: ward's own tests never depend on Python.

mod common;

use common::replay::{Claim, replays_crash};

/// Finding 1: DBOS recovers a run's workflow by running it again from its start; the model's
/// replies come back from their steps, but a function tool is not a step, so a write that
/// finished before the crash is applied again and its second result goes to the model.
#[test]
fn pydantic_ai_dbos_a_finished_write_runs_again_after_a_crash() {
    let file = "findings/pydantic-ai-dbos/finished-write-runs-again.crash.json";
    replays_crash(
        "pydantic-ai-dbos",
        file,
        Claim::Claimed,
        "I19",
        r#"turn 1 of run 0 (process 1): message 2 of the transcript is {"role":"tool","callId":"call_13","name":"drawing_create","result":{"success":true,"data":{"drawing":{"anchors":[{"price":17012.0,"tradingDate":"2025-12-31"}],"id":"drawing-4""#,
    );
    replays_crash(
        "pydantic-ai-dbos",
        file,
        Claim::NotClaimed,
        "I15",
        "after 1 crash(es) the chart holds 2 drawing(s) and went through 2 change(s), without crashes 1 and 1",
    );
}

/// Finding 2: DBOS's serializer writes base64 of a pickle, so the prompt's credential, which
/// PydanticAI does not redact (R15, not claimed), is at rest one decoding away; I18 reads a
/// store's base64 runs decoded. The plan of finding 1 has a planted credential.
#[test]
fn pydantic_ai_dbos_keeps_the_prompt_s_credential_at_rest_base64_encoded() {
    replays_crash(
        "pydantic-ai-dbos",
        "findings/pydantic-ai-dbos/finished-write-runs-again.crash.json",
        Claim::NotClaimed,
        "I18",
        r#"write 0 to the disk (without crashes) holds 8 characters of the planted credential "pkuaT4pCRg6CKcix4PAhdA3yfpcg", base64-encoded"#,
    );
}
