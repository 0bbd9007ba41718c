#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use ward_core::fault::FaultSet;
use ward_sim::{generate, world::{self, World}};
fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(500);
    let world = World::new();
    let scenarios: Vec<_> = (0..count).map(|seed| generate::generate(seed, world.registry(true), None).scenario).collect();
    let start = std::time::Instant::now();
    let mut runs = 0;
    for scenario in &scenarios {
        runs += world::execute(&world, scenario, FaultSet::EMPTY).runs.len();
    }
    println!("{:.1} µs/run", start.elapsed().as_secs_f64() * 1e6 / runs as f64);
}
