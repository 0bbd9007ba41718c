//! The durable store (SPEC §16, R30–R31): one run's journal committed step by step, as the run
//! driver commits it, on a real redb file, on the simulator's disk (a redb database over
//! `SimulatedDisk`, every sync a copy of the image), and, as the baseline, into the in-memory
//! store.
//!
//! A run's journal here is its start with the prompt, four replies each with two calls, each
//! batch's two results (about 600 bytes of JSON each) committed with the chart (R31), the
//! last reply, and its end: 11 commits of 15 records. Each iteration journals a new session
//! into the same database, so the file grows as a real one does.
//!
//! ```text
//! cargo bench -p ward-benches --bench durable
//! ```

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use ward_core::chart::{ChartState, SharedChart};
use ward_core::driver::Limits;
use ward_core::durable::{DurableStore, Record, StoredLimits};
use ward_core::envelope::ToolResult;
use ward_core::session::{MemoryStore, Message, SessionStore};
use ward_core::tool::ToolCall;
use ward_sim::world::disk::SimulatedDisk;

/// One run's steps as the driver commits them (SPEC §16), each one transaction, and whether
/// it carries the chart (a batch with a write): the start with the prompt, four replies with
/// two calls each, each batch's two results, the last reply, and the end.
fn journal() -> Vec<(Vec<Record>, bool)> {
    let prompt = "Draw a trend line from the last low to the high and add RSI.";
    let mut records = vec![(
        vec![
            Record::RunStarted {
                run: 0,
                read_only: false,
                disabled: Vec::new(),
                limits: StoredLimits::from(Limits::default()),
                prompt: prompt.to_owned(),
            },
            Record::Message {
                message: Arc::new(Message::User {
                    text: prompt.to_owned(),
                }),
            },
        ],
        false,
    )];
    for turn in 0..4 {
        let calls: Vec<ToolCall> = (0..2)
            .map(|index| ToolCall {
                id: format!("call_{turn}_{index}"),
                name: if index == 0 {
                    "drawing_create"
                } else {
                    "indicators_query"
                }
                .to_owned(),
                arguments: json!({"kind": "trendline", "anchors": [
                    {"time": 1_700_000_000 + turn, "price": 101.5},
                    {"time": 1_700_086_400 + turn, "price": 108.25}]})
                .to_string(),
            })
            .collect();
        records.push((
            vec![Record::Message {
                message: Arc::new(Message::Assistant {
                    text: "Drawing the line first.".to_owned(),
                    calls: calls.clone().into(),
                }),
            }],
            false,
        ));
        let results = calls.iter().enumerate().map(|(index, call)| {
            let data = json!({"id": format!("drawing-{turn}"), "points": (0..20)
                .map(|point| json!({"time": point, "value": f64::from(point) * 1.5}))
                .collect::<Vec<_>>()});
            Record::Message {
                message: Arc::new(Message::Tool {
                    call_id: Arc::from(call.id.as_str()),
                    name: Arc::from(call.name.as_str()),
                    result: ToolResult::success(data, index == 0),
                }),
            }
        });
        records.push((results.collect(), true));
    }
    records.push((
        vec![Record::Message {
            message: Arc::new(Message::Assistant {
                text: "The line and RSI are on the chart.".to_owned(),
                calls: Vec::new().into(),
            }),
        }],
        false,
    ));
    records.push((
        vec![Record::RunEnded {
            run: 0,
            outcome: "completed".to_owned(),
        }],
        false,
    ));
    records
}

fn commit_all(
    store: &mut DurableStore,
    session: &str,
    steps: &[(Vec<Record>, bool)],
    chart: &ChartState,
) {
    for (records, with_chart) in steps {
        store
            .commit_records(session, records, with_chart.then_some(chart))
            .expect("committed");
    }
}

fn bench(c: &mut Criterion) {
    let records = journal();
    let chart = SharedChart::new(0).snapshot();
    let mut group = c.benchmark_group("journal");
    group.throughput(Throughput::Elements(records.len() as u64)); // commits
    group.bench_function("memory store", |b| {
        let chart = Arc::new(chart.clone());
        b.iter(|| {
            let mut store = MemoryStore::new();
            for (step, with_chart) in &records {
                store
                    .commit("bench", step, with_chart.then_some(&chart))
                    .expect("committed");
            }
            black_box(&store);
        });
    });
    group.bench_function("redb on the simulated disk", |b| {
        // A fresh disk for each sample: the simulated disk keeps every byte written, and its
        // syncs copy the whole image, so one disk for every iteration would slow as it grew.
        b.iter_custom(|iterations| {
            let mut store = DurableStore::open_on(SimulatedDisk::new()).expect("a store");
            let start = std::time::Instant::now();
            for session in 0..iterations {
                commit_all(&mut store, &session.to_string(), &records, &chart);
            }
            start.elapsed()
        });
    });
    let directory = std::env::temp_dir().join(format!("ward-bench-durable-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("a directory");
    group.bench_function("redb on a file", |b| {
        let mut store = DurableStore::open(&directory.join("bench.redb")).expect("a store");
        let mut session = 0_u64;
        b.iter(|| {
            session += 1;
            commit_all(&mut store, &session.to_string(), &records, &chart);
        });
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&directory);
}

criterion_group!(benches, bench);
criterion_main!(benches);
