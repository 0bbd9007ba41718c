//! Technical indicators of the chart domain (SPEC §8): where each may be placed and how its
//! values are computed from the loaded bars.
//!
//! Overlays (`MA`, `EMA`, `BOLL`) share the price scale and live on the main pane; the
//! oscillators (`VOL`, `MACD`, `RSI`, `KDJ`, `ATR`, `OBV`, `CCI`) have scales of their own
//! and live on indicator sub-panes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::market::Bar;

/// An indicator kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum IndicatorName {
    /// Simple moving average.
    #[serde(rename = "MA")]
    Ma,
    /// Exponential moving average.
    #[serde(rename = "EMA")]
    Ema,
    /// Bollinger bands.
    #[serde(rename = "BOLL")]
    Boll,
    /// Volume.
    #[serde(rename = "VOL")]
    Vol,
    /// Moving average convergence divergence (12, 26, 9).
    #[serde(rename = "MACD")]
    Macd,
    /// Relative strength index.
    #[serde(rename = "RSI")]
    Rsi,
    /// Stochastic KDJ.
    #[serde(rename = "KDJ")]
    Kdj,
    /// Average true range.
    #[serde(rename = "ATR")]
    Atr,
    /// On-balance volume.
    #[serde(rename = "OBV")]
    Obv,
    /// Commodity channel index.
    #[serde(rename = "CCI")]
    Cci,
}

/// The indicator names, as the schemas list them.
pub const INDICATOR_NAMES: &[&str] = &[
    "MA", "EMA", "BOLL", "VOL", "MACD", "RSI", "KDJ", "ATR", "OBV", "CCI",
];

/// The longest averaging period accepted.
pub const INDICATOR_PERIOD_MAX: u32 = 250;

impl IndicatorName {
    /// The name as written in schemas and data.
    pub fn as_str(self) -> &'static str {
        INDICATOR_NAMES[self as usize]
    }

    /// Whether it draws on the price scale (main pane) rather than a sub-pane.
    pub fn is_overlay(self) -> bool {
        matches!(
            self,
            IndicatorName::Ma | IndicatorName::Ema | IndicatorName::Boll
        )
    }

    /// The default period, or `None` for indicators without one.
    pub fn default_period(self) -> Option<u32> {
        match self {
            IndicatorName::Ma | IndicatorName::Ema | IndicatorName::Boll => Some(20),
            IndicatorName::Rsi | IndicatorName::Atr | IndicatorName::Cci => Some(14),
            IndicatorName::Kdj => Some(9),
            IndicatorName::Vol | IndicatorName::Macd | IndicatorName::Obv => None,
        }
    }

    /// The names allowed on the main pane (`true`) or on sub-panes (`false`), for hints.
    pub fn names_for(overlay: bool) -> String {
        INDICATOR_NAMES
            .iter()
            .filter(|name| {
                indicator_named(name).is_some_and(|indicator| indicator.is_overlay() == overlay)
            })
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn indicator_named(name: &str) -> Option<IndicatorName> {
    serde_json::from_value(Value::String(name.to_owned())).ok()
}

/// An indicator placed on a pane.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Indicator {
    /// The kind.
    pub name: IndicatorName,
    /// The averaging period, for kinds that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<u32>,
}

impl Indicator {
    /// The indicator with its period made explicit.
    pub fn normalised(&self) -> Indicator {
        Indicator {
            name: self.name,
            period: self.period.or(self.name.default_period()),
        }
    }

