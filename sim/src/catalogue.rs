//! The oracles' own copy of the tool catalogue (SPEC §8) and their own compiled schemas.
//!
//! The oracles never ask the runtime what a tool is: they carry the table of the
//! specification here, written out by hand, and compile the published parameter schemas
//! (what `ward tools --json` prints) with `jsonschema` themselves. They carry the SPEC's
//! default limits too ([`DEFAULT_LIMITS`]), and every other number of the SPEC an oracle
//! judges by (byte and length limits, caps, thresholds: [`ARGUMENT_BYTES_MAX`] and the
//! constants beside it), each beside its rule, so that no oracle writes one as a bare
//! literal. If the runtime's metadata, defaults or numbers drifted from the specification, the
//! oracles (and the guards at the end of this file) would notice.

use std::collections::BTreeMap;

use regex::Regex;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use ward_core::driver::Limits;
use ward_core::registry::Registry;

use crate::scenario::FailureKind;

/// One row of the SPEC §8 table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The tool's name.
    pub name: &'static str,
    /// `read-only` in the table.
    pub read_only: bool,
    /// `sequential` in the table.
    pub sequential: bool,
    /// Registered only when asked for (`code_interpreter`).
    pub opt_in: bool,
}

const fn read(name: &'static str) -> Entry {
    Entry {
        name,
        read_only: true,
        sequential: false,
        opt_in: false,
    }
}

const fn write(name: &'static str) -> Entry {
    Entry {
        name,
        read_only: false,
        sequential: true,
        opt_in: false,
    }
}

/// The SPEC §8 table, with the extras it expects.
pub const TABLE: &[Entry] = &[
    read("panes_list"),
    read("indicators_query"),
    read("instruments_query_name"),
    read("market_bars_query"),
    read("market_timeshare_query"),
    read("market_timeshare_range_query"),
    read("drawings_list"),
    read("comparisons_list"),
    read("settings_get"),
    read("web_search"),
    Entry {
        name: "ask_user",
        read_only: true,
        sequential: true,
        opt_in: false,
    },
    write("pane_create"),
    write("pane_replace_content"),
    write("panes_clear"),
    write("drawing_create"),
    write("drawing_update"),
    write("drawing_delete"),
    write("drawings_copy"),
    write("drawings_clear"),
    write("comparison_create"),
    write("comparisons_clear"),
    write("settings_update"),
    write("settings_reset"),
    write("pane_update"),
    write("pane_remove"),
    write("pane_move"),
    write("pane_update_content"),
    write("comparison_remove"),
    Entry {
        name: "code_interpreter",
        read_only: false,
        sequential: true,
        opt_in: true,
    },
];

/// The table's rows in name order (worked out once).
pub fn by_name() -> &'static [Entry] {
    static SORTED: std::sync::OnceLock<Vec<Entry>> = std::sync::OnceLock::new();
    SORTED.get_or_init(|| {
        let mut rows = TABLE.to_vec();
        rows.sort_unstable_by_key(|entry| entry.name);
        rows
    })
}

/// A limit of a run (R14, R18, R19), in the order the SPEC lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// `turns_max`: model requests that may return tool calls (R14).
    TurnsMax,
    /// `calls_per_batch_max`: calls one model message may carry (R14).
    CallsPerBatchMax,
    /// `provider_timeout_ms`: how long one provider request may take (R19).
    ProviderTimeoutMs,
    /// `inactivity_timeout_ms`: how long a run may go without activity (R19).
    InactivityTimeoutMs,
    /// `provider_retries_max`: retries of a retryable provider error (R18).
    ProviderRetriesMax,
}

impl Limit {
    /// This limit's range in [`LIMIT_RANGES`].
    pub const fn range(self) -> LimitRange {
        LIMIT_RANGES[self as usize]
    }

    /// This limit's value in `limits`.
    pub fn of(self, limits: &Limits) -> u64 {
        match self {
            Limit::TurnsMax => u64::from(limits.turns_max),
            Limit::CallsPerBatchMax => u64::from(limits.calls_per_batch_max),
            Limit::ProviderTimeoutMs => limits.provider_timeout_ms,
            Limit::InactivityTimeoutMs => limits.inactivity_timeout_ms,
            Limit::ProviderRetriesMax => u64::from(limits.provider_retries_max),
        }
    }
}

