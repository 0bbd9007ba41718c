//! Transitions aimed at the model's state: valid inputs drawn from each tool's schema, then
//! aimed at the ids the model holds (panes, drawings, comparisons), at the anchor count of
//! the kind, at indicators allowed on the pane, at dates inside and just outside the loaded
//! range; near-valid inputs, broken and blank argument texts; and initial charts that hold
//! up to the limits already, so that the limits come within a few transitions.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::strategy::Union;
use serde_json::{Map, Value, json};
use ward_core::chart::market::CATALOGUE as INSTRUMENTS;
use ward_core::chart::{Anchor, ChartState, Comparison, Drawing, Pane, Style};

use super::catalogue::{
    CALLED, COMPARISONS_MAX, DATES_IN_RANGE, DATES_REFUSED, OSCILLATORS, OVERLAYS, PANES_MAX,
    anchor_count, default_period, parameters,
};
use super::model::{Model, Run, Text, Transition, allocate, kind_name, to_indicator};
use crate::strategies::{near_valid, valid};

/// The ids the model holds, for aiming calls.
#[derive(Clone, Debug)]
struct Aims {
    /// Pane ids with the names of their indicators.
    panes: Vec<(String, Vec<String>)>,
    /// Drawing ids with their kind and pane.
    drawings: Vec<(String, String, String)>,
    comparisons: Vec<String>,
}

impl Aims {
    fn of(chart: &ChartState) -> Aims {
        Aims {
            panes: chart
                .panes
                .iter()
                .map(|pane| {
                    let names = pane
                        .indicators
                        .iter()
                        .map(|indicator| {
                            serde_json::to_value(indicator).expect("serialises")["name"]
                                .as_str()
                                .unwrap_or_default()
                                .to_owned()
                        })
                        .collect();
                    (pane.id.clone(), names)
                })
                .collect(),
            drawings: chart
                .drawings
                .iter()
                .map(|drawing| {
                    (
                        drawing.id.clone(),
                        kind_name(drawing.kind),
                        drawing.pane_id.clone(),
                    )
                })
                .collect(),
            comparisons: chart
                .comparisons
                .iter()
                .map(|comparison| comparison.id.clone())
                .collect(),
        }
    }
}

/// Choices drawn once per transition and consumed in order while aiming.
struct Picks {
    picks: Vec<Index>,
    next: usize,
}

impl Picks {
    fn index(&mut self, size: usize) -> usize {
        let pick = &self.picks[self.next % self.picks.len()];
        self.next += 1;
        pick.index(size.max(1))
    }

    /// True `numerator` times in `denominator`.
    fn chance(&mut self, numerator: usize, denominator: usize) -> bool {
        self.index(denominator) < numerator
    }

    fn one_of<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        (!items.is_empty()).then(|| &items[self.index(items.len())])
    }
}

/// Aims a valid input of `tool` at the model's ids and at the domain's rules, most of the
/// time; the rest of the time the input goes as drawn, usually to a domain error.
fn aim(tool: &str, mut input: Value, aims: &Aims, picks: &mut Picks) -> Value {
    let Some(members) = input.as_object_mut() else {
        return input;
    };
    for key in ["paneId", "sourcePaneId", "targetPaneId"] {
        if members.contains_key(key) && picks.chance(9, 10) {
            let pane = picks.one_of(&aims.panes).expect("the main pane exists");
            members.insert(key.to_owned(), json!(pane.0));
        }
    }
    if members.contains_key("drawingId")
        && picks.chance(9, 10)
        && let Some(drawing) = picks.one_of(&aims.drawings)
    {
        members.insert("drawingId".to_owned(), json!(drawing.0));
    }
    if tool == "drawings_copy" && picks.chance(4, 5) {
        // Copy from a pane that holds drawings, the listed ones among them.
        if let Some(drawing) = picks.one_of(&aims.drawings) {
            members.insert("sourcePaneId".to_owned(), json!(drawing.2));
        }
    }
    let source = members.get("sourcePaneId").cloned();
    if let Some(Value::Array(ids)) = members.get_mut("drawingIds") {
        let on_source: Vec<&(String, String, String)> = aims
            .drawings
            .iter()
            .filter(|drawing| Some(json!(drawing.2)) == source)
            .collect();
        for id in ids.iter_mut() {
            if let Some(drawing) = picks.one_of(&on_source).filter(|_| picks.chance(9, 10)) {
                *id = json!(drawing.0);
            }
        }
    }
    if members.contains_key("comparisonId")
        && picks.chance(9, 10)
        && let Some(comparison) = picks.one_of(&aims.comparisons)
    {
        members.insert("comparisonId".to_owned(), json!(comparison));
    }
    if tool == "comparison_create" && picks.chance(9, 10) {
        // Seven symbols, the main one among them: repeats and the limit come soon.
        let instrument = picks.one_of(&INSTRUMENTS[..7]).expect("a catalogue");
        members.insert("symbol".to_owned(), json!(instrument.symbol));
    }
    aim_anchors(tool, members, aims, picks);
    aim_indicators(tool, members, aims, picks);
    if tool == "pane_move" && picks.chance(1, 2) {
        let sub_panes = aims.panes.len().saturating_sub(1).max(1);
        members.insert("position".to_owned(), json!(1 + picks.index(sub_panes)));
    }
    input
}

