//! The chart domain (SPEC §8): a compact, deterministic, in-memory chart.
//!
//! A chart has a main pane showing a synthetic bar series, indicator sub-panes, drawings
//! anchored on the bars, comparison series and settings; [`market`] holds the embedded
//! instrument catalogue and the seeded bars, [`tools`] the tools of the SPEC §8 table.
//!
//! # Commands and undo
//!
//! Every change is a command run by the registry's entry point as one transaction: the
//! registry takes a [`Checkpoint`] before a destructive body runs, then either
//! [`commits`](SharedChart::commit) it (the change becomes one undo step, and `stateChanged`
//! is true exactly when the state differs) or [`rolls it back`](SharedChart::rollback) when
//! the body failed, even half-way. The undo step is the state before the command, so
//! [`SharedChart::undo`] restores it exactly, by construction. The UI's surface —
//! [`SharedChart::snapshot`] and [`SharedChart::undo`] — is public API; the simulator checks
//! I9 through it.
//!
//! Limits: at most [`PANES_MAX`] panes, [`DRAWINGS_PER_PANE_MAX`] drawings per pane,
//! [`COMPARISONS_MAX`] comparisons, [`INDICATORS_PER_PANE_MAX`] indicators per pane, and
//! [`UNDO_DEPTH_MAX`] undo steps (the oldest step is forgotten first).

pub mod calendar;
pub mod indicators;
pub mod market;
pub mod tools;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};

use indicators::{Indicator, IndicatorName};
use market::{DEFAULT_SYMBOL, Market, Period};

/// The most panes a chart holds, the main pane included.
pub const PANES_MAX: usize = 8;
/// The most drawings one pane holds.
pub const DRAWINGS_PER_PANE_MAX: usize = 50;
/// The most comparison series.
pub const COMPARISONS_MAX: usize = 5;
/// The most indicators on one pane.
pub const INDICATORS_PER_PANE_MAX: usize = 4;
/// The most undo steps kept.
pub const UNDO_DEPTH_MAX: usize = 100;
/// The id of the main pane.
pub const MAIN_PANE_ID: &str = "main";

/// The whole observable state of a chart: what [`SharedChart::snapshot`] returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartState {
    /// The main series' symbol.
    pub symbol: String,
    /// The main series' period.
    pub period: Period,
    /// The panes, main first, in display order.
    pub panes: Vec<Pane>,
    /// The drawings, in creation order.
    pub drawings: Vec<Drawing>,
    /// The comparison series, in creation order.
    pub comparisons: Vec<Comparison>,
    /// Display settings.
    pub settings: Settings,
    /// The next number that names a pane, drawing or comparison.
    pub next_id: u64,
}

/// A pane.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pane {
    /// `main` or `pane-<n>`.
    pub id: String,
    /// The indicators drawn on it.
    pub indicators: Vec<Indicator>,
    /// Share of the chart's height, in percent (sub-panes only; the main pane takes the rest).
    pub height: u32,
    /// Whether the pane is collapsed.
    pub collapsed: bool,
}

impl Pane {
    /// Whether this is the main (price) pane.
    pub fn is_main(&self) -> bool {
        self.id == MAIN_PANE_ID
    }
}

/// A drawing kind and its exact anchor count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrawingKind {
    /// Two anchors.
    TrendLine,
    /// Two anchors.
    Ray,
    /// Two anchors.
    ExtendedLine,
    /// Two anchors.
    Arrow,
    /// One anchor.
    HorizontalLine,
    /// One anchor.
    HorizontalRay,
    /// One anchor.
    VerticalLine,
    /// Two anchors.
    Rectangle,
    /// Two anchors.
    Ellipse,
    /// Three anchors.
    Triangle,
    /// Three anchors.
    ParallelChannel,
    /// Two anchors.
    FibRetracement,
    /// Three anchors.
    FibExtension,
    /// Two anchors.
    PriceRange,
    /// One anchor, and a text.
    Text,
}

/// The drawing kinds, as the schemas list them.
pub const DRAWING_KIND_NAMES: &[&str] = &[
    "trend-line",
    "ray",
    "extended-line",
    "arrow",
    "horizontal-line",
    "horizontal-ray",
    "vertical-line",
    "rectangle",
    "ellipse",
    "triangle",
    "parallel-channel",
    "fib-retracement",
    "fib-extension",
    "price-range",
    "text",
];

impl DrawingKind {
    /// The kind's name.
    pub fn as_str(self) -> &'static str {
        DRAWING_KIND_NAMES[self as usize]
    }

    /// How many anchors the kind takes.
    pub fn anchor_count(self) -> usize {
        match self {
            DrawingKind::HorizontalLine
            | DrawingKind::HorizontalRay
            | DrawingKind::VerticalLine
            | DrawingKind::Text => 1,
            DrawingKind::Triangle | DrawingKind::ParallelChannel | DrawingKind::FibExtension => 3,
            _ => 2,
        }
    }
}

