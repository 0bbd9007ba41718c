//! The simulator (SPEC §10): generated scenarios executed and checked per second, on the
//! default profile, with 1 and 2 worker threads.
//!
//! Each iteration is a campaign over seeds 0..1000 (about 1,450 runs and 9,300 tool calls;
//! every worker also compiles its registries and schemas once, about 2% of the time).
//! Throughput is in runs; multiply by the calls per run printed first for tool calls.
//!
//! ```text
//! cargo bench -p ward-benches --bench sim
//! ```

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ward_sim::campaign::{self, CampaignConfig};

const SEEDS: std::ops::Range<u64> = 0..1000;

fn config(jobs: usize) -> CampaignConfig {
    CampaignConfig {
        seeds: SEEDS,
        jobs,
        bug: None,
        shard: None,
        rerun_every: 20,
        runtime: None,
        crashes: false,
        stall_after: None,
        pin: false,
    }
}

fn sim(criterion: &mut Criterion) {
    let profile = campaign::run(&config(1), &|_| {});
    assert_eq!(
        profile.failing_seeds, 0,
        "the correct core holds every invariant"
    );
    println!(
        "sim profile: {} seeds, {} runs, {:.2} turns and {:.2} tool calls per run",
        profile.seeds,
        profile.runs,
        profile.turns as f64 / profile.runs as f64,
        profile.tool_calls as f64 / profile.runs as f64
    );
    let mut group = criterion.benchmark_group("sim");
    group.throughput(Throughput::Elements(profile.runs));
    group.sample_size(10);
    for jobs in [1, 2] {
        group.bench_with_input(
            BenchmarkId::new("runs", format!("{jobs}-threads")),
            &jobs,
            |bencher, &jobs| {
                bencher.iter(|| black_box(campaign::run(&config(jobs), &|_| {}).trace_digest))
            },
        );
    }
    group.finish();
}

criterion_group!(benches, sim);
criterion_main!(benches);
