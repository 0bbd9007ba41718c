//! Market tools: `instruments_query_name`, `market_bars_query`, `market_timeshare_query`,
//! `market_timeshare_range_query`. All read-only; the data is the seeded synthetic market.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{data, date_schema, input, object, reader, symbol_schema};
use crate::chart::calendar::{self, Date, FIRST_TRADING_DAY, LAST_TRADING_DAY};
use crate::chart::market::{
    ADJUSTMENT_NAMES, Adjustment, BAR_COLUMNS, BARS_MAX, Bar, CATALOGUE, Instrument, PERIOD_NAMES,
    Period, instrument_for, instrument_json, symbols,
};
use crate::envelope::ToolError;
use crate::registry::{RegistryBuilder, RegistryError};
use crate::tool::ToolContext;

/// The most instruments one name query returns.
const INSTRUMENTS_MAX: usize = 20;
/// The most trading days one range query spans.
const RANGE_DAYS_MAX: usize = 5;

pub(super) fn register(builder: &mut RegistryBuilder) -> Result<(), RegistryError> {
    reader(
        builder,
        "instruments_query_name",
        "Find instruments",
        "Finds instruments whose name or symbol contains the query (any letter case).",
        object(
            json!({
                "query": {"type": "string", "minLength": 1, "maxLength": 100},
                "limit": {"type": "integer", "minimum": 1, "maximum": INSTRUMENTS_MAX}
            }),
            &["query"],
        ),
        instruments_query_name,
    )?;
    reader(
        builder,
        "market_bars_query",
        "Query bars",
        "Returns the latest OHLCV bars of an instrument, oldest first, as a table: `columns` names the fields once and each bar is a row of values in that order.",
        object(
            json!({
                "symbol": symbol_schema(),
                "period": {"enum": PERIOD_NAMES},
                "adjustment": {"enum": ADJUSTMENT_NAMES},
                "limit": {"type": "integer", "minimum": 1, "maximum": BARS_MAX}
            }),
            &["symbol", "period"],
        ),
        market_bars_query,
    )?;
    reader(
        builder,
        "market_timeshare_query",
        "Query intraday prices",
        "Returns one trading day's minute-by-minute prices, average price and volume (the last trading day when no date is given), as a table: `columns` names the fields once and each minute is a row.",
        object(
            json!({
                "symbol": symbol_schema(),
                "tradingDate": date_schema(),
                "limit": {"type": "integer", "minimum": 1, "maximum": calendar::SESSION_MINUTES}
            }),
            &["symbol"],
        ),
        market_timeshare_query,
    )?;
    reader(
        builder,
        "market_timeshare_range_query",
        "Query intraday prices over days",
        "Returns intraday prices for up to 5 consecutive trading days, sampled every intervalMinutes (default 30), as one table per day with the fields named once in `columns`.",
        object(
            json!({
                "symbol": symbol_schema(),
                "startDate": date_schema(),
                "endDate": date_schema(),
                "intervalMinutes": {"enum": [1, 5, 15, 30, 60]}
            }),
            &["symbol", "startDate", "endDate"],
        ),
        market_timeshare_range_query,
    )
}

fn unknown_symbol() -> ToolError {
    ToolError::domain(
        "UNKNOWN_SYMBOL",
        "No instrument has that symbol.",
        format!(
            "Use instruments_query_name to find one; known symbols: {}.",
            symbols()
        ),
    )
}

fn instrument(symbol: &str) -> Result<&'static Instrument, ToolError> {
    instrument_for(symbol).ok_or_else(unknown_symbol)
}

