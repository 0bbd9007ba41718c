//! ward-sim: the simulator library and the `ward` command-line program (SPEC §9, §10, §12).
//!
//! | module | what |
//! |---|---|
//! | [`scenario`] | the scenario file format: sessions of runs, the provider's script, behaviours, planted secrets |
//! | [`generate`] | scenarios from a seed: a plausible model and every misbehaviour, chosen by swarm testing |
//! | [`protocol`] | the lockstep protocol's messages and schema, and the one seam every runtime answers it through ([`protocol::Runtime`]) |
//! | [`host`] | what answers: ward's own core in process, or a runtime behind its adapter's process, started on first use |
//! | [`world`] | runs a scenario against a runtime on virtual time and records every boundary observation |
//! | [`view`] | a run's records arranged for the oracle |
//! | [`oracle`] | the invariants I1–I19, one file each, and the verdict |
//! | [`crash`] | the crash explorer: ward's core durable on a simulated disk, crashed at storage calls (or a process killed for real, [`crash::kill`]) and recovered through the seam |
//! | [`explore`] | one crash plan end to end: executed without and with its crashes, checked for I15–I19 |
//! | [`conformance`] | probes of ward's own core for the rules no scenario reaches (R2, R8a, R8), run by `cargo test` |
//! | [`catalogue`] | the oracle's own copy of the tool table, the default limits and the schemas |
//! | [`trace`] | the trace digest (I11), JSON-lines and Chrome traces |
//! | [`simulate`] | one scenario or seed end to end: generate, execute, check, digest, rerun |
//! | [`campaign`], [`shrink`] | many seeds in parallel, reported in seed order; shrinking a failing scenario or crash plan |
//! | [`stall`] | the watchdog that reports a seed whose runtime never ends its run |
//! | [`awake`] | real time without the machine's pauses, for the two watchdogs (P6's and [`stall`]'s) |
//! | [`summary`] | a campaign's JSON summary, and merging the summaries of its shards |
//! | [`schema`] | the JSON Schema checks of the files ward reads |
//! | [`cli`] | the `ward` commands |
//! | [`rng`] | the one seeded generator |
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod awake;
pub mod campaign;
pub mod catalogue;
pub mod cli;
pub mod conformance;
pub mod crash;
pub mod explore;
pub mod generate;
pub mod host;
pub mod oracle;
pub mod protocol;
pub mod rng;
pub mod scenario;
pub mod schema;
pub mod shrink;
pub mod simulate;
pub mod stall;
pub mod summary;
pub mod trace;
pub mod view;
pub mod world;
