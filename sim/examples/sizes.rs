use std::collections::BTreeMap;
use ward_core::{events::EventKind, fault::FaultSet};
use ward_sim::{generate, world::{self, Record, World}};
fn main() {
    let world = World::new();
    let mut by: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut runs = 0;
    for seed in 0..300 {
        let s = generate::generate(seed, world.registry(true), None).scenario;
        let t = world::execute(&world, &s, FaultSet::EMPTY);
        runs += t.runs.len();
        for r in t.runs.iter().flat_map(|r| &r.records) {
            if let Record::Event(e) = r { if let EventKind::ToolFinished { name, result, .. } = &e.kind {
                let n = serde_json::to_string(result).unwrap().len() as u64;
                let entry = by.entry(name.clone()).or_default(); entry.0 += 1; entry.1 += n;
            }}
        }
    }
    let mut v: Vec<_> = by.into_iter().collect();
    v.sort_by_key(|(_, (c, b))| std::cmp::Reverse(*b));
    for (name, (count, bytes)) in v.iter().take(12) { println!("{name:32} calls/run {:.2} avg bytes {}", *count as f64 / runs as f64, bytes / count); }
}
