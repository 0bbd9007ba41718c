//! Kill mode for real against a durable adapter, Node or Python (SPEC §17 P9, I11): every plan
//! of a range of seeds, drawn against the adapter and played in drop mode, is played again with
//! `SIGKILL` to the adapter's process group at the same boundaries, in a fresh store directory;
//! the two executions must give the same digest (the trace and every byte of the store
//! directory after each crash and at the end) and the same durable verdict. Without the
//! adapter's packages or environment (`replay::adapter`) it says why and passes.

use std::ops::Range;

use ward_core::fault::FaultSet;
use ward_sim::crash::kill::execute_killing;
use ward_sim::explore::explore_seed;
use ward_sim::oracle::Breach;

/// The seeds of `variable` (`A..B`), or `default`.
fn seeds(variable: &str, default: Range<u64>) -> Range<u64> {
    let Ok(text) = std::env::var(variable) else {
        return default;
    };
    let (start, end) = text.split_once("..").expect("the seeds are A..B");
    start.parse().expect("a seed")..end.parse().expect("a seed")
}

/// Plays every plan of the seeds (`variable`, or `default`) of `runtime`'s adapter (a name of
/// `replay::adapter`) in kill mode beside drop mode.
pub fn kill_matches_drop(runtime: &str, variable: &str, default: Range<u64>) {
    let root = super::repository();
    let command = match super::replay::adapter(runtime) {
        // The adapter's paths are the repository's: its shell starts there, then is replaced.
        Ok(command) => format!("cd '{}' && exec {command}", root.display()),
        Err(why) => {
            eprintln!("skipped: the {runtime} adapter cannot run here: {why}");
            return;
        }
    };
    let folder = std::env::temp_dir().join(format!("ward-kill-{runtime}-{}", std::process::id()));
    let (mut plans, mut kills) = (0, 0);
    for seed in seeds(variable, default) {
        let dropped = explore_seed(seed, FaultSet::EMPTY, Some(&command));
        let at: Vec<u64> = dropped.plan.crashes.iter().map(|crash| crash.at).collect();
        let store_dir = folder.join(seed.to_string());
        std::fs::create_dir_all(&store_dir).unwrap();
        let (killed, _) = execute_killing(&dropped.plan, &command, &store_dir, &at);
        assert_eq!(
            killed.failure, dropped.crashed.failure,
            "seed {seed}, kills at {at:?}"
        );
        assert_eq!(
            killed.digest(),
            dropped.crashed.digest(),
            "seed {seed}, kills at {at:?}: kill mode and drop mode differ (traces {:016x} and {:016x}; {} and {} store images)",
            ward_sim::trace::digest(&killed.trace),
            ward_sim::trace::digest(&dropped.crashed.trace),
            killed.written.len(),
            dropped.crashed.written.len(),
        );
        let mut verdict =
            ward_sim::oracle::durable::check(&dropped.plan, &dropped.reference, &killed);
        // The drop mode's verdict sets apart what rests on rules the runtime does not claim
        // (P2); the kill mode's is set apart by the same claims.
        let claims = dropped
            .crashed
            .claims
            .clone()
            .expect("the adapter's claims");
        verdict.apply_claims(&claims);
        let drop_breaches: Vec<_> = (dropped.verdict.breaches.iter())
            .filter(|breach| breach.breach != Breach::TraceDiffers)
            .collect();
        let kill_breaches: Vec<_> = verdict.breaches.iter().collect();
        assert_eq!(kill_breaches, drop_breaches, "seed {seed}, kills at {at:?}");
        assert_eq!(
            verdict.not_claimed, dropped.verdict.not_claimed,
            "seed {seed}, kills at {at:?}: not claimed"
        );
        plans += 1;
        kills += at.len();
    }
    let _ = std::fs::remove_dir_all(&folder);
    println!("{plans} plans, {kills} kills: the same digests and verdicts as drop mode");
    assert!(kills >= plans, "every plan was killed at least once");
}
