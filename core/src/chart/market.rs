//! The market of the chart domain (SPEC §8): a small embedded catalogue of instruments and
//! synthetic bars generated from a seed.
//!
//! Every series is a pure function of (market seed, symbol, period): a PCG generator seeded
//! with a fixed FNV-1a hash of the three drives a bounded random walk, so the same chart seed
//! always shows the same bars, on any machine, with no wall clock and no OS randomness.

use std::sync::OnceLock;

use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::calendar::{self, Date, SESSION_MINUTES};

/// The most bars one query returns (and one series holds).
pub const BARS_MAX: usize = 798;

/// One instrument of the embedded catalogue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Instrument {
    /// The ticker, e.g. `600519.SH`.
    pub symbol: &'static str,
    /// The display name.
    pub name: &'static str,
    /// The listing venue.
    pub exchange: &'static str,
    /// The quote currency.
    pub currency: &'static str,
    /// `stock`, `index` or `crypto`.
    pub kind: &'static str,
    base_price: f64,
    daily_volatility: f64,
    base_volume: f64,
}

/// The embedded catalogue.
pub const CATALOGUE: &[Instrument] = &[
    Instrument {
        symbol: "600519.SH",
        name: "Kweichow Moutai",
        exchange: "SSE",
        currency: "CNY",
        kind: "stock",
        base_price: 1650.0,
        daily_volatility: 0.016,
        base_volume: 3.2e6,
    },
    Instrument {
        symbol: "601318.SH",
        name: "Ping An Insurance",
        exchange: "SSE",
        currency: "CNY",
        kind: "stock",
        base_price: 42.0,
        daily_volatility: 0.018,
        base_volume: 6.1e7,
    },
    Instrument {
        symbol: "000001.SZ",
        name: "Ping An Bank",
        exchange: "SZSE",
        currency: "CNY",
        kind: "stock",
        base_price: 10.5,
        daily_volatility: 0.017,
        base_volume: 1.2e8,
    },
    Instrument {
        symbol: "000858.SZ",
        name: "Wuliangye Yibin",
        exchange: "SZSE",
        currency: "CNY",
        kind: "stock",
        base_price: 135.0,
        daily_volatility: 0.02,
        base_volume: 2.4e7,
    },
    Instrument {
        symbol: "300750.SZ",
        name: "Contemporary Amperex Technology",
        exchange: "SZSE",
        currency: "CNY",
        kind: "stock",
        base_price: 190.0,
        daily_volatility: 0.026,
        base_volume: 3.3e7,
    },
    Instrument {
        symbol: "000300.SH",
        name: "CSI 300 Index",
        exchange: "SSE",
        currency: "CNY",
        kind: "index",
        base_price: 3500.0,
        daily_volatility: 0.011,
        base_volume: 1.5e10,
    },
    Instrument {
        symbol: "0700.HK",
        name: "Tencent Holdings",
        exchange: "HKEX",
        currency: "HKD",
        kind: "stock",
        base_price: 300.0,
        daily_volatility: 0.021,
        base_volume: 1.9e7,
    },
    Instrument {
        symbol: "AAPL",
        name: "Apple Inc.",
        exchange: "NASDAQ",
        currency: "USD",
        kind: "stock",
        base_price: 185.0,
        daily_volatility: 0.015,
        base_volume: 5.5e7,
    },
    Instrument {
        symbol: "MSFT",
        name: "Microsoft Corporation",
        exchange: "NASDAQ",
        currency: "USD",
        kind: "stock",
        base_price: 375.0,
        daily_volatility: 0.014,
        base_volume: 2.2e7,
    },
    Instrument {
        symbol: "NVDA",
        name: "NVIDIA Corporation",
        exchange: "NASDAQ",
        currency: "USD",
        kind: "stock",
        base_price: 48.0,
        daily_volatility: 0.03,
        base_volume: 4.1e8,
    },
    Instrument {
        symbol: "TSLA",
        name: "Tesla, Inc.",
        exchange: "NASDAQ",
        currency: "USD",
        kind: "stock",
        base_price: 245.0,
        daily_volatility: 0.035,
        base_volume: 1.1e8,
    },
    Instrument {
        symbol: "BTCUSDT",
        name: "Bitcoin / Tether",
        exchange: "BINANCE",
        currency: "USDT",
        kind: "crypto",
        base_price: 42000.0,
        daily_volatility: 0.03,
        base_volume: 2.8e4,
    },
];

/// The symbol a fresh chart shows.
pub const DEFAULT_SYMBOL: &str = "600519.SH";

/// The catalogue entry for `symbol` (exact, case-sensitive).
pub fn instrument_for(symbol: &str) -> Option<&'static Instrument> {
    CATALOGUE
        .iter()
        .find(|instrument| instrument.symbol == symbol)
}

