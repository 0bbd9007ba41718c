//! I11. Same scenario, same trace, byte for byte, whatever `--jobs` or `--shard` is.
//!
//! SPEC §10: everything runs on virtual time from one seeded generator, with no hash-map
//! order reaching a trace, so executing a scenario twice must give equal traces. Traces are
//! compared through their digests ([`trace::digest`](crate::trace::digest), a fixed hash of
//! every boundary record's contents). Campaigns rerun a share of their seeds, replays and
//! the fuzz targets rerun theirs, and shrinking an I11 failure reruns every candidate: all of
//! them ask [`compare`].

use super::{Breach, Violation};

/// The I11 violation when two executions of one scenario gave different trace digests.
pub fn compare(first: u64, again: u64) -> Option<Violation> {
    (first != again).then(|| Violation {
        invariant: Breach::TraceDiffers.invariant(),
        breach: Breach::TraceDiffers,
        session: 0,
        run: 0,
        turn: None,
        call_id: None,
        explanation: format!("the same scenario gave trace digests {first:016x} and {again:016x}"),
        rests_on: &[],
    })
}
