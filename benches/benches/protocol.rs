//! The protocol (SPEC §15): generated scenarios executed and checked per second with ward's
//! core in process and with the same core behind `ward serve` over pipes, side by side, one
//! job each, on the default campaign's scenarios (seeds 0..200).
//!
//! The `ward` binary is `WARD_BIN`, or `target/release/ward` from the workspace root (build it
//! first: `cargo build --release -p ward-sim`); without one the protocol side is skipped
//! with a message.
//!
//! ```text
//! cargo build --release -p ward-sim && cargo bench -p ward-benches --bench protocol
//! ```

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ward_sim::campaign::{self, CampaignConfig};

const SEEDS: std::ops::Range<u64> = 0..200;

fn config(runtime: Option<String>) -> CampaignConfig {
    CampaignConfig {
        seeds: SEEDS,
        jobs: 1,
        bug: None,
        shard: None,
        rerun_every: 0,
        runtime,
    }
}

fn ward_binary() -> Option<PathBuf> {
    let path = std::env::var_os("WARD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/ward")
        });
    path.is_file().then_some(path)
}

fn protocol(criterion: &mut Criterion) {
    let in_process = campaign::run(&config(None), &|_| {});
    assert_eq!(
        in_process.failing_seeds, 0,
        "the correct core holds every invariant"
    );
    let mut group = criterion.benchmark_group("protocol");
    group.throughput(Throughput::Elements(in_process.runs));
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("runs", "in-process"), |bencher| {
        bencher.iter(|| black_box(campaign::run(&config(None), &|_| {}).trace_digest))
    });
    match ward_binary() {
        Some(ward) => {
            let serve = Some(format!("'{}' serve", ward.display()));
            let served = campaign::run(&config(serve.clone()), &|_| {});
            assert_eq!(
                served.trace_digest, in_process.trace_digest,
                "ward serve leaves the same traces"
            );
            group.bench_function(BenchmarkId::new("runs", "ward-serve"), |bencher| {
                bencher
                    .iter(|| black_box(campaign::run(&config(serve.clone()), &|_| {}).trace_digest))
            });
        }
        None => println!("protocol: no ward binary (set WARD_BIN): ward serve skipped"),
    }
    group.finish();
}

criterion_group!(benches, protocol);
criterion_main!(benches);
