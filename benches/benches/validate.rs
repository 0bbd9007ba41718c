//! Validation (R5–R8): ward's bounded error walk beside an unbounded baseline that collects
//! every error with `jsonschema`'s `iter_errors`, in the same run.
//!
//! - `small_valid`: parse plus validate of a typical valid `market_bars_query` input.
//! - `small_invalid`: an input with 4 wrong fields and 6 unexpected keys (5 reported).
//! - `array_100k`: 100,000 wrong elements in `drawings_copy.drawingIds`; parse is reported
//!   on its own, errors are measured on the parsed value.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use ward_core::chart::tools::{CatalogueOptions, registry};
use ward_core::validation::{ToolSchema, parse_arguments};

fn schema(name: &str) -> &'static ToolSchema {
    let registry = Box::leak(Box::new(
        registry(CatalogueOptions::default()).expect("catalogue"),
    ));
    registry.get(name).expect("tool").schema()
}

fn small(c: &mut Criterion) {
    let bars = schema("market_bars_query");
    let valid = r#"{"symbol":"600519.SH","period":"daily","adjustment":"qfq","limit":120}"#;
    let invalid = r#"{"symbol":1,"period":"hourly","adjustment":"x","limit":0,"a":1,"b":2,"c":3,"d":4,"e":5,"f":6}"#;
    let mut group = c.benchmark_group("validate");
    group.bench_function("small_valid/parse+validate", |b| {
        b.iter(|| {
            let value = parse_arguments(black_box(valid)).expect("valid JSON");
            bars.validate(&value).expect("valid input")
        })
    });
    let parsed = parse_arguments(invalid).expect("valid JSON");
    group.bench_function("small_invalid/ward", |b| {
        b.iter(|| bars.validate(black_box(&parsed)).unwrap_err())
    });
    group.bench_function("small_invalid/iter_errors", |b| {
        b.iter(|| bars.all_errors(black_box(&parsed)))
    });
    group.finish();
}

fn large(c: &mut Criterion) {
    let copy = schema("drawings_copy");
    let ids: Vec<String> = (0..100_000).map(|index| index.to_string()).collect();
    let text = format!(
        r#"{{"sourcePaneId":"main","targetPaneId":"pane-1","drawingIds":[{}]}}"#,
        ids.join(",")
    );
    let parsed = parse_arguments(&text).expect("valid JSON");
    let mut group = c.benchmark_group("validate/array_100k");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(20);
    group.bench_function("parse", |b| {
        b.iter(|| parse_arguments(black_box(&text)).expect("valid JSON"))
    });
    group.throughput(Throughput::Elements(100_000));
    group.bench_function("errors/ward", |b| {
        b.iter(|| copy.validate(black_box(&parsed)).unwrap_err())
    });
    group.bench_function("errors/iter_errors", |b| {
        b.iter_batched(
            || (),
            |()| copy.all_errors(black_box(&parsed)),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, small, large);
criterion_main!(benches);
