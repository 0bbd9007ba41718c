//! The model's own knowledge of the catalogue (SPEC §8): which tools write, which the
//! machine calls and how often, the domain's limits and dates, and validators of the
//! published schemas that the model compiles itself.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::Value;
use ward_core::chart::tools::{CatalogueOptions, registry};
use ward_core::registry::Registry;

/// The tools that change the chart (or the world): destructive, refused in read-only runs.
pub const WRITES: &[&str] = &[
    "pane_create",
    "pane_update",
    "pane_remove",
    "pane_move",
    "pane_replace_content",
    "pane_update_content",
    "panes_clear",
    "drawing_create",
    "drawing_update",
    "drawing_delete",
    "drawings_copy",
    "drawings_clear",
    "comparison_create",
    "comparison_remove",
    "comparisons_clear",
    "settings_update",
    "settings_reset",
    "code_interpreter",
];

/// The tools the machine calls, with how often an aimed call picks each.
pub const CALLED: &[(&str, u32)] = &[
    ("pane_create", 3),
    ("pane_update", 2),
    ("pane_remove", 2),
    ("pane_move", 2),
    ("pane_replace_content", 2),
    ("pane_update_content", 2),
    ("panes_clear", 1),
    ("drawing_create", 8),
    ("drawing_update", 3),
    ("drawing_delete", 2),
    ("drawings_copy", 2),
    ("drawings_clear", 1),
    ("comparison_create", 3),
    ("comparison_remove", 2),
    ("comparisons_clear", 1),
    ("settings_update", 2),
    ("settings_reset", 1),
    ("code_interpreter", 1),
    ("panes_list", 1),
    ("indicators_query", 1),
    ("drawings_list", 1),
    ("comparisons_list", 1),
    ("settings_get", 1),
    ("market_bars_query", 1),
    ("web_search", 1),
    ("ask_user", 1),
];

pub const OVERLAYS: &[&str] = &["MA", "EMA", "BOLL"];
pub const OSCILLATORS: &[&str] = &["VOL", "MACD", "RSI", "KDJ", "ATR", "OBV", "CCI"];

/// An indicator's default period; `None` for the ones that take no period.
pub fn default_period(name: &str) -> Option<u32> {
    match name {
        "MA" | "EMA" | "BOLL" => Some(20),
        "RSI" | "ATR" | "CCI" => Some(14),
        "KDJ" => Some(9),
        _ => None,
    }
}

pub fn anchor_count(kind: &str) -> usize {
    match kind {
        "horizontal-line" | "horizontal-ray" | "vertical-line" | "text" => 1,
        "triangle" | "parallel-channel" | "fib-extension" => 3,
        _ => 2,
    }
}

pub const DRAWINGS_PER_PANE_MAX: usize = 50;
pub const PANES_MAX: usize = 8;
pub const INDICATORS_PER_PANE_MAX: usize = 4;
pub const COMPARISONS_MAX: usize = 5;
pub const ARGUMENT_BYTES_MAX: usize = 256 * 1024;
/// The loaded range, as (year, month, day).
pub const FIRST_DAY: (i64, u32, u32) = (2024, 1, 2);
pub const LAST_DAY: (i64, u32, u32) = (2025, 12, 31);

/// Dates inside the loaded range an anchor is aimed at: its ends, a weekend, a leap day.
pub const DATES_IN_RANGE: &[&str] = &[
    "2024-01-02",
    "2025-12-31",
    "2024-06-14",
    "2024-06-15",
    "2025-03-03",
    "2024-02-29",
];

/// Dates just outside the loaded range, and days no calendar has.
pub const DATES_REFUSED: &[&str] = &[
    "2024-01-01",
    "2026-01-01",
    "2025-02-29",
    "2024-04-31",
    "2024-13-01",
    "0000-00-00",
];

/// Argument texts that are not JSON or repeat a key.
pub const BROKEN: &[&str] = &[
    "{",
    "{\"paneId\": }",
    "[1,]",
    "nul",
    "\"unterminated",
    "{} {}",
    "{'paneId': 'main'}",
    "{\"paneId\":\"main\",\"paneId\":\"pane-1\"}",
    "{\"style\":{\"color\":\"red\",\"color\":\"red\"}}",
];

/// Argument texts that mean `{}`.
pub const BLANK: &[&str] = &["", "   ", "\n\t "];

/// Validators of the published schemas, compiled by the model itself.
pub static ORACLES: LazyLock<BTreeMap<String, jsonschema::Validator>> = LazyLock::new(|| {
    REGISTRY
        .tools()
        .map(|tool| {
            let oracle = jsonschema::validator_for(tool.meta().parameters()).expect("compiles");
            (tool.name().to_owned(), oracle)
        })
        .collect()
});

pub static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
    registry(CatalogueOptions {
        code_interpreter: true,
    })
    .expect("the catalogue registers")
});

pub fn parameters(tool: &str) -> Value {
    REGISTRY
        .get(tool)
        .expect("a catalogue tool")
        .meta()
        .parameters()
        .clone()
}