/// A point of a drawing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Anchor {
    /// `YYYY-MM-DD`, within the loaded range.
    pub trading_date: String,
    /// The price (or indicator value on a sub-pane).
    pub price: f64,
}

/// The fixed palette.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Color {
    Red,
    Orange,
    Yellow,
    Green,
    Teal,
    #[default]
    Blue,
    Purple,
    Gray,
    Black,
    White,
}

/// The palette's names.
pub const COLOR_NAMES: &[&str] = &[
    "red", "orange", "yellow", "green", "teal", "blue", "purple", "gray", "black", "white",
];

/// A line style.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum LineStyle {
    #[default]
    Solid,
    Dashed,
    Dotted,
}

/// How a drawing is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Style {
    /// Colour from the palette.
    pub color: Color,
    /// Line width in pixels, 1–4.
    pub line_width: u8,
    /// Solid, dashed or dotted.
    pub line_style: LineStyle,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            color: Color::Blue,
            line_width: 1,
            line_style: LineStyle::Solid,
        }
    }
}

/// A drawing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Drawing {
    /// `drawing-<n>`.
    pub id: String,
    /// The kind.
    pub kind: DrawingKind,
    /// The pane it is on.
    pub pane_id: String,
    /// Exactly `kind.anchor_count()` anchors.
    pub anchors: Vec<Anchor>,
    /// Its style.
    pub style: Style,
    /// Its text label, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// How a comparison series is scaled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComparisonMode {
    /// Percent change from the first visible bar.
    #[default]
    Percent,
    /// Raw price on its own scale.
    Price,
}

/// A comparison series on the main pane.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// `comparison-<n>`.
    pub id: String,
    /// The compared symbol.
    pub symbol: String,
    /// Its scaling.
    pub mode: ComparisonMode,
}

/// Display settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// `light` or `dark`.
    pub theme: String,
    /// `candles`, `hollow-candles`, `bars`, `line` or `area`.
    pub chart_type: String,
    /// Whether volume shows under the price.
    pub show_volume: bool,
    /// Whether the grid shows.
    pub show_grid: bool,
    /// `linear`, `log` or `percent`.
    pub price_scale: String,
    /// `exchange`, `utc` or `local`.
    pub timezone: String,
    /// Whether the crosshair follows the pointer.
    pub crosshair: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            theme: "light".to_owned(),
            chart_type: "candles".to_owned(),
            show_volume: true,
            show_grid: true,
            price_scale: "linear".to_owned(),
            timezone: "exchange".to_owned(),
            crosshair: true,
        }
    }
}

impl ChartState {
    /// A fresh chart: the main pane with MA(5) and MA(20), a volume pane and a MACD pane, no
    /// drawings, no comparisons, default settings.
    pub fn fresh() -> ChartState {
        let indicator = |name, period| Indicator { name, period };
        ChartState {
            symbol: DEFAULT_SYMBOL.to_owned(),
            period: Period::Daily,
            panes: vec![
                Pane {
                    id: MAIN_PANE_ID.to_owned(),
                    indicators: vec![
                        indicator(IndicatorName::Ma, Some(5)),
                        indicator(IndicatorName::Ma, Some(20)),
                    ],
                    height: 60,
                    collapsed: false,
                },
                Pane {
                    id: "pane-1".to_owned(),
                    indicators: vec![indicator(IndicatorName::Vol, None)],
                    height: 20,
                    collapsed: false,
                },
                Pane {
                    id: "pane-2".to_owned(),
                    indicators: vec![indicator(IndicatorName::Macd, None)],
                    height: 20,
                    collapsed: false,
                },
            ],
            drawings: Vec::new(),
            comparisons: Vec::new(),
            settings: Settings::default(),
            next_id: 3,
        }
    }

    /// The pane with `id`.
    pub fn pane(&self, id: &str) -> Option<&Pane> {
        self.panes.iter().find(|pane| pane.id == id)
    }

    /// A new id with `prefix`, e.g. `drawing-7`.
    pub fn allocate_id(&mut self, prefix: &str) -> String {
        let id = format!("{prefix}-{}", self.next_id);
        self.next_id += 1;
        id
    }
}

/// The state before a command, taken by the registry's entry point. Sharing the state (an
/// `Arc`) makes a checkpoint free; the command's first change copies it once.
#[derive(Debug)]
pub struct Checkpoint(Arc<ChartState>);

#[derive(Debug)]
struct ChartDocument {
    state: Arc<ChartState>,
    undo: VecDeque<Arc<ChartState>>,
}

