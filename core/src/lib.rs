//! ward-core: the reference runtime core of ward.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod redact;