fn aim_anchors(tool: &str, members: &mut Map<String, Value>, aims: &Aims, picks: &mut Picks) {
    let kind = match tool {
        "drawing_create" => members
            .get("kind")
            .and_then(Value::as_str)
            .map(str::to_owned),
        "drawing_update" => {
            let id = members.get("drawingId").and_then(Value::as_str);
            aims.drawings
                .iter()
                .find(|drawing| Some(drawing.0.as_str()) == id)
                .map(|drawing| drawing.1.clone())
        }
        _ => None,
    };
    if tool == "drawing_create" && kind.as_deref() == Some("text") && picks.chance(4, 5) {
        members.insert("text".to_owned(), json!("note"));
    }
    let Some(Value::Array(anchors)) = members.get_mut("anchors") else {
        return;
    };
    if let Some(kind) = kind.filter(|_| picks.chance(4, 5)) {
        let first = anchors[0].clone();
        anchors.resize(anchor_count(&kind), first);
    }
    for anchor in anchors.iter_mut().filter_map(Value::as_object_mut) {
        // Mostly a date of the range or none (the last trading day), sometimes a refused
        // date, rarely the date as drawn (which is rarely a calendar day).
        match picks.index(20) {
            0..=11 => {
                let date = DATES_IN_RANGE[picks.index(DATES_IN_RANGE.len())];
                anchor.insert("tradingDate".to_owned(), json!(date));
            }
            12..=15 => {
                anchor.remove("tradingDate");
            }
            16..=18 => {
                let date = DATES_REFUSED[picks.index(DATES_REFUSED.len())];
                anchor.insert("tradingDate".to_owned(), json!(date));
            }
            _ => {}
        }
    }
}

fn aim_indicators(tool: &str, members: &mut Map<String, Value>, aims: &Aims, picks: &mut Picks) {
    let on_main = match tool {
        "pane_create" => false,
        "pane_replace_content" | "pane_update_content" => {
            members.get("paneId").and_then(Value::as_str) == Some("main")
        }
        _ => return,
    };
    let allowed = if on_main { OVERLAYS } else { OSCILLATORS };
    for key in ["indicators", "add"] {
        let Some(Value::Array(list)) = members.get_mut(key) else {
            continue;
        };
        for indicator in list.iter_mut().filter_map(Value::as_object_mut) {
            if picks.chance(7, 10) {
                let name = allowed[picks.index(allowed.len())];
                indicator.insert("name".to_owned(), json!(name));
                if default_period(name).is_none() && picks.chance(4, 5) {
                    indicator.remove("period");
                }
            }
        }
    }
    let pane_id = members
        .get("paneId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(Value::Array(names)) = members.get_mut("remove") {
        let present = aims
            .panes
            .iter()
            .find(|pane| Some(&pane.0) == pane_id.as_ref())
            .map(|pane| pane.1.clone())
            .unwrap_or_default();
        for name in names.iter_mut() {
            if let Some(present) = picks.one_of(&present).filter(|_| picks.chance(7, 10)) {
                *name = json!(present);
            }
        }
    }
}

