use ward_core::fault::FaultSet;
use ward_sim::host::core::CoreHost;
use ward_sim::simulate::Engine;
use ward_sim::world::lockstep::{Bodies, execute};

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (from, to): (u64, u64) = (argv[0].parse().unwrap(), argv[1].parse().unwrap());
    let bug: Option<ward_core::fault::Fault> = argv.get(2).map(|name| name.parse().unwrap());
    let faults: FaultSet = bug.into_iter().collect();
    let engine = Engine::new();
    let bodies = Bodies::new();
    let mut host = CoreHost::new(faults).unwrap();
    let mut failed = 0;
    for seed in from..to {
        let generated = engine.generate(seed, bug);
        match execute(&mut host, &bodies, &generated.scenario) {
            Err(v) => {
                println!("seed {seed}: {v}");
                failed += 1;
                host = CoreHost::new(faults).unwrap();
            }
            Ok(trace) => {
                let checked = engine.judge(&generated.scenario, trace);
                if std::env::var("DUMP").is_ok() {
                    dump(&checked.trace);
                }
                if let Some(first) = checked.verdict.violations.first() {
                    failed += 1;
                    if bug.is_some() { println!("first: seed {seed}: {:?} {:?}", first.invariant, first.breach); return; }
                    if failed < 40 {
                        println!("seed {seed}: {first:?}");
                    }
                }
            }
        }
    }
    println!("{failed} of {} failed", to - from);
}

#[allow(dead_code)]
pub fn dump(trace: &ward_sim::world::Trace) {
    for run in &trace.runs {
        for r in &run.records {
            match r {
                ward_sim::world::Record::Request {
                    at_ms,
                    turn,
                    attempt,
                    kept,
                    appended,
                    ..
                } => println!(
                    "  request t{turn}a{attempt} at {at_ms} kept {kept} +{}",
                    appended.len()
                ),
                ward_sim::world::Record::Reply {
                    at_ms,
                    turn,
                    attempt,
                    error,
                    calls,
                    ..
                } => println!(
                    "  reply t{turn}a{attempt} at {at_ms} {error:?} calls {}",
                    calls.len()
                ),
                ward_sim::world::Record::Event(e) => println!(
                    "  event {} {}",
                    e.time_ms,
                    serde_json::to_value(&e.kind).unwrap()["type"]
                ),
                ward_sim::world::Record::BodyStart { at_ms, call_id, .. } => {
                    println!("  bodyStart {at_ms} {call_id}")
                }
                ward_sim::world::Record::BodyEnd {
                    at_ms,
                    call_id,
                    outcome,
                    ..
                } => println!("  bodyEnd {at_ms} {call_id} {outcome}"),
                other => println!("  {}", serde_json::to_value(other).unwrap()["record"]),
            }
        }
    }
}