/// A chart shared by the tools of a session. Cloning shares it.
#[derive(Clone, Debug)]
pub struct SharedChart {
    document: Arc<Mutex<ChartDocument>>,
    market: Arc<Market>,
}

impl SharedChart {
    /// A fresh chart whose bars come from `market_seed`.
    pub fn new(market_seed: u64) -> SharedChart {
        SharedChart::with_state(market_seed, ChartState::fresh())
    }

    /// A chart starting from `state`.
    pub fn with_state(market_seed: u64, state: ChartState) -> SharedChart {
        SharedChart {
            document: Arc::new(Mutex::new(ChartDocument {
                state: Arc::new(state),
                undo: VecDeque::new(),
            })),
            market: Arc::new(Market::new(market_seed)),
        }
    }

    fn document(&self) -> MutexGuard<'_, ChartDocument> {
        // Commands mutate a copy-on-checkpoint state and the registry rolls back failures,
        // so a poisoned lock holds a consistent state once rolled back; keep using it.
        self.document.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The market the chart's bars come from.
    pub fn market(&self) -> &Market {
        &self.market
    }

    /// The whole observable state.
    pub fn snapshot(&self) -> ChartState {
        ChartState::clone(&self.document().state)
    }

    /// The whole observable state, shared: no copy is made, and the value never changes
    /// (a later change of the chart makes a new state).
    pub fn snapshot_shared(&self) -> Arc<ChartState> {
        Arc::clone(&self.document().state)
    }

    /// Reads the state without copying it.
    pub fn read<R>(&self, read: impl FnOnce(&ChartState) -> R) -> R {
        read(&self.document().state)
    }

    /// Changes the state. Only tool bodies call this, inside the registry's transaction.
    pub fn update<R>(&self, change: impl FnOnce(&mut ChartState) -> R) -> R {
        change(Arc::make_mut(&mut self.document().state))
    }

    /// Replaces the state with `state` and forgets the undo history: the chart as a durable
    /// store committed it (R31), taken up after a crash. The undo history lives in memory
    /// only; it starts empty after a restart.
    pub fn restore(&self, state: ChartState) {
        let mut document = self.document();
        document.state = Arc::new(state);
        document.undo.clear();
    }

    /// Undoes the last change; `false` when there is nothing to undo.
    pub fn undo(&self) -> bool {
        let mut document = self.document();
        match document.undo.pop_back() {
            Some(before) => {
                document.state = before;
                true
            }
            None => false,
        }
    }

    /// How many changes can be undone.
    pub fn undo_depth(&self) -> usize {
        self.document().undo.len()
    }

    /// Starts a command.
    pub fn begin(&self) -> Checkpoint {
        Checkpoint(self.snapshot_shared())
    }

    /// Ends a command that succeeded: whether the state changed, in which case the state
    /// before it becomes one undo step.
    pub fn commit(&self, checkpoint: Checkpoint) -> bool {
        let mut document = self.document();
        if Arc::ptr_eq(&document.state, &checkpoint.0) || *document.state == *checkpoint.0 {
            return false;
        }
        if document.undo.len() == UNDO_DEPTH_MAX {
            document.undo.pop_front();
        }
        document.undo.push_back(checkpoint.0);
        true
    }

    /// Ends a command that failed: restores the state before it.
    pub fn rollback(&self, checkpoint: Checkpoint) {
        self.document().state = checkpoint.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_records_one_undo_step_only_for_a_change() {
        let chart = SharedChart::new(7);
        let checkpoint = chart.begin();
        assert!(!chart.commit(checkpoint));
        assert_eq!(chart.undo_depth(), 0);

        let before = chart.snapshot();
        let checkpoint = chart.begin();
        chart.update(|state| state.settings.theme = "dark".to_owned());
        assert!(chart.commit(checkpoint));
        assert_ne!(chart.snapshot(), before);
        assert!(chart.undo());
        assert_eq!(chart.snapshot(), before);
        assert!(!chart.undo());
    }

    #[test]
    fn rollback_restores_exactly() {
        let chart = SharedChart::new(7);
        let before = chart.snapshot();
        let checkpoint = chart.begin();
        chart.update(|state| {
            state.panes.clear();
            state.next_id = 99;
        });
        chart.rollback(checkpoint);
        assert_eq!(chart.snapshot(), before);
        assert_eq!(chart.undo_depth(), 0);
    }

    #[test]
    fn the_undo_stack_is_bounded() {
        let chart = SharedChart::new(7);
        for step in 0..(UNDO_DEPTH_MAX + 10) {
            let checkpoint = chart.begin();
            chart.update(|state| state.next_id = 1000 + step as u64);
            assert!(chart.commit(checkpoint));
        }
        assert_eq!(chart.undo_depth(), UNDO_DEPTH_MAX);
    }
}