/// The range a limit must lie in (R14: a limit outside its range is refused at start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitRange {
    /// The limit.
    pub limit: Limit,
    /// Its name in a scenario and in the refusal's message.
    pub name: &'static str,
    /// The smallest value accepted.
    pub low: u64,
    /// The largest value accepted.
    pub high: u64,
}

const fn range(limit: Limit, name: &'static str, low: u64, high: u64) -> LimitRange {
    LimitRange {
        limit,
        name,
        low,
        high,
    }
}

/// The range of each limit of a run. The SPEC states `turns_max`'s (1–20); the others are
/// ward's, from the runtime's documentation: 1–128 calls per batch, a provider timeout of 1 s
/// to 600 s, an inactivity timeout of 1 s to 3600 s, 0–5 retries.
pub const LIMIT_RANGES: [LimitRange; 5] = [
    range(Limit::TurnsMax, "turns_max", 1, 20),
    range(Limit::CallsPerBatchMax, "calls_per_batch_max", 1, 128),
    range(
        Limit::ProviderTimeoutMs,
        "provider_timeout_ms",
        1_000,
        600_000,
    ),
    range(
        Limit::InactivityTimeoutMs,
        "inactivity_timeout_ms",
        1_000,
        3_600_000,
    ),
    range(Limit::ProviderRetriesMax, "provider_retries_max", 0, 5),
];

/// A limit outside its range, as the refusal at start names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfRange {
    /// The limit's range.
    pub range: LimitRange,
    /// The value the run was given.
    pub value: u64,
}

/// The first limit of `limits` outside its range.
pub fn limit_out_of_range(limits: &Limits) -> Option<OutOfRange> {
    LIMIT_RANGES
        .iter()
        .map(|&range| OutOfRange {
            range,
            value: range.limit.of(limits),
        })
        .find(|out| !(out.range.low..=out.range.high).contains(&out.value))
}

/// The table's row for `name`.
pub fn entry(name: &str) -> Option<&'static Entry> {
    TABLE.iter().find(|entry| entry.name == name)
}

/// The default limits of a run as the SPEC states them (R18, R19): at most 8 batches, 32
/// calls per batch, a provider request times out after 60 s, the run after 120 s without
/// activity, and a retryable provider error is retried up to 2 times. A scenario's missing
/// limits mean these.
pub const DEFAULT_LIMITS: Limits = Limits {
    turns_max: 8,
    calls_per_batch_max: 32,
    provider_timeout_ms: 60_000,
    inactivity_timeout_ms: 120_000,
    provider_retries_max: 2,
};

/// R3 and SPEC §4: the largest argument text a call may carry, in bytes (256 KiB); a larger
/// one is refused `PAYLOAD_TOO_LARGE`.
pub const ARGUMENT_BYTES_MAX: usize = 256 * 1024;

/// SPEC §4: the longest call id, in characters; an empty or longer one is refused
/// `INVALID_CALL_ID`.
pub const CALL_ID_CHARS_MAX: usize = 160;

/// R6 and I4: a `TOOL_INPUT_INVALID` lists at most this many field errors (and at least one).
pub const FIELD_ERRORS_MAX: usize = 5;

/// R18: the longest wait before a provider request is retried, `retry-after` included (60 s).
pub const RETRY_WAIT_MAX_MS: u64 = 60_000;

/// R24: the shortest configured secret value, in characters; a run with a shorter one is
/// refused at start.
pub const SECRET_CHARS_MIN: usize = 8;

/// I8 (and R22's fragments): a run of this many characters of a secret, or more, is a leak.
/// The runtime's guard keeps its own length private, so no guard below compares it.
pub const SECRET_RUN_CHARS_MIN: usize = 8;

/// R2: the longest tool name, in characters (`[A-Za-z0-9_-]{1,64}`).
pub const TOOL_NAME_CHARS_MAX: usize = 64;

/// A key family of R26: the prefix, and the fewest key characters after it that its rule
/// redacts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyFamily {
    /// The prefix the key starts with.
    pub prefix: &'static str,
    /// The fewest characters after the prefix.
    pub chars_min: usize,
}

