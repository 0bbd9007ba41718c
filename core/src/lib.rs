//! ward-core: the reference runtime core of ward.
//!
//! An AI chart agent calls tools; this crate is the runtime that keeps its promises. Each
//! module is one rule family of the specification:
//!
//! | module | rules |
//! |---|---|
//! | [`tool`], [`registry`] | R1–R4: frozen metadata, registration checks, the single entry point |
//! | [`validation`] | R5–R8: schema validation with bounded, value-free errors |
//! | [`envelope`] | SPEC §4: the result envelope and every runtime error code |
//! | [`policy`] | R11–R13: read-only runs and switched-off tools, checked twice |
//! | [`schedule`] | R17: sequential or parallel batches, results in call order |
//! | [`driver`], [`provider`], [`session`], [`events`], [`deadline`], [`timers`] | R14–R23: the run loop, limits, cancellation, events, the timers a host sees |
//! | [`guard`], [`redact`] | R15, R22, R24–R29: redaction and the exact-value guard |
//! | [`chart`] | SPEC §8: the chart domain and its tools |
//! | [`fault`](mod@fault) | SPEC §11: the seeded bugs, compiled in only with `fault-injection` |
//!
//! Time is tokio time, randomness is a seed passed in, and nothing reads the wall clock or
//! OS randomness, so the simulator can run everything deterministically.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod chart;
pub mod deadline;
pub mod driver;
pub mod durable;
pub mod envelope;
pub mod events;
pub mod fault;
pub mod guard;
pub mod policy;
pub mod provider;
pub mod redact;
pub mod registry;
pub mod schedule;
pub mod session;
pub mod timers;
pub mod tool;
pub mod validation;