fn trading_day(text: &str) -> Result<Date, ToolError> {
    let hint = || {
        format!("Use a weekday from {FIRST_TRADING_DAY} to {LAST_TRADING_DAY}, the loaded range.")
    };
    let date = Date::parse(text).ok_or_else(|| {
        ToolError::domain(
            "TRADING_DATE_INVALID",
            "The date is not a calendar date.",
            hint(),
        )
    })?;
    if !(FIRST_TRADING_DAY..=LAST_TRADING_DAY).contains(&date) {
        return Err(ToolError::domain(
            "TRADING_DATE_OUT_OF_RANGE",
            "The date is outside the loaded range.",
            hint(),
        ));
    }
    if !date.is_trading_day() {
        return Err(ToolError::domain(
            "NOT_A_TRADING_DAY",
            "The market is closed on that date.",
            hint(),
        ));
    }
    Ok(date)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InstrumentsQuery {
    query: String,
    limit: Option<usize>,
}

fn instruments_query_name(_context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: InstrumentsQuery = input(raw)?;
    let needle = request.query.to_lowercase();
    let found: Vec<Value> = CATALOGUE
        .iter()
        .filter(|instrument| {
            instrument.name.to_lowercase().contains(&needle)
                || instrument.symbol.to_lowercase().contains(&needle)
        })
        .take(request.limit.unwrap_or(5).min(INSTRUMENTS_MAX))
        .map(instrument_json)
        .collect();
    Ok(json!({"instruments": found}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BarsQuery {
    symbol: String,
    period: Period,
    adjustment: Option<Adjustment>,
    limit: Option<usize>,
}

fn market_bars_query(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: BarsQuery = input(raw)?;
    let instrument = instrument(&request.symbol)?;
    let adjustment = request.adjustment.unwrap_or_default();
    let bars = context.chart().market().bars(
        instrument,
        request.period,
        adjustment,
        request.limit.unwrap_or(100),
    );
    Ok(json!({
        "symbol": instrument.symbol,
        "period": request.period,
        "adjustment": adjustment,
        "columns": BAR_COLUMNS,
        "bars": bars.iter().map(Bar::row).collect::<Vec<_>>()
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TimeshareQuery {
    symbol: String,
    trading_date: Option<String>,
    limit: Option<usize>,
}

fn market_timeshare_query(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: TimeshareQuery = input(raw)?;
    let instrument = instrument(&request.symbol)?;
    let day = request
        .trading_date
        .as_deref()
        .map(trading_day)
        .transpose()?
        .unwrap_or(LAST_TRADING_DAY);
    let limit = request
        .limit
        .unwrap_or(calendar::SESSION_MINUTES as usize)
        .min(calendar::SESSION_MINUTES as usize);
    let points: Vec<Value> = context
        .chart()
        .market()
        .timeshare(instrument, day, limit)
        .into_iter()
        .map(|(minute, price, average, volume)| point(minute, price, average, volume))
        .collect();
    Ok(data([
        ("symbol", json!(instrument.symbol)),
        ("tradingDate", Value::String(day.to_string())),
        ("columns", json!(POINT_COLUMNS)),
        ("points", Value::Array(points)),
    ]))
}

/// The columns of an intraday point's row ([`point`]), in order.
const POINT_COLUMNS: [&str; 4] = ["time", "price", "averagePrice", "volume"];

/// One intraday minute as a table row, in the order of [`POINT_COLUMNS`].
fn point(minute: u32, price: f64, average: f64, volume: f64) -> Value {
    Value::Array(vec![
        Value::String(calendar::session_minute(minute)),
        Value::from(price),
        Value::from(average),
        Value::from(volume),
    ])
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TimeshareRangeQuery {
    symbol: String,
    start_date: String,
    end_date: String,
    interval_minutes: Option<usize>,
}

fn market_timeshare_range_query(context: &ToolContext, raw: Value) -> Result<Value, ToolError> {
    let request: TimeshareRangeQuery = input(raw)?;
    let instrument = instrument(&request.symbol)?;
    let (start, end) = (
        trading_day(&request.start_date)?,
        trading_day(&request.end_date)?,
    );
    if end < start {
        return Err(ToolError::domain(
            "DATE_RANGE_REVERSED",
            "The end date is before the start date.",
            "Send startDate on or before endDate.",
        ));
    }
    let days: Vec<Date> = calendar::trading_days()
        .filter(|day| (start..=end).contains(day))
        .collect();
    if days.len() > RANGE_DAYS_MAX {
        return Err(ToolError::domain(
            "DATE_RANGE_TOO_LONG",
            format!("A range spans at most {RANGE_DAYS_MAX} trading days."),
            "Narrow the range, or use market_bars_query with a minute period.",
        ));
    }
    let interval = request.interval_minutes.unwrap_or(30).max(1);
    let sessions: Vec<Value> = days
        .into_iter()
        .map(|day| {
            let points: Vec<Value> = context
                .chart()
                .market()
                .timeshare(instrument, day, calendar::SESSION_MINUTES as usize)
                .into_iter()
                .skip(interval - 1)
                .step_by(interval)
                .map(|(minute, price, average, volume)| point(minute, price, average, volume))
                .collect();
            data([
                ("tradingDate", Value::String(day.to_string())),
                ("points", Value::Array(points)),
            ])
        })
        .collect();
    Ok(data([
        ("symbol", json!(instrument.symbol)),
        ("intervalMinutes", json!(interval)),
        ("columns", json!(POINT_COLUMNS)),
        ("sessions", Value::Array(sessions)),
    ]))
}