    /// The indicator's values on `bars`, the last `limit` of them, as a table: the column
    /// names (`time`, then the indicator's fields) and one row per bar, in that order. A
    /// field still warming up is `null`.
    pub fn values(&self, bars: &[Bar], limit: usize) -> (Vec<&'static str>, Vec<Value>) {
        let period = self
            .period
            .or(self.name.default_period())
            .unwrap_or(1)
            .max(1) as usize;
        let closes: Vec<f64> = bars.iter().map(|bar| bar.close).collect();
        // One column per field, one entry per bar; only the last `limit` rows become values.
        let columns: Vec<Column> = match self.name {
            IndicatorName::Ma => vec![("value", moving_average(&closes, period))],
            IndicatorName::Ema => vec![("value", exponential_average(&closes, period))],
            IndicatorName::Boll => bollinger(&closes, period),
            IndicatorName::Vol => {
                vec![("volume", bars.iter().map(|bar| Some(bar.volume)).collect())]
            }
            IndicatorName::Macd => macd(&closes),
            IndicatorName::Rsi => vec![("value", rsi(&closes, period))],
            IndicatorName::Kdj => kdj(bars, period),
            IndicatorName::Atr => vec![("value", atr(bars, period))],
            IndicatorName::Obv => vec![("value", obv(bars))],
            IndicatorName::Cci => vec![("value", cci(bars, period))],
        };
        let skip = bars.len().saturating_sub(limit);
        let rows = bars
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(row, bar)| {
                let mut cells = Vec::with_capacity(columns.len() + 1);
                cells.push(Value::String(bar.time.label()));
                for (_, values) in &columns {
                    let value = values.get(row).copied().flatten();
                    cells.push(value.map_or(Value::Null, |value| json!(round4(value))));
                }
                Value::Array(cells)
            })
            .collect();
        let names = std::iter::once("time")
            .chain(columns.iter().map(|(field, _)| *field))
            .collect();
        (names, rows)
    }
}

