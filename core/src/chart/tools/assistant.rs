//! Tools that reach beyond the chart: `web_search` and `ask_user` (read-only), and the
//! opt-in `code_interpreter` (destructive, sequential, simulated).
//!
//! Nothing here touches a network or runs code. `web_search` answers from a fixed set of
//! sources chosen by a hash of the query, so a seed always sees the same results;
//! `code_interpreter` reports that it is simulated and that its policy asks for a disabled
//! network, as the seed runtime's policy always does.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{data, input, object, reader, spec};
use crate::envelope::ToolError;
use crate::registry::{RegistryBuilder, RegistryError};
use crate::tool::{ExecutionMode, Safety, ToolBody, ToolContext};

/// The longest question `ask_user` accepts.
const QUESTION_CHARS_MAX: usize = 2000;
/// The most answer options `ask_user` offers.
const OPTIONS_MAX: usize = 8;
/// The most results `web_search` returns.
const SEARCH_RESULTS_MAX: usize = 10;
/// The longest program `code_interpreter` accepts.
const CODE_CHARS_MAX: usize = 20_000;

const SOURCES: &[(&str, &str, &str)] = &[
    (
        "Market overview",
        "https://news.example.com/markets/overview",
        "Index levels, sector moves and the session's most traded names.",
    ),
    (
        "Earnings calendar",
        "https://data.example.com/earnings",
        "Upcoming reporting dates with consensus estimates.",
    ),
    (
        "Technical analysis primer",
        "https://learn.example.com/technical-analysis",
        "Trend lines, channels and Fibonacci retracements explained.",
    ),
    (
        "Central bank watch",
        "https://news.example.com/rates",
        "Policy rate decisions and what the statements said.",
    ),
    (
        "Sector rotation report",
        "https://research.example.com/sectors",
        "Relative strength of sectors over the last quarter.",
    ),
    (
        "Company filings",
        "https://filings.example.com/search",
        "Annual and interim reports, announcements and disclosures.",
    ),
    (
        "Volatility dashboard",
        "https://data.example.com/volatility",
        "Implied and realised volatility across indices.",
    ),
    (
        "Commodities roundup",
        "https://news.example.com/commodities",
        "Oil, metals and agricultural prices this week.",
    ),
    (
        "Currency monitor",
        "https://data.example.com/fx",
        "Major and emerging-market exchange rates.",
    ),
    (
        "Analyst ratings",
        "https://research.example.com/ratings",
        "Upgrades, downgrades and target price changes.",
    ),
    (
        "Glossary",
        "https://learn.example.com/glossary",
        "Definitions of common charting and market terms.",
    ),
    (
        "Exchange notices",
        "https://exchange.example.com/notices",
        "Trading halts, suspensions and rule changes.",
    ),
];

pub(super) fn register_reads(builder: &mut RegistryBuilder) -> Result<(), RegistryError> {
    reader(
        builder,
        "web_search",
        "Search the web",
        "Searches the web and returns titles, addresses and snippets.",
        object(
            json!({
                "query": {"type": "string", "minLength": 1, "maxLength": 500},
                "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_RESULTS_MAX}
            }),
            &["query"],
        ),
        web_search,
    )?;
    let ask_user = spec(
        "ask_user",
        "Ask the user",
        Safety::ReadOnly,
        ExecutionMode::Sequential,
        "Asks the user a question with 1 to 8 answer options and waits for the answer.",
        object(
            json!({
                "question": {"type": "string", "minLength": 1, "maxLength": QUESTION_CHARS_MAX},
                "options": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": OPTIONS_MAX,
                    "items": {"type": "string", "minLength": 1, "maxLength": 200}
                }
            }),
            &["question", "options"],
        ),
    );
    builder.register(ask_user, AskUser)
}

pub(super) fn register_code_interpreter(
    builder: &mut RegistryBuilder,
) -> Result<(), RegistryError> {
    let code_interpreter_spec = spec(
        "code_interpreter",
        "Run code",
        Safety::Destructive,
        ExecutionMode::Sequential,
        "Runs a Python program in an isolated sandbox whose policy disables the network. In ward it is simulated: no code runs.",
        object(
            json!({
                "language": {"enum": ["python"]},
                "code": {"type": "string", "minLength": 1, "maxLength": CODE_CHARS_MAX},
                "timeoutSeconds": {"type": "integer", "minimum": 1, "maximum": 60}
            }),
            &["language", "code"],
        ),
    );
    builder.register_outside_effect(code_interpreter_spec, code_interpreter as super::Body)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WebSearch {
    query: String,
    limit: Option<usize>,
}

fn web_search(_context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: WebSearch = input(raw)?;
    let hash = request
        .query
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    let first = (hash % SOURCES.len() as u64) as usize;
    let results: Vec<Value> = (0..request.limit.unwrap_or(5).min(SEARCH_RESULTS_MAX))
        .map(|offset| {
            let (title, url, snippet) = SOURCES[(first + offset) % SOURCES.len()];
            json!({"title": title, "url": url, "snippet": snippet})
        })
        .collect();
    Ok(data([("results", Value::Array(results))]))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Question {
    question: String,
    options: Vec<String>,
}

/// `ask_user`: waits for the user; the run's inactivity deadline is paused meanwhile.
struct AskUser;

impl ToolBody for AskUser {
    fn call<'a>(
        &'a self,
        context: &'a ToolContext,
        raw: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let request: Question = input(raw)?;
            match context.ask_user(&request.question, &request.options).await {
                Some(answer) => Ok(json!({"answer": answer})),
                None => Err(ToolError {
                    retryable: false,
                    ..ToolError::domain(
                        "USER_UNAVAILABLE",
                        "No user answered the question.",
                        "Continue without the answer, or end the run and ask in your reply.",
                    )
                }),
            }
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Program {
    language: String,
    code: String,
    timeout_seconds: Option<u32>,
}

fn code_interpreter(_context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let program: Program = input(raw)?;
    Ok(json!({
        "status": "simulated",
        "language": program.language,
        "exitCode": 0,
        "stdout": "",
        "stderr": "",
        "codeChars": program.code.chars().count(),
        "timeoutSeconds": program.timeout_seconds.unwrap_or(30),
        "networkPolicy": "disabled",
        "note": "No code ran: the code interpreter is simulated."
    }))
}
