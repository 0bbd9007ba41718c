//! The chart domain's tools (SPEC §8): the catalogue table, strict schemas, domain errors
//! with concrete hints, rollback of writes that fail half-way, and exact undo.

use serde_json::{Value, json};
use ward_core::chart::tools::{CatalogueOptions, registry};
use ward_core::chart::{DRAWINGS_PER_PANE_MAX, SharedChart};
use ward_core::envelope::ToolResult;
use ward_core::guard::SecretGuard;
use ward_core::policy::RunPolicy;
use ward_core::registry::Registry;
use ward_core::tool::{ExecutionMode, Safety, ToolCall};

struct Chart {
    registry: Registry,
    chart: SharedChart,
}

impl Chart {
    fn new() -> Chart {
        Chart {
            registry: registry(CatalogueOptions {
                code_interpreter: true,
            })
            .unwrap(),
            chart: SharedChart::new(42),
        }
    }

    fn call(&self, name: &str, arguments: Value) -> ToolResult {
        let call = ToolCall {
            id: "call-1".into(),
            name: name.into(),
            arguments: arguments.to_string(),
        };
        futures::executor::block_on(self.registry.execute_standalone(
            &RunPolicy::normal(),
            &SecretGuard::default(),
            &self.chart,
            &call,
        ))
    }

    fn ok(&self, name: &str, arguments: Value) -> Value {
        let result = self.call(name, arguments);
        match result.outcome {
            ward_core::envelope::Outcome::Success(data) => Value::clone(&data),
            ward_core::envelope::Outcome::Failure(error) => panic!("{name} failed: {error:?}"),
        }
    }

    fn error(&self, name: &str, arguments: Value) -> ward_core::envelope::ToolError {
        let result = self.call(name, arguments);
        assert!(!result.state_changed);
        result
            .error()
            .cloned()
            .unwrap_or_else(|| panic!("{name} succeeded"))
    }
}

#[test]
fn the_catalogue_matches_the_spec_table() {
    let read_parallel = [
        "panes_list",
        "indicators_query",
        "instruments_query_name",
        "market_bars_query",
        "market_timeshare_query",
        "market_timeshare_range_query",
        "drawings_list",
        "comparisons_list",
        "settings_get",
        "web_search",
    ];
    let write_sequential = [
        "pane_create",
        "pane_replace_content",
        "panes_clear",
        "drawing_create",
        "drawing_update",
        "drawing_delete",
        "drawings_copy",
        "drawings_clear",
        "comparison_create",
        "comparisons_clear",
        "settings_update",
        "settings_reset",
        "pane_update",
        "pane_remove",
        "pane_move",
        "pane_update_content",
        "comparison_remove",
        "code_interpreter",
    ];
    let registry = registry(CatalogueOptions {
        code_interpreter: true,
    })
    .unwrap();
    let table = read_parallel
        .iter()
        .map(|name| (name, Safety::ReadOnly, ExecutionMode::Parallel))
        .chain([(&"ask_user", Safety::ReadOnly, ExecutionMode::Sequential)])
        .chain(
            write_sequential
                .iter()
                .map(|name| (name, Safety::Destructive, ExecutionMode::Sequential)),
        );
    let mut count = 0;
    for (name, safety, mode) in table {
        let tool = registry
            .get(name)
            .unwrap_or_else(|| panic!("{name} is missing"));
        assert_eq!(
            (tool.meta().safety(), tool.meta().execution_mode()),
            (safety, mode),
            "{name}"
        );
        count += 1;
    }
    assert_eq!(registry.len(), count);
    assert!(
        self::registry(CatalogueOptions::default())
            .unwrap()
            .get("code_interpreter")
            .is_none()
    );
}

