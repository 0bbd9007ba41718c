#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::time::{Duration, Instant};
use ward_core::fault::FaultSet;
use ward_sim::{catalogue::Schemas, generate, invariants::Oracle, trace, world::{self, World}};
fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(500);
    let world = World::new();
    let oracle = Oracle::new(Schemas::compile(world.registry(true)));
    let (mut g, mut e, mut c, mut d) = (Duration::ZERO, Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut runs = 0;
    for seed in 0..count {
        let t = Instant::now();
        let generated = generate::generate(seed, world.registry(true), None);
        g += t.elapsed();
        let t = Instant::now();
        let tr = world::execute(&world, &generated.scenario, FaultSet::EMPTY);
        e += t.elapsed();
        runs += tr.runs.len();
        let t = Instant::now();
        let _v = oracle.check(&generated.scenario, &tr);
        c += t.elapsed();
        let t = Instant::now();
        let _d = trace::digest(&tr);
        d += t.elapsed();
    }
    let per = |x: Duration| x.as_secs_f64() * 1e6 / runs as f64;
    println!("per run µs: generate {:.1} execute {:.1} check {:.1} digest {:.1}", per(g), per(e), per(c), per(d));
}