const fn key_family(prefix: &'static str, chars_min: usize) -> KeyFamily {
    KeyFamily { prefix, chars_min }
}

/// R26's key families at their shortest: 12 after `sk-` or `sk_` (the SPEC's), and ward's
/// documented minimums for the others (`core`'s `redact::keys`): 20 after `ghp_` or
/// `github_pat_`, exactly 16 after `AKIA`, 10 after `xoxb-`.
pub const KEY_FAMILIES: [KeyFamily; 6] = [
    key_family("sk-", 12),
    key_family("sk_", 12),
    key_family("ghp_", 20),
    key_family("github_pat_", 20),
    key_family("AKIA", 16),
    key_family("xoxb-", 10),
];

/// I12: a parallel batch is checked when at least this many of its bodies are slow...
pub const PARALLEL_SLOW_BODIES_MIN: usize = 2;

/// I12: ...that is, have a latency of at least this many milliseconds (bodies that take no
/// virtual time look the same run together or one at a time).
pub const PARALLEL_SLOW_LATENCY_MS_MIN: u64 = 1;

/// A provider failure as R21 names it: its code, and whether R18 retries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProviderErrorCode {
    /// The code the run fails with, e.g. `PROVIDER_RATE_LIMITED`.
    pub code: &'static str,
    /// Whether it is retried (R18) before the run fails by it.
    pub retryable: bool,
}

/// R21's table, written from the SPEC: the code of each provider failure a scenario can
/// plant, and whether it is retryable (rate limited, unavailable, timeout and a malformed
/// reply are; authentication, permission and a missing model are not).
pub const fn provider_error(kind: FailureKind) -> ProviderErrorCode {
    let (code, retryable) = match kind {
        FailureKind::Authentication => ("PROVIDER_AUTHENTICATION", false),
        FailureKind::Permission => ("PROVIDER_PERMISSION", false),
        FailureKind::ModelNotFound => ("PROVIDER_MODEL_NOT_FOUND", false),
        FailureKind::RateLimited => ("PROVIDER_RATE_LIMITED", true),
        FailureKind::Unavailable => ("PROVIDER_UNAVAILABLE", true),
        FailureKind::Timeout => ("PROVIDER_TIMEOUT", true),
        FailureKind::MalformedResponse => ("PROVIDER_MALFORMED_RESPONSE", true),
    };
    ProviderErrorCode { code, retryable }
}

/// Whether a registry with or without the opt-in tools registers `name`.
pub fn is_registered(name: &str, code_interpreter: bool) -> bool {
    entry(name).is_some_and(|entry| !entry.opt_in || code_interpreter)
}

/// The patterns of the published schemas, compiled once.
#[derive(Debug, Default)]
pub struct Patterns {
    compiled: BTreeMap<String, Option<Regex>>,
}

impl Patterns {
    /// Compiles every `pattern` of `schema`.
    pub fn add(&mut self, schema: &Value) {
        match schema {
            Value::Object(members) => {
                if let Some(Value::String(pattern)) = members.get("pattern") {
                    self.compiled
                        .entry(pattern.clone())
                        .or_insert_with(|| Regex::new(pattern).ok());
                }
                members.values().for_each(|member| self.add(member));
            }
            Value::Array(items) => items.iter().for_each(|item| self.add(item)),
            _ => {}
        }
    }

    /// The compiled `pattern`, when it compiles.
    pub(crate) fn get(&self, pattern: &str) -> Option<&Regex> {
        self.compiled.get(pattern)?.as_ref()
    }
}

/// The oracles' compiled schemas, by tool name.
pub struct Schemas {
    /// The compiled schema and its published text of every tool of the table the registry
    /// registers (and whose schema compiles).
    compiled: BTreeMap<&'static str, (jsonschema::Validator, String)>,
    /// The published schemas as JSON, for I4's prediction.
    parsed: BTreeMap<&'static str, Value>,
    /// Every `pattern` of the published schemas, compiled.
    patterns: Patterns,
    /// The registered tools of the table, in the registry's order (R4).
    registration_order: Vec<&'static str>,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schemas")
            .field("tools", &self.compiled.len())
            .finish()
    }
}