#[test]
fn every_schema_is_strict_and_every_tool_survives_an_empty_input() {
    let chart = Chart::new();
    for tool in chart.registry.tools() {
        assert_eq!(
            tool.meta().parameters()["additionalProperties"],
            json!(false),
            "{}",
            tool.name()
        );
        let result = chart.call(tool.name(), json!({}));
        let code = result.error_code().unwrap_or("OK");
        assert!(
            ["OK", "TOOL_INPUT_INVALID", "USER_UNAVAILABLE"].contains(&code),
            "{}: {code}",
            tool.name()
        );
        let wrong = chart.call(tool.name(), json!({"unexpected": true}));
        assert_eq!(
            wrong.error_code(),
            Some("TOOL_INPUT_INVALID"),
            "{}",
            tool.name()
        );
    }
}

#[test]
fn schemas_carry_the_spec_bounds() {
    let chart = Chart::new();
    let bars = |limit: i64| {
        chart.call(
            "market_bars_query",
            json!({"symbol": "AAPL", "period": "daily", "limit": limit}),
        )
    };
    assert!(bars(798).is_success());
    assert!(!bars(799).is_success());
    assert!(!bars(0).is_success());
    assert_eq!(
        chart.ok(
            "market_bars_query",
            json!({"symbol": "AAPL", "period": "daily", "limit": 798})
        )["bars"]
            .as_array()
            .unwrap()
            .len(),
        522,
        "two years of daily bars are loaded"
    );
    assert!(
        !chart
            .call("web_search", json!({"query": "x".repeat(501)}))
            .is_success()
    );
    assert!(
        !chart
            .call("web_search", json!({"query": "x", "limit": 11}))
            .is_success()
    );
    assert!(
        !chart
            .call("ask_user", json!({"question": "q", "options": []}))
            .is_success()
    );
    let nine: Vec<String> = (0..9).map(|index| index.to_string()).collect();
    assert!(
        !chart
            .call("ask_user", json!({"question": "q", "options": nine}))
            .is_success()
    );
    assert!(
        !chart
            .call(
                "market_bars_query",
                json!({"symbol": "", "period": "daily"})
            )
            .is_success()
    );
    assert!(
        !chart
            .call(
                "market_bars_query",
                json!({"symbol": "AAPL", "period": "2h"})
            )
            .is_success()
    );
}

#[test]
fn drawing_errors_carry_concrete_hints() {
    let chart = Chart::new();
    let missing_pane = chart.error(
        "drawing_create",
        json!({"kind": "trend-line", "paneId": "pane-9", "anchors": [{"price": 1}, {"price": 2}]}),
    );
    assert_eq!(missing_pane.code, "UNKNOWN_PANE_ID");
    assert!(missing_pane.retryable);
    assert_eq!(
        missing_pane.recommended_action,
        "Use one of the pane ids: main, pane-1, pane-2."
    );

    let count = chart.error(
        "drawing_create",
        json!({"kind": "fib-retracement", "paneId": "main", "anchors": [{"price": 1}]}),
    );
    assert_eq!(count.code, "INVALID_ANCHOR_COUNT");
    assert_eq!(
        count.recommended_action,
        "Send exactly 2 anchors for a fib-retracement."
    );

    let range = chart.error(
        "drawing_create",
        json!({"kind": "horizontal-line", "paneId": "main", "anchors": [{"tradingDate": "2019-05-06", "price": 1}]}),
    );
    assert_eq!(range.code, "ANCHOR_DATE_OUT_OF_RANGE");
    assert!(
        range
            .recommended_action
            .contains("2024-01-02 to 2025-12-31")
    );

    let impossible = chart.error(
        "drawing_create",
        json!({"kind": "horizontal-line", "paneId": "main", "anchors": [{"tradingDate": "2024-02-30", "price": 1}]}),
    );
    assert_eq!(impossible.code, "ANCHOR_DATE_INVALID");
    let text = chart.error(
        "drawing_create",
        json!({"kind": "text", "paneId": "main", "anchors": [{"price": 1}]}),
    );
    assert_eq!(text.code, "TEXT_REQUIRED");
}

