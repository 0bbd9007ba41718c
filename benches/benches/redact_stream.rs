//! Streaming redaction beside whole-text redaction (SPEC §7, §14), file to file style: the
//! same text from an in-memory reader through `redact_stream` into `io::sink()`, and through
//! `redact_bytes`, side by side in one run.
//!
//! ```text
//! cargo bench -p ward-benches --bench redact_stream -- --warm-up-time 1 --measurement-time 4
//! ```

use std::hint::black_box;
use std::io;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ward_benches::{DENSE_SEED, SECRETS, prose, secret_dense};
use ward_core::redact::{Redactor, StreamOptions};

const SIZES: [(usize, &str); 2] = [(1 << 20, "1MiB"), (64 << 20, "64MiB")];

fn side_by_side(criterion: &mut Criterion, group_name: &str, inputs: &[(String, Vec<u8>)]) {
    let redactor = Redactor::new(SECRETS).expect("valid secrets");
    let options = StreamOptions::default();
    let mut group = criterion.benchmark_group(group_name);
    for (label, bytes) in inputs {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        if bytes.len() >= 1 << 20 {
            group.sample_size(10);
        }
        group.bench_with_input(
            BenchmarkId::new("stream", label),
            bytes,
            |bencher, bytes| {
                bencher.iter(|| {
                    let report = redactor
                        .redact_stream_with(black_box(&bytes[..]), io::sink(), &options)
                        .expect("in-memory streams do not fail");
                    black_box(report.bytes_written)
                })
            },
        );
        group.bench_with_input(BenchmarkId::new("whole", label), bytes, |bencher, bytes| {
            bencher.iter(|| black_box(redactor.redact_bytes(black_box(bytes))).len())
        });
    }
    group.finish();
}

fn clean_prose(criterion: &mut Criterion) {
    let inputs: Vec<_> = SIZES
        .iter()
        .map(|&(len, label)| (label.to_string(), prose(len).into_bytes()))
        .collect();
    side_by_side(criterion, "redact-stream/clean-prose", &inputs);
}

fn secret_dense_text(criterion: &mut Criterion) {
    let inputs: Vec<_> = SIZES
        .iter()
        .map(|&(len, label)| {
            (
                label.to_string(),
                secret_dense(len, DENSE_SEED).into_bytes(),
            )
        })
        .collect();
    side_by_side(criterion, "redact-stream/secret-dense", &inputs);
}

criterion_group!(benches, clean_prose, secret_dense_text);
criterion_main!(benches);