/// The catalogue's symbols, for recovery hints.
pub fn symbols() -> String {
    CATALOGUE
        .iter()
        .map(|instrument| instrument.symbol)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Bar periods (SPEC §8, `market_bars_query`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Period {
    /// One minute.
    #[serde(rename = "1min")]
    Minute1,
    /// Five minutes.
    #[serde(rename = "5min")]
    Minute5,
    /// Fifteen minutes.
    #[serde(rename = "15min")]
    Minute15,
    /// Thirty minutes.
    #[serde(rename = "30min")]
    Minute30,
    /// Sixty minutes.
    #[serde(rename = "60min")]
    Minute60,
    /// Four hours (one bar per session day).
    #[serde(rename = "4h")]
    Hour4,
    /// One trading day.
    #[serde(rename = "daily")]
    Daily,
    /// One week.
    #[serde(rename = "weekly")]
    Weekly,
    /// One month.
    #[serde(rename = "monthly")]
    Monthly,
    /// One quarter.
    #[serde(rename = "quarterly")]
    Quarterly,
    /// One year.
    #[serde(rename = "yearly")]
    Yearly,
}

/// The period names, as the schema lists them.
pub const PERIOD_NAMES: &[&str] = &[
    "1min",
    "5min",
    "15min",
    "30min",
    "60min",
    "4h",
    "daily",
    "weekly",
    "monthly",
    "quarterly",
    "yearly",
];

impl Period {
    fn minutes(self) -> Option<u32> {
        match self {
            Period::Minute1 => Some(1),
            Period::Minute5 => Some(5),
            Period::Minute15 => Some(15),
            Period::Minute30 => Some(30),
            Period::Minute60 => Some(60),
            Period::Hour4 => Some(SESSION_MINUTES),
            _ => None,
        }
    }

    /// The period's name.
    pub fn name(self) -> &'static str {
        PERIOD_NAMES[self as usize]
    }

    /// Scales the daily volatility to one bar of this period.
    fn volatility_scale(self) -> f64 {
        match self.minutes() {
            Some(minutes) => (f64::from(minutes) / f64::from(SESSION_MINUTES)).sqrt(),
            None => match self {
                Period::Weekly => 5f64.sqrt(),
                Period::Monthly => 21f64.sqrt(),
                Period::Quarterly => 63f64.sqrt(),
                Period::Yearly => 250f64.sqrt(),
                _ => 1.0,
            },
        }
    }
}

/// Price adjustment for corporate actions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Adjustment {
    /// Forward-adjusted (前复权): history scaled to today's share basis.
    Qfq,
    /// Backward-adjusted (后复权): today scaled to the listing basis.
    Hfq,
    /// Adjusted for splits only.
    Splits,
    /// Raw prices.
    #[default]
    None,
}

/// The adjustment names, as the schema lists them.
pub const ADJUSTMENT_NAMES: &[&str] = &["qfq", "hfq", "splits", "none"];

/// The synthetic corporate action: a 2-for-1 split on this day for every stock.
const SPLIT_DAY: Date = calendar::FIRST_TRADING_DAY.add_days(300);

/// When a bar closes: a trading day, and for intraday bars the session minute.
///
/// Written `YYYY-MM-DD` or `YYYY-MM-DD HH:MM`; the text is only made when a bar is shown,
/// so history computed for indicators costs no string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarTime {
    /// The trading day.
    pub day: Date,
    /// The session minute (0–239) the bar ends with, for intraday bars.
    pub minute: Option<u32>,
}

impl BarTime {
    /// The label.
    pub fn label(self) -> String {
        let mut text = String::with_capacity(16);
        self.day.push_to(&mut text);
        if let Some(minute) = self.minute {
            text.push(' ');
            calendar::push_session_minute(&mut text, minute);
        }
        text
    }
}

/// The columns of a bar's row ([`Bar::row`]), in order.
pub const BAR_COLUMNS: [&str; 6] = ["time", "open", "high", "low", "close", "volume"];

/// One bar.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// `YYYY-MM-DD` or `YYYY-MM-DD HH:MM`.
    pub time: BarTime,
    /// Open price.
    pub open: f64,
    /// High price.
    pub high: f64,
    /// Low price.
    pub low: f64,
    /// Close price.
    pub close: f64,
    /// Volume.
    pub volume: f64,
    /// The trading day the bar belongs to.
    pub day: Date,
}

impl Bar {
    /// The bar as a table row, in the order of [`BAR_COLUMNS`].
    pub fn row(&self) -> Value {
        Value::Array(vec![
            Value::String(self.time.label()),
            Value::from(self.open),
            Value::from(self.high),
            Value::from(self.low),
            Value::from(self.close),
            Value::from(self.volume),
        ])
    }
}