#[test]
fn drawings_are_created_updated_copied_and_deleted() {
    let chart = Chart::new();
    let created = chart.ok(
        "drawing_create",
        json!({"kind": "trend-line", "paneId": "main", "anchors": [{"tradingDate": "2024-03-01", "price": 1600}, {"price": 1700.5}], "style": {"color": "red"}}),
    );
    let drawing = &created["drawing"];
    assert_eq!(
        drawing["anchors"][1]["tradingDate"], "2025-12-31",
        "a missing date is the last trading day"
    );
    assert_eq!(
        drawing["style"],
        json!({"color": "red", "lineWidth": 1, "lineStyle": "solid"})
    );
    let id = drawing["id"].as_str().unwrap().to_owned();

    let updated = chart.ok(
        "drawing_update",
        json!({"drawingId": id, "style": {"lineWidth": 3}}),
    );
    assert_eq!(
        updated["drawing"]["style"],
        json!({"color": "red", "lineWidth": 3, "lineStyle": "solid"})
    );
    let copied = chart.ok(
        "drawings_copy",
        json!({"sourcePaneId": "main", "targetPaneId": "pane-1"}),
    );
    assert_eq!(copied["copiedDrawingIds"].as_array().unwrap().len(), 1);
    assert_eq!(
        chart.ok("drawings_list", json!({"paneId": "pane-1"}))["drawings"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        chart.ok("drawing_delete", json!({"drawingId": id}))["deletedDrawingId"],
        id
    );
    let unknown = chart.error("drawing_delete", json!({"drawingId": id}));
    assert_eq!(unknown.code, "UNKNOWN_DRAWING_ID");
    assert!(
        unknown
            .recommended_action
            .starts_with("Use one of the drawing ids: drawing-")
    );
    assert_eq!(chart.ok("drawings_clear", json!({}))["deletedDrawings"], 1);
}

#[test]
fn a_write_that_fails_half_way_is_rolled_back() {
    let chart = Chart::new();
    for _ in 0..10 {
        chart.ok(
            "drawing_create",
            json!({"kind": "horizontal-line", "paneId": "main", "anchors": [{"price": 1}]}),
        );
    }
    for _ in 0..(DRAWINGS_PER_PANE_MAX - 5) {
        chart.ok(
            "drawing_create",
            json!({"kind": "horizontal-line", "paneId": "pane-1", "anchors": [{"price": 1}]}),
        );
    }
    let before = chart.chart.snapshot();
    let undo_depth = chart.chart.undo_depth();
    // Five copies fit, the sixth does not: the five already made must not remain.
    let full = chart.error(
        "drawings_copy",
        json!({"sourcePaneId": "main", "targetPaneId": "pane-1"}),
    );
    assert_eq!(full.code, "DRAWING_LIMIT_REACHED");
    assert_eq!(chart.chart.snapshot(), before);
    assert_eq!(chart.chart.undo_depth(), undo_depth);

    // Replacing content clears the pane, then adds one indicator at a time.
    let misplaced = chart.error(
        "pane_replace_content",
        json!({"paneId": "pane-1", "indicators": [{"name": "RSI"}, {"name": "MA", "period": 10}]}),
    );
    assert_eq!(misplaced.code, "INDICATOR_NOT_ALLOWED_ON_PANE");
    assert_eq!(
        misplaced.recommended_action,
        "On an indicator pane use one of: VOL, MACD, RSI, KDJ, ATR, OBV, CCI."
    );
    assert_eq!(chart.chart.snapshot(), before);
}

#[test]
fn undo_restores_each_change_exactly() {
    let chart = Chart::new();
    let mut states = vec![chart.chart.snapshot()];
    let writes = [
        (
            "pane_create",
            json!({"indicators": [{"name": "RSI", "period": 6}], "height": 15}),
        ),
        ("pane_move", json!({"paneId": "pane-3", "position": 1})),
        (
            "pane_update_content",
            json!({"paneId": "main", "remove": ["MA"], "add": [{"name": "BOLL"}]}),
        ),
        (
            "comparison_create",
            json!({"symbol": "AAPL", "mode": "price"}),
        ),
        (
            "settings_update",
            json!({"theme": "dark", "showGrid": false}),
        ),
        (
            "pane_update",
            json!({"paneId": "pane-1", "collapsed": true}),
        ),
        (
            "drawing_create",
            json!({"kind": "triangle", "paneId": "pane-3", "anchors": [{"price": 1}, {"price": 2}, {"price": 3}]}),
        ),
        ("pane_remove", json!({"paneId": "pane-3"})),
        ("panes_clear", json!({})),
        ("comparisons_clear", json!({})),
        ("settings_reset", json!({})),
    ];
    for (name, arguments) in &writes {
        let result = chart.call(name, arguments.clone());
        assert!(
            result.is_success() && result.state_changed,
            "{name}: {result:?}"
        );
        states.push(chart.chart.snapshot());
    }
    states.pop();
    while let Some(expected) = states.pop() {
        assert!(chart.chart.undo());
        assert_eq!(chart.chart.snapshot(), expected);
    }
    assert!(!chart.chart.undo());
}

#[test]
fn pane_rules_name_what_is_allowed() {
    let chart = Chart::new();
    let fixed = chart.error("pane_remove", json!({"paneId": "main"}));
    assert_eq!(fixed.code, "MAIN_PANE_FIXED");
    assert_eq!(
        fixed.recommended_action,
        "Use an indicator pane: pane-1, pane-2."
    );
    let position = chart.error("pane_move", json!({"paneId": "pane-1", "position": 5}));
    assert_eq!(position.recommended_action, "Use a position from 1 to 2.");
    let overlay = chart.error("pane_create", json!({"indicators": [{"name": "EMA"}]}));
    assert_eq!(overlay.code, "INDICATOR_NOT_ALLOWED_ON_PANE");
    let period = chart.error(
        "pane_create",
        json!({"indicators": [{"name": "VOL", "period": 5}]}),
    );
    assert_eq!(period.code, "INDICATOR_TAKES_NO_PERIOD");
    for _ in 0..5 {
        chart.ok("pane_create", json!({"indicators": [{"name": "RSI"}]}));
    }
    assert_eq!(
        chart
            .error("pane_create", json!({"indicators": [{"name": "RSI"}]}))
            .code,
        "PANE_LIMIT_REACHED"
    );
    let indicators = chart.ok("indicators_query", json!({"paneId": "main", "limit": 3}));
    let first = &indicators["indicators"][0];
    assert_eq!(
        (first["name"].as_str(), first["period"].as_u64()),
        (Some("MA"), Some(5))
    );
    assert_eq!(first["columns"], json!(["time", "value"]));
    let values = first["values"].as_array().unwrap();
    assert_eq!(values.len(), 3);
    assert!(values.iter().all(|row| row.as_array().unwrap().len() == 2));
}

#[test]
fn indicators_see_their_whole_window_for_every_value_a_query_returns() {
    let chart = Chart::new();
    chart.ok(
        "pane_create",
        json!({"indicators": [{"name": "CCI", "period": 250}, {"name": "KDJ", "period": 250}]}),
    );
    let pane = chart.ok("panes_list", json!({}))["panes"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["id"]
        .clone();
    let indicators = chart.ok("indicators_query", json!({"paneId": pane, "limit": 100}));
    for indicator in indicators["indicators"].as_array().unwrap() {
        let values = indicator["values"].as_array().unwrap();
        assert_eq!(values.len(), 100);
        assert!(
            values
                .iter()
                .all(|row| row.as_array().unwrap()[1..].iter().all(Value::is_number)),
            "{}: a value still warming up",
            indicator["name"]
        );
    }
}

#[test]
fn market_data_is_seeded_and_bounded() {
    let chart = Chart::new();
    let query = json!({"symbol": "600519.SH", "period": "5min", "adjustment": "qfq", "limit": 100});
    let first = chart.ok("market_bars_query", query.clone());
    assert_eq!(
        first,
        chart.ok("market_bars_query", query.clone()),
        "same seed, same bars"
    );
    let other = Chart {
        chart: SharedChart::new(43),
        ..Chart::new()
    };
    assert_ne!(first, other.ok("market_bars_query", query));
    assert_eq!(
        first["columns"],
        json!(["time", "open", "high", "low", "close", "volume"])
    );
    let bars = first["bars"].as_array().unwrap();
    assert_eq!(bars.len(), 100);
    assert_eq!(bars.last().unwrap()[0], "2025-12-31 15:00");
    for bar in bars {
        let cell = |column: usize| bar[column].as_f64().unwrap();
        let (open, high, low, close) = (cell(1), cell(2), cell(3), cell(4));
        assert!(high >= open.max(close));
        assert!(low <= open.min(close));
        assert!(low > 0.0);
        assert!(cell(5) >= 0.0);
    }
    let weekly = chart.ok(
        "market_bars_query",
        json!({"symbol": "AAPL", "period": "weekly", "limit": 798}),
    );
    assert_eq!(weekly["bars"].as_array().unwrap().len(), 105);
    let day = chart.ok(
        "market_timeshare_query",
        json!({"symbol": "AAPL", "tradingDate": "2025-06-02"}),
    );
    assert_eq!(
        day["columns"],
        json!(["time", "price", "averagePrice", "volume"])
    );
    let points = day["points"].as_array().unwrap();
    assert_eq!(points.len(), 240);
    assert_eq!(
        (&points[0][0], &points[239][0]),
        (&json!("09:31"), &json!("15:00"))
    );
    let weekend = chart.error(
        "market_timeshare_query",
        json!({"symbol": "AAPL", "tradingDate": "2025-06-01"}),
    );
    assert_eq!(weekend.code, "NOT_A_TRADING_DAY");
    let range = chart.ok(
        "market_timeshare_range_query",
        json!({"symbol": "AAPL", "startDate": "2025-06-02", "endDate": "2025-06-06", "intervalMinutes": 60}),
    );
    assert_eq!(range["sessions"].as_array().unwrap().len(), 5);
    assert_eq!(range["columns"], day["columns"]);
    assert_eq!(range["sessions"][0]["points"].as_array().unwrap().len(), 4);
    let long = chart.error(
        "market_timeshare_range_query",
        json!({"symbol": "AAPL", "startDate": "2025-06-02", "endDate": "2025-06-09"}),
    );
    assert_eq!(long.code, "DATE_RANGE_TOO_LONG");
    let unknown = chart.error(
        "market_bars_query",
        json!({"symbol": "ZZZZ", "period": "daily"}),
    );
    assert_eq!(unknown.code, "UNKNOWN_SYMBOL");
    assert!(unknown.recommended_action.contains("600519.SH"));
    let found = chart.ok("instruments_query_name", json!({"query": "ping an"}));
    assert_eq!(found["instruments"].as_array().unwrap().len(), 2);
}

#[test]
fn tools_beyond_the_chart_stay_simulated() {
    let chart = Chart::new();
    let search = chart.ok(
        "web_search",
        json!({"query": "moutai earnings", "limit": 3}),
    );
    assert_eq!(search["results"].as_array().unwrap().len(), 3);
    let code = chart.call(
        "code_interpreter",
        json!({"language": "python", "code": "print(1)"}),
    );
    assert!(code.is_success());
    assert!(!code.state_changed);
    assert_eq!(code.to_json()["data"]["networkPolicy"], "disabled");
    let unanswered = chart.error("ask_user", json!({"question": "Which?", "options": ["a"]}));
    assert_eq!(unanswered.code, "USER_UNAVAILABLE");
    assert!(!unanswered.retryable);
}