/// A named series of an indicator, one entry per bar (`None` before its window fills).
type Column = (&'static str, Vec<Option<f64>>);

fn round4(value: f64) -> f64 {
    super::market::round(value * 10_000.0) / 10_000.0
}

fn moving_average(values: &[f64], period: usize) -> Vec<Option<f64>> {
    let mut sum = 0.0;
    (0..values.len())
        .map(|index| {
            sum += values[index];
            if index >= period {
                sum -= values[index - period];
            }
            (index + 1 >= period).then(|| sum / period as f64)
        })
        .collect()
}

fn exponential_average(values: &[f64], period: usize) -> Vec<Option<f64>> {
    let alpha = 2.0 / (period as f64 + 1.0);
    let mut average = None;
    values
        .iter()
        .map(|&value| {
            let next = average.map_or(value, |previous: f64| previous + alpha * (value - previous));
            average = Some(next);
            Some(next)
        })
        .collect()
}

fn bollinger(closes: &[f64], period: usize) -> Vec<Column> {
    let middle = moving_average(closes, period);
    let mut upper = Vec::with_capacity(closes.len());
    let mut lower = Vec::with_capacity(closes.len());
    for (index, mid) in middle.iter().enumerate() {
        let Some(mid) = *mid else {
            upper.push(None);
            lower.push(None);
            continue;
        };
        let window = &closes[index + 1 - period..=index];
        let variance = window
            .iter()
            .map(|close| (close - mid).powi(2))
            .sum::<f64>()
            / period as f64;
        let band = 2.0 * variance.sqrt();
        upper.push(Some(mid + band));
        lower.push(Some(mid - band));
    }
    vec![("middle", middle), ("upper", upper), ("lower", lower)]
}

fn macd(closes: &[f64]) -> Vec<Column> {
    let fast = exponential_average(closes, 12);
    let slow = exponential_average(closes, 26);
    let difference: Vec<f64> = fast
        .iter()
        .zip(&slow)
        .map(|(f, s)| f.unwrap_or(0.0) - s.unwrap_or(0.0))
        .collect();
    let signal: Vec<f64> = exponential_average(&difference, 9)
        .into_iter()
        .map(|dea| dea.unwrap_or(0.0))
        .collect();
    let histogram = difference
        .iter()
        .zip(&signal)
        .map(|(dif, dea)| Some(2.0 * (dif - dea)))
        .collect();
    vec![
        ("dif", difference.into_iter().map(Some).collect()),
        ("dea", signal.into_iter().map(Some).collect()),
        ("histogram", histogram),
    ]
}

fn rsi(closes: &[f64], period: usize) -> Vec<Option<f64>> {
    let (mut gain, mut loss) = (0.0, 0.0);
    (0..closes.len())
        .map(|index| {
            if index == 0 {
                return None;
            }
            let change = closes[index] - closes[index - 1];
            let weight = 1.0 / period as f64;
            gain += weight * (change.max(0.0) - gain);
            loss += weight * ((-change).max(0.0) - loss);
            (index >= period).then(|| {
                if loss == 0.0 {
                    100.0
                } else {
                    100.0 - 100.0 / (1.0 + gain / loss)
                }
            })
        })
        .collect()
}

fn kdj(bars: &[Bar], period: usize) -> Vec<Column> {
    let (mut k, mut d) = (50.0, 50.0);
    let mut columns = [
        Vec::with_capacity(bars.len()),
        Vec::with_capacity(bars.len()),
        Vec::with_capacity(bars.len()),
    ];
    for index in 0..bars.len() {
        let window = &bars[index.saturating_sub(period - 1)..=index];
        let high = window.iter().map(|bar| bar.high).fold(f64::MIN, f64::max);
        let low = window.iter().map(|bar| bar.low).fold(f64::MAX, f64::min);
        let raw = if high > low {
            100.0 * (bars[index].close - low) / (high - low)
        } else {
            50.0
        };
        k = (2.0 * k + raw) / 3.0;
        d = (2.0 * d + k) / 3.0;
        columns[0].push(Some(k));
        columns[1].push(Some(d));
        columns[2].push(Some(3.0 * k - 2.0 * d));
    }
    let [k, d, j] = columns;
    vec![("k", k), ("d", d), ("j", j)]
}

fn true_ranges(bars: &[Bar]) -> Vec<f64> {
    (0..bars.len())
        .map(|index| {
            let bar = &bars[index];
            let previous = if index == 0 {
                bar.close
            } else {
                bars[index - 1].close
            };
            (bar.high - bar.low)
                .max((bar.high - previous).abs())
                .max((bar.low - previous).abs())
        })
        .collect()
}

fn atr(bars: &[Bar], period: usize) -> Vec<Option<f64>> {
    moving_average(&true_ranges(bars), period)
}

fn obv(bars: &[Bar]) -> Vec<Option<f64>> {
    let mut total = 0.0;
    (0..bars.len())
        .map(|index| {
            if index > 0 {
                let change = bars[index].close - bars[index - 1].close;
                total += bars[index].volume * change.signum() * f64::from(u8::from(change != 0.0));
            }
            Some(total)
        })
        .collect()
}

fn cci(bars: &[Bar], period: usize) -> Vec<Option<f64>> {
    let typical: Vec<f64> = bars
        .iter()
        .map(|bar| (bar.high + bar.low + bar.close) / 3.0)
        .collect();
    let average = moving_average(&typical, period);
    (0..bars.len())
        .map(|index| {
            let mean = average[index]?;
            let window = &typical[index + 1 - period..=index];
            let deviation =
                window.iter().map(|value| (value - mean).abs()).sum::<f64>() / period as f64;
            Some(if deviation == 0.0 {
                0.0
            } else {
                (typical[index] - mean) / (0.015 * deviation)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moving_average_waits_for_a_full_window() {
        let values = moving_average(&[1.0, 2.0, 3.0, 4.0], 2);
        assert_eq!(values, vec![None, Some(1.5), Some(2.5), Some(3.5)]);
    }

    #[test]
    fn overlays_and_oscillators_are_told_apart() {
        assert_eq!(IndicatorName::names_for(true), "MA, EMA, BOLL");
        assert_eq!(
            IndicatorName::names_for(false),
            "VOL, MACD, RSI, KDJ, ATR, OBV, CCI"
        );
    }
}
