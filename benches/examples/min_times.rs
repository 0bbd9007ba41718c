//! The redactor beside the seed baseline, best of many runs in one process: a quick check
//! of the criterion figures on a machine where other work adds noise to the medians.
//!
//! ```text
//! cargo run --release -p ward-benches --example min_times
//! ```

use std::time::Instant;

fn main() {
    let r = ward_core::redact::Redactor::new(ward_benches::SECRETS).unwrap();
    let seed = ward_core::redact::baseline::Baseline::ascii();
    for (name, text) in [
        (
            "dense 1MiB",
            ward_benches::secret_dense(1 << 20, ward_benches::DENSE_SEED),
        ),
        ("clean 1MiB", ward_benches::prose(1 << 20)),
        ("clean 64KiB", ward_benches::prose(64 << 10)),
        ("clean 1KiB", ward_benches::prose(1 << 10)),
        ("prompt", ward_benches::PROMPT_200.to_string()),
        (
            "dense 16MiB",
            ward_benches::secret_dense(16 << 20, ward_benches::DENSE_SEED),
        ),
    ] {
        let (mut w, mut b) = (f64::MAX, f64::MAX);
        let reps = if text.len() < 100_000 { 2000 } else { 40 };
        for _ in 0..reps {
            let t = Instant::now();
            std::hint::black_box(r.redact(std::hint::black_box(&text)).len());
            w = w.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            std::hint::black_box(
                seed.redact_bytes(
                    std::hint::black_box(text.as_bytes()),
                    &ward_benches::SECRETS,
                )
                .len(),
            );
            b = b.min(t.elapsed().as_secs_f64());
        }
        let mib = text.len() as f64 / (1 << 20) as f64;
        println!(
            "{name}: ward min {:.3} us ({:.0} MiB/s), seed min {:.3} us ({:.0} MiB/s), ratio {:.2}",
            w * 1e6,
            mib / w,
            b * 1e6,
            mib / b,
            b / w
        );
    }
}