/// The market: a seed and the embedded catalogue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Market {
    seed: u64,
}

impl Market {
    /// The market of `seed`.
    pub fn new(seed: u64) -> Market {
        Market { seed }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The last `limit` bars (at most [`BARS_MAX`]) of `instrument` at `period`, oldest first.
    pub fn bars(
        &self,
        instrument: &Instrument,
        period: Period,
        adjustment: Adjustment,
        limit: usize,
    ) -> Vec<Bar> {
        let times = bar_times(period, limit.min(BARS_MAX)).iter().copied();
        let mut generator =
            Pcg64Mcg::seed_from_u64(series_seed(self.seed, instrument.symbol, period));
        let volatility = instrument.daily_volatility * period.volatility_scale();
        let volume_scale = match period.minutes() {
            Some(minutes) => f64::from(minutes) / f64::from(SESSION_MINUTES),
            None => period.volatility_scale().powi(2),
        };
        let stock = instrument.kind == "stock";
        let mut close = instrument.base_price;
        times
            .into_iter()
            .map(|(day, time)| {
                let open = close * (1.0 + 0.1 * volatility * signed_unit(&mut generator));
                close = (open * (1.0 + volatility * signed_unit(&mut generator))).max(0.01);
                let high = open.max(close) * (1.0 + 0.5 * volatility * unit(&mut generator));
                let low = open.min(close) * (1.0 - 0.5 * volatility * unit(&mut generator));
                let volume = instrument.base_volume * volume_scale * (0.5 + unit(&mut generator));
                let factor = if stock {
                    adjustment_factor(adjustment, day)
                } else {
                    1.0
                };
                Bar {
                    time,
                    open: cents(open * factor),
                    high: cents(high * factor),
                    low: cents(low.max(0.01) * factor),
                    close: cents(close * factor),
                    volume: round(volume),
                    day,
                }
            })
            .collect()
    }

    /// The last `limit` minutes of the session of `day`: (minute index, price, average price,
    /// volume). Minute `i` ends at [`calendar::session_minute`]`(i)`.
    pub fn timeshare(
        &self,
        instrument: &Instrument,
        day: Date,
        limit: usize,
    ) -> Vec<(u32, f64, f64, f64)> {
        let seed = series_seed(self.seed, instrument.symbol, Period::Minute1) ^ day_key(day);
        let mut generator = Pcg64Mcg::seed_from_u64(seed);
        let volatility = instrument.daily_volatility / f64::from(SESSION_MINUTES).sqrt();
        let mut price = instrument.base_price * (1.0 + 0.2 * signed_unit(&mut generator));
        let (mut turnover, mut volume_total) = (0.0, 0.0);
        let first_kept = SESSION_MINUTES.saturating_sub(u32::try_from(limit).unwrap_or(u32::MAX));
        let mut minutes = Vec::with_capacity(limit.min(SESSION_MINUTES as usize));
        for index in 0..SESSION_MINUTES {
            // Every minute moves the price and the average, kept or not.
            price = (price * (1.0 + volatility * signed_unit(&mut generator))).max(0.01);
            let volume = round(
                instrument.base_volume / f64::from(SESSION_MINUTES) * (0.5 + unit(&mut generator)),
            );
            turnover += price * volume;
            volume_total += volume;
            if index >= first_kept {
                let average = if volume_total > 0.0 {
                    turnover / volume_total
                } else {
                    price
                };
                minutes.push((index, cents(price), cents(average), volume));
            }
        }
        minutes
    }
}

/// The price factor of `adjustment` on `day`, for a stock (other kinds are never adjusted:
/// [`Market::bars`] asks only for stocks, deciding once per series rather than per bar).
fn adjustment_factor(adjustment: Adjustment, day: Date) -> f64 {
    match adjustment {
        Adjustment::None => 1.0,
        Adjustment::Qfq | Adjustment::Splits if day < SPLIT_DAY => 0.5,
        Adjustment::Hfq if day >= SPLIT_DAY => 2.0,
        _ => 1.0,
    }
}

/// The last `count` (at most [`BARS_MAX`]) bar (day, close time) pairs of `period`, oldest
/// first, ending with the close of the last trading day. They depend on the period alone, so
/// each period's list is worked out once per process and shared.
fn bar_times(period: Period, count: usize) -> &'static [(Date, BarTime)] {
    static TIMES: [OnceLock<Vec<(Date, BarTime)>>; PERIOD_NAMES.len()] =
        [const { OnceLock::new() }; PERIOD_NAMES.len()];
    let times = TIMES[period as usize].get_or_init(|| all_bar_times(period, BARS_MAX));
    &times[times.len().saturating_sub(count)..]
}