impl Schemas {
    /// Compiles every published schema of `registry`.
    pub fn compile(registry: &Registry) -> Schemas {
        let compiled: BTreeMap<&'static str, (jsonschema::Validator, String)> = TABLE
            .iter()
            .filter_map(|entry| {
                let parameters = registry.get(entry.name)?.meta().parameters();
                let validator = jsonschema::validator_for(parameters).ok()?;
                Some((entry.name, (validator, parameters.to_string())))
            })
            .collect();
        let mut patterns = Patterns::default();
        let parsed = TABLE
            .iter()
            .filter_map(|entry| {
                let parameters = registry.get(entry.name)?.meta().parameters();
                patterns.add(parameters);
                Some((entry.name, parameters.clone()))
            })
            .collect();
        // The order the registry lists its tools in, as any caller of the registry sees it.
        let registration_order = registry
            .tools()
            .filter_map(|tool| entry(tool.meta().name()).map(|entry| entry.name))
            .collect();
        Schemas {
            compiled,
            parsed,
            patterns,
            registration_order,
        }
    }

    /// The published schema of `tool` as JSON.
    pub fn parsed(&self, tool: &str) -> Option<&Value> {
        self.parsed.get(tool)
    }

    /// The compiled patterns of every published schema.
    pub(crate) fn patterns(&self) -> &Patterns {
        &self.patterns
    }

    /// The registered tools of the table in the registry's order (R4).
    pub fn registration_order(&self) -> &[&'static str] {
        &self.registration_order
    }

    /// Whether `parsed` (argument text as [`strict_parse`] reads it, R6) is a valid input of
    /// `tool`.
    pub fn accepts_parsed(&self, tool: &str, parsed: Option<&Value>) -> bool {
        match (self.compiled.get(tool), parsed) {
            (Some((validator, _)), Some(value)) => validator.is_valid(value),
            _ => false,
        }
    }

    /// Why `tool`'s compiled schema refuses `value`: the first failing keyword and where in
    /// the input it fails; `None` when it accepts it (or the tool is unknown).
    pub fn refusal(&self, tool: &str, value: &Value) -> Option<String> {
        let (validator, _) = self.compiled.get(tool)?;
        let error = validator.iter_errors(value).next()?;
        let at = error.instance_path().as_str();
        let at = if at.is_empty() { "/" } else { at };
        Some(format!("`{}` fails at {at} (R5)", error.kind().keyword()))
    }

    /// The published schema of `tool`, as JSON text (empty for an unknown tool).
    pub fn published(&self, tool: &str) -> &str {
        self.compiled
            .get(tool)
            .map_or("", |(_, text)| text.as_str())
    }
}

