use std::time::Instant;
use ward_sim::simulate::Engine;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let count: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let bug = args.get(2).map(|name| name.parse().unwrap());
    let engine = Engine::new();
    let start = Instant::now();
    let (mut runs, mut calls, mut violated) = (0, 0, 0);
    let mut armed = [0u32; 13];
    let mut by = std::collections::BTreeMap::new();
    for seed in 0..count {
        let outcome = engine.run_seed(seed, bug, false);
        runs += outcome.checked.runs();
        calls += outcome.checked.tool_calls();
        for (a, b) in armed.iter_mut().zip(outcome.checked.verdict.armed) { *a += b; }
        if !outcome.checked.verdict.violations.is_empty() {
            violated += 1;
            let v = &outcome.checked.verdict.violations[0];
            let e = by.entry(v.invariant.id()).or_insert(0);
            *e += 1;
            if *e <= 3 { println!("seed {seed}: {v}"); }
        }
    }
    let elapsed = start.elapsed();
    println!("seeds {count} runs {runs} calls {calls} violated {violated} {by:?}");
    println!("armed {armed:?}");
    println!("{:.0} runs/s", runs as f64 / elapsed.as_secs_f64());
}
