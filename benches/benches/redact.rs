//! The redactor beside the seed baseline (compiled in ASCII mode), on committed prose and
//! clean log lines, secret-dense text and a 200-byte prompt (SPEC §14).
//!
//! ```text
//! cargo bench -p ward-benches --bench redact -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ward_benches::{DENSE_SEED, PROMPT_200, SECRETS, log, prose, secret_dense};
use ward_core::redact::Redactor;
use ward_core::redact::baseline::Baseline;

const SIZES: [(usize, &str); 4] = [
    (1 << 10, "1KiB"),
    (64 << 10, "64KiB"),
    (1 << 20, "1MiB"),
    (16 << 20, "16MiB"),
];

fn side_by_side(criterion: &mut Criterion, group_name: &str, inputs: &[(String, String)]) {
    let redactor = Redactor::new(SECRETS).expect("valid secrets");
    let baseline = Baseline::ascii();
    let mut group = criterion.benchmark_group(group_name);
    for (label, text) in inputs {
        group.throughput(Throughput::Bytes(text.len() as u64));
        if text.len() >= 1 << 20 {
            group.sample_size(10);
        }
        group.bench_with_input(BenchmarkId::new("ward", label), text, |bencher, text| {
            bencher.iter(|| black_box(redactor.redact(black_box(text))).len())
        });
        group.bench_with_input(
            BenchmarkId::new("seed-baseline", label),
            text,
            |bencher, text| {
                bencher.iter(|| {
                    black_box(baseline.redact_bytes(black_box(text.as_bytes()), &SECRETS)).len()
                })
            },
        );
    }
    group.finish();
}

/// `text(len)` at each of [`SIZES`], side by side with the baseline.
fn at_every_size(criterion: &mut Criterion, group_name: &str, text: impl Fn(usize) -> String) {
    let inputs: Vec<_> = SIZES
        .iter()
        .map(|&(len, label)| (label.to_string(), text(len)))
        .collect();
    side_by_side(criterion, group_name, &inputs);
}

fn clean_prose(criterion: &mut Criterion) {
    at_every_size(criterion, "redact/clean-prose", prose);
}

fn clean_log(criterion: &mut Criterion) {
    at_every_size(criterion, "redact/clean-log", log);
}

fn secret_dense_text(criterion: &mut Criterion) {
    at_every_size(criterion, "redact/secret-dense", |len| {
        secret_dense(len, DENSE_SEED)
    });
}

fn prompt(criterion: &mut Criterion) {
    side_by_side(
        criterion,
        "redact/prompt",
        &[("200B".to_string(), PROMPT_200.to_string())],
    );
}

criterion_group!(benches, clean_prose, clean_log, secret_dense_text, prompt);
criterion_main!(benches);