/// Parses argument text as R6 reads it: empty text is `{}`; `None` for text that is not JSON or
/// repeats an object key.
pub fn strict_parse(text: &str) -> Option<Value> {
    if text.trim().is_empty() {
        return Some(Value::Object(Map::new()));
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = Strict.deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(value)
}

struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;
    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("JSON")
    }
    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }
    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(value.into())
    }
    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(value.into())
    }
    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut array = Vec::new();
        while let Some(item) = items.next_element_seed(Strict)? {
            array.push(item);
        }
        Ok(Value::Array(array))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = members.next_key::<String>()? {
            let value = members.next_value_seed(Strict)?;
            if object.insert(key, value).is_some() {
                return Err(de::Error::custom("a key repeats"));
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ward_core::chart::tools::{CatalogueOptions, registry};

    #[test]
    fn the_copy_matches_what_the_runtime_registers() {
        // Not an oracle: a guard that the hand-written table and the catalogue agree, so the
        // oracles start from the same facts the specification states.
        let registry = registry(CatalogueOptions {
            code_interpreter: true,
        })
        .unwrap();
        assert_eq!(registry.len(), TABLE.len());
        for row in TABLE {
            let tool = registry.get(row.name).unwrap();
            assert_eq!(tool.meta().is_read_only(), row.read_only, "{}", row.name);
            assert_eq!(tool.meta().is_sequential(), row.sequential, "{}", row.name);
        }
    }

    #[test]
    fn the_default_limits_match_what_the_runtime_uses() {
        // Not an oracle: a guard that the oracle's table and the runtime's defaults agree
        // today, so a campaign's verdicts start from the facts the specification states.
        assert_eq!(Limits::default(), DEFAULT_LIMITS);
    }

    #[test]
    fn the_limit_ranges_match_what_the_runtime_refuses() {
        // A guard like the one above: at each end of each range, the runtime accepts the
        // bound and refuses one past it, as the oracle's table says.
        for LimitRange {
            limit,
            name,
            low,
            high,
        } in LIMIT_RANGES
        {
            let with = |value: u64| {
                let mut limits = DEFAULT_LIMITS;
                match limit {
                    Limit::TurnsMax => limits.turns_max = value as u32,
                    Limit::CallsPerBatchMax => limits.calls_per_batch_max = value as u32,
                    Limit::ProviderTimeoutMs => limits.provider_timeout_ms = value,
                    Limit::InactivityTimeoutMs => limits.inactivity_timeout_ms = value,
                    Limit::ProviderRetriesMax => limits.provider_retries_max = value as u32,
                }
                assert_eq!(limit.of(&limits), value, "{name}");
                assert_eq!(limit.range().name, name);
                limits
            };
            for value in [low, high] {
                assert!(with(value).check().is_ok(), "{name} {value}");
                assert_eq!(limit_out_of_range(&with(value)), None, "{name} {value}");
            }
            for value in [low.checked_sub(1), Some(high + 1)].into_iter().flatten() {
                assert!(with(value).check().is_err(), "{name} {value}");
                assert!(limit_out_of_range(&with(value)).is_some(), "{name} {value}");
            }
        }
    }

    #[test]
    fn the_spec_numbers_match_what_the_runtime_uses() {
        // A guard like the ones above: the oracles' numbers and the runtime's constants agree
        // today, so a change of either is caught here before it changes a verdict.
        assert_eq!(
            ARGUMENT_BYTES_MAX,
            ward_core::validation::ARGUMENT_BYTES_MAX
        );
        assert_eq!(CALL_ID_CHARS_MAX, ward_core::envelope::CALL_ID_CHARS_MAX);
        assert_eq!(FIELD_ERRORS_MAX, ward_core::validation::FIELD_ERRORS_MAX);
        assert_eq!(RETRY_WAIT_MAX_MS, ward_core::driver::BACKOFF_MS_MAX);
        assert_eq!(SECRET_CHARS_MIN, ward_core::redact::SECRET_CHARS_MIN);
        assert_eq!(
            TOOL_NAME_CHARS_MAX,
            ward_core::registry::TOOL_NAME_CHARS_MAX
        );
    }

    #[test]
    fn the_provider_error_codes_match_what_the_runtime_uses() {
        // A guard like the ones above: R21's table as the oracle writes it and the runtime's
        // codes and retry rule agree for every kind, and the table misses none of them.
        use ward_core::provider::ProviderErrorKind;
        let kinds = [
            FailureKind::Authentication,
            FailureKind::Permission,
            FailureKind::ModelNotFound,
            FailureKind::RateLimited,
            FailureKind::Unavailable,
            FailureKind::Timeout,
            FailureKind::MalformedResponse,
        ];
        for kind in kinds {
            let core = kind.to_core();
            assert_eq!(provider_error(kind).code, core.code(), "{kind:?}");
            assert_eq!(
                provider_error(kind).retryable,
                core.is_retryable(),
                "{kind:?}"
            );
        }
        for core in ProviderErrorKind::ALL {
            assert!(kinds.iter().any(|kind| kind.to_core() == core), "{core:?}");
        }
    }

    #[test]
    fn every_row_is_found_by_its_name_and_nothing_else_is() {
        for row in TABLE {
            assert_eq!(entry(row.name), Some(row), "{}", row.name);
        }
        for name in ["", "ask_use", "ask_userr", "Ask_user", "panes_lisT", "zzz"] {
            assert_eq!(entry(name), None, "{name}");
        }
    }

    #[test]
    fn strict_parsing_refuses_repeated_keys() {
        assert_eq!(strict_parse(" "), Some(Value::Object(Map::new())));
        assert!(strict_parse(r#"{"a":1,"a":1}"#).is_none());
        assert!(strict_parse("{").is_none());
        assert!(strict_parse(r#"{"a":[{"b":1},{"b":2}]}"#).is_some());
    }
}