pub fn aimed_call(state: &Model, run: Run) -> BoxedStrategy<Transition> {
    let aims = Aims::of(&state.chart);
    let choices: Vec<(u32, BoxedStrategy<Transition>)> = CALLED
        .iter()
        .map(|&(tool, weight)| {
            let aims = aims.clone();
            let strategy = (
                valid(&parameters(tool)),
                proptest::collection::vec(any::<Index>(), 24),
            )
                .prop_map(move |(input, picks)| {
                    let mut picks = Picks { picks, next: 0 };
                    Transition::Call {
                        tool,
                        arguments: aim(tool, input, &aims, &mut picks).to_string(),
                        text: Text::Json,
                        run,
                    }
                })
                .boxed();
            (weight, strategy)
        })
        .collect();
    Union::new_weighted(choices).boxed()
}

fn any_tool() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(CALLED.iter().map(|(tool, _)| *tool).collect::<Vec<_>>())
}

pub fn near_valid_call() -> BoxedStrategy<Transition> {
    any_tool()
        .prop_flat_map(|tool| {
            near_valid(&parameters(tool)).prop_map(move |input| Transition::Call {
                tool,
                arguments: input.to_string(),
                text: Text::Json,
                run: Run::Normal,
            })
        })
        .boxed()
}

pub fn text_call(texts: &'static [&'static str], text: Text) -> BoxedStrategy<Transition> {
    (any_tool(), proptest::sample::select(texts))
        .prop_map(move |(tool, arguments)| Transition::Call {
            tool,
            arguments: arguments.to_owned(),
            text,
            run: Run::Normal,
        })
        .boxed()
}

/// A fresh chart, or one already holding up to the limits: sub-panes, comparisons,
/// drawings and settings, so that the limits come within a few transitions.
pub fn initial_chart() -> impl Strategy<Value = ChartState> {
    let settings = valid(&parameters("settings_update"));
    let drawings = proptest::collection::vec(
        (
            any::<Index>(),
            proptest::sample::select(DRAWING_KINDS),
            1u32..200_000,
        ),
        0..12,
    );
    prop_oneof![
        1 => Just(ChartState::fresh()),
        3 => (
            0..=PANES_MAX - 3,
            proptest::sample::subsequence(INSTRUMENTS[1..7].to_vec(), 0..=COMPARISONS_MAX),
            drawings,
            settings,
        )
            .prop_map(|(panes, compared, drawings, settings)| {
                let mut chart = ChartState::fresh();
                for index in 0..panes {
                    let id = allocate(&mut chart, "pane");
                    let name = OSCILLATORS[index % OSCILLATORS.len()];
                    chart.panes.push(Pane {
                        id,
                        indicators: vec![to_indicator(name, None)],
                        height: 10 + 5 * index as u32,
                        collapsed: index % 2 == 1,
                    });
                }
                for instrument in compared {
                    let id = allocate(&mut chart, "comparison");
                    chart.comparisons.push(Comparison {
                        id,
                        symbol: instrument.symbol.to_owned(),
                        mode: Default::default(),
                    });
                }
                for (pane, kind, cents) in drawings {
                    let pane_id = chart.panes[pane.index(chart.panes.len())].id.clone();
                    let anchor = Anchor {
                        trading_date: "2024-06-14".to_owned(),
                        price: f64::from(cents) / 100.0,
                    };
                    let drawing = Drawing {
                        id: allocate(&mut chart, "drawing"),
                        kind: serde_json::from_value(json!(kind)).expect("a kind"),
                        pane_id,
                        anchors: vec![anchor; anchor_count(kind)],
                        style: Style::default(),
                        text: (kind == "text").then(|| "label".to_owned()),
                    };
                    chart.drawings.push(drawing);
                }
                let mut current = serde_json::to_value(&chart.settings).expect("serialises");
                for (key, value) in settings.as_object().into_iter().flatten() {
                    current[key] = value.clone();
                }
                chart.settings = serde_json::from_value(current).expect("settings");
                chart
            }),
    ]
}

const DRAWING_KINDS: &[&str] = &[
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
