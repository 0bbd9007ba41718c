//! The run driver (R14–R23): one run whose model sends one batch, then stops, beside the same
//! calls made straight through the entry point (no driver: no transcript, events, guard or
//! scheduling). The difference is the driver's overhead per call.
//!
//! - `parallel/1`, `parallel/8`, `parallel/32`: batches of reads (`settings_get`), run
//!   concurrently.
//! - `sequential/8`: eight writes (`settings_update`), one at a time.
//!
//! ```text
//! cargo bench -p ward-benches --bench driver
//! ```

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::future::BoxFuture;
use ward_core::chart::SharedChart;
use ward_core::chart::tools::{CatalogueOptions, registry};
use ward_core::driver::{RunOptions, Session, StartRunInput};
use ward_core::events::NoEvents;
use ward_core::fault::FaultSet;
use ward_core::guard::SecretGuard;
use ward_core::policy::RunPolicy;
use ward_core::provider::{Provider, ProviderError, ProviderReply, ProviderRequest};
use ward_core::registry::{CallIds, CallScope, Registry};
use ward_core::session::MemoryStore;
use ward_core::tool::{ToolCall, ToolContext};

/// Sends one batch, then a reply without calls.
struct OneBatch {
    calls: Vec<ToolCall>,
    sent: bool,
}

impl Provider for OneBatch {
    fn complete<'a>(
        &'a mut self,
        _request: ProviderRequest<'a>,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        let calls = if self.sent {
            Vec::new()
        } else {
            self.calls.clone()
        };
        self.sent = true;
        Box::pin(async move {
            Ok(ProviderReply {
                text: String::new(),
                calls: calls.into(),
            })
        })
    }
}

fn batch(tool: &str, arguments: &str, size: usize) -> Vec<ToolCall> {
    (0..size)
        .map(|index| ToolCall {
            id: format!("call_{index}"),
            name: tool.to_owned(),
            arguments: arguments.to_owned(),
        })
        .collect()
}

fn through_driver(
    runtime: &tokio::runtime::Runtime,
    registry: &Registry,
    calls: &[ToolCall],
) -> u32 {
    let mut session = Session::new(
        "bench",
        registry.clone(),
        SharedChart::new(1),
        MemoryStore::new(),
    );
    let mut provider = OneBatch {
        calls: calls.to_vec(),
        sent: false,
    };
    let input = StartRunInput {
        prompt: "Read the settings.".to_owned(),
        ..StartRunInput::default()
    };
    let report = runtime
        .block_on(session.run(input, &mut provider, &mut NoEvents, RunOptions::default()))
        .expect("the run starts");
    report.calls
}

fn through_entry_point(
    runtime: &tokio::runtime::Runtime,
    registry: &Registry,
    calls: &[ToolCall],
) -> usize {
    let chart = SharedChart::new(1);
    let policy = RunPolicy::normal();
    let offered: Vec<&str> = registry
        .offered(&policy)
        .iter()
        .map(|tool| tool.name())
        .collect();
    let guard = SecretGuard::default();
    let scope = CallScope {
        policy: &policy,
        offered: &offered,
        guard: &guard,
        faults: FaultSet::EMPTY,
    };
    let mut ids = CallIds::default();
    runtime.block_on(async {
        let mut successes = 0;
        for call in calls {
            let context = ToolContext::standalone(chart.clone(), call);
            successes += usize::from(
                registry
                    .execute(&scope, &mut ids, call, &context)
                    .await
                    .is_success(),
            );
        }
        successes
    })
}

fn driver(criterion: &mut Criterion) {
    let registry = registry(CatalogueOptions::default()).expect("the catalogue registers");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let cases = [
        ("parallel", 1, batch("settings_get", "{}", 1)),
        ("parallel", 8, batch("settings_get", "{}", 8)),
        ("parallel", 32, batch("settings_get", "{}", 32)),
        (
            "sequential",
            8,
            batch("settings_update", r#"{"theme":"dark"}"#, 8),
        ),
    ];
    for (mode, size, calls) in &cases {
        let mut group = criterion.benchmark_group(format!("driver/{mode}"));
        group.throughput(Throughput::Elements(*size as u64));
        group.bench_with_input(BenchmarkId::new("run", size), calls, |bencher, calls| {
            bencher.iter(|| black_box(through_driver(&runtime, &registry, black_box(calls))))
        });
        group.bench_with_input(
            BenchmarkId::new("entry-point-only", size),
            calls,
            |bencher, calls| {
                bencher
                    .iter(|| black_box(through_entry_point(&runtime, &registry, black_box(calls))))
            },
        );
        group.finish();
    }
}

criterion_group!(benches, driver);
criterion_main!(benches);