/// The last `count` bar times of `period`, computed.
fn all_bar_times(period: Period, count: usize) -> Vec<(Date, BarTime)> {
    let mut times = Vec::with_capacity(count);
    if let Some(minutes) = period.minutes() {
        let per_day = SESSION_MINUTES / minutes;
        'days: for day in calendar::trading_days().rev() {
            for slot in (0..per_day).rev() {
                if times.len() == count {
                    break 'days;
                }
                let minute = Some((slot + 1) * minutes - 1);
                times.push((day, BarTime { day, minute }));
            }
        }
    } else {
        let mut previous_bucket = None;
        for day in calendar::trading_days().rev() {
            if times.len() == count {
                break;
            }
            let bucket = bucket_of(period, day);
            if previous_bucket != Some(bucket) {
                previous_bucket = Some(bucket);
                times.push((day, BarTime { day, minute: None }));
            }
        }
    }
    times.reverse();
    times
}

/// The bucket a trading day falls in for a period of days or longer; bars close on the last
/// trading day of their bucket.
fn bucket_of(period: Period, day: Date) -> i64 {
    let (year, month, _) = day.ymd();
    match period {
        Period::Weekly => day.add_days(-i64::from(day.weekday())).days_since_epoch(),
        Period::Monthly => year * 12 + i64::from(month),
        Period::Quarterly => year * 4 + i64::from((month - 1) / 3),
        Period::Yearly => year,
        _ => day.days_since_epoch(),
    }
}

/// FNV-1a over the seed, symbol and period: a fixed hash, identical on every platform.
fn series_seed(seed: u64, symbol: &str, period: Period) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |byte: u8| {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    };
    seed.to_le_bytes().into_iter().for_each(&mut feed);
    symbol.bytes().for_each(&mut feed);
    feed(period as u8);
    hash
}

fn day_key(day: Date) -> u64 {
    day.days_since_epoch() as u64
}

/// A uniform value in [0, 1).
fn unit(generator: &mut Pcg64Mcg) -> f64 {
    (generator.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A uniform value in [-1, 1).
fn signed_unit(generator: &mut Pcg64Mcg) -> f64 {
    2.0 * unit(generator) - 1.0
}

fn cents(price: f64) -> f64 {
    round(price * 100.0) / 100.0
}

/// `value.round()` (half away from zero), computed inline.
///
/// `f64::round` is a library call on the baseline x86-64 target, and market data rounds every
/// price and volume it makes. Below 2^52 in magnitude, the integer part is exact as an `i64`
/// and the fraction `value - integer` is exact too, so the result is the very same float
/// (the sign of a zero included); larger values and infinities are returned as they are,
/// which is what `round` gives them, and so is a NaN (still a NaN; market data makes none).
pub(crate) fn round(value: f64) -> f64 {
    const EXACT: f64 = 4_503_599_627_370_496.0; // 2^52: from here on every float is whole
    if value.is_nan() || value.abs() >= EXACT {
        return value;
    }
    let whole = ((value as i64) as f64).copysign(value);
    let fraction = value - whole;
    if fraction >= 0.5 {
        whole + 1.0
    } else if fraction <= -0.5 {
        whole - 1.0
    } else {
        whole
    }
}

/// An instrument as tool data.
pub fn instrument_json(instrument: &Instrument) -> Value {
    json!({
        "symbol": instrument.symbol,
        "name": instrument.name,
        "exchange": instrument.exchange,
        "currency": instrument.currency,
        "kind": instrument.kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_round_is_f64_round() {
        let mut generator = Pcg64Mcg::seed_from_u64(7);
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            0.49999999999999994,
            -0.49999999999999994,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9.0e15,
            -9.0e15,
            1.0e300,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            1234.5,
            123_456.785 * 100.0,
        ];
        for _ in 0..100_000 {
            let magnitude = 10f64.powi((generator.next_u64() % 18) as i32);
            values.push(signed_unit(&mut generator) * magnitude);
            values.push((signed_unit(&mut generator) * magnitude).trunc() + 0.5);
        }
        for value in values {
            assert_eq!(round(value).to_bits(), value.round().to_bits(), "{value:e}");
        }
        assert!(round(f64::NAN).is_nan());
    }

    #[test]
    fn shared_bar_times_are_the_computed_ones() {
        let periods = [
            Period::Minute1,
            Period::Minute5,
            Period::Minute15,
            Period::Minute30,
            Period::Minute60,
            Period::Hour4,
            Period::Daily,
            Period::Weekly,
            Period::Monthly,
            Period::Quarterly,
            Period::Yearly,
        ];
        assert_eq!(periods.len(), PERIOD_NAMES.len());
        for period in periods {
            for count in [0, 1, 7, 120, BARS_MAX - 1, BARS_MAX] {
                assert_eq!(
                    bar_times(period, count),
                    all_bar_times(period, count).as_slice(),
                    "{period:?} {count}"
                );
            }
        }
    }
}
